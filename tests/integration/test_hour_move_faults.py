"""Moving the first release's hour folders (`events/<day>/<HH>/` into `events/<day>/`) under I/O errors and kill -9.

Each system call of the move (the link into the day folder, the day folder's fsync, the unlink of the
hour copy, the rmdir of the hour folder) fails with a real errno (tests/injected.py). Whatever fails,
a read lists every event once or warns of the ones it leaves, no traceback reaches the user, and the
next command finishes the move: every event once in its day folder, the hour folder gone, verify ok.
"""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.injected import SyscallFaults, path_contains, run
from tests.integration.test_upgrade_history import CHECKPOINT, DAY, HOUR, LOGGED, _events
from tests.integration.test_upgrade_history import first_release as first_release  # the fixture, shared

MOVE_CALLS = ("link", "fsync", "unlink", "rmdir")
ERRORS = (errno.ENOSPC, errno.EIO, errno.EROFS, errno.EACCES)


def _failing(call: str) -> Callable[[str, Any], bool]:
    """Every `call` of the move fails (fsync takes a descriptor, not a path: every fsync fails)."""
    if call == "fsync":
        return lambda name, first: name == "fsync"
    inside = path_contains(f"events/{DAY}")
    return lambda name, first: name == call and inside(name, first)


def _listed() -> list[str]:
    code, out, err = run(["--json", "events", "list"])
    assert code == 0, err
    return [event["event_id"] for event in json.loads(out)["events"]]


def _finished(root: Path, ids: list[str]) -> None:
    """The move is done: each event once, in its day folder, the hour folder gone, verify ok."""
    assert _listed() == ids
    assert not (_events(root) / DAY / HOUR).exists()
    assert sorted(path.name for path in _events(root).rglob("*.json")) == sorted(  # none left in an hour folder
        path.name for path in _events(root).glob("*/*.json"))  # (a new event goes to today's day folder)
    code, out, _ = run(["--json", "verify"])
    report = json.loads(out)
    assert (code, report["events"], report["roots"]) == (0, len(ids), 1)


@pytest.mark.parametrize("error", ERRORS, ids=errno.errorcode.get)
@pytest.mark.parametrize("call", MOVE_CALLS)
def test_a_listing_whose_move_fails_lists_each_event_once_or_warns(
    first_release: Path, call: str, error: int,
) -> None:
    """`events list` (json and text) and `events show` whose move fails list each event at most once and warn
    of those left in the hour folder (they said `count: 0` with no warning, or 'no event'); the next one moves them."""
    faults = SyscallFaults(error, match=_failing(call), removals=True)
    code, out, err = run(["--json", "events", "list"], faults)
    assert code == 0 and "Traceback" not in err
    document = json.loads(out)
    listed = [event["event_id"] for event in document["events"]]
    assert len(listed) == len(set(listed))
    if listed != [LOGGED, CHECKPOINT]:
        assert any("events/<day>/<HH>/" in warning or f"events/{DAY}/{HOUR}/" in warning
                   for warning in document["warnings"]), document
    code, out, err = run(["events", "list"], faults)
    assert code == 0
    if out.count("RCE-") < 2:
        assert "the first release's layout" in err
    code, _, err = run(["events", "show", CHECKPOINT], faults)
    assert code in (0, 7) and "Traceback" not in err
    if code == 7:
        assert "the first release's layout" in err
    _finished(first_release, [LOGGED, CHECKPOINT])


@pytest.mark.parametrize("error", ERRORS, ids=errno.errorcode.get)
@pytest.mark.parametrize("call", MOVE_CALLS)
def test_an_append_whose_move_fails_writes_after_the_first_releases_head_or_nothing(
    first_release: Path, call: str, error: int,
) -> None:
    """An append that meets the hour folders chains after the checkpoint, or fails closed (exit 5, one line):
    once an event is durable in its day folder, a copy left in its hour folder never stops the write."""
    code, _, err = run(["log", "wired the CLI"], SyscallFaults(error, match=_failing(call), removals=True))
    assert "Traceback" not in err
    if call in ("unlink", "rmdir"):
        assert code == 0, err
    if code:
        assert code == 5 and err.count("\n") == 1 and err.startswith("continuity: error: event not written")
    wrote = [LOGGED, CHECKPOINT] + ([] if code else [_listed()[-1]])
    _finished(first_release, wrote)


MANY = 1500


def _first_release_layout(project: Path) -> tuple[Path, list[str]]:
    """MANY events of one day in the project's store, in an hour folder as the first release kept them."""
    from continuity.core.store import find_store
    from events.filelog import FileEventLog
    from events.worklog import WorkLogged
    from tests.integration.test_long_history import NoSync

    store = find_store(root=str(project))
    log = FileEventLog(store.events_dir, store.local_dir, node=store.node(), clock_us=lambda: 1_785_000_000_000_000,
                       fs=NoSync())
    stored = log.append_many([WorkLogged(project="demo", message=f"edited {i}") for i in range(MANY)])
    log.close()
    day = Path(store.events_dir) / stored[0].name[:8]
    (day / HOUR).mkdir()
    for event in stored:
        os.rename(day / event.name, day / HOUR / event.name)
    os.unlink(Path(store.local_dir) / "head")
    return day, [event.event_id for event in stored]


def test_a_move_killed_at_any_point_is_finished_by_the_next_command(project: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """`events list` killed (-9) while it moves 1,500 events out of an hour folder: the next command lists each
    event exactly once and finishes the move, whatever the point (before, among the links, among the unlinks)."""
    day, ids = _first_release_layout(project)
    template = tmp_path / "template"
    shutil.copytree(project, template, symlinks=True)
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    env = {key: value for key, value in env.items() if not key.startswith("CONTINUITY_")}
    rng = random.Random(7)
    for attempt in range(12):
        shutil.rmtree(project)
        shutil.copytree(template, project, symlinks=True)
        monkeypatch.chdir(project)
        hour = day / HOUR
        threshold = rng.randrange(1, MANY)
        linking = rng.random() < 0.5  # kill once that many are linked into the day folder, or unlinked from the hour
        child = subprocess.Popen([sys.executable, "-m", "continuity", "--json", "events", "list"], cwd=project,
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while child.poll() is None:
            try:
                reached = (len(os.listdir(day)) - 1 >= threshold if linking
                           else len(os.listdir(hour)) <= MANY - threshold)
            except FileNotFoundError:
                reached = True
            if reached:
                break
        child.send_signal(signal.SIGKILL)
        child.wait()
        code, out, err = run(["--json", "events", "list"])
        assert code == 0, (attempt, err)
        assert [event["event_id"] for event in json.loads(out)["events"]] == ids, attempt
        assert not hour.exists()
        assert sorted(path.name for path in day.iterdir()) == sorted(
            path.name for path in (template / day.relative_to(project)).joinpath(HOUR).iterdir())
    code, out, _ = run(["--json", "verify"])
    assert (code, json.loads(out)["events"]) == (0, MANY)


def test_an_hour_copy_that_stays_is_not_counted_as_moved_again(first_release: Path) -> None:
    """With the hour copies impossible to unlink, each command moves nothing more: the first says it moved 2 events
    (verify said 4, sync and status went on saying so at every run) and names the folder that keeps them."""
    faults = SyscallFaults(errno.EACCES, match=_failing("unlink"), removals=True)
    code, out, _ = run(["verify"], faults)
    assert code == 1
    assert "moved 2 event(s)" in out and "moved 4" not in out and f"UNREAD: events/{DAY}/{HOUR}/" in out
    code, _, err = run(["status"], faults)
    assert code == 0 and "moved" not in err and f"events/{DAY}/{HOUR}/ holds files that are not read" in err
    _finished(first_release, [LOGGED, CHECKPOINT])
