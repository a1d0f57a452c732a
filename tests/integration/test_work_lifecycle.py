"""`work start|status|audit`, membership (repositories/repositories.yaml), `install ai-context`: real files and git."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from continuity.core.errors import EXIT_INTEGRITY, EXIT_INVARIANT
from tests.helpers import all_event_files
from tests.integration.test_sync import IDENTITY, World, append, cli, git
from tests.workstream_docs import tracked

DOC = Path(".ai-bridge/context-checkpoint.json")
UNREGISTERED_B = "Repository 'repo-b' is not registered in repositories/repositories.yaml."


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """A git identity from the environment only (HOME is isolated)."""
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def registry(root: Path, text: str) -> None:
    (root / "repositories").mkdir(exist_ok=True)
    (root / "repositories" / "repositories.yaml").write_text(text)


def member(root: Path, repository: str, project: str = "demo") -> None:
    (root / ".ai" / "context").mkdir(parents=True, exist_ok=True)
    (root / ".ai" / "context" / "config.json").write_text(
        json.dumps({"schemaVersion": 1, "projectId": project, "repositoryId": repository}))


def write_doc(root: Path, doc: dict[str, Any]) -> None:
    (root / DOC).parent.mkdir(parents=True, exist_ok=True)
    (root / DOC).write_text(json.dumps(doc))


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines and lines[-1].startswith("continuity: error: ")
    return lines[-1].removeprefix("continuity: error: ")


REGISTRY_A = "project: demo\nrepositories:\n  - id: repo-a\n    role: primary\n"


def test_checkpoint_of_an_unregistered_repository_is_refused(project: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The document's repository must be registered: the contract's message, exit 12, nothing written."""
    registry(project, REGISTRY_A)
    before = all_event_files(project)
    write_doc(project, tracked(repository="repo-b"))
    assert main(["work", "checkpoint"]) == EXIT_INVARIANT
    assert error_line(capsys) == UNREGISTERED_B
    assert all_event_files(project) == before
    assert (project / DOC).exists()


def test_a_clone_whose_own_repository_is_unregistered_writes_nothing(project: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`work start` refused a clone configured as an unregistered repository, but `work checkpoint` (checking only
    the ids the document names) and the item and cursor commands wrote: seed 002 fails start and checkpoint
    closed for an unregistered repository. Every write checks the clone's own id now; once it is registered,
    the same writes go through."""
    registry(project, REGISTRY_A)
    write_doc(project, tracked(repository="repo-a"))
    member(project, "repo-b")
    before = all_event_files(project)
    for argv in (["work", "checkpoint"], ["work", "item", "add", "A9", "--title", "x"],
                 ["work", "cursor", "set", "--next-action", "go on"]):
        assert main(argv) == EXIT_INVARIANT, argv
        assert error_line(capsys) == UNREGISTERED_B
    assert all_event_files(project) == before and (project / DOC).exists()
    member(project, "repo-a")
    assert main(["work", "checkpoint"]) == 0
    assert main(["work", "item", "add", "A9", "--title", "x"]) == 0


def test_a_ledger_entry_for_an_unregistered_repository_is_refused_both_ways(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Evidence about a repository the registry does not list: `work validate --repository repo-b` and a
    document whose ledger names repo-b were recorded (shown CURRENT, bound to this worktree); both are refused
    as the document's own repository is (exit 12, nothing written)."""
    from tests.workstream_docs import ledger_entry

    registry(project, REGISTRY_A)
    write_doc(project, tracked())
    assert main(["work", "checkpoint"]) == 0
    before = all_event_files(project)
    capsys.readouterr()
    assert main(["work", "validate", "--id", "V1", "--kind", "k", "--result", "PASS", "--scope", "s", "--summary",
                 "x", "--repository", "repo-b"]) == EXIT_INVARIANT
    assert error_line(capsys) == UNREGISTERED_B
    write_doc(project, tracked(ledger=[{**ledger_entry("V2"), "repository": "repo-b"}]))
    assert main(["work", "checkpoint"]) == EXIT_INVARIANT
    assert error_line(capsys) == UNREGISTERED_B
    assert all_event_files(project) == before
    assert main(["work", "validate", "--id", "V3", "--kind", "k", "--result", "PASS", "--scope", "s",
                 "--summary", "x", "--repository", "repo-a"]) == 0


def test_every_workstream_write_is_refused_while_the_registry_names_another_project(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`work checkpoint` refused a registry of another project (exit 12) while `work validate`, `work item add`
    and `work cursor set` went through on the same store: each is refused now, nothing written."""
    write_doc(project, tracked())
    assert main(["work", "checkpoint"]) == 0
    registry(project, REGISTRY_A.replace("project: demo", "project: other"))
    before = all_event_files(project)
    capsys.readouterr()
    for argv in (["work", "validate", "--id", "V1", "--kind", "k", "--result", "PASS", "--scope", "s",
                  "--summary", "x"], ["work", "item", "add", "Z1", "--title", "z"],
                 ["work", "cursor", "set", "--next-action", "elsewhere"]):
        assert main(argv) == EXIT_INVARIANT, argv
        assert "membership cannot be checked; nothing written" in error_line(capsys)
    assert all_event_files(project) == before


def test_a_workstream_repository_must_be_registered_too(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every repository the workstream names is checked, not only the document's own."""
    registry(project, REGISTRY_A)
    doc = tracked()
    doc["continuity"]["workstream"]["repositories"].append({"repository": "repo-b", "role": "docs"})
    write_doc(project, doc)
    before = all_event_files(project)
    assert main(["work", "checkpoint"]) == EXIT_INVARIANT
    assert error_line(capsys) == UNREGISTERED_B
    assert all_event_files(project) == before


def test_registered_repository_checkpoints(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A registered repository passes; the mapping form of the registry is read the same."""
    registry(project, "repositories:\n  repo-a: {role: primary}\n")
    write_doc(project, tracked())
    assert main(["work", "checkpoint"]) == 0
    assert not (project / DOC).exists()


@pytest.mark.parametrize("text, reason", [
    ("repositories: [\n", "not valid YAML at line"),
    ("- repo-a\n", "not a mapping"),
    ("repositories:\n  - id: repo-a\n  - id: repo-a\n", "listed twice"),
    ("repositories:\n  - id: -bad\n", "no valid id"),
    ("repositories:\n  - id: repo-a\n    role: [x]\n", "must be strings"),
    ("project: other\nrepositories: [repo-a]\n", "for project 'other'"),
    ("!!python/object/apply:os.system ['echo pwned']\n", "not valid YAML"),
    ("repositories:\n  - id: repo-a\n  - id: 2024\n", "YAML reads 2024 as a number; quote the text (\"2024\""),
    ("repositories:\n  - id: repo-a\n  - id: on\n", "YAML reads it as a boolean"),
    ("project: 123\nrepositories: [repo-a]\n", "`project` is not a string: YAML reads 123 as a number"),
])
def test_a_broken_registry_fails_writes_closed_and_status_unhealthy(
        project: Path, capsys: pytest.CaptureFixture[str], text: str, reason: str) -> None:
    """Malformed, duplicate, badly typed, another project's, or unsafe YAML: checkpoint refused, status exit 1."""
    registry(project, text)
    write_doc(project, tracked())
    before = all_event_files(project)
    assert main(["work", "checkpoint"]) == EXIT_INVARIANT
    message = error_line(capsys)
    assert reason in message and "nothing written" in message
    assert all_event_files(project) == before
    assert main(["work", "status", "--json"]) == EXIT_INTEGRITY
    doc = json.loads(capsys.readouterr().out)
    assert any(reason in problem for problem in doc["membership"]["problems"])


def test_a_member_config_of_another_project_fails_writes_closed_and_status_unhealthy(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Seed 002: "A member config must use the same project ID and a repository ID present in that registry": a
    projectId of another project was never looked at (start, checkpoint and status all healthy)."""
    registry(project, REGISTRY_A)
    member(project, "repo-a", project="other")
    write_doc(project, tracked())
    said = ".ai/context/config.json: projectId 'other' is not this project's id 'demo'"
    _fails_membership_closed(project, capsys, said, ["work", "checkpoint"])


def _fails_membership_closed(project: Path, capsys: pytest.CaptureFixture[str], said: str, write: list[str]) -> None:
    """`write` and `work start` refused (exit 12, nothing written) and `work status` unhealthy, each saying `said`;
    with a member config naming repo-a of this project, `write` goes through."""
    before = all_event_files(project)
    capsys.readouterr()
    assert main(write) == EXIT_INVARIANT
    assert said in error_line(capsys) and all_event_files(project) == before
    assert main(["work", "start"]) == EXIT_INVARIANT
    capsys.readouterr()
    assert main(["work", "status", "--json"]) == EXIT_INTEGRITY
    assert said in json.loads(capsys.readouterr().out)["membership"]["problems"]
    member(project, "repo-a")
    assert main(write) == 0


@pytest.mark.parametrize(("text", "said"), [
    ('{"repositoryId": "api", "projectId": "other",}', ".ai/context/config.json is not valid JSON"),
    ('["repo-a"]', ".ai/context/config.json is not a JSON object"),
    ('{"repositoryId": 123}', ".ai/context/config.json: repositoryId '123' is not a repository id"),
    ('{"repositoryId": "a b"}', ".ai/context/config.json: repositoryId 'a b' is not a repository id"),
])
def test_a_member_config_that_says_no_member_fails_writes_closed_and_status_unhealthy(
        project: Path, capsys: pytest.CaptureFixture[str], text: str, said: str) -> None:
    """A member config with a trailing comma (naming an unregistered repository of another project), not an object,
    or with a repositoryId that is no id was dropped without a word: the clone took the newest checkpoint's
    repository and every write went through. It fails membership closed now, as a foreign projectId does."""
    registry(project, REGISTRY_A)
    write_doc(project, tracked(repository="repo-a"))
    assert main(["work", "checkpoint"]) == 0  # the newest checkpoint names repo-a
    (project / ".ai" / "context").mkdir(parents=True, exist_ok=True)
    (project / ".ai" / "context" / "config.json").write_text(text)
    _fails_membership_closed(project, capsys, said, ["work", "item", "add", "Q1", "--title", "q"])


def test_a_registry_naming_a_key_twice_is_unreadable(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two `repositories:` lists: PyYAML kept the last, dropping `repo-a` without a word (YAML forbids a key named
    twice; the checkpoint document's reader refuses repeated keys for the same reason)."""
    registry(project, "project: demo\nrepositories:\n  - {id: repo-a, role: primary}\nrepositories:\n"
                      "  - {id: repo-b, role: primary}\n")
    member(project, "repo-b")
    write_doc(project, tracked(repository="repo-b"))
    before = all_event_files(project)
    assert main(["work", "checkpoint"]) == EXIT_INVARIANT
    assert "it names the key 'repositories' twice in one mapping (line 4)" in error_line(capsys)
    assert all_event_files(project) == before
    registry(project, "base: &b {role: primary}\nproject: demo\nrepositories:\n  - {<<: *b, id: repo-a}\n"
                      "  - {<<: *b, id: repo-b}\n")
    assert main(["work", "checkpoint"]) == 0  # a merge key is no repetition


def test_a_registry_naming_no_project_checks_no_member_projectid(project: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The registry says no `project:`: nothing to compare the member config's projectId with (the store's name may
    be only its folder's), so writes go on."""
    registry(project, "repositories:\n  - id: repo-a\n")
    member(project, "repo-a", project="acme")
    write_doc(project, tracked())
    assert main(["work", "checkpoint"]) == 0
    capsys.readouterr()
    assert main(["work", "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["membership"]["healthy"]


def test_status_is_unhealthy_where_start_refuses_a_clone_without_a_repository_id(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A registry, and no repository id for this clone (no member config, no work_repository, no checkpoint): start
    refuses it, and status said healthy (exit 0); it says what start says, exit 1."""
    registry(project, "project: demo\nrepositories:\n  - id: api\n")
    assert main(["work", "start", "--no-fetch"]) == EXIT_INVARIANT
    refused = error_line(capsys)
    assert "has no repository id" in refused
    assert main(["work", "status", "--json"]) == EXIT_INTEGRITY
    doc = json.loads(capsys.readouterr().out)
    assert not doc["membership"]["healthy"] and refused.removeprefix("continuity: error: ") in doc["membership"][
        "problems"]


def test_status_reports_an_unregistered_repository_and_exits_unhealthy(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The runtime JSON is still emitted; membership names the problem; exit 1."""
    write_doc(project, tracked())
    assert main(["work", "checkpoint"]) == 0
    registry(project, "repositories:\n  - id: repo-z\n")
    member(project, "repo-b")
    capsys.readouterr()
    assert main(["work", "status", "--json"]) == EXIT_INTEGRITY
    doc = json.loads(capsys.readouterr().out)
    assert doc["activeWorkstream"]["id"] == "WS-1"
    assert doc["membership"]["repository"] == "repo-b"
    assert UNREGISTERED_B in doc["membership"]["problems"]
    assert "Repository 'repo-a' is not registered in repositories/repositories.yaml." in doc["membership"]["problems"]
    assert main(["work", "status"]) == EXIT_INTEGRITY
    assert UNREGISTERED_B in capsys.readouterr().out


def test_start_refuses_unregistered_and_runs_for_registered(project: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """start fails closed for an unregistered or unidentified repository; once registered it writes the runtime."""
    registry(project, REGISTRY_A)
    assert main(["work", "start"]) == EXIT_INVARIANT
    assert "has no repository id" in error_line(capsys)
    member(project, "repo-b")
    assert main(["work", "start"]) == EXIT_INVARIANT
    assert error_line(capsys) == UNREGISTERED_B
    assert not (project / ".ai-bridge" / "context-runtime.json").exists()
    member(project, "repo-a")
    write_doc(project, tracked())
    assert main(["work", "checkpoint"]) == 0
    (project / ".ai-bridge" / "context-runtime.md").unlink()
    capsys.readouterr()
    assert main(["work", "start", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["membership"]["healthy"] and out["membership"]["repositorySource"] == ".ai/context/config.json"
    assert out["contextState"] == "DIRTY_LOCAL_CONTEXT"  # never synced: its events exist only here
    assert (project / ".ai-bridge" / "context-runtime.md").exists()


# -- context states over real git --------------------------------------------------------------


def state_of(root: Path) -> str:
    code, out = cli("work", "status", "--root", str(root))
    assert code == 0, out
    return str(out["contextState"])


def test_context_states_follow_the_branch_and_the_remote(tmp_path: Path) -> None:
    """DIRTY before a push, CURRENT after, STALE when a fetch brought more, DIVERGED when both moved, OFFLINE."""
    world = World(tmp_path)
    append(world.a, "a1")
    assert state_of(world.a) == "DIRTY_LOCAL_CONTEXT"
    assert cli("sync", "--root", str(world.a))[0] == 0
    assert state_of(world.a) == "CURRENT_OR_FETCHED"
    assert cli("sync", "--root", str(world.b))[0] == 0
    append(world.b, "b1")
    assert cli("sync", "--root", str(world.b))[0] == 0
    git(world.a, "fetch", "-q", "origin", "+refs/heads/continuity:refs/remotes/origin/continuity")
    assert state_of(world.a) == "STALE_LOCAL_CONTEXT"
    append(world.a, "a2")
    assert cli("sync", "--no-push", "--root", str(world.a))[0] == 0  # merges locally: the branch is ahead
    assert state_of(world.a) == "DIRTY_LOCAL_CONTEXT"
    append(world.b, "b2")
    assert cli("sync", "--root", str(world.b))[0] == 0
    git(world.a, "fetch", "-q", "origin", "+refs/heads/continuity:refs/remotes/origin/continuity")
    assert state_of(world.a) == "DIVERGED_LOCAL_CONTEXT"
    (world.a / ".agent/runtime-continuity/local/offline-import.json").write_text("{}")
    assert state_of(world.a) == "OFFLINE_IMPORTED_CONTEXT"


def test_a_remote_given_as_a_url_is_fetched_by_start_and_read_for_the_context_state(tmp_path: Path) -> None:
    """A clone made by `clone-store URL` records the remote as that URL: `work start` fetched nothing there (only a
    remote git knows by name was fetched), without a word, and the context state never read the fetched branch
    (kept under sync's private ref for a URL), so it could not say STALE."""
    import hashlib

    world = World(tmp_path)
    append(world.a, "a1")
    assert cli("sync", "--root", str(world.a))[0] == 0
    fresh = world.clone("fresh", init=False)
    assert cli("clone-store", str(world.remote), "--root", str(fresh))[0] == 0
    config = json.loads((fresh / ".agent/runtime-continuity/config.json").read_text())
    assert config["sync_remote"] == str(world.remote)
    before = len(all_event_files(fresh))
    append(world.a, "a2")
    assert cli("sync", "--root", str(world.a))[0] == 0
    cli("work", "start", "--root", str(fresh))
    assert len(all_event_files(fresh)) == before + 1  # a2 came in
    assert state_of(fresh) == "CURRENT_OR_FETCHED"
    append(world.a, "a3")
    assert cli("sync", "--root", str(world.a))[0] == 0
    key = hashlib.sha1(str(world.remote).encode()).hexdigest()[:12]
    git(fresh, "fetch", "-q", str(world.remote), f"+refs/heads/continuity:refs/continuity/{key}/continuity")
    assert state_of(fresh) == "STALE_LOCAL_CONTEXT"


def test_a_remote_given_as_a_relative_path_is_recorded_as_the_folder_it_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`clone-store ../../r.git` from a subfolder: config.json kept the relative text, which git (run in the work
    tree's root) and every later command (run from any folder) read as another folder. The absolute path it named
    is kept; sync from another subfolder works, and the context state reads its fetched branch."""
    world = World(tmp_path)
    append(world.a, "a1")
    assert cli("sync", "--root", str(world.a))[0] == 0
    fresh = world.clone("fresh", init=False)
    (fresh / "sub" / "deeper").mkdir(parents=True)
    monkeypatch.chdir(fresh / "sub" / "deeper")
    assert cli("clone-store", os.path.relpath(world.remote))[0] == 0
    config = json.loads((fresh / ".agent/runtime-continuity/config.json").read_text())
    assert config["sync_remote"] == str(world.remote)
    monkeypatch.chdir(fresh / "sub")
    append(world.a, "a2")
    assert cli("sync", "--root", str(world.a))[0] == 0
    assert cli("sync")[0] == 0 and len(all_event_files(fresh)) == 2
    assert state_of(fresh) == "CURRENT_OR_FETCHED"


# -- audit ---------------------------------------------------------------------------------------


def snapshot_tree(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {str(p): (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(folder.rglob("*")) if p.is_file()}


def make_repo(path: Path, repository: str | None = None, project: str = "demo") -> None:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    if repository is not None:
        member(path, repository, project)


def test_audit_reports_missing_mismatched_and_plausible_siblings_and_changes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Registered-but-missing, configured-as-another-id, and a same-project sibling are reported; nothing written."""
    root = tmp_path / "repo-a"
    make_repo(root, "repo-a")
    monkeypatch.chdir(root)
    assert main(["init", "--project", "demo"]) == 0
    registry(root, "project: demo\nrepositories:\n  - {id: repo-a, role: primary}\n  - {id: repo-b, role: api}\n"
                   "  - {id: repo-c, role: docs}\n  - {id: repo-e, role: web, path: ../elsewhere/e}\n")
    make_repo(tmp_path / "repo-b", "repo-x")  # registered as repo-b, configured as repo-x
    make_repo(tmp_path / "elsewhere" / "e", "repo-e")
    make_repo(tmp_path / "repo-d", "repo-d")  # same project, not registered
    make_repo(tmp_path / "unrelated", "other", project="another")  # another project: not plausible
    (tmp_path / "plain-folder").mkdir()
    before = snapshot_tree(tmp_path)
    code, out = cli("work", "audit")
    assert code == EXIT_INTEGRITY
    assert snapshot_tree(tmp_path) == before
    status = {entry["id"]: entry["status"] for entry in out["registered"]}
    assert status == {"repo-a": "present", "repo-b": "mismatched", "repo-c": "missing", "repo-e": "present"}
    assert [Path(s["path"]).name for s in out["unregisteredSiblings"]] == ["repo-d"]
    assert len(out["findings"]) == 3


def test_audit_is_clean_when_everything_matches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No findings: exit 0."""
    root = tmp_path / "repo-a"
    make_repo(root, "repo-a")
    monkeypatch.chdir(root)
    assert main(["init", "--project", "demo"]) == 0
    registry(root, REGISTRY_A)
    code, out = cli("work", "audit")
    assert code == 0 and out["findings"] == []


def test_audit_finds_this_clone_when_the_project_is_a_subfolder_of_its_repository(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A project kept in a subfolder of a repository (a monorepo's `web/`) is this clone: present, as `work start`
    and `work status` find it, not a missing repository."""
    make_repo(tmp_path / "mono")
    root = tmp_path / "mono" / "web"
    root.mkdir()
    member(root, "repo-a")
    monkeypatch.chdir(root)
    assert main(["init", "--project", "demo"]) == 0
    registry(root, REGISTRY_A)
    code, out = cli("work", "audit")
    assert (code, out["findings"]) == (0, [])
    assert [(entry["id"], entry["status"]) for entry in out["registered"]] == [("repo-a", "present")]


# -- install ai-context ----------------------------------------------------------------------------


def test_install_ai_context_writes_working_launchers_policy_and_config(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The launchers run `continuity work <action>`; AGENTS.md keeps other blocks; rerun changes nothing."""
    (project / "AGENTS.md").write_text("# Team rules\n\nbe kind\n")
    assert main(["install", "codex"]) == 0
    assert main(["install", "ai-context", "--repository", "repo-a"]) == 0
    agents = (project / "AGENTS.md").read_text()
    assert "be kind" in agents and "<!-- continuity:begin -->" in agents
    assert "<!-- continuity:ai-context:begin -->" in agents and "fingerprint" in agents
    assert json.loads((project / ".ai/context/config.json").read_text()) == {
        "schemaVersion": 1, "projectId": "demo", "repositoryId": "repo-a"}
    files = {p: p.read_bytes() for p in (project / ".ai").rglob("*") if p.is_file()}
    assert main(["install", "ai-context", "--repository", "repo-a"]) == 0
    assert {p: p.read_bytes() for p in (project / ".ai").rglob("*") if p.is_file()} == files
    registry(project, REGISTRY_A)
    write_doc(project, tracked())
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")},
           "CONTINUITY_BIN": str(Path(sys.executable).with_name("continuity"))}
    sub = project / "src"
    sub.mkdir()
    for action in ("checkpoint", "start", "status"):
        done = subprocess.run(["bash", str(project / ".ai/context/context.sh"), action, "--json"], cwd=sub, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (action, done.stderr)
    assert json.loads(done.stdout)["activeWorkstream"]["id"] == "WS-1"
    bad = subprocess.run(["bash", str(project / ".ai/context/context.sh"), "rm"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and "usage" in bad.stderr
    assert "& $exe work $args[0] --root $root @rest" in (project / ".ai/context/context.ps1").read_text()


def test_install_ai_context_refuses_a_foreign_launcher_and_uninstall_keeps_what_is_not_ours(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A different context.sh needs --force; uninstall removes our files and block, keeps the member config."""
    (project / ".ai/context").mkdir(parents=True)
    (project / ".ai/context/context.sh").write_text("echo mine\n")
    assert main(["install", "ai-context"]) == 2
    assert "not continuity's launcher" in error_line(capsys)
    assert (project / ".ai/context/context.sh").read_text() == "echo mine\n"
    assert not (project / "AGENTS.md").exists()
    assert main(["install", "ai-context", "--force", "--repository", "repo-a"]) == 0
    (project / "AGENTS.md").write_text("intro\n\n" + (project / "AGENTS.md").read_text())
    assert main(["uninstall", "ai-context"]) == 0
    assert not (project / ".ai/context/context.sh").exists() and not (project / ".ai/context/context.ps1").exists()
    assert (project / "AGENTS.md").read_text() == "intro\n"
    assert (project / ".ai/context/config.json").exists()
    assert main(["install", "ai-context", "--repository", "../x"]) == 2


@pytest.mark.parametrize("original", [b"# mine", b"# mine\r\n\r\nrules\r\n", b"\n\n# spaced\n\n\n"])
def test_uninstall_ai_context_gives_back_the_original_bytes_of_agents_md(
        project: Path, capsys: pytest.CaptureFixture[str], original: bytes) -> None:
    """Where nothing else changed since install, AGENTS.md gets its original bytes back (`# mine` came back as
    `# mine\n`: the harnesses' uninstall read the backups, this one did not), after codex shared the file too."""
    (project / "AGENTS.md").write_bytes(original)
    assert main(["install", "ai-context"]) == 0
    assert main(["uninstall", "ai-context"]) == 0
    assert (project / "AGENTS.md").read_bytes() == original
    assert main(["install", "codex"]) == 0 and main(["install", "ai-context"]) == 0
    assert main(["uninstall", "codex"]) == 0 and main(["uninstall", "ai-context"]) == 0
    assert (project / "AGENTS.md").read_bytes() == original


@pytest.mark.parametrize("link", [".ai", ".ai/context", "AGENTS.md"])
def test_install_ai_context_never_creates_through_a_link_naming_nothing(
        project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], link: str) -> None:
    """`.ai`, `.ai/context` or AGENTS.md a symlink to nothing: refused (exit 2), nothing made where it points."""
    (project / link).parent.mkdir(parents=True, exist_ok=True)
    (project / link).symlink_to(tmp_path / "elsewhere" / "missing")
    assert main(["install", "ai-context"]) == 2
    assert "which does not exist" in error_line(capsys)
    assert not (tmp_path / "elsewhere").exists()


def test_verify_reports_a_workstream_invariant_broken_by_a_merge_of_two_clones(tmp_path: Path) -> None:
    """Two clones each start a workstream offline from each other; after sync both, verify exits 1 naming it."""
    world = World(tmp_path)
    for root, ws_id in ((world.a, "WS-A"), (world.b, "WS-B")):
        (root / ".ai-bridge").mkdir()
        (root / DOC).write_text(json.dumps(tracked(ws_id)))
        assert cli("work", "checkpoint", "--root", str(root))[0] == 0
    code, out = cli("verify", "--root", str(world.a))
    assert code == 0 and out["workstream_problems"] == []
    assert cli("sync", "--root", str(world.a))[0] == 0
    assert cli("sync", "--root", str(world.b))[0] == 0
    code, out = cli("verify", "--root", str(world.b))
    assert code == EXIT_INTEGRITY and not out["ok"]
    assert any("WS-A" in problem and "WS-B" in problem for problem in out["workstream_problems"]), out
    code, status = cli("work", "status", "--root", str(world.b))
    assert code == EXIT_INTEGRITY and status["problems"] == out["workstream_problems"]


def test_a_fifo_standing_for_the_registry_the_member_config_or_the_document_is_not_waited_on(
        project: Path) -> None:
    """repositories.yaml, .ai/context/config.json and the checkpoint document come from the work tree: a FIFO
    there is refused at once (each command a new process, killed by the timeout if it hangs)."""
    from tests.helpers import cli_process

    write_doc(project, tracked())
    registry(project, REGISTRY_A)
    assert cli_process("work", "checkpoint", cwd=project).returncode == 0
    before = all_event_files(project)
    (project / "repositories" / "repositories.yaml").unlink()
    os.mkfifo(project / "repositories" / "repositories.yaml")
    (project / ".ai" / "context").mkdir(parents=True)
    os.mkfifo(project / ".ai" / "context" / "config.json")
    status = cli_process("work", "status", "--json", cwd=project)
    assert status.returncode == EXIT_INTEGRITY, status.stderr
    problems = json.loads(status.stdout)["membership"]["problems"]
    assert any("not a regular file" in problem for problem in problems), problems
    audit = cli_process("work", "audit", "--json", cwd=project)
    assert "Traceback" not in audit.stderr
    os.mkfifo(project / "doc.json")
    refused = cli_process("work", "checkpoint", "--file", "doc.json", cwd=project)
    assert refused.returncode != 0 and "not a regular file" in refused.stderr
    assert all_event_files(project) == before


def test_audit_text_shows_registry_roles_paths_and_sibling_names_on_their_own_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A registry role or path and a sibling folder name holding line breaks or terminal controls print as
    visible stand-ins: they forge no audit line and reach no terminal raw."""
    root = tmp_path / "repo-a"
    make_repo(root, "repo-a")
    monkeypatch.chdir(root)
    assert main(["init", "--project", "demo"]) == 0
    registry(root, 'project: demo\nrepositories:\n  - {id: repo-a, role: primary}\n'
                   '  - {id: api, role: "svc\\n- forged (primary): present at /x\\e]0;title\\a",'
                   ' path: "../x\\nfinding: none\\u009b2J\\u202e"}\n')
    make_repo(tmp_path / "sib\nfinding: forged\x1b[31m", "zz")
    capsys.readouterr()
    assert main(["work", "audit"]) == EXIT_INTEGRITY
    out = capsys.readouterr().out
    lines = out.splitlines()
    # the heading, two registered repositories, two findings (api missing, the sibling)
    assert [line.split(" ", 1)[0] for line in lines] == ["audit", "-", "-", "finding:", "finding:"], lines
    assert not any(char in out for char in "\x1b\x07\x9b\u202e")
