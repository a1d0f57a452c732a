"""A store the original seed-004 tool wrote: `init` (or the first `runtime-continuity` write) carries its work
history into the log once, keeps its README, schemas and state.json, and deletes or moves nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from events.base import Summary
from tests.helpers import all_event_files, cli_process

S = Path(".agent") / "runtime-continuity"
TOKEN = "ghp_" + "a1B2c3D4e5" * 4  # secret-shaped, made up


def original_event(stamp: str, kind: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"event_id": f"RCE-{stamp}", "project": "demo", "host": "codex", "agent_id": "amy", "run_id": None,
            "session_id": "S-1", "task_id": None, "mission_id": None, "type": kind, "phase": "build",
            "message": message, "summary": {"done": ["added schema"], "in_progress": None, "next": ["wire CLI"],
                                            "blockers": []},
            "refs": {"files": ["a.py"], "commands": [{"command": "pytest", "exit_code": 0, "summary": ""}],
                     "artifacts": [], "handoffs": []},
            "created_at": f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}T01:02:03.001Z", **extra}


def original_store(root: Path) -> dict[str, bytes]:
    """The original's folder: two events, a file that is no event, an archive, README, schemas, state.json."""
    store = root / S
    (store / "events").mkdir(parents=True)
    (store / "archives").mkdir()
    files = {
        "events/20260723_010203_001-event.json": original_event("20260723_010203_001", "work_log", "first"),
        "events/20260724_010203_001-event.json": original_event("20260724_010203_001", "checkpoint",
                                                                f"second, with token {TOKEN}"),
        "archives/RC-20260724_010203_001.json": {"archive_id": "RC-20260724_010203_001", "project": "demo"},
        "state.json": {"project": "demo", "latest_event": "events/20260724_010203_001-event.json"},
        "event.schema.json": {"title": "the original's event schema"},
        "archive.schema.json": {"title": "the original's archive schema"},
    }
    written = {}
    for name, value in files.items():
        written[name] = json.dumps(value, indent=2, ensure_ascii=False).encode()
        (store / name).write_bytes(written[name])
    written["README.md"] = b"# Runtime Continuity (the original's README, edited by hand)\n"
    written["events/20260725_000000_001-event.json"] = b"{not json"
    for name in ("README.md", "events/20260725_000000_001-event.json"):
        (store / name).write_bytes(written[name])
    return written


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = cli_process(*args, cwd=root, env={"HOME": str(root.parent)})
    assert "Traceback" not in done.stderr
    return done


def log_events(root: Path) -> list[dict[str, Any]]:
    """The log's events (day folders only: the original's flat files stay beside them)."""
    return [json.loads(path.read_bytes()) for path in all_event_files(root) if path.parent.name != "events"]


def test_a_store_of_ours_that_lost_its_config_keeps_nothing_as_the_originals(tmp_path: Path) -> None:
    """`init --repair` of a continuity store whose config.json is gone copied this tool's own README, schemas and
    state.json to local/seed004/ and said it "kept the original's" files; it now keeps nothing and says nothing of an
    original, with or without events (a node id says the store is ours)."""
    for write in (True, False):
        root = tmp_path / f"project-{write}"
        root.mkdir()
        assert run(root, "init", "--project", "keep").returncode == 0
        if write:
            assert run(root, "log", "one").returncode == 0
        (root / S / "config.json").unlink()
        done = run(root, "init", "--repair")
        assert done.returncode == 0 and "original" not in done.stdout, done.stdout
        assert not (root / S / "local" / "seed004").exists()
        assert json.loads((root / S / "config.json").read_text())["project"] == ("keep" if write else "project-False")


def test_init_carries_the_history_once_and_keeps_the_originals(tmp_path: Path) -> None:
    root = tmp_path / "project"
    written = original_store(root)
    done = run(root, "init")
    assert done.returncode == 0, done.stderr
    assert "(project demo)" in done.stdout  # the project the original's events name, not the folder's
    assert "carried 2 work event(s)" in done.stdout and "kept the original's README.md" in done.stdout
    assert "skipped events/20260725_000000_001-event.json: not a seed-004 event" in done.stdout
    events = log_events(root)
    assert [(e["kind"], e["type"], e["message"].split(",")[0]) for e in events] == [
        ("work.logged", "work_log", "first"), ("checkpoint.recorded", "checkpoint", "second")]
    first = events[0]
    assert (first["project"], first["host"], first["agent_id"], first["session_id"], first["phase"]) == (
        "demo", "codex", "amy", "S-1", "build")
    assert first["summary"]["next"] == ["wire CLI"] and first["refs"]["files"] == ["a.py"]
    assert first["refs"]["commands"][0]["command"] == "pytest"
    assert first["note"]["seed004"] == {"file": "events/20260723_010203_001-event.json",
                                        "event_id": "RCE-20260723_010203_001",
                                        "created_at": "2026-07-23T01:02:03.001Z"}
    assert TOKEN not in json.dumps(events) and "[REDACTED:" in events[1]["message"]  # redacted, not refused
    for name in ("README.md", "event.schema.json", "archive.schema.json", "state.json"):
        assert (root / S / "local" / "seed004" / name).read_bytes() == written[name], name
    for name, data in written.items():  # nothing of the original's own events or archives moved or changed
        if name.startswith(("events/", "archives/")):
            assert (root / S / name).read_bytes() == data, name
    again = run(root, "init")
    assert again.returncode == 0 and "carried" not in again.stdout and "skipped" not in again.stdout
    (root / S / "local" / "seed004" / "carried.txt").unlink()  # the machine's note lost: the log's notes say so
    assert "carried" not in run(root, "init").stdout
    assert len(log_events(root)) == 2
    assert run(root, "verify").returncode == 0
    brief = run(root, "resume-bundle").stdout
    assert "wire CLI" in brief and "second" in brief


def test_the_first_runtime_continuity_write_carries_the_history(tmp_path: Path) -> None:
    """The drop-in's first `log` over the original's folder: the old events come first, then the new one;
    `resume-bundle` lists them all as runtime events; the project's .gitignore is not touched."""
    root = tmp_path / "project"
    original_store(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    env["HOME"] = str(tmp_path)

    def compat(*args: str, stderr: str = "") -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-m", "continuity.adapters.compat.runtime_continuity", *args],
                              cwd=root, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stderr == stderr, (done.stdout, done.stderr)
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    # Before any write, the reads list the original's events as the original did (Events(n) of §12: its
    # `*-event.json` files, newest first); they listed none until a write carried them into the log.
    before = compat("resume-bundle", "--project", "demo")["runtime_events"]
    assert sorted(before) == [f".agent/runtime-continuity/events/{name}" for name in (
        "20260723_010203_001-event.json", "20260724_010203_001-event.json", "20260725_000000_001-event.json")]
    assert not (root / S / "config.json").exists()  # a read adopts nothing
    # The write that adopts the folder names the file that is no event, once (it was silent).
    compat("log", "--project", "demo", "--gate", "agent", "--message", "after the switch",
           stderr="runtime-continuity: warning: adopting the original store: skipped events/"
                  "20260725_000000_001-event.json: not a seed-004 event (not JSON: JSON is malformed: object keys "
                  "must be strings (byte 1))\n")
    assert [e["message"].split(",")[0] for e in log_events(root)] == ["first", "second", "after the switch"]
    listed = compat("resume-bundle", "--project", "demo")["runtime_events"]
    assert len(listed) == 3 and all(path.startswith(".agent/runtime-continuity/events/2") for path in listed)
    assert not (root / ".gitignore").exists()
    assert (root / S / "local" / "seed004" / "README.md").is_file()


def test_a_store_without_the_original_adopts_nothing(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    done = run(root, "init", "--project", "demo")
    assert done.returncode == 0 and "carried" not in done.stdout and "kept" not in done.stdout
    assert not (root / S / "local" / "seed004").exists()
    assert log_events(root) == []


def test_an_original_event_the_log_cannot_hold_is_skipped_and_named(tmp_path: Path) -> None:
    """One original event over the log's size limit: the others are carried, it is named as skipped, init exits
    0 (and again later: it is not retried); the drop-in's first write succeeds too."""
    for how in ("init", "compat"):
        root = tmp_path / how
        original_store(root)
        big = original_event("20260723_020000_001", "work_log", "big", note={"blob": "x" * 300_000})
        (root / S / "events" / "20260723_020000_001-event.json").write_text(json.dumps(big))
        if how == "init":
            done = run(root, "init")
            assert done.returncode == 0, done.stderr
            assert "skipped events/20260723_020000_001-event.json: the log cannot hold it" in done.stdout
            assert run(root, "init").returncode == 0
        else:
            env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
            env["HOME"] = str(tmp_path)
            done = subprocess.run([sys.executable, "-m", "continuity.adapters.compat.runtime_continuity", "log",
                                   "--project", "demo", "--gate", "agent", "--message", "new"],
                                  cwd=root, env=env, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stdout
            assert "skipped events/20260723_020000_001-event.json: the log cannot hold it" in done.stderr
            assert len(done.stderr.splitlines()) == 2 and done.stderr.startswith("runtime-continuity: warning: ")
            again = subprocess.run([sys.executable, "-m", "continuity.adapters.compat.runtime_continuity", "log",
                                    "--project", "demo", "--gate", "agent", "--message", "later"],
                                   cwd=root, env=env, capture_output=True, text=True, timeout=60)
            assert again.returncode == 0 and again.stderr == "", again.stderr  # said once, not on every write
        messages = [e["message"].split(",")[0] for e in log_events(root)]
        assert messages[:2] == ["first", "second"] and "big" not in messages


def test_first_writes_at_once_carry_the_history_once(tmp_path: Path) -> None:
    """Four `runtime-continuity log` processes start on the original's folder at once: each original event is
    carried exactly once, and every new event is there."""
    for trial in range(3):
        root = tmp_path / f"t{trial}"
        original_store(root)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
        env["HOME"] = str(tmp_path)
        procs = [subprocess.Popen([sys.executable, "-m", "continuity.adapters.compat.runtime_continuity", "log",
                                   "--project", "demo", "--gate", "agent", "--message", f"m{i}"],
                                  cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for i in range(4)]
        assert [proc.wait(timeout=120) for proc in procs] == [0] * 4
        messages = sorted(e["message"].split(",")[0] for e in log_events(root))
        assert messages == ["first", "m0", "m1", "m2", "m3", "second"], (trial, messages)


def test_an_archive_without_a_note_starts_from_the_original_tools_newest_archive(tmp_path: Path) -> None:
    """I10 over the original's folder: `archive` without a note took the log's work state, which never saw the
    original's own archive (a file, no event): an empty goal and next, while `resume-bundle` answered with that
    archive. It starts from that archive's state now, and only the project's later log and checkpoint events move
    it; the events before the archive (already in it) do not; a secret in its text is stored redacted, with a
    warning, and no later archive fails on it."""
    root = tmp_path / "project"
    original_store(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    env["HOME"] = str(tmp_path)

    def compat(*args: str) -> tuple[dict[str, Any], str]:
        done = subprocess.run([sys.executable, "-m", "continuity.adapters.compat.runtime_continuity", *args],
                              cwd=root, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (done.stdout, done.stderr)
        result: dict[str, Any] = json.loads(done.stdout)
        return result, done.stderr

    original = {"archive_id": "RC-20260724_120000_000", "project": "demo", "created_at": "2026-07-24T12:00:00.000Z",
                "source_host": "codex", "target_host": None, "reason": "end of day",
                "state": {"current_goal": "ship the parser", "done": ["added schema", "wrote tests"],
                          "in_progress": "the CLI", "next": ["wire CLI", "release"],
                          "blockers": [f"push needs {TOKEN}"]}}
    for name in ("RC-20260724_120000_000.json", "latest.json"):
        (root / S / "archives" / name).write_text(json.dumps(original, indent=2))
    assert compat("resume-bundle", "--project", "demo")[0]["archive"]["state"]["current_goal"] == "ship the parser"
    # after the original's archive: a log that states next and done, then one that states nothing
    compat("log", "--project", "demo", "--gate", "agent", "--message", "wired the CLI", "--done", "wired CLI",
           "--next", "release")
    compat("log", "--project", "demo", "--gate", "agent", "--message", "a plain note")
    taken, err = compat("archive", "--project", "demo", "--gate", "user")
    state = taken["archive"]["state"]
    assert state["current_goal"] == "ship the parser"
    assert state["done"] == ["added schema", "wrote tests", "wired CLI"]  # appended once each, in order
    assert state["in_progress"] == "the CLI" and state["next"] == ["release"]
    assert state["blockers"] == ["push needs [REDACTED:github-token]"] and TOKEN not in json.dumps(taken)
    assert "looks like a secret" in err
    assert taken["archive"]["restore"]["next_action"] == "release"
    # the next archive starts from this one (an event of the log now): a checkpoint stating next replaces
    # in progress, next and blockers whole, and the original's file is not read again
    compat("checkpoint", "--project", "demo", "--gate", "agent", "--message", "released", "--next", "announce")
    again, err = compat("archive", "--project", "demo", "--gate", "user")
    assert again["archive"]["state"] == {"current_goal": "ship the parser",
                                         "done": ["added schema", "wrote tests", "wired CLI"],
                                         "in_progress": None, "next": ["announce"], "blockers": []}
    assert "looks like a secret" not in err


def _original_with_archive(tmp_path: Path, **state_and_time: Any) -> tuple[Path, Callable[..., dict[str, Any]]]:
    """An original-tool folder whose newest archive (2026-07-24 12:00, after its two events) is given, and a way
    to run the drop-in CLI there (exit 0 asserted)."""
    root = tmp_path / "project"
    original_store(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    env["HOME"] = str(tmp_path)
    archive = {"archive_id": "RC-20260724_120000_000", "project": "demo", "created_at": "2026-07-24T12:00:00.000Z",
               "state": {"current_goal": "ship", "done": ["a"], "in_progress": "ip", "next": ["n1"], "blockers": []}}
    archive.update(state_and_time)
    for name in ("RC-20260724_120000_000.json", "latest.json"):
        (root / S / "archives" / name).write_text(json.dumps(archive))

    def compat(*args: str) -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-m", "continuity.adapters.compat.runtime_continuity", *args],
                              cwd=root, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (done.stdout, done.stderr)
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    return root, compat


def test_the_original_archives_lists_past_an_events_bound_are_cut_not_refused(tmp_path: Path) -> None:
    """The original's lists have no bound: 300 done items or blockers made every note-less archive and host
    switch fail (exit 2, "too many items"), until a later log happened to trim them."""
    _, compat = _original_with_archive(tmp_path, state={
        "current_goal": "ship", "done": [f"step {i}" for i in range(300)], "in_progress": "ip",
        "next": [f"next {i}" for i in range(300)], "blockers": [f"b {i}" for i in range(300)]})
    for args in (["archive", "--project", "demo", "--gate", "user"],
                 ["host-switch", "--project", "demo", "--gate", "user", "--from-host", "codex", "--to-host", "cc"]):
        taken = compat(*args)
        state = (taken["archive"] if args[0] == "archive" else taken["archive"]["archive"])["state"]
        assert len(state["done"]) == 256 and state["done"][-1] == "step 299"  # the newest kept
        assert len(state["blockers"]) == 256 and state["blockers"][0] == "b 0"
        assert state["next"][0] == "next 0"


def test_only_events_after_the_original_archive_that_count_as_now_move_its_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An event stamped far ahead of this clock (a broken clock's, synced in), which the read models leave out,
    stayed in the archive for good; a note that merely names a `seed004` time hid a later log from it."""
    from continuity.core.store import find_store, now_us
    from events.filelog import FileEventLog
    from events.worklog import WorkLogged

    root, compat = _original_with_archive(tmp_path)
    compat("log", "--project", "demo", "--gate", "agent", "--message", "real", "--done", "real done",
           "--next", "wire it", "--note-json", '{"seed004": {"created_at": "2020-01-01T00:00:00Z"}}')
    monkeypatch.chdir(root)
    store = find_store()
    ahead = FileEventLog(store.events_dir, store.local_dir, node=store.node(),
                         clock_us=lambda: now_us() + 200 * 86_400 * 1_000_000)
    ahead.append_many([WorkLogged(project="demo", message="early", summary=Summary(done=("EARLY",),
                                                                                   next=("EARLY next",)))])
    state = compat("archive", "--project", "demo", "--gate", "user")["archive"]["state"]
    assert state["done"] == ["a", "real done"] and state["next"] == ["wire it"]
    assert "EARLY" not in json.dumps(state)


def test_an_original_archive_stamped_ahead_of_this_clock_is_not_where_the_state_starts(tmp_path: Path) -> None:
    """An original archive claiming 2099 made every later log count as before it: the archive kept the file's
    state, and the log's entries were lost for good. It is not trusted, as an early event is not."""
    _, compat = _original_with_archive(tmp_path, created_at="2099-07-24T12:00:00.000Z")
    compat("log", "--project", "demo", "--gate", "agent", "--message", "wired", "--done", "wired CLI",
           "--next", "release")
    state = compat("archive", "--project", "demo", "--gate", "user")["archive"]["state"]
    assert state["current_goal"] is None and "wired CLI" in state["done"] and state["next"] == ["release"]
