"""The validation ledger against a real git worktree: binding, freshness as a view, the fingerprint."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from continuity.core.errors import EXIT_INTEGRITY, EXIT_INVARIANT, EXIT_USAGE
from continuity.core.initialize import init_store
from continuity.workstreams.fingerprint import observe
from tests.helpers import all_event_files, cli_process
from tests.workstream_docs import item, ledger_entry, tracked


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit and a continuity store (git-ignored), with a checkpoint naming repo-a."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    (root / "src").mkdir()
    (root / "src/app.py").write_text("print('hi')\n")
    (root / "README.md").write_text("demo\n")
    init_store(root, project="demo", language=None)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    (root / ".ai-bridge").mkdir()
    (root / ".ai-bridge/context-checkpoint.json").write_text(json.dumps(tracked()))
    ok(root, "work", "checkpoint")
    return root


def ok(root: Path, *args: str) -> Any:
    done = cli_process(*args, cwd=root)
    assert done.returncode == 0, done.stderr
    return done.stdout


def freshness(root: Path) -> dict[str, str]:
    entries: dict[str, str] = json.loads(ok(root, "work", "status", "--json"))["validationFreshness"]["entries"]
    return entries


def test_edit_makes_it_stale_revert_makes_it_current_a_commit_makes_it_stale(repo: Path) -> None:
    """The Show item: recorded CURRENT; edit -> STALE; revert -> CURRENT; a new commit -> STALE."""
    out = json.loads(ok(repo, "work", "validate", "--id", "V1", "--kind", "unit-tests", "--result", "PASS",
                        "--scope", "all", "--summary", "pytest -q passed", "--command", "pytest -q", "--json"))
    assert out["head"] == git(repo, "rev-parse", "HEAD").strip() and len(out["fingerprint"]) == 64
    assert freshness(repo) == {"V1": "CURRENT"}
    app = repo / "src/app.py"
    app.write_text("print('changed')\n")
    assert freshness(repo) == {"V1": "STALE"}
    app.write_text("print('hi')\n")
    assert freshness(repo) == {"V1": "CURRENT"}
    (repo / "notes.txt").write_text("untracked, not ignored\n")
    assert freshness(repo) == {"V1": "STALE"}
    (repo / "notes.txt").unlink()
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    assert freshness(repo) == {"V1": "STALE"}
    md = ok(repo, "work", "status")
    assert "- V1 STALE PASS (unit-tests, repo-a): pytest -q passed" in md


@pytest.mark.parametrize("tracked_note", [True, False])
def test_a_file_of_the_projects_own_in_ai_bridge_counts_continuitys_do_not(repo: Path, tracked_note: bool) -> None:
    """`.ai-bridge/` was left out whole: editing a note the project keeps there (tracked, or untracked and not
    ignored) left evidence CURRENT. Only continuity's files there are left out: the runtime files it rewrites,
    the checkpoint document it removes, a transfer."""
    note = repo / ".ai-bridge/notes.md"
    note.write_text("the project's own\n")
    if tracked_note:
        git(repo, "add", ".ai-bridge/notes.md")
        git(repo, "commit", "-qm", "notes")
    ok(repo, "work", "validate", "--id", "V1", "--kind", "unit-tests", "--result", "PASS", "--scope", "all",
       "--summary", "pytest -q passed")
    assert freshness(repo) == {"V1": "CURRENT"}
    (repo / ".ai-bridge/context-checkpoint.json").write_text(json.dumps(tracked(next_action="another step")))
    ok(repo, "work", "checkpoint")  # rewrites the runtime files, removes the document
    (repo / ".ai-bridge/context-transfer").mkdir()
    (repo / ".ai-bridge/context-transfer/manifest.json").write_text("{}")
    assert freshness(repo) == {"V1": "CURRENT"}
    note.write_text("the project's own, edited\n")
    assert freshness(repo) == {"V1": "STALE"}

@pytest.mark.parametrize(("committed", "name"), [(False, "checkpoint.json"), (True, "checkpoint.json"),
                                                 (False, "..checkpoint.json")])
def test_evidence_a_checkpoint_file_binds_is_current_once_the_file_is_removed(repo: Path, committed: bool,
                                                                              name: str) -> None:
    """`work checkpoint --file F` inside the worktree took the fingerprint while F was still there and then removed
    F: the ledger entries it had just recorded read STALE though nothing else changed. The worktree is observed as
    it is once F is removed (untracked, or tracked and then deleted); with --keep, F stays and counts."""
    document = repo / name
    document.write_text(json.dumps(tracked(ledger=[ledger_entry("V1")])))
    if committed:
        git(repo, "add", name)
        git(repo, "commit", "-qm", "the document")
    ok(repo, "work", "checkpoint", "--file", name)
    assert not document.exists()
    assert freshness(repo) == {"V1": "CURRENT"}
    document.write_text(json.dumps(tracked(ledger=[ledger_entry("V1"), ledger_entry("V2")])))
    ok(repo, "work", "checkpoint", "--file", str(document), "--keep")  # kept: the worktree holds it
    assert document.exists() and freshness(repo) == {"V1": "STALE", "V2": "CURRENT"}


def test_a_checkpoint_refreshes_the_whole_resume_contract(repo: Path) -> None:
    """contracts/workstreams.md: a checkpoint refreshes `.ai-bridge/context-runtime.json` and `.md` as the resume
    contract, validation freshness and membership included. After any write they were rewritten from the log
    alone: `validationFreshness` turned from an object into a string, `membership` and `contextState` were gone."""
    document = repo / ".ai-bridge" / "context-checkpoint.json"
    document.parent.mkdir(exist_ok=True)
    document.write_text(json.dumps(tracked(ledger=[ledger_entry("V1")])))
    ok(repo, "work", "checkpoint")
    assert not document.exists()
    runtime = json.loads((repo / ".ai-bridge/context-runtime.json").read_text())
    assert runtime["validationFreshness"]["entries"] == {"V1": "CURRENT"}
    assert runtime["membership"]["healthy"] is True and runtime["contextState"] and runtime["observedAt"]
    md = (repo / ".ai-bridge/context-runtime.md").read_text()
    assert "- V1 CURRENT " in md and "Membership: not managed" in md and f"Observed at {runtime['observedAt']}" in md


def test_a_write_whose_observation_takes_too_long_leaves_the_files_as_the_log_writes_them(
        repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Untracked gigabytes are hashed for as long as that takes: a write waits OBSERVE_WRITE_S for the observation
    (it waited 10-20 s), then says so, and the runtime files stay as the log alone writes them."""
    import time

    from continuity.cli import main
    from continuity.workstreams import fingerprint, service

    observed = fingerprint.Observation.result

    def slow(self: fingerprint.Observation) -> fingerprint.Worktree:
        time.sleep(0.3)  # a small worktree is observed in no time: without this the test is a race (CI lost it)
        return observed(self)

    monkeypatch.setattr(fingerprint.Observation, "result", slow)
    monkeypatch.setattr(service, "OBSERVE_WRITE_S", 0.05)
    monkeypatch.chdir(repo)
    assert main(["work", "item", "add", "B1", "--title", "slow"]) == 0
    assert "the worktree was not observed: that took longer than 0.05 s" in capsys.readouterr().err
    runtime = json.loads((repo / ".ai-bridge/context-runtime.json").read_text())
    assert "observedAt" not in runtime and runtime["validationFreshness"]["entries"] == {}
    assert "B1" in [entry["id"] for entry in runtime["unresolvedItems"]]


def slow_git(tmp_path: Path, command: str, seconds: str) -> Path:
    """A folder holding a `git` that sleeps `seconds` (a number no other process sleeps, to find it by) for
    `command` and is the real git otherwise."""
    fake = tmp_path / "bin"
    fake.mkdir()
    real_git = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True, check=True).stdout.strip()
    (fake / "git").write_text(f'#!/bin/sh\nfor a in "$@"; do [ "$a" = {command} ] && exec sleep {seconds}; done\n'
                              f'exec {real_git} "$@"\n')
    (fake / "git").chmod(0o755)
    return fake


def test_a_write_that_stops_waiting_for_the_observation_leaves_no_git_running(repo: Path, tmp_path: Path) -> None:
    """Past its wait, a write stopped `git ls-files` and `git status` only: the `git hash-object` hashing untracked
    gigabytes went on by itself after the command ended (one more with every write). Every git call of the
    observation is stopped now. (A `git` on PATH that takes its time over `hash-object` stands in for the size.)"""
    import time

    fake = slow_git(tmp_path, "hash-object", "31.4159")
    (repo / "untracked.txt").write_text("to hash\n")
    done = cli_process("work", "item", "add", "S1", "--title", "slow", cwd=repo,
                       env={"PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"})
    assert done.returncode == 0 and "took longer than 2 s" in done.stderr, done.stderr
    runtime = json.loads((repo / ".ai-bridge/context-runtime.json").read_text())
    assert "observedAt" not in runtime  # not a document saying the observation "was stopped"
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", "sleep 31.4159"], capture_output=True, text=True).stdout.split()
    for pid in left:  # not to leave them behind this test either
        subprocess.run(["kill", pid], check=False)
    assert left == []


def test_ctrl_c_while_a_write_waits_for_the_observation_leaves_no_git_running(repo: Path, tmp_path: Path) -> None:
    """Ctrl-C during the wait stopped the write (exit 130, its event recorded) and left `git ls-files` and `git
    status` running by themselves."""
    import signal
    import sys
    import time

    from tests.helpers import default_sigint

    fake = slow_git(tmp_path, "status", "27.1828")
    env = {key: value for key, value in os.environ.items() if not key.startswith("CONTINUITY_")}
    env["PATH"] = f"{fake}{os.pathsep}{env['PATH']}"
    child = subprocess.Popen([sys.executable, "-m", "continuity", "work", "item", "add", "C1", "--title", "c"],
                             cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=default_sigint)
    time.sleep(1.2)  # in its wait (2 s) for the observation
    child.send_signal(signal.SIGINT)
    child.communicate(timeout=30)
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", "sleep 27.1828"], capture_output=True, text=True).stdout.split()
    for pid in left:
        subprocess.run(["kill", pid], check=False)
    assert child.returncode == 130 and left == []


def test_a_write_observed_while_another_lands_writes_what_the_log_holds_then(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write read the state, waited for the worktree's observation, and wrote: an event that landed meanwhile (a
    sync, another writer) was left out of files whose `lastEventId` and `observedAt` said they were current, until
    the next write. The log's point is checked after the write, and the files written again from where it stands."""
    from continuity.cli import main
    from continuity.workstreams import service

    real = service.live_status
    landed: list[int] = []

    def with_a_write_meanwhile(*args: Any, **kwargs: Any) -> bool:
        if not landed:  # another process's write lands between this one's read of the state and its write
            landed.append(cli_process("work", "item", "add", "Y1", "--title", "from another", cwd=repo).returncode)
        return real(*args, **kwargs)

    monkeypatch.setattr(service, "live_status", with_a_write_meanwhile)
    monkeypatch.chdir(repo)
    assert main(["work", "item", "add", "X1", "--title", "this one"]) == 0 and landed == [0]
    runtime = json.loads((repo / ".ai-bridge/context-runtime.json").read_text())
    assert {"X1", "Y1"} <= {entry["id"] for entry in runtime["unresolvedItems"]} and runtime["observedAt"]
    status = json.loads(ok(repo, "work", "status", "--json"))
    assert runtime["lastEventId"] == status["lastEventId"]


def test_as_of_shows_no_live_freshness_and_a_write_observes_it(repo: Path) -> None:
    """Freshness is a view: observed by the write that records the entry (the runtime file is seed 002's resume
    contract), never computed for a past point, whose document keeps the same shape (an object, not a string)."""
    out = json.loads(ok(repo, "work", "validate", "--id", "V1", "--kind", "lint", "--result", "FAIL",
                        "--scope", "src", "--summary", "ruff found 2", "--json"))
    runtime = json.loads((repo / ".ai-bridge/context-runtime.json").read_text())
    [entry] = runtime["validationLedger"]
    assert entry["head"] == out["head"] and entry["fingerprint"] == out["fingerprint"]
    assert runtime["validationFreshness"]["entries"] == {"V1": "CURRENT"}
    past = json.loads(ok(repo, "work", "status", "--json", "--as-of", out["event_ids"][0]))
    assert past["validationFreshness"] == {"head": None, "fingerprint": None, "entries": {},
                                           "problem": past["validationFreshness"]["problem"]}
    assert past["validationFreshness"]["problem"].startswith("not observed since the last change")
    assert past["validationLedger"][0]["id"] == "V1"


def test_start_writes_the_resume_contract_with_freshness_context_state_and_membership(repo: Path) -> None:
    """Seed 002: read .ai-bridge/context-runtime.md after start, its freshness and membership included.

    start (and every write of this clone's) writes what it observed; a change a catch-up folds from elsewhere (a
    sync) rewrites the files from the log alone, and they then say the live views were not observed since (never
    a stale CURRENT)."""
    ok(repo, "work", "validate", "--id", "V1", "--kind", "unit-tests", "--result", "PASS", "--scope", "all",
       "--summary", "pytest -q passed")
    (repo / "src/app.py").write_text("print('changed')\n")
    ok(repo, "work", "start", "--no-fetch")
    md = (repo / ".ai-bridge/context-runtime.md").read_text()
    runtime = json.loads((repo / ".ai-bridge/context-runtime.json").read_text())
    assert "- V1 STALE PASS (unit-tests, repo-a): pytest -q passed" in md
    assert runtime["validationFreshness"]["entries"] == {"V1": "STALE"}
    assert "Context state: DIRTY_LOCAL_CONTEXT" in md and runtime["contextState"] == "DIRTY_LOCAL_CONTEXT"
    assert "Membership: not managed (no repositories/repositories.yaml)" in md
    assert runtime["membership"]["healthy"] is True and runtime["observedAt"] in md
    (repo / "src/app.py").write_text("print('third')\n")
    ok(repo, "work", "validate", "--id", "V2", "--kind", "lint", "--result", "PASS", "--scope", "src",
       "--summary", "ruff clean")
    md = (repo / ".ai-bridge/context-runtime.md").read_text()
    assert "- V1 STALE PASS" in md and "- V2 CURRENT PASS" in md and "Membership: not managed" in md
    runtime = json.loads((repo / ".ai-bridge/context-runtime.json").read_text())
    assert runtime["validationFreshness"]["entries"] == {"V1": "STALE", "V2": "CURRENT"}
    assert runtime["membership"]["healthy"] is True and runtime["memberConfig"] is False
    ok(repo, "rebuild")  # from the log alone, as a catch-up of another clone's changes writes them
    md = (repo / ".ai-bridge/context-runtime.md").read_text()
    assert "STALE" not in md.split("## Validation")[1] and "CURRENT" not in md.split("## Validation")[1]
    assert "Freshness is not observed since the last change" in md
    assert "## Context state and membership" in md and "Membership:" not in md
    runtime = json.loads((repo / ".ai-bridge/context-runtime.json").read_text())
    assert "membership" not in runtime and runtime["validationFreshness"]["entries"] == {}


def test_start_writes_membership_problems_into_the_runtime_file(repo: Path) -> None:
    """The active workstream names a repository the registry does not list: start exits unhealthy (1) and the
    runtime file it wrote says which; once registered, the file says so too."""
    doc = tracked(items=[item("A1", "IN_PROGRESS"), item("A2", dependsOn=["A1"])])
    doc["continuity"]["workstream"]["repositories"].append({"repository": "repo-c", "role": "service"})
    (repo / ".ai-bridge/context-checkpoint.json").write_text(json.dumps(doc))
    ok(repo, "work", "checkpoint")
    registry = repo / "repositories/repositories.yaml"
    registry.parent.mkdir()
    registry.write_text("project: demo\nrepositories:\n  - {id: repo-a, role: primary}\n")
    (repo / ".ai/context").mkdir(parents=True)
    (repo / ".ai/context/config.json").write_text(json.dumps({"projectId": "demo", "repositoryId": "repo-a"}))
    done = cli_process("work", "start", "--no-fetch", cwd=repo)
    assert done.returncode == EXIT_INTEGRITY, done.stderr
    md = (repo / ".ai-bridge/context-runtime.md").read_text()
    assert "Membership: registry " in md and "this repository: repo-a" in md
    assert "- Repository 'repo-c' is not registered in repositories/repositories.yaml." in md
    assert json.loads((repo / ".ai-bridge/context-runtime.json").read_text())["membership"]["healthy"] is False
    registry.write_text("project: demo\nrepositories:\n  - {id: repo-a, role: primary}\n  - {id: repo-c}\n")
    ok(repo, "work", "start", "--no-fetch")
    md = (repo / ".ai-bridge/context-runtime.md").read_text()
    assert "not registered" not in md and "Membership: registry " in md


def test_ledger_ids_are_immutable_and_checkpoint_entries_are_bound(repo: Path) -> None:
    """validate refuses a known id (exit 12, nothing written); a document's ledger entries get the live binding."""
    ok(repo, "work", "validate", "--id", "V1", "--kind", "k", "--result", "PASS", "--scope", "s", "--summary", "x")
    before = all_event_files(repo)
    done = cli_process("work", "validate", "--id", "V1", "--kind", "k", "--result", "FAIL", "--scope", "s",
                       "--summary", "y", cwd=repo)
    assert done.returncode == EXIT_INVARIANT
    assert "Validation ledger entry ids are immutable and already exist: V1" in done.stderr
    done = cli_process("work", "validate", "--id", "V/2", "--kind", "k", "--result", "PASS", "--scope", "s",
                       "--summary", "y", cwd=repo)
    assert done.returncode == EXIT_USAGE
    assert all_event_files(repo) == before
    (repo / ".ai-bridge/context-checkpoint.json").write_text(json.dumps(tracked(ledger=[ledger_entry("V2")])))
    ok(repo, "work", "checkpoint")
    assert freshness(repo) == {"V1": "CURRENT", "V2": "CURRENT"}


def test_evidence_about_another_repository_is_not_judged_against_this_worktree(repo: Path) -> None:
    """A gate of repository `api` recorded from `repo-a`'s clone was bound to repo-a's worktree (CURRENT while api
    was never looked at, STALE on an edit of repo-a): recorded unbound, shown OTHER_REPOSITORY; this clone's own
    evidence is bound as before."""
    (repo / ".ai" / "context").mkdir(parents=True)
    (repo / ".ai" / "context" / "config.json").write_text(json.dumps({"schemaVersion": 1, "projectId": "demo",
                                                                      "repositoryId": "repo-a"}))
    done = cli_process("work", "validate", "--id", "V-api", "--kind", "unit", "--result", "PASS", "--scope", "s",
                       "--summary", "ok", "--repository", "api", "--json", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert (json.loads(done.stdout)["head"], json.loads(done.stdout)["fingerprint"]) == (None, None)
    assert "evidence about repository api, not this clone's (repo-a): recorded unbound" in done.stderr
    ok(repo, "work", "validate", "--id", "V-own", "--kind", "unit", "--result", "PASS", "--scope", "s",
       "--summary", "ok")
    assert freshness(repo) == {"V-api": "OTHER_REPOSITORY", "V-own": "CURRENT"}
    (repo / "README.md").write_text("edited\n")
    assert freshness(repo) == {"V-api": "OTHER_REPOSITORY", "V-own": "STALE"}


def test_this_clones_repository_is_its_configured_id_on_both_sides(repo: Path) -> None:
    """`work validate` without --repository records this clone's configured id (not the newest checkpoint's, which
    may be another clone's), bound; and a later checkpoint naming another repository (synced from its clone) never
    turns this clone's evidence into OTHER_REPOSITORY or another's into CURRENT. With no configured id, evidence
    is judged against this worktree, as it was recorded."""
    ok(repo, "work", "validate", "--id", "V-unconfigured", "--kind", "unit", "--result", "PASS", "--scope", "s",
       "--summary", "ok", "--repository", "api")
    assert freshness(repo) == {"V-unconfigured": "CURRENT"}
    (repo / ".ai" / "context").mkdir(parents=True)
    (repo / ".ai" / "context" / "config.json").write_text(json.dumps({"schemaVersion": 1, "projectId": "demo",
                                                                      "repositoryId": "repo-b"}))
    done = cli_process("work", "validate", "--id", "V-here", "--kind", "unit", "--result", "PASS", "--scope", "s",
                       "--summary", "tests pass here", "--json", cwd=repo)
    assert done.returncode == 0 and json.loads(done.stdout)["fingerprint"] is not None and "unbound" not in done.stderr
    assert freshness(repo)["V-here"] == "CURRENT"
    document = tracked(repository="api")
    document["continuity"]["workstream"]["repositories"] = [{"repository": "api", "role": "primary"}]
    (repo / ".ai-bridge/context-checkpoint.json").write_text(json.dumps(document))
    ok(repo, "work", "checkpoint")
    assert freshness(repo) == {"V-unconfigured": "OTHER_REPOSITORY", "V-here": "CURRENT"}


def test_outside_git_entries_are_unbound(tmp_path: Path) -> None:
    """No git worktree: recorded with a warning, shown UNBOUND (never CURRENT)."""
    root = tmp_path / "plain"
    root.mkdir()
    init_store(root, project="demo", language=None)
    done = cli_process("work", "validate", "--id", "V1", "--kind", "k", "--result", "PASS", "--scope", "s",
                       "--summary", "x", "--repository", "repo-a", cwd=root)
    assert done.returncode == 0 and "UNBOUND" in done.stderr
    assert freshness(root) == {"V1": "UNBOUND"}


def test_fingerprint_follows_content_not_the_index(repo: Path) -> None:
    """Staging the same content keeps it; an ignored file or continuity's own files never change it."""
    first = observe(str(repo))
    (repo / "README.md").write_text("changed\n")
    changed = observe(str(repo))
    git(repo, "add", "README.md")
    assert observe(str(repo)) == changed != first
    (repo / ".gitignore").write_text((repo / ".gitignore").read_text() + "build/\n")
    git(repo, "add", ".gitignore")
    with_ignore = observe(str(repo))
    (repo / "build").mkdir()
    (repo / "build/out.bin").write_bytes(b"\x00" * 100)
    (repo / ".ai-bridge/context-runtime.md").write_text("anything")
    assert observe(str(repo)) == with_ignore
    (repo / "src/app.py").unlink()
    assert observe(str(repo)).fingerprint != with_ignore.fingerprint


@pytest.mark.parametrize("setup", ["autocrlf", "eol-attribute", "clean-filter"])
def test_staging_a_file_git_cleans_keeps_the_fingerprint(repo: Path, setup: str) -> None:
    """Content git's filters clean on `git add` (CRLF under core.autocrlf or an eol attribute, a clean filter):
    changed on disk, then staged, the fingerprint stays (the changed file hashed as it is differed from the index's
    cleaned blob, so staging made evidence STALE); untracked then added too."""
    if setup == "autocrlf":
        git(repo, "config", "core.autocrlf", "true")
    elif setup == "eol-attribute":
        (repo / ".gitattributes").write_text("*.txt text eol=crlf\n")
    else:
        git(repo, "config", "filter.upper.clean", "tr a-z A-Z")
        git(repo, "config", "filter.upper.smudge", "cat")
        (repo / ".gitattributes").write_text("*.txt filter=upper\n")
    (repo / "c.txt").write_bytes(b"l1\nl2\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "text")
    (repo / "c.txt").write_bytes(b"l1\r\nl2\r\nl3\r\n")
    (repo / "new.txt").write_bytes(b"n1\r\nn2\r\n")
    changed = observe(str(repo))
    git(repo, "add", "c.txt")
    assert observe(str(repo)) == changed
    git(repo, "add", "new.txt")
    assert observe(str(repo)) == changed
    ok(repo, "work", "validate", "--id", "V-crlf", "--kind", "unit", "--result", "PASS", "--scope", "all",
       "--summary", "ok")
    assert freshness(repo)["V-crlf"] == "CURRENT"


@pytest.mark.parametrize("name", ['"x"', "cr\r", "lf\nname"])
def test_a_name_hash_object_cannot_read_back_is_hashed_as_it_is(repo: Path, name: str) -> None:
    """`git hash-object --stdin-paths` reads `"x"` as `x` (C quoting) and takes a line's CR off: such a file's edits
    must still move the fingerprint, and one such name must not send every other changed file to raw hashing
    (under autocrlf, staging a CRLF file then moved the fingerprint)."""
    git(repo, "config", "core.autocrlf", "true")
    (repo / "x").write_text("plain\n")
    (repo / name).write_text("one\n")
    (repo / "t.txt").write_bytes(b"a\nb\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "names")
    (repo / name).write_text("two\n")
    two = observe(str(repo))
    (repo / name).write_text("three\n")
    three = observe(str(repo))
    assert two.fingerprint != three.fingerprint
    (repo / "t.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    changed = observe(str(repo))
    git(repo, "add", "t.txt")
    assert observe(str(repo)) == changed


def test_a_file_committed_with_crlf_under_autocrlf_keeps_its_fingerprint_when_staged(repo: Path) -> None:
    """`git add` keeps CRLF where the index copy already holds it (core.autocrlf's safety rule), which `git
    hash-object` does not know: such a file is hashed as it is, as the index will hold it."""
    (repo / "w.txt").write_bytes(b"a\r\nb\r\n")
    git(repo, "add", "w.txt")
    git(repo, "commit", "-qm", "crlf")
    git(repo, "config", "core.autocrlf", "true")
    (repo / "w.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    changed = observe(str(repo))
    git(repo, "add", "w.txt")
    assert observe(str(repo)) == changed


def test_a_crlf_file_under_an_explicit_text_attribute_keeps_its_fingerprint_when_staged(repo: Path) -> None:
    """CRLF in the index, and `* text` set since: `git add` converts it (only automatic line endings keep CRLF), so
    it is hashed as hash-object cleans it, and staging moves nothing."""
    (repo / "f.txt").write_bytes(b"a\r\nb\r\n")
    git(repo, "add", "f.txt")
    git(repo, "commit", "-qm", "crlf")
    (repo / ".gitattributes").write_text("* text\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")
    changed = observe(str(repo))
    git(repo, "add", "f.txt")
    assert observe(str(repo)) == changed


def test_line_endings_asked_for_many_long_paths_in_parts(repo: Path) -> None:
    """More changed files than one command line carries: their index line endings are asked for in parts (one
    call failing, E2BIG, sent every file to raw hashing), so staging under autocrlf still moves nothing."""
    from continuity.workstreams import fingerprint

    git(repo, "config", "core.autocrlf", "true")
    folder = repo / ("d" * 200) / ("e" * 200)
    folder.mkdir(parents=True)
    for index in range(150):
        (folder / f"{index:04d}.txt").write_bytes(b"a\nb\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "many")
    for index in range(150):
        (folder / f"{index:04d}.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    paths = [os.fsencode(str(path.relative_to(repo))) for path in folder.iterdir()]
    assert len(fingerprint._parts(paths, fingerprint.EOL_ARGS)) > 1
    changed = observe(str(repo))
    git(repo, "add", "-A")
    assert observe(str(repo)) == changed


@pytest.mark.parametrize("mark", ["--assume-unchanged", "--skip-worktree"])
def test_an_edit_git_status_is_told_to_skip_still_makes_evidence_stale(repo: Path, mark: str) -> None:
    """A file marked assume-unchanged or skip-worktree (git status does not look at it): editing it moves the
    fingerprint all the same; a sparse checkout's entry that is not on disk keeps its index id."""
    ok(repo, "work", "validate", "--id", "V-marked", "--kind", "unit", "--result", "PASS", "--scope", "all",
       "--summary", "ok")
    git(repo, "update-index", mark, "README.md")
    assert freshness(repo)["V-marked"] == "CURRENT"
    (repo / "README.md").write_text("edited behind git status's back\n")
    assert git(repo, "status", "--porcelain", "README.md") == ""
    assert freshness(repo)["V-marked"] == "STALE"
    (repo / "README.md").write_text("demo\n")
    assert freshness(repo)["V-marked"] == "CURRENT"
    if mark == "--skip-worktree":  # not on disk, as a sparse checkout leaves it
        before = observe(str(repo))
        (repo / "README.md").unlink()
        assert observe(str(repo)) == before


def test_an_observation_started_early_sees_the_tree_as_git_reports_it(repo: Path) -> None:
    """Both git calls start at once (work status starts them before its catch-up); the result is the same
    fingerprint as a sequential observation, and it follows git's view of the tree when read."""
    from continuity.workstreams.fingerprint import Observation, fingerprint

    early = Observation(str(repo))
    assert early.result() == observe(str(repo))
    head, printed = fingerprint(str(repo), (b".agent/runtime-continuity/", b".ai-bridge/"))
    assert (head, printed) == (observe(str(repo)).head, observe(str(repo)).fingerprint)
    assert head == git(repo, "rev-parse", "HEAD").strip()
    (repo / "new.txt").write_text("untracked\n")
    assert Observation(str(repo)).result().fingerprint != printed


def test_an_observation_without_git_or_outside_a_worktree_names_the_reason(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from continuity.workstreams.fingerprint import Observation

    outside = tmp_path / "outside"
    outside.mkdir()
    assert Observation(str(outside)).result().problem == "not in a git worktree"
    head = (repo / ".git" / "HEAD").read_text()
    (repo / ".git" / "HEAD").write_text("garbage\n")  # git refuses the repository
    assert Observation(str(repo)).result().problem == "not a git work tree"
    (repo / ".git" / "HEAD").write_text(head)
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    found = Observation(str(repo))
    assert found.result().problem == "git is not installed"
    found.cancel()  # nothing started: nothing to stop
    done = cli_process("work", "status", "--json", cwd=repo, env={"PATH": str(empty)})
    assert "Traceback" not in done.stderr
    live = json.loads(done.stdout)["validationFreshness"]
    assert live["problem"] == "git is not installed" and live["fingerprint"] is None



def test_a_fifo_where_a_tracked_file_was_is_marked_not_waited_on(repo: Path) -> None:
    """A FIFO standing for a tracked file would block the read for ever: `work status` (a new process,
    killed by the timeout if it hangs) answers, and the fingerprint is stable and differs from the file's."""
    import os

    before = observe(str(repo))
    (repo / "src/app.py").unlink()
    os.mkfifo(repo / "src/app.py")
    status = json.loads(ok(repo, "work", "status", "--json"))
    assert "validationFreshness" in status
    fifo = observe(str(repo))
    assert fifo.fingerprint != before.fingerprint
    assert observe(str(repo)) == fifo


def test_a_huge_changed_file_is_hashed_as_git_does_a_chunk_at_a_time(repo: Path) -> None:
    """An untracked file of 64 MB gets git's own blob id, read in chunks (memory stays far below its size)."""
    import tracemalloc

    from continuity.workstreams.fingerprint import blob_id

    big = repo / "data.bin"
    with big.open("wb") as handle:
        for index in range(64):
            handle.write(bytes([index]) * (1 << 20))
    tracemalloc.start()
    try:
        found = blob_id(str(big))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found.decode() == git(repo, "hash-object", "data.bin").strip()
    assert peak < 8 << 20
    (repo / "link").symlink_to("data.bin")
    assert blob_id(str(repo / "link")).decode() == subprocess.run(
        ["git", "-C", str(repo), "hash-object", "--stdin"], input=b"data.bin", capture_output=True, check=True,
    ).stdout.decode().strip()


def test_a_submodule_or_nested_repository_counts_with_its_own_head_and_files(repo: Path, tmp_path: Path) -> None:
    """git status names a changed submodule (or an untracked nested repository) as one folder: its files and
    its commit still change the fingerprint, so evidence validated against one state of it shows STALE after
    an edit or a commit inside it (before, every changed state of it was the same 'folder')."""
    library = tmp_path / "library"
    library.mkdir()
    git(library, "init", "-q")
    (library / "lib.py").write_text("one = 1\n")
    git(library, "add", "-A")
    git(library, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "lib")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "lib")
    git(repo, "commit", "-qm", "submodule")
    clean = observe(str(repo))
    (repo / "lib/lib.py").write_text("one = 2\n")
    edited = observe(str(repo))
    (repo / "lib/lib.py").write_text("one = 3\n")
    assert len({clean.fingerprint, edited.fingerprint, observe(str(repo)).fingerprint}) == 3
    (repo / "lib/lib.py").write_text("one = 2\n")
    assert observe(str(repo)) == edited  # the same state of the submodule: the same fingerprint
    git(repo / "lib", "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "two")
    moved = observe(str(repo))
    git(repo / "lib", "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty",
        "-m", "three")
    assert len({edited.fingerprint, moved.fingerprint, observe(str(repo)).fingerprint}) == 3
    nested = repo / "nested"
    nested.mkdir()
    git(nested, "init", "-q")
    (nested / "n.txt").write_text("a\n")
    before = observe(str(repo))
    (nested / "n.txt").write_text("b\n")
    assert observe(str(repo)).fingerprint != before.fingerprint
    import shutil

    shutil.rmtree(nested / ".git")
    (nested / ".git").mkdir()  # no repository (git would look above it): never the outer tree again
    broken = observe(str(repo))
    assert broken.fingerprint is not None and observe(str(repo)) == broken


def test_a_file_this_process_may_not_read_still_moves_the_fingerprint_when_written(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file the observer may not read (no permission: a build's output owned by root) stood for the constant
    `unreadable`: writing it left the evidence CURRENT. Its size and time stand for it now. The refusal is made by
    wrapping `os.open` for that one file (the tests run as root here, whom no permission stops; a name git's
    `hash-object` cannot read back sends the file to this process's own hashing, as a file git cannot read does)."""
    import continuity.workstreams.fingerprint as fingerprint_module

    name = "lf\nlocked.bin"
    locked = repo / name
    locked.write_bytes(b"one")
    real_open = os.open

    def refusing(path: Any, *args: Any, **kwargs: Any) -> int:
        if os.fsdecode(path) == str(locked):
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(fingerprint_module.os, "open", refusing)
    first = observe(str(repo))
    assert first.fingerprint is not None and observe(str(repo)) == first  # deterministic while untouched
    locked.write_bytes(b"two, longer")
    assert observe(str(repo)).fingerprint != first.fingerprint
