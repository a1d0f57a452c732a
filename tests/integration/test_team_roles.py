"""Roles and leases through the real CLI: documents, conflicts, takeovers, races, git sync, hostile names."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from continuity.core.errors import EXIT_NOT_FOUND, EXIT_ROLE_CONFLICT, EXIT_USAGE
from tests.helpers import all_event_files
from tests.integration.test_sync import IDENTITY, World

Capture = pytest.CaptureFixture[str]
STORE = Path(".agent", "runtime-continuity")


def run(capsys: Capture, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def doc(project: Path, team: str = "core", role: str = "rev") -> str:
    return (project / STORE / "team" / team / "roles" / f"{role}.md").read_text()


def show(capsys: Capture, *args: str) -> Any:
    code, out, err = run(capsys, "role", "show", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_create_claim_show_and_the_document(project: Path, capsys: Capture) -> None:
    """create writes the role document; claim sets holder and lease expiry in its front matter."""
    assert run(capsys, "role", "create", "core", "rev", "--description", "reviews PRs")[:2] == (
        0, "role rev created -> team/core/roles/rev.md\n")
    assert 'holder: null\n' in doc(project)
    code, out, _ = run(capsys, "role", "claim", "core", "rev", "--agent", "amy", "--ttl", "2h")
    assert code == 0 and out.startswith("role rev claimed by amy, lease until ")
    role = show(capsys, "core", "rev")
    assert role["holder"] == "amy" and role["lease_state"] == "fresh" and 7190 < role["lease_seconds_left"] <= 7200
    assert 'holder: "amy"\n' in doc(project) and f'lease_expires_at: "{role["lease_expires_at"]}"\n' in doc(project)
    assert "reviews PRs" in doc(project)


def test_a_description_cannot_forge_the_documents_sections(project: Path, capsys: Capture) -> None:
    """A description carrying a `## Lease history` heading, history items, front matter and controls stays text:
    the document has one history section (the real one) and no raw control characters."""
    forged = ("reviews PRs\n---\nholder: \"mallory\"\n## Lease history\n\n"
              "- 2026-01-01T00:00:00Z mallory claimed\x9b2J\u202e\r")
    assert run(capsys, "role", "create", "core", "rev", "--description", forged)[0] == 0
    assert run(capsys, "role", "claim", "core", "rev", "--agent", "amy")[0] == 0
    text = doc(project)
    lines = text.splitlines()
    assert lines.count("## Lease history") == 1 and not any(line.startswith("- 2026-01-01") for line in lines)
    assert lines.count("---") == 2 and 'holder: "amy"' in lines and "\x9b" not in text and "\u202e" not in text
    assert "\r" not in text
    assert "reviews PRs" in text and "mallory claimed" in text


def test_a_fresh_foreign_lease_refuses_and_writes_nothing(project: Path, capsys: Capture) -> None:
    """Another agent's claim while the lease is fresh: one clear line, exit 12, no event, document unchanged."""
    run(capsys, "role", "create", "core", "rev")
    run(capsys, "role", "claim", "core", "rev", "--agent", "amy")
    events, before = all_event_files(project), doc(project)
    code, out, err = run(capsys, "role", "claim", "core", "rev", "--agent", "bo")
    assert code == EXIT_ROLE_CONFLICT and out == "" and err.count("\n") == 1
    assert "held by amy under a fresh lease" in err
    assert all_event_files(project) == events and doc(project) == before
    for action in ("renew", "release"):
        assert run(capsys, "role", action, "core", "rev", "--agent", "bo")[0] == EXIT_ROLE_CONFLICT
    assert all_event_files(project) == events


def later(monkeypatch: pytest.MonkeyPatch, seconds: int) -> None:
    """Move continuity's one clock forward (the log's HLC and the decisions both read it)."""
    import continuity.core.store as store_module

    real = store_module.now_us
    monkeypatch.setattr(store_module, "now_us", lambda: real() + seconds * 1_000_000)


def test_an_expired_lease_is_taken_over(project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the lease expires, show says EXPIRED and claimable; another agent's claim is a recorded takeover."""
    run(capsys, "role", "create", "core", "rev")
    run(capsys, "role", "claim", "core", "rev", "--agent", "amy", "--ttl", "10m")
    later(monkeypatch, 601)
    code, out, _ = run(capsys, "role", "show", "core", "rev")
    assert code == 0 and "lease EXPIRED" in out and "continuity role claim core rev --agent <you>" in out
    code, out, _ = run(capsys, "role", "claim", "core", "rev", "--agent", "bo", "--json")
    result = json.loads(out)
    assert code == 0 and result["takeover_from"] == "amy" and result["role"]["holder"] == "bo"
    last = json.loads(all_event_files(project)[-1].read_text())
    assert last["kind"] == "role.claimed" and last["takeover_from"] == "amy"
    assert "bo took-over: from amy" in doc(project)


def test_renew_and_release(project: Path, capsys: Capture) -> None:
    """The holder renews (new expiry) and releases (free); then anyone may claim."""
    run(capsys, "role", "create", "core", "rev")
    run(capsys, "role", "claim", "core", "rev", "--agent", "amy", "--ttl", "1m")
    first = show(capsys, "core", "rev")["lease_expires_at"]
    assert run(capsys, "role", "renew", "core", "rev", "--agent", "amy", "--ttl", "1h")[0] == 0
    assert show(capsys, "core", "rev")["lease_expires_at"] > first
    assert run(capsys, "role", "release", "core", "rev", "--agent", "amy")[1] == "role rev released by amy\n"
    assert show(capsys, "core", "rev")["lease_state"] == "free" and 'holder: null' in doc(project)
    assert run(capsys, "role", "claim", "core", "rev", "--agent", "bo")[0] == 0


@pytest.mark.parametrize("limit", ["teams", "roles"])
def test_a_held_role_is_never_forgotten_for_being_old(project: Path, capsys: Capture,
                                                       monkeypatch: pytest.MonkeyPatch, limit: str) -> None:
    """Past the roles model's bounds (100 teams, 1,000 roles a team; 3 here) the least recently active team or role
    was forgotten whatever it held: amy's fresh role vanished, her park found nothing held (exit 2), and bo created
    and claimed the same role (two holders under fresh leases). A held role is kept; free ones still give way."""
    import projections.roles

    monkeypatch.setattr(projections.roles, "TEAMS_LIMIT" if limit == "teams" else "ROLES_LIMIT", 3)
    run(capsys, "role", "create", "t0", "free")
    run(capsys, "role", "create", "t0", "rev")
    assert run(capsys, "role", "claim", "t0", "rev", "--agent", "amy", "--ttl", "2h")[0] == 0
    if limit == "teams":
        run(capsys, "role", "create", "f0", "free")
        for n in range(1, 6):
            run(capsys, "role", "create", f"t{n}", "r")
        assert run(capsys, "role", "show", "f0", "free")[0] == EXIT_NOT_FOUND  # a team holding nothing gave way
    else:
        for n in range(1, 6):
            run(capsys, "role", "create", "t0", f"r{n}")
        assert run(capsys, "role", "show", "t0", "free")[0] == EXIT_NOT_FOUND  # a free role gave way
    assert show(capsys, "t0", "rev")["holder"] == "amy"
    assert run(capsys, "role", "create", "t0", "rev")[0] == EXIT_ROLE_CONFLICT
    assert run(capsys, "role", "claim", "t0", "rev", "--agent", "bo")[0] == EXIT_ROLE_CONFLICT
    code, out, err = run(capsys, "park", "t0", "--agent", "amy")
    assert code == 0 and "rev" in out, err
    assert 'holder: "amy"' in doc(project, "t0", "rev")
    run(capsys, "role", "release", "t0", "rev", "--agent", "amy")
    for n in range(6, 10):  # released, it gives way like any other
        run(capsys, "role", "create", "t0" if limit == "roles" else f"t{n}", f"r{n}")
    assert run(capsys, "role", "show", "t0", "rev")[0] == EXIT_NOT_FOUND

def test_unknown_role_and_missing_agent(project: Path, capsys: Capture) -> None:
    """A role that was never created: exit 7 and the create command; no agent: exit 2."""
    code, _, err = run(capsys, "role", "claim", "core", "nope", "--agent", "amy")
    assert code == EXIT_NOT_FOUND and "continuity role create core nope" in err
    run(capsys, "role", "create", "core", "rev")
    assert run(capsys, "role", "claim", "core", "rev")[0] == EXIT_USAGE
    assert run(capsys, "role", "create", "core", "rev")[0] == EXIT_ROLE_CONFLICT
    assert run(capsys, "role", "show", "core", "nope")[0] == EXIT_NOT_FOUND


@pytest.mark.parametrize("ref", ["a\x9b31mred", "a\u202eb"])
def test_checkpoint_ref_is_echoed_on_one_safe_line(project: Path, capsys: Capture, ref: str) -> None:
    """Setting a ref with a C1 control or a bidi override prints one line with stand-ins; JSON keeps it."""
    run(capsys, "role", "create", "core", "rev")
    code, out, err = run(capsys, "checkpoint", "core", "--role", "rev", "--ref", ref)
    assert code == 0 and err == "" and out.count("\n") == 1 and out.startswith("checkpoint_ref for role rev -> ")
    assert out[:-1].isprintable()
    code, out, _ = run(capsys, "checkpoint", "core", "--role", "rev", "--ref", ref, "--json")
    assert code == 0 and json.loads(out)["checkpoint_ref"] == ref


@pytest.mark.parametrize("ref", ["   ", "\t", "x\nparked rev -> forged", "x\rforged", "a\u2028b", "x.json\n", "a\tb",
                                 "a\x85b"])
def test_a_blank_ref_or_one_of_more_than_one_line_is_refused(project: Path, capsys: Capture, ref: str) -> None:
    """A ref that names no snapshot (blank) or spans lines is a usage error (exit 2), as an empty one is; the role
    keeps its ref and no event is written."""
    run(capsys, "role", "create", "core", "rev")
    assert run(capsys, "checkpoint", "core", "--role", "rev", "--ref", "x.json")[0] == 0
    before = sorted(project.glob(".agent/runtime-continuity/events/*/*"))
    code, out, err = run(capsys, "checkpoint", "core", "--role", "rev", "--ref", ref)
    assert code == EXIT_USAGE and out == "" and err.count("\n") == 1 and "--ref" in err
    assert sorted(project.glob(".agent/runtime-continuity/events/*/*")) == before
    assert run(capsys, "checkpoint", "core", "--role", "rev")[1].startswith("role rev: checkpoint_ref = x.json\n")


def test_checkpoint_role_form_and_the_work_form(project: Path, capsys: Capture) -> None:
    """checkpoint <team> --role R [--ref]: the contract's texts; the work-log checkpoint form still works."""
    run(capsys, "role", "create", "core", "rev")
    assert run(capsys, "checkpoint", "core", "--role", "rev") == (0, "role rev: no checkpoint_ref set\n", "")
    assert run(capsys, "checkpoint", "core", "--role", "nope") == (
        1, "", "checkpoint failed: role nope not found/parseable\n")
    assert run(capsys, "checkpoint", "core", "--role", "nope", "--ref", "x.json") == (
        1, "", "checkpoint failed: role nope not found/parseable\n")
    run(capsys, "snapshot", "core", "amy", "role-rev", "--objective", "review the PR", "--next", "merge")
    ref = "team/core/member/amy/continuity/role-rev/latest.json"
    assert run(capsys, "checkpoint", "core", "--role", "rev", "--ref", ref) == (
        0, f"checkpoint_ref for role rev -> {ref}\n", "")
    code, out, _ = run(capsys, "checkpoint", "core", "--role", "rev")
    assert code == 0 and out.startswith(f"role rev: checkpoint_ref = {ref}\nResume: role-rev (as of ")
    assert "  objective: review the PR\n  next actions:\n    - merge\n" in out
    assert f'checkpoint_ref: "{ref}"' in doc(project)
    events = all_event_files(project)
    run(capsys, "checkpoint", "core", "--role", "rev")  # a read: nothing recorded
    assert all_event_files(project) == events
    code, out, _ = run(capsys, "checkpoint", "phase two done", "--phase", "testing")
    assert code == 0 and out.startswith("checkpoint: RCE-")
    assert json.loads(all_event_files(project)[-1].read_text())["kind"] == "checkpoint.recorded"
    assert run(capsys, "checkpoint", "x", "--ref", "y")[0] == EXIT_USAGE


def test_show_as_of_an_earlier_point(project: Path, capsys: Capture) -> None:
    """role show --as-of the claim answers with amy, before the release."""
    run(capsys, "role", "create", "core", "rev")
    run(capsys, "role", "claim", "core", "rev", "--agent", "amy")
    point = json.loads(all_event_files(project)[-1].read_text())["event_id"]
    run(capsys, "role", "release", "core", "rev", "--agent", "amy")
    assert show(capsys, "core", "rev", "--as-of", point)["holder"] == "amy"
    assert show(capsys, "core", "rev")["holder"] is None


def test_role_documents_rebuild_byte_for_byte(project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Documents written incrementally equal those of a full rebuild from nothing."""
    for role in ("rev", "ops"):
        run(capsys, "role", "create", "core", role, "--description", f"the {role} role")
    run(capsys, "role", "claim", "core", "rev", "--agent", "amy", "--ttl", "1m")
    run(capsys, "checkpoint", "core", "--role", "ops", "--ref", "x/y.json")
    later(monkeypatch, 120)
    run(capsys, "role", "claim", "core", "rev", "--agent", "bo")
    run(capsys, "role", "release", "core", "rev", "--agent", "bo")
    folder = project / STORE / "team"
    before = {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}
    assert len(before) == 2
    shutil.rmtree(folder)
    shutil.rmtree(project / STORE / "local" / "models")
    assert run(capsys, "rebuild")[0] == 0
    assert {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()} == before


HOSTILE = ["../x", "a/b", "a\x00b", "a\x1b[2Jb", "..", "x" * 10_000_000]


@pytest.mark.parametrize("bad", HOSTILE, ids=["dotdot", "slash", "nul", "control", "dots", "10MB"])
@pytest.mark.parametrize("where", ["team", "role", "agent"])
def test_hostile_names_write_nothing(project: Path, capsys: Capture, bad: str, where: str) -> None:
    """Path tricks, NUL, control characters and 10 MB names: exit 2, one short line, nothing written anywhere."""
    run(capsys, "role", "create", "core", "rev")
    outside = sorted(str(path) for path in project.parent.rglob("*") if ".agent" not in path.parts)
    store = sorted(str(path) for path in (project / STORE).rglob("*") if "local" not in path.parts)
    names = {"team": "core", "role": "rev", "agent": "amy", where: bad}
    commands = [["role", "claim", names["team"], names["role"], "--agent", names["agent"]]]
    if where != "agent":
        commands += [["role", "create", names["team"], names["role"]], ["role", "show", names["team"], names["role"]],
                     ["checkpoint", names["team"], "--role", names["role"], "--ref", "x.json"]]
    for command in commands:
        code, _, err = run(capsys, *command)
        assert code == EXIT_USAGE and err.count("\n") == 1 and len(err) < 300, command
    assert sorted(str(path) for path in project.parent.rglob("*") if ".agent" not in path.parts) == outside
    assert sorted(str(path) for path in (project / STORE).rglob("*") if "local" not in path.parts) == store


def test_a_huge_description_is_refused(project: Path, capsys: Capture) -> None:
    """A 10 MB description: exit 2, one line, nothing written."""
    code, _, err = run(capsys, "role", "create", "core", "rev", "--description", "d" * 10_000_000)
    assert code == EXIT_USAGE and err.count("\n") == 1 and all_event_files(project) == []


def test_eight_processes_claim_one_role(project: Path, capsys: Capture) -> None:
    """Eight real processes claim one role at once: exactly one holds it, seven are refused, one claim event."""
    run(capsys, "role", "create", "core", "rev")
    env = {key: value for key, value in os.environ.items() if not key.startswith("CONTINUITY_")}
    procs = [subprocess.Popen([sys.executable, "-m", "continuity", "role", "claim", "core", "rev", "--agent",
                               f"agent{index}"], cwd=project, env=env, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for index in range(8)]
    results = [(proc.wait(timeout=60), proc.stdout.read() if proc.stdout else "") for proc in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0] + [EXIT_ROLE_CONFLICT] * 7, results
    winner = next(out.split()[4].rstrip(",") for code, out in results if code == 0)
    assert show(capsys, "core", "rev")["holder"] == winner
    claims = [json.loads(path.read_text()) for path in all_event_files(project)]
    assert [event["agent"] for event in claims if event["kind"] == "role.claimed"] == [winner]


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return World(tmp_path)


def test_two_offline_clones_agree_on_one_holder_after_sync(world: World, capsys: Capture) -> None:
    """Both clones claim offline; after syncing through a bare remote, both show the same winner (first in
    log order) with byte-identical role documents, and the loser sees its lost claim."""
    a, b = str(world.a), str(world.b)
    run(capsys, "role", "create", "core", "rev", "--root", a)
    for root in (a, b):
        assert run(capsys, "sync", "--root", root)[0] == 0
    assert run(capsys, "role", "claim", "core", "rev", "--agent", "bo", "--root", b)[0] == 0
    assert run(capsys, "role", "claim", "core", "rev", "--agent", "amy", "--root", a)[0] == 0
    assert show(capsys, "core", "rev", "--root", b)["holder"] == "bo"  # offline, b believes it holds
    for root in (a, b, a):
        assert run(capsys, "sync", "--root", root)[0] == 0
    claims = sorted(path.name for path in all_event_files(world.a)
                    if json.loads(path.read_text())["kind"] == "role.claimed")
    assert len(claims) == 2
    first = json.loads(next(path for path in all_event_files(world.a) if path.name == claims[0]).read_text())
    shown = [show(capsys, "core", "rev", "--root", root) for root in (a, b)]
    assert shown[0]["holder"] == shown[1]["holder"] == first["agent"] == "bo"
    assert shown[0]["history"] == shown[1]["history"]
    lost = [note for note in shown[0]["history"] if note["action"] == "claim-lost"]
    assert [note["agent"] for note in lost] == ["amy"]
    assert doc(world.a) == doc(world.b)
    code, out, _ = run(capsys, "role", "show", "core", "rev", "--root", a)
    assert code == 0 and "amy claim-lost: held by bo" in out


def test_a_role_two_offline_clones_created_keeps_the_first_and_notes_the_other(world: World, capsys: Capture) -> None:
    """A clone refuses to create a role it knows; two offline clones each created it. After sync both show the
    first creation's description and note the other as `create-ignored`, with the description it gave (it was
    kept nowhere a person could see, though its event is in the log)."""
    a, b = str(world.a), str(world.b)
    for root in (a, b):
        assert run(capsys, "sync", "--root", root)[0] == 0
    assert run(capsys, "role", "create", "core", "rev", "--agent", "amy", "--description", "reviews backend PRs",
               "--root", a)[0] == 0
    assert run(capsys, "role", "create", "core", "rev", "--agent", "bo", "--description", "must hold weekly",
               "--root", b)[0] == 0
    for root in (a, b, a):
        assert run(capsys, "sync", "--root", root)[0] == 0
    created = sorted((path.name, json.loads(path.read_text())) for path in all_event_files(world.a)
                     if json.loads(path.read_text())["kind"] == "role.created")
    assert len(created) == 2
    first, second = created[0][1], created[1][1]
    shown = [show(capsys, "core", "rev", "--root", root) for root in (a, b)]
    assert shown[0] == shown[1] and shown[0]["description"] == first["description"]
    notes = [(note["agent"], note["action"], note["detail"]) for note in shown[0]["history"]]
    assert notes == [(first["agent_id"], "created", ""),
                     (second["agent_id"], "create-ignored", f"its description: {second['description']}")]
    assert doc(world.a) == doc(world.b)


def test_another_projects_team_events_never_write_this_projects_documents(project: Path, capsys: Capture) -> None:
    """`team/<team>/roles/<role>.md` and the snapshot documents have no project in their path: a branch carrying
    another project's team events (clones of differently named projects on one remote) wrote that project's
    holder over this one's, so `role show` and the document disagreed. Only this project's events write them."""
    from continuity.core.store import Store
    from events.handoff import HandoffCreated
    from events.team import RoleClaimed, RoleCreated, SnapshotTaken

    assert run(capsys, "role", "create", "core", "rev")[0] == 0
    assert run(capsys, "role", "claim", "core", "rev", "--agent", "amy")[0] == 0
    assert run(capsys, "snapshot", "core", "amy", "t1", "--objective", "ours")[0] == 0
    ours = doc(project)
    snapshot_path = project / STORE / "team" / "core" / "member" / "amy" / "continuity" / "t1" / "latest.json"
    snapshot = snapshot_path.read_text()
    log = Store(project).open_log()
    log.append_many([RoleCreated(project="other", team="core", role="rev"),
                     RoleClaimed(project="other", team="core", role="rev", agent="bo", ttl_seconds=3600),
                     SnapshotTaken(project="other", team="core", agent="amy", task="t1", objective="theirs"),
                     HandoffCreated(project="other", handoff_id="H-theirs", to_agent="bo", message="m")])
    for args in (("status",), ("rebuild",)):
        assert run(capsys, *args)[0] == 0
        assert doc(project) == ours and 'holder: "amy"' in ours
        assert snapshot_path.read_text() == snapshot
    assert show(capsys, "core", "rev")["holder"] == "amy"
    assert not (project / STORE / "handoffs" / "H-theirs.json").exists()  # this project lists no such handoff


def test_documents_that_cannot_be_written_are_named_in_the_warning(project: Path, capsys: Capture) -> None:
    """A `team` folder that is a file: the snapshot and the role are saved (exit 0) and each warning names the file
    it could not write, relative to the store (it said only "Not a directory")."""
    (project / STORE / "team").write_text("not a folder\n")
    code, _, err = run(capsys, "snapshot", "core", "ash", "t1", "--objective", "o")
    assert code == 0
    assert err == "continuity: warning: team documents not written: Not a directory " \
        "(team/core/member/ash/continuity/t1/latest.json)\n"
    code, _, err = run(capsys, "role", "create", "core", "ops")
    assert code == 0
    assert "continuity: warning: role documents not written: Not a directory (team/core/roles/ops.md)\n" in err
    code, _, err = run(capsys, "resume", "core", "ash")  # the team model's own writer, catching up
    assert code == 0 and "team documents not written: Not a directory (team/core/member/ash/" in err
