"""`continuity park` through the real CLI: the loud failures, one snapshot per held role, the handoff doctrine
against a real bare remote, hostile input, rebuild identity and the automatic sync trigger."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from continuity.core.errors import EXIT_ROLE_CONFLICT, EXIT_SECRET, EXIT_USAGE, EXIT_WRITE_FAILED
from events import clock
from tests.helpers import all_event_files, cli_process

Capture = pytest.CaptureFixture[str]
STORE = Path(".agent", "runtime-continuity")
PREFLIGHT = "## Operator pre-flight\n- [ ] Write permission: the successor can push (git push --dry-run)"
NOTHING = "park: amy holds no fresh roles in team/core — CHECKPOINT NOT WRITTEN because there was nothing to park\n"
UNREADABLE = ("park: could not determine which fresh roles amy holds in team/core (role state unreadable, not empty) "
              "— CHECKPOINT NOT WRITTEN. Nothing was parked; retry before ending the session.\n")


def run(capsys: Capture, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def roles(capsys: Capture, *names: str, agent: str = "amy") -> None:
    for name in names:
        assert run(capsys, "role", "create", "core", name)[0] == 0
        assert run(capsys, "role", "claim", "core", name, "--agent", agent)[0] == 0


def ref_of(capsys: Capture, role: str) -> Any:
    return json.loads(run(capsys, "role", "show", "core", role, "--json")[1])["checkpoint_ref"]


def test_nothing_held_is_loud(project: Path, capsys: Capture) -> None:
    """No fresh role: exit 2, the banner on stderr, nothing written; --role names the role in the banner."""
    assert run(capsys, "park", "core", "--agent", "amy") == (2, "", NOTHING)
    roles(capsys, "rev", agent="bo")
    before = all_event_files(project)
    assert run(capsys, "park", "core", "--agent", "amy") == (2, "", NOTHING)
    code, _, err = run(capsys, "park", "core", "--agent", "amy", "--role", "rev")
    assert code == 2 and err == ("park: amy does not hold fresh role rev in team/core — CHECKPOINT NOT WRITTEN "
                                 "because there was nothing to park\n")
    assert all_event_files(project) == before


def test_an_expired_lease_parks_nothing(project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lease that expired is not held: exit 2."""
    roles(capsys, "rev")
    import continuity.core.store as store_module

    real = store_module.now_us
    monkeypatch.setattr(store_module, "now_us", lambda: real() + 3601 * 1_000_000)
    assert run(capsys, "park", "core", "--agent", "amy") == (2, "", NOTHING)


def test_two_roles_two_snapshots_two_refs(project: Path, capsys: Capture) -> None:
    """Two held roles: a snapshot each (task role-<slug>, default objective), each role's ref points at it."""
    roles(capsys, "rev", "ops")
    code, out, err = run(capsys, "park", "core", "--agent", "amy", "--next", "merge #12")
    paths = {role: f"team/core/member/amy/continuity/role-{role}/latest.json" for role in ("ops", "rev")}
    assert (code, err) == (0, "") and out == "".join(f"parked {role} -> {path}\n" for role, path in paths.items())
    for role, path in paths.items():
        document = json.loads((project / STORE / path).read_text())
        assert document["task"] == f"role-{role}" and document["next_actions"] == ["merge #12"]
        assert document["objective"] == f"parked role {role} at session exit"
        assert ref_of(capsys, role) == path
    code, out, _ = run(capsys, "checkpoint", "core", "--role", "rev")
    assert code == 0 and "Resume: role-rev" in out and "    - merge #12\n" in out


@pytest.mark.parametrize("objective", ["", "   ", "\t", " \n "])
def test_a_blank_objective_parks_with_the_default(project: Path, capsys: Capture, objective: str) -> None:
    """`--objective` of spaces or a tab (a session-exit script's variable) was refused as an empty snapshot
    objective, exit 2 under `snapshot`'s name, without the banner, and nothing was parked; only "" took the
    default. Any blank objective takes the default now."""
    roles(capsys, "rev")
    code, out, err = run(capsys, "park", "core", "--agent", "amy", "--objective", objective)
    path = "team/core/member/amy/continuity/role-rev/latest.json"
    assert (code, err) == (0, "") and out == f"parked rev -> {path}\n", err
    assert json.loads((project / STORE / path).read_text())["objective"] == "parked role rev at session exit"


def test_a_role_whose_park_slug_meets_another_is_refused_at_create(project: Path, capsys: Capture) -> None:
    """`a@b` beside `a:b` (both `role-a-b`), `a.` beside `a`: refused with the role-conflict code, nothing written;
    a role that meets none keeps seed 000's `role-<slug>`."""
    roles(capsys, "a:b", "a")
    before = all_event_files(project)
    for name in ("a@b", "a+b", "a-b", "a."):
        code, _, err = run(capsys, "role", "create", "core", name)
        assert code == EXIT_ROLE_CONFLICT and "would park to the same snapshot" in err, (name, err)
    assert all_event_files(project) == before
    assert run(capsys, "park", "core", "--agent", "amy", "--role", "a:b")[0] == 0
    assert ref_of(capsys, "a:b") == "team/core/member/amy/continuity/role-a-b/latest.json"


def test_synced_roles_whose_slugs_meet_park_to_their_own_snapshots(project: Path, capsys: Capture) -> None:
    """Replicas that each created one of `a:b`, `a@b`, `a-b` (and two long names) before a sync: each role parks to
    its own snapshot and its checkpoint resumes its own objective; the role whose name is a slug keeps `role-a-b`."""
    from continuity.core.store import find_store
    from events.team import RoleCreated

    names = ["a:b", "a@b", "a+b", "a-b", "a.", "a", "l" * 127 + "x", "l" * 127 + "y"]
    store = find_store(root=str(project))
    store.open_log().append_many([RoleCreated(project="demo", agent_id="amy", team="core", role=name,
                                              message=f"role core/{name} created") for name in names])
    for name in names:
        assert run(capsys, "role", "claim", "core", name, "--agent", "amy")[0] == 0
    for name in names:
        assert run(capsys, "park", "core", "--agent", "amy", "--role", name, "--objective", f"goal of {name}")[0] == 0
    refs = {name: ref_of(capsys, name) for name in names}
    assert len(set(refs.values())) == len(names)
    for name in names:
        document = json.loads((project / STORE / refs[name]).read_text())
        assert document["objective"] == f"goal of {name}"
        assert f"  objective: goal of {name}\n" in run(capsys, "checkpoint", "core", "--role", name)[1]
        assert run(capsys, "resume", "core", "amy", document["task"])[1].startswith(f"Resume: {document['task']} ")
    assert refs["a-b"] == "team/core/member/amy/continuity/role-a-b/latest.json"
    assert refs["a"] == "team/core/member/amy/continuity/role-a/latest.json"


def test_role_narrows_to_one(project: Path, capsys: Capture) -> None:
    """--role R parks only R; the other role's checkpoint_ref is untouched."""
    roles(capsys, "rev", "ops")
    code, out, _ = run(capsys, "park", "core", "--agent", "amy", "--role", "ops", "--objective", "ship ops")
    assert code == 0 and out == "parked ops -> team/core/member/amy/continuity/role-ops/latest.json\n"
    assert ref_of(capsys, "rev") is None
    kinds = [json.loads(path.read_text())["kind"] for path in all_event_files(project)]
    assert kinds.count("snapshot.taken") == 1 and kinds.count("role.checkpointed") == 1


def test_unreadable_role_state_exits_1(project: Path, capsys: Capture) -> None:
    """An event that cannot be read: role state unknown, not empty: exit 1 and the retry banner, nothing written."""
    roles(capsys, "rev")
    newest = all_event_files(project)[-1]
    stamp, node, _ = newest.name.split("-")
    later = stamp[:-6] + f"{int(stamp[-6:]) + 1:06d}"
    (newest.parent / f"{later}-{node}-{'0' * 12}.json").write_bytes(b'{"kind": "role.claimed", "team": ')
    before = all_event_files(project)
    code, out, err = run(capsys, "park", "core", "--agent", "amy")
    assert code == 1 and out == "" and err.endswith(
        "park: could not determine which fresh roles amy holds in team/core (role state unreadable, not empty) "
        "— CHECKPOINT NOT WRITTEN. Nothing was parked; retry before ending the session.\n")
    assert all_event_files(project) == before


def _files_under(*folders: Path) -> list[str]:
    """Every file below the folders, symlinks not followed."""
    return sorted(os.path.join(parent, name) for folder in folders
                  for parent, _, names in os.walk(folder, followlinks=False) for name in names)


@pytest.mark.parametrize("link", ["to a folder outside the store", "dangling"])
def test_a_day_folder_that_is_a_symlink_exits_1(project: Path, capsys: Capture, tmp_path: Path, link: str) -> None:
    """A symlinked day folder (its events not read): role state unknown, not empty: exit 1, nothing written."""
    roles(capsys, "rev")
    events = project / STORE / "events"
    outside = tmp_path / "outside"
    if link == "dangling":
        (events / "20200101").symlink_to(tmp_path / "nowhere")
        named = "20200101"
    else:
        (named,) = [day.name for day in events.iterdir() if day.is_dir() and day.name.isdigit()]
        (events / named).rename(outside)
        (events / named).symlink_to(outside)
    before = _files_under(project / STORE, outside)
    done = cli_process("park", "core", "--agent", "amy", cwd=project)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"continuity: warning: events/{named} is a symlink: its events are not read (see "
                           f"`continuity verify`)\n{UNREADABLE}")
    assert _files_under(project / STORE, outside) == before


def test_a_stray_file_named_like_a_day_is_no_part_of_the_log(project: Path, capsys: Capture) -> None:
    """A regular file named like a day holds no events: park parks (the read says it is there; verify names it)."""
    roles(capsys, "rev")
    (project / STORE / "events" / "20200101").write_text("not a folder")
    done = cli_process("park", "core", "--agent", "amy", cwd=project)
    assert done.returncode == 0 and done.stderr.count("events/20200101 is no folder: it holds no events") == 1, (
        done.stderr)  # once, though park's catch-ups each said it
    assert done.stdout == "parked rev -> team/core/member/amy/continuity/role-rev/latest.json\n"


def test_a_failed_write_is_loud(project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """fsync failing: exit 5 with CHECKPOINT NOT WRITTEN, nothing written."""
    import errno

    roles(capsys, "rev")
    before = all_event_files(project)

    def broken_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    code, _, err = run(capsys, "park", "core", "--agent", "amy")
    monkeypatch.undo()
    assert code == EXIT_WRITE_FAILED and "CHECKPOINT NOT WRITTEN" in err and all_event_files(project) == before


@pytest.mark.parametrize("planted", ["a folder", "a link"])
def test_a_lock_file_that_cannot_be_opened_is_loud(project: Path, capsys: Capture, planted: str) -> None:
    """The store's lock file planted as a folder or a link: park said only "unsafe store" with exit 6. Seed 000: park
    is loud when it cannot write its checkpoint; docs/team.md: a lock file that cannot be opened is exit 5 with the
    banner. Nothing written, and the MCP tool's exit codes are those park documents."""
    roles(capsys, "rev")
    before = all_event_files(project)
    lock = project / STORE / "local" / "lock"
    lock.unlink(missing_ok=True)
    if planted == "a folder":
        lock.mkdir()
    else:
        lock.symlink_to(project / "elsewhere")
    code, out, err = run(capsys, "park", "core", "--agent", "amy")
    assert code == EXIT_WRITE_FAILED and out == "", (code, err)
    assert "CHECKPOINT NOT WRITTEN" in err and "local/lock" in err and len(err.splitlines()) == 1, err
    assert all_event_files(project) == before and not (project / "elsewhere").exists()


@pytest.mark.parametrize(("flag", "value"), [("team", "../x"), ("team", "a/b"), ("agent", "a\x00b"),
                                             ("role", "../../etc"), ("agent", "x" * 10_000_000),
                                             ("role", "a\x1b[2J")])
def test_hostile_names(project: Path, capsys: Capture, flag: str, value: str) -> None:
    """Path tricks, NUL, control characters, 10 MB names: exit 2, one short line, nothing written anywhere."""
    roles(capsys, "rev")
    before = sorted(str(path) for path in project.parent.rglob("*") if "local" not in path.parts)
    names = {"team": "core", "agent": "amy", "role": "rev", flag: value}
    code, _, err = run(capsys, "park", names["team"], "--agent", names["agent"], "--role", names["role"])
    assert code == EXIT_USAGE and err.count("\n") == 1 and len(err) < 300
    assert sorted(str(path) for path in project.parent.rglob("*") if "local" not in path.parts) == before


def test_huge_objective_and_secrets_are_refused(project: Path, capsys: Capture) -> None:
    """A 10 MB objective (exit 2) or a token in --next (exit 4): nothing written."""
    roles(capsys, "rev")
    before = all_event_files(project)
    assert run(capsys, "park", "core", "--agent", "amy", "--objective", "o" * 10_000_000)[0] == EXIT_USAGE
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    assert run(capsys, "park", "core", "--agent", "amy", "--next", f"use {token}")[0] == EXIT_SECRET
    assert all_event_files(project) == before


def test_park_rebuilds_byte_for_byte(project: Path, capsys: Capture) -> None:
    """Snapshot documents, pointers and role documents written by park equal a full rebuild's."""
    roles(capsys, "rev", "ops")
    run(capsys, "park", "core", "--agent", "amy")
    run(capsys, "park", "core", "--agent", "amy", "--role", "rev", "--objective", "again")
    folder = project / STORE / "team"
    before = {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}
    assert len(before) == 5
    shutil.rmtree(folder)
    shutil.rmtree(project / STORE / "local" / "models")
    assert run(capsys, "rebuild")[0] == 0
    assert {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()} == before


def test_sync_after_park_starts_a_background_sync(project: Path, capsys: Capture) -> None:
    """With `sync_after: ["park"]`, a park starts `continuity sync` (its outcome in local/sync.log)."""
    config = project / STORE / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "sync_after": ["park"]}))
    roles(capsys, "rev")
    assert not (project / STORE / "local" / "sync.log").exists()
    assert run(capsys, "park", "core", "--agent", "amy")[0] == 0
    assert (project / STORE / "local" / "sync.log").exists()


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def remote(tmp_path: Path) -> tuple[Path, str, str]:
    """A real bare remote holding one pushed commit on main, and a second commit that was never pushed."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(bare), str(work))
    git(work, "commit", "-q", "--allow-empty", "-m", "pushed")
    git(work, "push", "-q", "origin", "HEAD:main")
    pushed = git(work, "rev-parse", "HEAD")
    git(work, "commit", "-q", "--allow-empty", "-m", "local only")
    return bare, pushed, git(work, "rev-parse", "HEAD")


def test_handoff_refuses_a_commit_the_remote_lacks(project: Path, capsys: Capture,
                                                   remote: tuple[Path, str, str]) -> None:
    """--handoff with a claimed commit not on the bare remote: exit 3, the finding, nothing written."""
    bare, _, unpushed = remote
    roles(capsys, "rev")
    before = all_event_files(project)
    code, out, err = run(capsys, "park", "core", "--agent", "amy", "--handoff", "--next", PREFLIGHT,
                         "--artifact", f"{bare}#main@{unpushed}")
    lines = err.splitlines()
    assert code == 3 and out == "" and len(lines) == 2
    assert lines[0].startswith("park: handoff check: artifact ") and f"not the claimed {unpushed}" in lines[0]
    assert "CHECKPOINT NOT WRITTEN" in lines[1] and all_event_files(project) == before


def test_handoff_accepts_a_verified_push(project: Path, capsys: Capture, remote: tuple[Path, str, str]) -> None:
    """--handoff with the commit the remote really holds at that ref, the checklist and the role doc: parked."""
    bare, pushed, _ = remote
    roles(capsys, "rev")
    code, out, err = run(capsys, "park", "core", "--agent", "amy", "--handoff", "--next", PREFLIGHT,
                         "--artifact", f"{bare}#refs/heads/main@{pushed}")
    assert (code, err) == (0, "") and out.startswith("parked rev -> ")


def test_handoff_reads_a_remote_holding_a_ref_name_that_is_not_utf8(project: Path, capsys: Capture,
                                                                     remote: tuple[Path, str, str]) -> None:
    """A ref named with a byte that is not UTF-8 (git allows it) among the remote's: the claim is still checked
    (parked); it was an internal error (exit 70) reading `git ls-remote`'s output."""
    bare, pushed, _ = remote
    subprocess.run([b"git", b"-C", str(bare).encode(), b"update-ref", b"refs/heads/\xff/main", pushed.encode()],
                   check=True, capture_output=True)
    roles(capsys, "rev")
    code, out, err = run(capsys, "park", "core", "--agent", "amy", "--handoff", "--next", PREFLIGHT,
                         "--artifact", f"{bare}#main@{pushed}")
    assert (code, err) == (0, "") and out.startswith("parked rev -> ")


def test_handoff_accepts_import_not_done_with_a_recipe(project: Path, capsys: Capture,
                                                       remote: tuple[Path, str, str]) -> None:
    """An unpushed claim is fine when the snapshot says IMPORT NOT DONE with the literal commands."""
    bare, _, unpushed = remote
    roles(capsys, "rev")
    recipe = f"IMPORT NOT DONE: run `git push {bare} {unpushed}:refs/heads/main`; needs write access from ops"
    code, _, err = run(capsys, "park", "core", "--agent", "amy", "--handoff", "--next", PREFLIGHT,
                       "--open-question", recipe, "--artifact", f"{bare}#main@{unpushed}")
    assert (code, err) == (0, "")


def test_handoff_findings_each_on_a_line(project: Path, capsys: Capture, remote: tuple[Path, str, str]) -> None:
    """No checklist, two homes, a missing role document, an unreachable remote: one line each, exit 3."""
    _, pushed, _ = remote
    roles(capsys, "rev")
    (project / STORE / "team" / "core" / "roles" / "rev.md").unlink()
    code, _, err = run(capsys, "park", "core", "--agent", "amy", "--handoff",
                       "--artifact", "https://a.invalid/r.git or https://b.invalid/r.git",
                       "--artifact", f"{project.parent / 'missing.git'}#main@{pushed}")
    findings = [line for line in err.splitlines() if line.startswith("park: handoff check: ")]
    assert code == 3 and len(findings) == 4
    assert any("could not read" in line for line in findings) and any("more than one home" in line
                                                                       for line in findings)
    assert any("roles/rev.md is missing (the log holds the role: `continuity rebuild` writes it again)" in line
               for line in findings) and "pre-flight" in findings[-1]
    assert run(capsys, "rebuild")[0] == 0  # the remedy the finding gives
    assert (project / STORE / "team" / "core" / "roles" / "rev.md").is_file()
    code, _, err = run(capsys, "park", "core", "--agent", "amy", "--handoff", "--next", PREFLIGHT)
    assert (code, err) == (0, "")


def test_a_roles_history_reads_in_the_order_things_were_done_after_a_fast_clock(
        project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a teammate's fast clock, a claim was noted at its writer's clock and the creation, renewal and
    release beside it at their stamps, two hours ahead: the history read claims before the role existed. Every
    entry is noted at its writer's clock now."""
    import time

    import continuity.core.store as store_module

    real = store_module.now_us
    with monkeypatch.context() as fast:
        fast.setattr(store_module, "now_us", lambda: real() + 2 * 3600 * 1_000_000)
        assert run(capsys, "log", "from the fast machine")[0] == 0
    for args in (("create", "core", "rev"), ("claim", "core", "rev", "--agent", "amy", "--ttl", "4h"),
                 ("renew", "core", "rev", "--agent", "amy", "--ttl", "1h"), ("release", "core", "rev", "--agent",
                 "amy"), ("claim", "core", "rev", "--agent", "amy", "--ttl", "1h")):
        assert run(capsys, "role", *args)[0] == 0, args
    history = json.loads(run(capsys, "role", "show", "core", "rev", "--json")[1])["history"]
    assert [note["action"] for note in history] == ["created", "claimed", "renewed", "released", "claimed"]
    times = [note["at"] for note in history]
    assert times == sorted(times) and all(abs(clock.parse_iso(at) / 1e6 - time.time()) < 600 for at in times), times
