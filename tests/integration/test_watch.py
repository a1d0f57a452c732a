"""watch and events tail --follow: real processes, a real append from another process, SIGINT."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import REPO, cli_process, default_sigint


def start(project: Path, *args: str, warnings: int = 0) -> subprocess.Popen[bytes]:
    """The command running, once it listens; `warnings`: how many warning lines may come before it says so."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    process = subprocess.Popen([sys.executable, "-m", "continuity", *args], cwd=project, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_sigint)
    assert process.stderr is not None
    ready = process.stderr.readline().decode()  # the "watching ..." line comes once it listens
    for _ in range(warnings):
        if not ready.startswith("continuity: warning: "):
            break
        ready = process.stderr.readline().decode()
    assert "watching" in ready or "following" in ready, ready
    assert "\x1b" not in ready
    return process


_buffers: dict[int, bytes] = {}


def read_line(process: subprocess.Popen[bytes], deadline_s: float) -> tuple[bytes, float]:
    """One stdout line and how long it took (gives up at the deadline so a bug cannot hang the suite)."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    start_at = time.monotonic()
    while b"\n" not in _buffers.get(fd, b""):
        left = deadline_s - (time.monotonic() - start_at)
        ready, _, _ = select.select([fd], [], [], max(left, 0))
        assert ready, "no event line before the deadline"
        chunk = os.read(fd, 65536)
        assert chunk, "the process closed its output"
        _buffers[fd] = _buffers.get(fd, b"") + chunk
    line, _, rest = _buffers[fd].partition(b"\n")
    _buffers[fd] = rest
    return line + b"\n", time.monotonic() - start_at


def stop(process: subprocess.Popen[bytes]) -> tuple[int, bytes]:
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=10)
    return process.returncode, err


def test_watch_sees_another_process_append_and_stops_on_sigint(project: Path) -> None:
    """An event appended by another process shows up in watch (JSON line); SIGINT ends it with exit 0."""
    cli_process("log", "before", cwd=project)
    watcher = start(project, "watch", "--json")
    try:
        cli_process("log", "from another process", "--agent", "other", cwd=project)
        line, waited = read_line(watcher, deadline_s=5.0)
        event = json.loads(line)
        assert event["message"] == "from another process" and event["agent_id"] == "other"
        print(f"watch saw the event {waited:.3f} s after the append returned")
    finally:
        code, err = stop(watcher)
    assert code == 0 and b"Traceback" not in err
    state = json.loads((project / ".agent" / "runtime-continuity" / "projects.json").read_text())
    assert state["projects"]["demo"]["events"] == 2  # projections kept current while watching


def test_events_tail_follow(project: Path) -> None:
    """events tail shows the newest events, then follows new ones until SIGINT."""
    for i in range(3):
        cli_process("log", f"old {i}", cwd=project)
    tail = start(project, "events", "tail", "-n", "2", "--follow")
    try:
        first, _ = read_line(tail, 5.0)
        second, _ = read_line(tail, 5.0)
        assert b"old 1" in first and b"old 2" in second
        cli_process("log", "fresh", cwd=project)
        line, _ = read_line(tail, 5.0)
        assert b"fresh" in line
    finally:
        code, err = stop(tail)
    assert code == 0 and b"Traceback" not in err


def test_events_tail_without_follow(project: Path) -> None:
    """events tail -n N prints the newest N and exits."""
    for i in range(5):
        cli_process("log", f"entry {i}", cwd=project)
    result = cli_process("events", "tail", "-n", "2", cwd=project)
    assert result.returncode == 0
    assert [line.split(": ", 1)[1] for line in result.stdout.splitlines()] == ["entry 3", "entry 4"]
    _ = REPO


def test_events_tail_counts_the_events_it_shows_not_the_files_it_meets(project: Path) -> None:
    """A file among the newest that cannot be shown (not JSON; a FIFO planted under an event's name) was counted:
    `tail -n 2` printed one event and a warning. It prints two, as `events list --last 2` does, and says why it
    left the file out."""
    for i in range(4):
        cli_process("log", f"entry {i}", cwd=project)
    day = max((project / ".agent" / "runtime-continuity" / "events").iterdir())
    newest = max(day.iterdir())
    digit = str((int(newest.name[21]) + 1) % 10)  # another microsecond, same node: among the newest two files
    broken = newest.with_name(newest.name[:21] + digit + newest.name[22:])
    broken.write_bytes(b"{not json")
    result = cli_process("events", "tail", "-n", "2", cwd=project)
    assert result.returncode == 0 and broken.name in result.stderr, result.stderr
    assert [line.split(": ", 1)[1] for line in result.stdout.splitlines()] == ["entry 2", "entry 3"]


def with_an_early_event(project: Path, logged: str) -> Path:
    """A new project at `project` with one event `logged` now, then a teammate's event stamped three days ahead."""
    from continuity.core.store import Store
    from events.filelog import FileEventLog
    from events.worklog import WorkLogged

    project.mkdir()
    assert cli_process("init", "--project", "demo", cwd=project).returncode == 0
    cli_process("log", logged, cwd=project)
    store = Store(str(project))
    ahead = FileEventLog(store.events_dir, store.local_dir, node="teammate",
                         clock_us=lambda: time.time_ns() // 1000 + 3 * 86_400_000_000)
    ahead.append(WorkLogged(project="demo", message="from three days ahead"))
    ahead.close()
    return project


def test_following_past_an_event_stamped_early_shows_what_lands_after(tmp_path: Path) -> None:
    """A teammate's event three days ahead sat at the head: `events tail -f` and `watch` started after it (or
    moved past it), so every event appended later, which sorts before it, never showed. They follow from the
    newest event that counts as now; the ready line shows the store's path with stand-ins (it held a raw ESC)."""
    project = with_an_early_event(tmp_path / "p\x1b[31mq", "before")
    for args in (("events", "tail", "-n", "0", "--follow"), ("watch",)):
        follower = start(project, *args, warnings=2)
        try:
            cli_process("log", f"landed while {args[0]} ran", cwd=project)
            line, _ = read_line(follower, 5.0)
            assert f"landed while {args[0]} ran".encode() in line, line
        finally:
            code, err = stop(follower)
        assert code == 0 and b"Traceback" not in err and b"\x1b" not in err, err


def test_following_from_the_newest_lines_skips_an_early_event(tmp_path: Path) -> None:
    """`events tail -n 2 -f` with an early event among the newest: it is not shown as landed, and what lands later
    is."""
    project = with_an_early_event(tmp_path / "p", "old")
    tail = start(project, "events", "tail", "-n", "2", "--follow", warnings=2)
    try:
        first, _ = read_line(tail, 5.0)
        assert b"old" in first
        cli_process("log", "fresh", cwd=project)
        line, _ = read_line(tail, 5.0)
        assert b"fresh" in line, line
    finally:
        code, err = stop(tail)
    assert code == 0 and b"Traceback" not in err


def teammate_event(project: Path, message: str, *, seconds_ago: float) -> None:
    """An event stamped `seconds_ago` before now, landing as `sync` lands a teammate's: written in the teammate's
    own log, then linked into this store's day folder under its own (older) name."""
    import tempfile

    from continuity.core.store import Store
    from events.filelog import FileEventLog
    from events.worklog import WorkLogged

    with tempfile.TemporaryDirectory() as elsewhere:
        theirs = FileEventLog(os.path.join(elsewhere, "events"), os.path.join(elsewhere, "local"), node="7eab0a7e",
                              clock_us=lambda: time.time_ns() // 1000 - int(seconds_ago * 1_000_000))
        stored = theirs.append(WorkLogged(project="demo", message=message))
        theirs.close()
        day = Path(Store(str(project)).events_dir) / stored.name[:8]
        day.mkdir(exist_ok=True)
        temp = day.parent / f".{stored.name}.tmp"
        temp.write_bytes(stored.raw)
        os.link(temp, day / stored.name)
        temp.unlink()


def test_an_older_days_own_events_are_not_shown_again_when_a_synced_one_lands_there(project: Path) -> None:
    """An event this store wrote two days back, before the follower started: a teammate's event synced into that
    day showed it again (its change time, set when the append removed its temp name, is later than the folder's
    time the follower kept). Only what lands is shown."""
    from continuity.core.store import Store
    from events.filelog import FileEventLog
    from events.worklog import WorkLogged

    store = Store(str(project))
    mine = FileEventLog(store.events_dir, store.local_dir, node=store.node(),
                        clock_us=lambda: time.time_ns() // 1000 - 2 * 86_400 * 1_000_000)
    mine.append(WorkLogged(project="demo", message="mine, two days back"))
    mine.close()
    cli_process("log", "today", cwd=project)

    def lands(follower: subprocess.Popen[bytes], name: str) -> None:
        teammate_event(project, f"theirs for {name}", seconds_ago=2 * 86_400 - 60)
        assert f"theirs for {name}".encode() in read_line(follower, 5.0)[0]

    _each_shown_once(project, lands)


@pytest.mark.parametrize("lower", [False, True])
def test_a_second_file_of_an_event_landing_later_is_not_shown(project: Path, lower: bool) -> None:
    """A second file of an event already shown (the same stamp and node, other bytes) landing while following was
    shown as an event; every read leaves it out, and so do the followers (with a warning), whether its name sorts
    after the shown one's or before it."""
    import hashlib

    cli_process("log", "the event", cwd=project)

    def lands(follower: subprocess.Popen[bytes], name: str) -> None:
        newest = max(max((project / ".agent" / "runtime-continuity" / "events").iterdir()).iterdir())
        event = json.loads(newest.read_bytes())
        for attempt in range(200):
            raw = json.dumps({**event, "message": f"a second file for {name} {attempt}"},
                             separators=(",", ":")).encode()
            twin = newest.with_name(f"{newest.name[:32]}{hashlib.sha256(raw).hexdigest()[:12]}.json")
            if (twin.name < newest.name) == lower:
                break
        temp = newest.parent.parent / f".twin-{name}.tmp"
        temp.write_bytes(raw)
        os.link(temp, twin)
        temp.unlink()
        cli_process("log", f"after it for {name}", cwd=project)
        line = read_line(follower, 5.0)[0]
        assert f"after it for {name}".encode() in line and b"a second file" not in line, line

    _each_shown_once(project, lands)


def _each_shown_once(project: Path, shows: Callable[[subprocess.Popen[bytes], str], None]) -> None:
    """For `events tail -f` and `watch`: `shows(follower, its name)` sees what it expects, and nothing else comes
    (no line twice), and Ctrl-C ends it with 0."""
    for args in (("events", "tail", "-n", "0", "--follow"), ("watch",)):
        follower = start(project, *args)
        try:
            shows(follower, args[0])
            time.sleep(0.5)  # a line shown twice would come now
            assert follower.stdout is not None
            left = _buffers.pop(follower.stdout.fileno(), b"")
        finally:
            follower.send_signal(signal.SIGINT)
            out, err = follower.communicate(timeout=10)
        assert follower.returncode == 0 and b"Traceback" not in err, err
        assert left + out == b"", left + out  # each event once


def test_events_that_land_under_older_names_are_shown_too(project: Path) -> None:
    """A follower that read on from the last name it showed skipped for good what lands under an older name: a
    teammate's events brought in by `sync` (stamped earlier, the same day or days before), or a file a listing
    missed while writers were linking in. Each event that lands is shown, once."""
    cli_process("log", "before", cwd=project)

    def land(follower: subprocess.Popen[bytes], name: str) -> None:
        cli_process("log", f"newest for {name}", cwd=project)
        assert f"newest for {name}".encode() in read_line(follower, 5.0)[0]
        teammate_event(project, f"earlier today for {name}", seconds_ago=30)
        assert f"earlier today for {name}".encode() in read_line(follower, 5.0)[0]
        teammate_event(project, f"two days back for {name}", seconds_ago=2 * 86_400)
        assert f"two days back for {name}".encode() in read_line(follower, 5.0)[0]
        cli_process("log", f"last for {name}", cwd=project)
        assert f"last for {name}".encode() in read_line(follower, 5.0)[0]

    _each_shown_once(project, land)


def test_a_follower_refuses_an_events_folder_swapped_for_a_link(project: Path, tmp_path: Path) -> None:
    """`events tail -f` kept reading through `events/` once it was replaced by a symlink to a folder outside the
    store; it is refused as every read refuses it (exit 6, one line)."""
    cli_process("log", "first", cwd=project)
    tail = start(project, "events", "tail", "-n", "0", "--follow")
    events = project / ".agent" / "runtime-continuity" / "events"
    events.rename(tmp_path / "outside")
    events.symlink_to(tmp_path / "outside")
    (tmp_path / "outside" / "20990101").mkdir()
    _, err = tail.communicate(timeout=10)
    assert tail.returncode == 6 and b"symlink" in err and b"Traceback" not in err, err


@pytest.mark.parametrize("swap", ["removed", "linked"])
def test_events_gone_between_the_first_read_and_the_watch_is_not_an_internal_error(
        project: Path, tmp_path: Path, swap: str) -> None:
    """`events/` renamed away (or swapped for a link) after the first read, before the watcher starts: the watcher
    found no path and the follower ended in an internal error (exit 70). Now a link is refused as every read
    refuses it, and a folder gone is said once and followed again once it is back."""
    import threading

    from continuity.adapters.watch import follow
    from continuity.core.store import find_store
    from events.errors import StoreUnsafe

    cli_process("log", "first", cwd=project)
    store = find_store(root=str(project))
    events = Path(store.events_dir)
    stop, warnings, shown = threading.Event(), [], []

    def away() -> None:
        events.rename(tmp_path / "outside")
        if swap == "linked":
            events.symlink_to(tmp_path / "outside")

    if swap == "linked":
        with pytest.raises(StoreUnsafe, match="symlink"):
            follow(store, shown.append, after=None, on_warning=warnings.append, stop=stop, on_ready=away)
        return

    def back() -> None:
        time.sleep(1.5)
        (tmp_path / "outside").rename(events)
        cli_process("log", "after it came back", cwd=project)
        time.sleep(2.0)
        stop.set()

    helper = threading.Thread(target=back)
    helper.start()
    follow(store, shown.append, after=None, on_warning=warnings.append, stop=stop, on_ready=away)
    helper.join()
    assert warnings == ["events/ is gone (removed or renamed): nothing new is shown until it is back"]
    assert [stored.event.message for stored in shown][-1:] == ["after it came back"]


def test_a_follower_leaves_out_a_copy_under_another_name_and_shows_a_synced_file_that_kept_its_time(
        project: Path, tmp_path: Path) -> None:
    """A copy of an event under another name was shown (the same event twice, under its id) with no word, where
    every read leaves it out; `events/` removed while following was said nowhere (the watcher went on without a
    word). Each is left out, or said, once; and a teammate's event synced into an older day with its own time kept
    (`cp -p`, rsync) is shown (taken by its write time, a first fix missed it for good)."""
    import shutil
    import threading

    from continuity.adapters.watch import GONE, follow
    from continuity.core.store import find_store

    teammate_event(project, "two days back, before the start", seconds_ago=2 * 86_400)
    cli_process("log", "real event", cwd=project)
    store = find_store(root=str(project))
    events = Path(store.events_dir)
    stop, warnings, shown = threading.Event(), [], []

    def acts() -> None:
        day = sorted(events.iterdir())[-1]
        real = sorted(day.iterdir())[-1]
        copy = day / (real.name[:9] + "235959_999999" + real.name[22:])
        shutil.copyfile(real, tmp_path / "copy")
        os.rename(tmp_path / "copy", copy)  # a well-made name, content claiming another id and time
        time.sleep(1.0)
        teammate_event(project, "two days back, after the start", seconds_ago=2 * 86_400 - 1)
        landed = sorted(sorted(events.iterdir())[0].iterdir())[-1]
        os.utime(landed, ns=(1_000_000_000, 1_000_000_000))  # as a sync that keeps times leaves it
        time.sleep(1.5)
        events.rename(tmp_path / "away")
        time.sleep(1.5)
        (tmp_path / "away").rename(events)
        time.sleep(0.5)
        stop.set()

    helper = threading.Thread(target=acts)
    follow(store, shown.append, after=sorted(p.name for p in events.rglob("*.json"))[-1], on_warning=warnings.append,
           stop=stop, on_ready=helper.start)
    helper.join()
    assert [stored.event.message for stored in shown] == ["two days back, after the start"]
    assert len([w for w in warnings if "renamed or forged" in w]) == 1 and warnings.count(GONE) == 1, warnings


def test_a_follower_names_why_an_entry_shaped_like_an_event_cannot_be_read(project: Path) -> None:
    """A FIFO (or a folder) under an event's name: every read says "cannot be read (not a regular file)"; the
    follower said "not JSON: Input data was truncated", of a file it never read."""
    import threading

    from continuity.adapters.watch import follow
    from continuity.core.store import find_store

    cli_process("log", "first", cwd=project)
    store = find_store(root=str(project))
    day = sorted(Path(store.events_dir).iterdir())[-1]
    real = sorted(day.iterdir())[-1].name
    stop, warnings, shown = threading.Event(), [], []

    def plant() -> None:
        os.mkfifo(day / (real[:16] + "999999" + real[22:31] + "-0123456789ab.json"))
        (day / (real[:16] + "999998" + real[22:31] + "-0123456789ab.json")).mkdir()
        time.sleep(1.5)
        stop.set()

    follow(store, shown.append, after=real, on_warning=warnings.append, stop=stop,
           on_ready=lambda: threading.Thread(target=plant).start())
    assert shown == [] and len(warnings) == 2, warnings
    assert all("cannot be read (" in warning and "not JSON" not in warning for warning in warnings), warnings


@pytest.mark.parametrize("args", [("watch", "--last", "1"), ("events", "tail", "-n", "1", "--follow")])
def test_a_follower_ends_when_its_reader_goes_even_with_no_new_event(project: Path, args: tuple[str, ...]) -> None:
    """`continuity watch | head -1`: the reader gone, a follower noticed only at its next write, so with no new
    event it followed on for good (GNU `tail -f` ends). It ends within a turn of its loop, exit 0."""
    cli_process("log", "the one event", cwd=project)
    follower = start(project, *args)
    line, _ = read_line(follower, 10.0)
    assert b"the one event" in line
    assert follower.stdout is not None
    _buffers.pop(follower.stdout.fileno(), None)  # its fd number is another pipe's in a later test
    follower.stdout.close()
    try:
        code = follower.wait(timeout=10)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert code == 0
    assert follower.stderr is not None and b"Traceback" not in follower.stderr.read()


@pytest.mark.parametrize("args", [["watch"], ["events", "tail", "-f"], ["watch", "--last", "3"]])
def test_ctrl_c_during_a_followers_first_read_ends_it_with_0(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                             args: list[str]) -> None:
    """Ctrl-C ends a follower with 0, but one that came during its first read (before the loop that catches it:
    finding where to start, the first drain) ended it with 130. The interrupt is raised in that read here."""
    import signal as signals

    from continuity.cli import main, watch_cmd

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.chdir(project)
    monkeypatch.setattr(watch_cmd, "start_after", interrupted)
    before = signals.getsignal(signals.SIGINT)
    try:
        assert main(args) == 0
    finally:
        signals.signal(signals.SIGINT, before)


def test_a_file_copied_in_slowly_is_shown_once_it_is_whole(project: Path) -> None:
    """An event file copied into place in two writes (`cp` of a teammate's file, a slow copy): read half-written, it
    was to be read again "at the next change", but rewriting a file leaves its folder's time as it was, and a day
    whose folder time had not moved for 2 s was never listed again: the event was never shown (until another event
    landed that day). Shown once whole, and once only."""
    import tempfile

    from continuity.core.store import Store
    from events.filelog import FileEventLog
    from events.worklog import WorkLogged

    cli_process("log", "before", cwd=project)

    def land(follower: subprocess.Popen[bytes], name: str) -> None:
        with tempfile.TemporaryDirectory() as elsewhere:
            now = time.time_ns() // 1000  # 5 s ago, but today (a day folder `before` made, unless midnight passed)
            theirs = FileEventLog(os.path.join(elsewhere, "events"), os.path.join(elsewhere, "local"),
                                  node="7eab0a7e", clock_us=lambda: max(now - 5_000_000, now - now % 86_400_000_000))
            stored = theirs.append(WorkLogged(project="demo", message=f"copied slowly for {name}"))
            theirs.close()
        target = Path(Store(str(project)).events_dir) / stored.name[:8] / stored.name
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(stored.raw[:40])  # the copy's first write
        time.sleep(3.0)  # past the 2 s in which a folder's day is listed at every turn
        with open(target, "r+b") as handle:  # the rest, in place: the folder's time does not move
            handle.seek(40)
            handle.write(stored.raw[40:])
        assert f"copied slowly for {name}".encode() in read_line(follower, 5.0)[0]

    _each_shown_once(project, land)
