"""Reads of a log some of whose files or day folders cannot be read (no permission, a FIFO planted in place).

Reads fail open: each command answers from what it can read, says in one warning line what it
left out and why, and never exits 70. The read models never step past what they could not read
for good: an event read past as unreadable is tried again by every catch-up and folded in order
once it reads, and a day folder that cannot be listed holds back its events and every later
day's until it can. `verify` names what it cannot read (exit 1). Every command is a real process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import all_event_files


def _unprivileged() -> list[str]:
    """The prefix that makes permission bits apply: root keeps no DAC override under setpriv."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permission bits cannot be made to apply")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def run(root: Path, *args: str, stdin: str | None = None, unprivileged: bool = False
        ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    env["HOME"] = str(root.parent)
    prefix = _unprivileged() if unprivileged else []
    return subprocess.run([*prefix, sys.executable, "-m", "continuity", *args], cwd=root, env=env, input=stdin,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    assert run(root, "init", "--project", "demo").returncode == 0
    return root


def _day(root: Path) -> Path:
    return all_event_files(root)[-1].parent


def test_a_day_folder_that_cannot_be_listed_never_stops_a_read(project: Path) -> None:
    """`chmod 000` on the day folder: resume-bundle, verify, rebuild and events list exited 70, and the
    SessionStart hook printed no brief. Each read answers now; the models fold nothing of that day. An audit
    replay (`--as-of`, `replay --until`) and `rebuild` must read every event up to their end: they answered "0
    events" with exit 0 (rebuild saving that over models that held the log); they stop with one line, exit 1,
    nothing answered or saved."""
    remote = project.parent / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    for args in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "t"],
                 ["remote", "add", "origin", str(remote)]):
        subprocess.run(["git", "-C", str(project), *args], check=True)
    assert run(project, "log", "-m", "a", "--next", "n1").returncode == 0
    assert run(project, "status").returncode == 0
    assert run(project, "log", "-m", "b", "--next", "n2").returncode == 0  # the models are behind by one
    day = _day(project)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1))
    time.sleep(1.1)
    day.chmod(0o000)
    try:
        for args in (("status",), ("resume-bundle",), ("restore",), ("events", "list"),
                     ("events", "tail"), ("recall", "a"), ("timeline", "--out", str(project.parent / "t.html"))):
            done = run(project, *args, unprivileged=True)
            assert done.returncode == 0, (args, done.stderr)
            assert "internal error" not in done.stderr and f"{day.name}" in done.stderr, (args, done.stderr)
            assert "Permission denied" in done.stderr, (args, done.stderr)
        for args, words in ((("rebuild",), "nothing rebuilt"), (("resume-bundle", "--as-of", now), "nothing answered"),
                            (("status", "--as-of", now), "nothing answered"),
                            (("replay", "--until", now, "--out", str(project.parent / "r")), "replay not written")):
            done = run(project, *args, unprivileged=True)
            assert done.returncode == 1 and done.stderr.count("\n") == 1, (args, done.stderr)
            assert f"events/{day.name}/ cannot be read (Permission denied)" in done.stderr, (args, done.stderr)
            assert words in done.stderr and done.stdout == "", (args, done.stderr)
        assert not (project.parent / "r").exists()
        saved = run(project, "status", "--json", unprivileged=True)  # the models as saved, not an empty rebuild's
        assert saved.returncode == 0 and json.loads(saved.stdout)["events"] == 1, saved.stdout  # "a", as last folded
        for args in (("checkpoint", "-m", "typed path"), ("archive",), ("sync",)):  # writes fail closed: exit 5
            done = run(project, *args, unprivileged=True)
            assert done.returncode == 5 and done.stderr.count("\n") == 1, (args, done.returncode, done.stderr)
            assert "internal error" not in done.stderr and "Permission denied" in done.stderr, (args, done.stderr)
        brief = run(project, "hook", "claude-code", unprivileged=True, stdin=json.dumps(
            {"hook_event_name": "SessionStart", "session_id": "s1", "source": "startup", "cwd": str(project)}))
        assert brief.returncode == 0 and "internal error" not in brief.stderr, brief.stderr
        assert json.loads(brief.stdout)["hookSpecificOutput"]["additionalContext"]
        checked = run(project, "verify", unprivileged=True)
        assert checked.returncode == 1 and f"{day.name}/: cannot be read (Permission denied)" in checked.stdout
    finally:
        day.chmod(0o755)
    resumed = run(project, "resume-bundle")  # readable again: the held-back day is folded, nothing rebuilt
    assert resumed.returncode == 0 and "n2" in resumed.stdout and "rebuilt" not in resumed.stderr, resumed.stderr
    assert run(project, "verify").returncode == 0


def _planted_fifo_in_place(event: Path) -> Path:
    """Move the event aside and plant a FIFO under its name; the real file, to put back."""
    kept = event.with_name("kept")
    event.rename(kept)
    os.mkfifo(event)
    return kept


def test_an_event_read_past_as_unreadable_is_folded_once_it_reads(project: Path) -> None:
    """An event unreadable during one catch-up (no permission, mid-write by a copy, a FIFO in its place) was
    stepped over for good: status kept saying "1 events" and the old next action, with no warning, and only
    `rebuild` brought it back. Every catch-up tries it again now, warning while it stays out."""
    assert run(project, "log", "-m", "a", "--next", "n1").returncode == 0
    assert run(project, "status").returncode == 0
    assert run(project, "checkpoint", "-m", "b", "--next", "n2").returncode == 0
    event = all_event_files(project)[-1]
    kept = _planted_fifo_in_place(event)
    first = run(project, "status")
    assert first.returncode == 0 and "cannot be read (not a regular file)" in first.stderr, first.stderr
    again = run(project, "resume-bundle")  # still out: said again, not only the first time
    assert again.returncode == 0 and event.name in again.stderr and "cannot be read" in again.stderr
    again = run(project, "resume-bundle")  # once every model has read past it: "still left out", each time
    assert again.returncode == 0 and "still left out" in again.stderr and event.name in again.stderr
    assert "n1" in again.stdout
    event.unlink()
    kept.rename(event)
    back = run(project, "resume-bundle")
    assert back.returncode == 0 and "n2" in back.stdout, (back.stdout, back.stderr)
    assert "can be read now" in back.stderr
    quiet = run(project, "resume-bundle")
    assert quiet.returncode == 0 and quiet.stderr == "" and "n2" in quiet.stdout
    assert "2 events" in run(project, "status").stdout


def test_a_planted_entry_that_goes_away_is_forgotten(project: Path) -> None:
    """An unreadable entry that is removed (junk planted by hand) stops being reported (the models read past
    its name: the first read after it vanished may rebuild them once, as for any vanished event file)."""
    assert run(project, "log", "-m", "a").returncode == 0
    assert run(project, "status").returncode == 0
    junk = _day(project) / f"{_day(project).name}_235959_999999-deadbeef-0123456789ab.json"
    os.mkfifo(junk)
    assert "cannot be read" in run(project, "status").stderr
    assert "still left out" in run(project, "status").stderr
    junk.unlink()
    after = run(project, "status")
    assert after.returncode == 0 and "left out" not in after.stderr and "cannot be read" not in after.stderr
    quiet = run(project, "status")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


def test_events_list_and_show_name_an_unreadable_event(project: Path) -> None:
    """events list and tail skipped a FIFO, a link or a file with no permission without a word; events show
    of one exited 70. Each is a warning line with the reason now, and `events show` exits 1 (cannot be read)."""
    assert run(project, "log", "-m", "a").returncode == 0
    assert run(project, "log", "-m", "b").returncode == 0
    event = all_event_files(project)[-1]
    _planted_fifo_in_place(event)
    for args in (("events", "list"), ("events", "tail")):
        done = run(project, *args)
        assert done.returncode == 0, done.stderr
        assert f"skipped unreadable event {event.name}: cannot be read (not a regular file)" in done.stderr
    event_id = "RCE-" + event.name[:31]
    shown = run(project, "events", "show", event_id)
    assert shown.returncode == 1, (shown.returncode, shown.stderr)
    assert "cannot be read (not a regular file)" in shown.stderr and "internal error" not in shown.stderr


def test_watch_holds_back_the_events_after_a_day_folder_it_cannot_list(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`watch`/`events tail -f` moved past a day folder it could not list (showing the later days' events), so that
    day's events were never shown once it could be read. It holds the later ones back now, says so once, and
    shows everything in order once the folder reads. (The listing fails by a patch here: as root, permission
    bits do not apply in-process.)"""
    import threading

    from continuity.adapters.watch import follow
    from continuity.core.initialize import init_store
    from events.durable import DurableFolder
    from events.filelog import FileEventLog
    from events.worklog import WorkLogged

    store, _ = init_store(tmp_path, project="demo", language=None)
    past = FileEventLog(store.events_dir, store.local_dir, node="pastnode",
                        clock_us=lambda: time.time_ns() // 1000 - 3 * 86_400_000_000)
    past.append(WorkLogged(project="demo", message="three days ago"))
    past.close()
    store.open_log().append(WorkLogged(project="demo", message="today"))
    old_day = sorted(path.parent.name for path in all_event_files(tmp_path))[0]
    real = DurableFolder.day_entries

    def refusing(self: DurableFolder, day_path: str) -> list[str]:
        if day_path.endswith(old_day):
            raise PermissionError(13, "Permission denied", day_path)
        return real(self, day_path)

    def watched() -> tuple[list[str], list[str]]:
        shown: list[str] = []
        warnings: list[str] = []
        stop = threading.Event()
        follow(store, lambda stored: shown.append(stored.event.message), after=None, on_warning=warnings.append,
               stop=stop, on_ready=stop.set)
        return shown, warnings

    monkeypatch.setattr(DurableFolder, "day_entries", refusing)
    shown, warnings = watched()
    assert shown == [] and len(warnings) == 1 and old_day in warnings[0] and "Permission denied" in warnings[0]
    monkeypatch.setattr(DurableFolder, "day_entries", real)
    assert watched() == (["three days ago", "today"], [])


def test_watch_waits_out_an_events_folder_it_cannot_list_while_following(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """events/ made unlistable while `watch` follows ended it with exit 70 (PermissionError); it says so once and
    shows what came meanwhile once the folder lists again. (The listing fails by a patch, as above.)"""
    import threading

    import events.durable
    from continuity.adapters.watch import follow
    from continuity.core.initialize import init_store
    from events.worklog import WorkLogged

    store, _ = init_store(tmp_path, project="demo", language=None)
    real = events.durable.list_days
    blocked = threading.Event()

    def refusing(events_dir: str, *lists: list[str] | None) -> list[str]:
        if blocked.is_set() and threading.current_thread() is thread:  # the follower's listing, not the writer's
            raise PermissionError(13, "Permission denied", events_dir)
        return real(events_dir, *lists)

    monkeypatch.setattr(events.durable, "list_days", refusing)
    shown: list[str] = []
    warnings: list[str] = []
    ready, stop = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            follow(store, lambda stored: shown.append(stored.event.message), after=None,
                   on_warning=warnings.append, stop=stop, on_ready=ready.set)
        except BaseException as error:  # reported below
            errors.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        assert ready.wait(30)
        blocked.set()
        store.open_log().append(WorkLogged(project="demo", message="while unlistable"))
        deadline = time.monotonic() + 30
        while not warnings and time.monotonic() < deadline and not errors:
            time.sleep(0.05)
        assert errors == [] and shown == [], (errors, shown)
        assert [line for line in warnings if "events/ cannot be listed (Permission denied)" in line] == warnings[:1]
        blocked.clear()
        store.open_log().append(WorkLogged(project="demo", message="listed again"))
        while len(shown) < 2 and time.monotonic() < deadline + 30 and not errors:
            time.sleep(0.05)
        assert errors == [] and shown == ["while unlistable", "listed again"], (errors, shown)
    finally:
        stop.set()
        thread.join(timeout=30)


def test_an_events_folder_that_cannot_be_listed_fails_reads_open_and_the_rest_in_one_line(project: Path) -> None:
    """`chmod 000` on events/ itself: status, resume-bundle, the SessionStart brief, briefing, resume, health and
    work status exited 70 ("internal error: PermissionError"), and the recall index was emptied. The session
    reads answer from the models as last saved with one warning; recall answers from its index untouched; reads
    that must read every event (events list, tail, verify, a replay) and rebuild fail with one line, exit 1;
    writes exit 5 as before."""
    assert run(project, "log", "-m", "the first entry", "--next", "step one").returncode == 0
    assert run(project, "snapshot", "core", "ash", "parser", "--objective", "ship it").returncode == 0
    assert run(project, "rebuild").returncode == 0  # every read model saved
    assert run(project, "recall", "first").returncode == 0  # the recall index made
    events = project / ".agent" / "runtime-continuity" / "events"
    said = "events/ cannot be listed (Permission denied)"
    events.chmod(0o000)
    try:
        for args in (("status",), ("resume-bundle",), ("briefing", "core", "--agent", "ash"),
                     ("resume", "core", "ash", "--max-age", "1h"), ("health", "core"), ("work", "status"),
                     ("task", "list"), ("memory", "list"), ("inbox", "core", "--agent", "ash"),
                     ("timeline", "--out", str(project.parent / "t.html"))):
            done = run(project, *args, unprivileged=True)
            assert done.returncode == 0, (args, done.returncode, done.stderr)
            assert "internal error" not in done.stderr and said in done.stderr, (args, done.stderr)
        assert "step one" in run(project, "resume-bundle", unprivileged=True).stdout  # as last saved
        found = run(project, "recall", "first", unprivileged=True)
        assert found.returncode == 0 and "the [first] entry" in found.stdout and said in found.stderr, found
        for args in (("events", "list"), ("events", "tail"), ("verify",), ("rebuild",), ("watch",),
                     ("status", "--as-of", "2000-01-01T00:00:00Z"),
                     ("recall", "first", "--as-of", "2000-01-01T00:00:00Z")):
            done = run(project, *args, unprivileged=True)
            assert done.returncode == 1 and done.stderr.count("\n") == 1 and said in done.stderr, (args, done)
        done = run(project, "log", "-m", "not written", unprivileged=True)
        assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
        models = project / ".agent" / "runtime-continuity" / "local" / "models"
        (models / "tasks.msgpack").rename(models / "kept")  # as after an upgrade that bumped its format
        listed = run(project, "task", "list", unprivileged=True)  # said, not shown as "as last saved" alone
        assert listed.returncode == 0 and "tasks: no saved state this release reads, so shown empty" in listed.stderr
        (models / "kept").rename(models / "tasks.msgpack")
        brief = run(project, "hook", "claude-code", unprivileged=True, stdin=json.dumps(
            {"hook_event_name": "SessionStart", "session_id": "s1", "source": "startup", "cwd": str(project)}))
        assert brief.returncode == 0 and "internal error" not in brief.stderr, brief.stderr
        context = json.loads(brief.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "step one" in context and said in context, context
    finally:
        events.chmod(0o755)
    assert run(project, "verify").returncode == 0
    assert "the [first] entry" in run(project, "recall", "first").stdout


def test_park_says_unreadable_not_empty_on_every_try_and_its_banner_when_the_lock_cannot_be_opened(
        project: Path) -> None:
    """Seed 000: park exits 1 when the role state is unreadable rather than empty. The retry its own banner asks
    for said "nothing to park" (exit 2): the unreadable claim was then "still left out", which park did not count.
    And with local/ unwritable, park exited 5 without CHECKPOINT NOT WRITTEN (the lock opened before its guard)."""
    assert run(project, "role", "create", "core", "solo").returncode == 0
    assert run(project, "role", "claim", "core", "solo", "--agent", "bo").returncode == 0
    claim = next(path for path in all_event_files(project) if b'"role.claimed"' in path.read_bytes())
    local = project / ".agent" / "runtime-continuity" / "local"
    local.chmod(0o000)
    try:
        done = run(project, "park", "core", "--agent", "bo", unprivileged=True)
        assert done.returncode == 5 and "CHECKPOINT NOT WRITTEN" in done.stderr, done.stderr
    finally:
        local.chmod(0o755)
    claim.chmod(0o644)
    claim.write_text("garbage")
    (local / "models" / "roles.msgpack").unlink()
    for _ in range(3):
        done = run(project, "park", "core", "--agent", "bo")
        assert done.returncode == 1, done.stderr
        assert "role state unreadable, not empty" in done.stderr and "CHECKPOINT NOT WRITTEN" in done.stderr


@pytest.mark.parametrize("planted", ["a file", "a link"])
def test_reads_of_the_log_answer_when_local_models_is_planted(project: Path, tmp_path: Path, planted: str) -> None:
    """`local/models` as a file (or a link out of the store): `inbox`, `queue`, `events list|show|tail` and the
    timeline exited 6 ("unsafe store") where the other reads answer with a warning. They answer now, from the
    events alone, with one warning line; a write (an ack) is still refused."""
    assert run(project, "send", "core", "--to", "bo", "--message", "hello", "--agent", "ash").returncode == 0
    models = project / ".agent" / "runtime-continuity" / "local" / "models"
    shutil.rmtree(models)
    if planted == "a file":
        models.write_text("x")
    else:
        (tmp_path / "elsewhere").mkdir()
        models.symlink_to(tmp_path / "elsewhere")
    event_id = json.loads(run(project, "--json", "events", "list").stdout)["events"][0]["event_id"]
    for args in (["inbox", "core", "--agent", "bo"], ["queue", "core", "--agent", "bo"], ["events", "list"],
                 ["events", "tail"], ["events", "show", event_id], ["timeline", "--out", str(tmp_path / "t.html")]):
        done = run(project, *args)
        assert done.returncode == 0, (args, done.stderr)
        assert len(done.stderr.splitlines()) == 1 and "local/models" in done.stderr, (args, done.stderr)
        assert "hello" in done.stdout or "MSG-" in done.stdout or "timeline of 1 events" in done.stdout, args
    listed = json.loads(run(project, "--json", "events", "list").stdout)
    assert listed["count"] == 1 and "local/models" in listed["warnings"][0]
    assert run(project, "inbox", "core", "--agent", "bo", "--ack", "MSG-x").returncode == 6
    if planted == "a link":  # nothing written where it leads
        assert not any((tmp_path / "elsewhere").iterdir())


def test_a_log_whose_events_all_vanished_says_so(project: Path) -> None:
    """Every event removed by hand after a catch-up: the brief says a day folder vanished (it said "0 events" and
    nothing else); one removed from an earlier point says events before the last catch-up changed."""
    for message in ("one", "two", "three"):
        assert run(project, "log", "-m", message).returncode == 0
    assert run(project, "status").returncode == 0  # the models saved, with the day folders they read
    events = project / ".agent" / "runtime-continuity" / "events"
    first = sorted(events.glob("*/*.json"))[0]
    first.unlink()
    done = run(project, "status")
    assert done.returncode == 0
    assert "events before the last catch-up changed (a merge brought some, or some were removed)" in done.stderr
    for day in events.iterdir():
        shutil.rmtree(day)
    done = run(project, "resume-bundle")
    assert done.returncode == 0 and "Warning: a day folder vanished: projections (" in done.stdout
    assert ") rebuilt from 0 events" in done.stdout


def test_a_brief_as_of_a_point_reads_the_log_when_local_cannot_be_trusted(project: Path) -> None:
    """`local/` planted as a file: `resume-bundle --as-of` reads the events alone with a warning, as the brief
    without --as-of does (it was exit 6, unsafe store)."""
    assert run(project, "checkpoint", "-m", "parser done", "--next", "wire the CLI").returncode == 0
    event_id = json.loads(sorted((project / ".agent" / "runtime-continuity" / "events").glob("*/*.json"))[0]
                          .read_text())["event_id"]
    local = project / ".agent" / "runtime-continuity" / "local"
    shutil.rmtree(local)
    local.write_text("planted")
    done = run(project, "resume-bundle", "--as-of", event_id)
    assert done.returncode == 0 and "wire the CLI" in done.stdout
    assert "nothing under local/ is read" in done.stdout + done.stderr


@pytest.mark.parametrize("planted", ["fifo", "link", "folder"])
def test_a_model_file_planted_as_no_file_is_named_in_the_warning(project: Path, planted: str) -> None:
    """A FIFO, a link or a folder where a saved model belongs: the read folds from the log, and the warning names
    the file and what stands there (it said "Illegal seek" or "Too many levels of symbolic links" alone)."""
    assert run(project, "log", "-m", "one").returncode == 0
    assert run(project, "status").returncode == 0
    model = project / ".agent" / "runtime-continuity" / "local" / "models" / "worklog.msgpack"
    model.unlink()
    if planted == "fifo":
        os.mkfifo(model)
    elif planted == "link":
        model.symlink_to(project / "elsewhere")
    else:
        model.mkdir()
    assert run(project, "log", "-m", "two").returncode == 0
    done = run(project, "status")
    assert done.returncode == 0
    said = {"fifo": f"{model} is not a regular file", "link": f"{model} is a symbolic link",
            "folder": f"Is a directory ({model})"}[planted]
    assert f"projections not saved: {said}; `continuity rebuild` replaces it" in done.stderr
    assert not (project / "elsewhere").exists()
    # the way back: `rebuild` failed the same way (exit 5) and nothing cleared it; it replaces what stands there now
    done = run(project, "rebuild")
    assert done.returncode == 0 and f"removed what stood where the saved worklog model belongs (not a file): " \
        f"{model}" in done.stderr, done.stderr
    assert model.is_file() and not model.is_symlink() and not (project / "elsewhere").exists()
    done = run(project, "status")
    assert done.returncode == 0 and "projections not saved" not in done.stderr


def test_a_newest_event_this_user_cannot_read_is_kept_not_moved_out(project: Path) -> None:
    """A teammate's newest event made under a strict umask (here `chmod 000`): `log`, `checkpoint` and the hook
    refused as if it had been edited by hand (exit 6) and said to move it out of the store, which lost it for
    good. The write fails (exit 5), naming the file and the way back: read access, not moving it."""
    assert run(project, "log", "-m", "one").returncode == 0
    assert run(project, "log", "-m", "two").returncode == 0
    newest = all_event_files(project)[-1]
    newest.chmod(0o000)
    try:
        for args in (("log", "-m", "three"), ("checkpoint", "-m", "c", "--next", "n")):
            done = run(project, *args, unprivileged=True)
            assert done.returncode == 5, done.stderr
            assert f"the newest event events/{newest.parent.name}/{newest.name} cannot be read by this user" \
                in done.stderr
            assert "do not move it out of the store" in done.stderr and "run `continuity sync`" not in done.stderr
        brief = run(project, "hook", "claude-code", unprivileged=True, stdin=json.dumps(
            {"session_id": "s1", "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"}))
        assert brief.returncode == 0 and "cannot be read by this user" in brief.stderr
    finally:
        newest.chmod(0o444)
    assert len(all_event_files(project)) == 2
    assert run(project, "log", "-m", "three").returncode == 0
    assert run(project, "verify").returncode == 0


def test_a_node_file_this_user_cannot_read_is_not_replaced(project: Path) -> None:
    """`local/node` that this user may not read: the write made a new node id over it, so this clone wrote under
    two nodes for good (`verify`: nodes 2). The write fails (exit 5), naming the file; the id stays."""
    assert run(project, "log", "-m", "one").returncode == 0
    node = project / ".agent" / "runtime-continuity" / "local" / "node"
    kept = node.read_bytes()
    node.chmod(0o000)
    try:
        done = run(project, "log", "-m", "two", unprivileged=True)
        assert done.returncode == 5
        assert f"{node} cannot be read by this user" in done.stderr
    finally:
        node.chmod(0o644)
    assert node.read_bytes() == kept
    assert run(project, "log", "-m", "two").returncode == 0
    assert "nodes: 1" in run(project, "verify").stdout


def test_an_archive_whose_documents_cannot_be_written_says_so_in_text_and_json(project: Path) -> None:
    """`archives/` not writable: the archive event is durable (exit 0), but the text printed the JSON path as if
    written and `--json` carried no warnings. Both say it now."""
    assert run(project, "checkpoint", "-m", "c", "--next", "wire the CLI").returncode == 0
    assert run(project, "archive", "--gate", "agent", "--reason", "first").returncode == 0
    archives = project / ".agent" / "runtime-continuity" / "archives"
    archives.chmod(0o555)
    try:
        as_json = run(project, "archive", "--gate", "agent", "--reason", "r", "--json", unprivileged=True)
        text = run(project, "archive", "--gate", "agent", "--reason", "r", unprivileged=True)
    finally:
        archives.chmod(0o755)
    assert as_json.returncode == 0 and text.returncode == 0
    result = json.loads(as_json.stdout)
    assert not os.path.exists(result["archiveJsonPath"])
    assert any("archive" in warning and "not written" in warning for warning in result["warnings"]), result
    assert "not written (it would be " in text.stdout.splitlines()[0]
