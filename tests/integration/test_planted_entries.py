"""Entries planted in events/ under an event's name: a FIFO, a symlink to a device, a huge file.

No writer makes them (events are regular files of at most 256 KiB, linked into place), so
each is hostile input. Readers must not block on one, follow one, or read one whole; the
append path must refuse to chain to one (exit 6, nothing written); `verify` names it; sync
refuses to record it. Every command runs as a real process under a timeout, so a hang fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from events import names
from tests.helpers import all_event_files, cli_process

#: The newest name new events would follow: the last microsecond of the newest day that counts as now (a later day
#: holds events stamped early, which no append follows: names.last_day).
PLANTED = f"{names.last_day(time.time_ns() // 1000)}_235959_999999-deadbeef-0123456789ab.json"
OLD = "20000101_000000_000001-deadbeef-0123456789ab.json"


def fifo(path: Path) -> None:
    os.mkfifo(path)


def device_link(path: Path) -> None:
    path.symlink_to("/dev/zero")


def huge(path: Path) -> None:
    path.write_bytes(b"{" + b" " * (3 << 20) + b"}")


PLANTERS: dict[str, Callable[[Path], None]] = {"fifo": fifo, "symlink to /dev/zero": device_link,
                                               "3 MiB file": huge}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    assert cli_process("init", "--project", "demo", cwd=root).returncode == 0
    assert cli_process("log", "-m", "first", cwd=root).returncode == 0
    return root


def plant(root: Path, name: str, how: Callable[[Path], None]) -> Path:
    day = root / ".agent" / "runtime-continuity" / "events" / name[:8]
    day.mkdir(exist_ok=True)
    how(day / name)
    return day / name


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli_process(*args, cwd=root, env={"HOME": str(root.parent)})


@pytest.mark.parametrize("kind", list(PLANTERS))
def test_an_append_refuses_to_chain_to_a_planted_head(project: Path, kind: str) -> None:
    """The newest name is no readable event: `log` fails closed with exit 6 and one line, nothing written."""
    planted = plant(project, PLANTED, PLANTERS[kind])
    before = [path for path in all_event_files(project) if path != planted]
    for args in (("log", "-m", "second"), ("log", "-m", "typed path", "--log-level", "warning")):
        done = run(project, *args)
        assert done.returncode == 6, done.stderr
        assert done.stderr.count("\n") == 1 and PLANTED in done.stderr and "Traceback" not in done.stderr
        assert "move it out of the store and run `continuity sync`" in done.stderr  # the way back
    assert [path for path in all_event_files(project) if path != planted] == before


@pytest.mark.parametrize("kind", list(PLANTERS))
def test_readers_skip_it_and_verify_names_it(project: Path, kind: str) -> None:
    """Reads fail open (a warning) and never block; verify reports the entry and exits 1."""
    plant(project, OLD, PLANTERS[kind])
    listed = run(project, "events", "list", "--json")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr
    assert [event["message"] for event in json.loads(listed.stdout)["events"]] == ["first"]
    bundle = run(project, "resume-bundle")
    assert bundle.returncode == 0 and "Traceback" not in bundle.stderr
    checked = run(project, "verify")
    assert checked.returncode == 1 and OLD in checked.stdout + checked.stderr
    assert run(project, "log", "-m", "second").returncode == 0  # not the head: appends go on


def test_sync_refuses_to_record_a_planted_entry(project: Path, tmp_path: Path) -> None:
    """`sync` would put the entry on the branch: it refuses, naming it, without blocking."""
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    for args in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "t"],
                 ["remote", "add", "origin", str(bare)]):
        subprocess.run(["git", "-C", str(project), *args], check=True)
    plant(project, OLD, fifo)
    done = run(project, "sync")
    assert done.returncode == 1, done.stderr
    assert OLD in done.stderr and "cannot be read as an event" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("kind", ["not JSON", *PLANTERS])
def test_a_file_under_another_days_name_is_never_taken_as_the_head(project: Path, kind: str) -> None:
    """A file named for a later day, planted in the newest day folder (not where the log keeps that name):
    every write path appends as before, chained to the real newest event, never exit 70 (the head's
    path, made from the name, led to a folder that does not exist); verify names the file."""
    import datetime

    newest = all_event_files(project)[-1]
    later = datetime.datetime.strptime(newest.parent.name, "%Y%m%d") + datetime.timedelta(days=1)
    name = f"{later:%Y%m%d}{PLANTED[8:]}"  # the day after the folder's, whenever the test runs (midnight included)
    planted = newest.parent / name
    if kind == "not JSON":
        planted.write_text("{not json")
    else:
        PLANTERS[kind](planted)
    for args in (("log", "-m", "plain path"), ("log", "-m", "typed path", "--log-level", "warning"),
                 ("snapshot", "core", "ash", "t", "--objective", "o")):
        done = run(project, *args)
        assert done.returncode == 0, (args, done.stderr)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    env["HOME"] = str(project.parent)
    compat = subprocess.run([sys.executable, "-m", "continuity.adapters.compat.runtime_continuity", "log",
                             "--project", "demo", "--gate", "agent"], cwd=project, env=env,
                            capture_output=True, text=True, timeout=60)
    assert compat.returncode == 0, compat.stdout
    events = [path for path in all_event_files(project) if path.name != name]
    assert len(events) == 5
    chain = [json.loads(path.read_bytes()) for path in events]
    for before, after in zip(events, chain[1:], strict=False):
        assert after["prev"] == hashlib.sha256(before.read_bytes()).hexdigest()
    checked = run(project, "verify")
    assert checked.returncode == 1 and name in checked.stdout + checked.stderr


def test_a_real_event_moved_to_another_days_folder_is_named_by_verify_and_sync(project: Path,
                                                                                tmp_path: Path) -> None:
    """One of the log's own events moved by hand into another day's folder: its chain is whole, so verify said
    "intact" (exit 0) while sync silently left it behind and a clone's chain broke. verify now names it with
    where it belongs (exit 1), sync warns that it is not carried, and moving it back makes both content."""
    assert run(project, "log", "-m", "second").returncode == 0
    first = all_event_files(project)[0]
    elsewhere = first.parent.parent / "20200101"
    elsewhere.mkdir()
    moved = elsewhere / first.name
    first.rename(moved)
    checked = run(project, "verify")
    assert checked.returncode == 1
    assert f"MISFILED: events/20200101/{first.name} belongs in events/{first.name[:8]}/" in checked.stdout
    assert "BROKEN: 1 event file(s) filed under another day" in checked.stdout
    data = json.loads(run(project, "verify", "--json").stdout)
    assert data["ok"] is False and data["misfiled"] == [f"events/20200101/{first.name}"]
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    for args in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "t"],
                 ["remote", "add", "origin", str(bare)]):
        subprocess.run(["git", "-C", str(project), *args], check=True)
    warning = (f"1 event file(s) filed under another day than their name's are not carried (first: "
               f"events/20200101/{first.name})")
    for _ in range(2):  # every sync says it, not only the first (the day is listed again)
        synced = run(project, "sync")
        assert synced.returncode == 0, synced.stderr
        assert warning in synced.stdout + synced.stderr
    moved.rename(first)
    assert run(project, "verify").returncode == 0
    synced = run(project, "sync")
    assert synced.returncode == 0 and "not carried" not in synced.stdout + synced.stderr
    listed = subprocess.run(["git", "-C", str(project), "ls-tree", "-r", "--name-only", "continuity"],
                            capture_output=True, text=True, check=True).stdout
    assert f"events/{first.name[:8]}/{first.name}" in listed


#: Names shaped like an event's whose stamp is no real time: hour 25, minute 60, second 60, the 30th of
#: February, month 13. No clock of the log writes one; each is junk, never an event.
IMPOSSIBLE = ["{day}_259999_000000-aaaaaaaa-0123456789ab.json", "{day}_126000_000000-aaaaaaaa-0123456789ab.json",
              "{day}_120060_000000-aaaaaaaa-0123456789ab.json", "20260230_120000_000000-aaaaaaaa-0123456789ab.json",
              "20261301_120000_000000-aaaaaaaa-0123456789ab.json"]


@pytest.mark.parametrize("pattern", IMPOSSIBLE)
def test_a_name_whose_stamp_is_no_real_time_is_junk_for_every_command(project: Path, pattern: str) -> None:
    """A copy of an event under an event-shaped name with an impossible stamp made every write, `status` and
    `verify` exit 70 ("not a stamp"). It is junk now: writes chain to the real newest event, reads leave it
    out and never rebuild over it again and again, `verify` names it (exit 1)."""
    newest = all_event_files(project)[-1]
    planted = newest.parent / pattern.format(day=newest.name[:8])
    planted.write_bytes(newest.read_bytes())
    for args in (("log", "-m", "b"), ("checkpoint", "-m", "c"), ("archive",), ("host-switch", "--from-host", "a",
                 "--to-host", "b"), ("status",), ("events", "list"), ("resume-bundle",)):
        done = run(project, *args)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        assert "rebuilt" not in done.stderr and "internal error" not in done.stderr, (args, done.stderr)
    listed = run(project, "events", "list", "--json")
    real = [path for path in all_event_files(project) if path.name != planted.name]
    assert planted.name[:22] not in listed.stdout and json.loads(listed.stdout)["count"] == len(real)
    checked = run(project, "verify")
    assert checked.returncode == 1 and planted.name in checked.stdout, checked.stdout


@pytest.mark.parametrize("folder", ["00000101", "20261399", "20250229"])
def test_a_folder_named_like_a_day_that_is_no_date_is_named_by_verify(project: Path, folder: str) -> None:
    """A folder `events/00000101/` (the year 0) made `verify` exit 70 ("not a date"); it is no day folder, so
    no reader takes it, and `verify` names it (exit 1) instead of calling the log intact."""
    day = project / ".agent" / "runtime-continuity" / "events" / folder
    day.mkdir()
    (day / f"{folder}_000000_000000-aaaaaaaa-0123456789ab.json").write_text("{}")
    for args in (("log", "-m", "b"), ("status",), ("events", "list"), ("rebuild",)):
        done = run(project, *args)
        assert done.returncode == 0, (args, done.stderr)
    checked = run(project, "verify")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert f"UNREAD: events/{folder}/ is named like a day folder but is no real date" in checked.stdout
    assert json.loads(run(project, "verify", "--json").stdout)["false_day_folders"] == [f"events/{folder}/"]


@pytest.mark.parametrize("damage", ["day folder made a file", "day folder made a FIFO", "day folder renamed",
                                    "day folder moved into another", "event moved out of its day",
                                    "events moved into a folder of a day"])
def test_a_day_folder_replaced_or_renamed_is_named_by_verify(project: Path, damage: str) -> None:
    """A day folder replaced by a file (or FIFO) of its name, or renamed to `<day>.bak`: reads showed an empty log
    and `verify` said "ok: the log is intact". It now names the entry (exit 1, `unread_entries` in --json), with how
    many events a renamed folder holds; a folder holding no event file is left alone."""
    events = project / ".agent" / "runtime-continuity" / "events"
    (events / "notes").mkdir()  # no event file in it: not the log's business
    (events / "notes" / "todo.txt").write_text("x")
    day = next(path for path in events.iterdir() if path.name != "notes")
    if damage == "day folder renamed":
        day.rename(events / f"{day.name}.bak")
        expected, said = f"events/{day.name}.bak/", "holds 1 event file(s) outside any day folder"
    elif damage == "day folder moved into another":
        (events / "old").mkdir()
        day.rename(events / "old" / day.name)
        expected, said = "events/old/", "holds 1 event file(s) outside any day folder"
    elif damage == "events moved into a folder of a day":  # verify said intact: no read takes them, none said so
        (day / "20200101").mkdir()
        (day / "07").mkdir()  # an hour folder of the first release: reads move its events into the day
        event = next(path for path in day.iterdir() if path.is_file())
        event.rename(day / "20200101" / event.name)
        expected, said = f"events/{day.name}/20200101/", "holds 1 event file(s) outside any day folder"
    elif damage == "event moved out of its day":
        event = next(day.iterdir())
        event.rename(events / event.name)
        expected, said = f"events/{event.name}", "is an event file outside any day folder"
    else:
        for path in day.iterdir():
            path.unlink()
        day.rmdir()
        if damage.endswith("FIFO"):
            os.mkfifo(day)
        else:
            day.write_text("junk")
        expected, said = f"events/{day.name}", "is named like a day folder but is no folder"
    checked = run(project, "verify")
    assert checked.returncode == 1 and f"UNREAD: {expected} {said}" in checked.stdout, checked.stdout
    assert "BROKEN: 1 entry(ies) of events/ hold events no reader takes" in checked.stdout
    if damage.startswith("day folder made"):  # reads say what they leave out (they said nothing)
        for args in (("status",), ("resume-bundle",)):
            done = run(project, *args)
            assert done.returncode == 0 and f"{expected} is no folder: it holds no events" in done.stderr, (
                args, done.stderr)
    report = json.loads(run(project, "verify", "--json").stdout)
    assert report["unread_entries"] == [expected] and not report["ok"]


def test_the_recall_index_is_not_rebuilt_over_a_name_of_no_real_time(project: Path) -> None:
    """A junk file under an event-shaped name of hour 25 in the newest day: the recall index stopped before it but
    counted it, so every search rebuilt the whole index ("events arrived in the past")."""
    assert run(project, "log", "-m", "alpha one").returncode == 0
    newest = all_event_files(project)[-1]
    (newest.parent / f"{newest.name[:8]}_250000_000000-deadbeef-0123456789ab.json").write_text("junk")
    for _ in range(3):
        found = run(project, "recall", "alpha")
        assert found.returncode == 0 and "alpha" in found.stdout
        assert "rebuilt" not in found.stderr, found.stderr
