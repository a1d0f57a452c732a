"""Delivering moments to a team's sinks, once per sink: the JSONL outbox and a command on stdin.

Fail open, always: a sink that fails, hangs (killed after the config's timeout) or is
missing costs a line on stderr, never the exit code of the save it follows. Delivery
is recorded (`moments.delivered`) under `local/moments.lock`, so two deliveries never
send one moment twice to a sink; a moment whose sink failed stays due for
`continuity moments deliver`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import msgspec

from continuity.core.identity import Identity
from continuity.core.store import Store
from continuity.moments import channel as config
from continuity.moments.channel import Channel
from continuity.moments.decide import decide_delivered, pending, record
from events import osfs
from events.errors import ContinuityError
from events.sealing import StoredEvent
from projections.moments import TeamMoments

#: How much of a failing command's stderr a line shows.
STDERR_SHOWN = 200


class Delivery(msgspec.Struct, kw_only=True):
    """What one delivery did: the config state, moments delivered per sink, and the lines to print."""

    state: str
    delivered: dict[str, int] = msgspec.field(default_factory=dict)
    failed: list[str] = msgspec.field(default_factory=list)
    lines: list[str] = msgspec.field(default_factory=list)


def emit_after_save(store: Store, identity: Identity, stored: list[StoredEvent]) -> list[str]:
    """After snapshots were saved: deliver their moments now. Returns the lines to print; never raises."""
    teams: dict[str, set[str]] = {}
    for each in stored:
        event: Any = each.event
        if event.kind == "snapshot.taken":
            teams.setdefault(event.team, set()).add(event.event_id)
    lines: list[str] = []
    for team, moment_ids in teams.items():
        try:
            done = deliver(store, identity, team, only=moment_ids)
        except Exception as error:  # a shadow never fails the save it follows
            lines.append(f"checkpoint moment: FAILED ({type(error).__name__}: {error}); the checkpoint is saved")
            continue
        lines.extend(done.lines)
    return lines


def deliver(store: Store, identity: Identity, team: str, only: set[str] | None = None) -> Delivery:
    """Deliver the team's due moments (only those named in `only`, when given) to each configured sink.

    Decided under `local/moments.lock` from the `moments` model caught up there, so a moment
    a racing delivery already sent is not sent again.
    """
    loaded = config.load_config(store.path, team)
    done = Delivery(state=loaded.state, lines=[loaded.line] if loaded.line else [])
    if loaded.channel is None:
        return done
    from continuity.sync.files import flocked

    with flocked(os.path.join(store.local_dir, "moments.lock")):
        moments, warnings = _caught_up(store, identity.project, team)
        done.lines.extend(warnings)
        _deliver_locked(store, identity, team, loaded.channel, moments, done, only)
    return done


def _caught_up(store: Store, project: str, team: str) -> tuple[TeamMoments, list[str]]:
    from continuity.readside.writers import refresh
    from projections.moments import MODEL

    outcome = refresh(store, ("moments",))
    state = MODEL.project(outcome.models.state("moments"), project)
    return state.teams.get(team) or TeamMoments(), outcome.warnings


def _deliver_locked(store: Store, identity: Identity, team: str, channel: Channel, moments: TeamMoments,
                    done: Delivery, only: set[str] | None) -> None:
    from continuity.team.plain import snapshot_relpath

    drafts = []
    to_settle: set[str] = set()  # the outbox's moments this delivery records
    tag_lines: list[str] = []
    tags_of: dict[str, tuple[list[str] | None, str | None]] = {}
    for sink in channel.sinks():
        due = pending(moments, sink, only)
        if not due:
            continue
        records = []
        for moment in due:
            if moment.agent not in tags_of:  # the registry is read once per agent and delivery
                tags_of[moment.agent] = config.tags_for(store.path, team, moment.agent)
            tags, line = tags_of[moment.agent]
            if line is not None and line not in tag_lines:
                tag_lines.append(line)
            records.append(record(team, moment, snapshot_relpath(team, moment.agent, moment.task),
                                  channel.data_type, channel.api_version, tags))
        sent, problem = SINKS[sink](store, team, channel, records)
        if sent:
            done.delivered[sink] = sent
            if sink == "outbox":
                to_settle = {moment.moment_id for moment in due[:sent]}
            drafts.extend(decide_delivered(identity, team, sink, [moment.moment_id for moment in due[:sent]]))
        if problem is not None:
            done.failed.append(sink)
            done.lines.append(f"checkpoint moment: delivery to {sink} FAILED ({problem}); "
                              f"`continuity moments deliver {team}` retries")
    done.lines[:0] = tag_lines
    if drafts:
        try:
            store.open_log().append_many(drafts)
        except (OSError, ContinuityError) as error:
            done.lines.append(f"checkpoint moment: delivered, but the delivery was not recorded ({error}); "
                              "a later delivery records it (a command sink may receive these moments again)")
        else:
            if to_settle:
                settle(intent_path(store, config.outbox_relpath(team, channel)), to_settle,
                       {moment.moment_id for moment in pending(moments, "outbox", None)})


def _line(data: dict[str, Any]) -> bytes:
    import json

    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def to_outbox(store: Store, team: str, channel: Channel, records: list[dict[str, Any]]) -> tuple[int, str | None]:
    """Append one JSON line per moment to the outbox (made durable); all or, on failure, none counted.

    Exactly once, also across a kill: before it writes, a delivery notes in `local/` where the
    outbox ended and which moments it writes (made durable); the note goes once the delivery is
    recorded. A delivery that finds a note (one cut off before its record, or whose record failed)
    reads the outbox from that point on and counts the moments it finds there as sent: they are
    recorded now, not written again. A line a kill cut short is ended first, so the next line never
    runs into it.
    """
    import json

    from continuity.core.fsio import ensure_folder, write_atomic

    relative = config.outbox_relpath(team, channel)
    path = os.path.join(store.path, *relative.split("/"))
    intent = intent_path(store, relative)
    try:
        ensure_folder(store.path, os.path.dirname(path))
        fd = osfs.open_append(path, readable=True)
        try:
            size = os.fstat(fd).st_size
            noted = _noted(intent)
            # an offset past the end: a consumer emptied the outbox since; what is left is read from its start
            start = (noted[0] if noted[0] <= size else 0) if noted is not None else size
            written = _ids_after(fd, start, size) & noted[1] if noted is not None else set()
            todo = [(_line(each), each["moment_id"]) for each in records if each["moment_id"] not in written]
            if todo:
                ids = sorted((noted[1] if noted is not None else set()) | {moment_id for _, moment_id in todo})
                try:
                    write_atomic(intent, json.dumps({"offset": start, "moments": ids}).encode(), durable=True)
                except OSError as error:  # without its note a cut-off delivery could be sent twice: none now
                    return 0, (f"{os.path.relpath(intent, store.path)} (the delivery's note) cannot be written: "
                               f"{error.strerror or error}")
                torn = size > 0 and osfs.pread(fd, 1, size - 1) != b"\n"
                view = memoryview((b"\n" if torn else b"") + b"".join(line for line, _ in todo))
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
        finally:
            os.close(fd)
    except (OSError, ContinuityError) as error:
        return 0, f"{relative}: {getattr(error, 'strerror', None) or error}"
    return len(records), None


def intent_path(store: Store, relative: str) -> str:
    """The note of an outbox delivery not recorded yet (one per outbox)."""
    import hashlib

    return os.path.join(store.local_dir, f"moments-outbox-{hashlib.sha256(relative.encode()).hexdigest()[:16]}.intent")


def settle(intent: str, recorded: set[str], due: set[str]) -> None:
    """Keep on an outbox's note only the moments still due to it (`due`: before this delivery) and not recorded now;
    the note goes when none is left (best effort: a note left behind only makes the next delivery read the
    outbox from its offset). A moment no longer due (recorded by a delivery killed before it settled, or gone
    from the model) leaves the note too, so no note outlives what it is for."""
    import json

    from continuity.core.fsio import write_atomic

    noted = _noted(intent)
    if noted is None:
        return
    left = (noted[1] & due) - recorded
    try:
        if left:
            write_atomic(intent, json.dumps({"offset": noted[0], "moments": sorted(left)}).encode(), durable=True)
        else:
            os.unlink(intent)
    except OSError:
        pass


def _noted(intent: str) -> tuple[int, set[str]] | None:
    """(where the outbox ended, the moments written after) of an unrecorded delivery; None when none is noted."""
    from continuity.core.fsio import read_json

    value = read_json(intent)
    if not isinstance(value, dict) or not isinstance(value.get("offset"), int) or value["offset"] < 0:
        return None
    moments = value.get("moments")
    return value["offset"], {each for each in moments if isinstance(each, str)} if isinstance(moments, list) else set()


def _ids_after(fd: int, offset: int, size: int) -> set[str]:
    """The moment ids on the whole lines of an outbox from `offset` (a line's start) to `size`."""
    import json

    ids: set[str] = set()
    rest = b""
    while offset < size:
        chunk = osfs.pread(fd, min(1 << 20, size - offset), offset)
        if not chunk:
            break
        offset += len(chunk)
        *lines, rest = (rest + chunk).split(b"\n")
        for line in lines:
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict) and isinstance(value.get("moment_id"), str):
                ids.add(value["moment_id"])
    return ids


def to_command(store: Store, team: str, channel: Channel, records: list[dict[str, Any]]) -> tuple[int, str | None]:
    """Run the command once per moment, the moment on its stdin; stop at the first that fails or hangs."""
    import subprocess
    import tempfile

    assert channel.command is not None
    argv = list(channel.command)
    for sent, each in enumerate(records):
        # stderr goes to a file, not a pipe: the command's exit is what counts (a child it leaves running
        # holds no pipe open), and however much it writes, only the tail is read back
        with tempfile.TemporaryFile() as errors:
            try:
                process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                           stderr=errors, cwd=store.root, start_new_session=True)
            except OSError as error:
                return sent, f"cannot run {argv[0]!r}: {error.strerror or error}"
            try:
                process.communicate(_line(each), timeout=channel.timeout_seconds)
            except subprocess.TimeoutExpired:
                _kill(process)
                return sent, f"{argv[0]!r} did not finish within {channel.timeout_seconds:g}s and was stopped"
            if process.returncode != 0:
                from continuity.core.text import one_line

                errors.seek(max(0, errors.seek(0, os.SEEK_END) - 4 * STDERR_SHOWN))
                shown = one_line(errors.read().decode("utf-8", "replace").strip()[-STDERR_SHOWN:])
                return sent, f"{argv[0]!r} exited {process.returncode}" + (f": {shown}" if shown else "")
    return len(records), None


def _kill(process: Any) -> None:
    import signal

    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        process.kill()
    process.wait()
    if process.stdin is not None:
        process.stdin.close()


SINKS: dict[str, Callable[[Store, str, Channel, list[dict[str, Any]]], tuple[int, str | None]]] = {
    "outbox": to_outbox,
    "command": to_command,
}
