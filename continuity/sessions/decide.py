"""Decisions of the session commands: archive, host-switch, session start and end, context served.

Each is a pure function of what the caller gathered: the read models' state, outside
facts (git, host, working directory, the rendered brief) and the request. No disk, no
clock, no git: the log stamps time and order when the events are appended.
"""

from __future__ import annotations

from typing import Any

import msgspec

from continuity.core.errors import UsageError
from continuity.core.identity import Identity
from events.archive import ArchiveCreated, ArchivedState, CitedFiles, GitFacts, HostSwitched
from events.base import MAX_EVENT_BYTES, Event, Summary
from events.context import FOLDED_NODES_MAX, ContextServed, ViewInputs
from events.guard import cut
from events.sealing import sha256_hex
from events.session import SessionEnded, SessionStarted
from events.worklog import CheckpointRecorded
from projections.worklog import WorkState

GATES = ("user", "agent")


class ArchiveFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What the caller observed for an archive: git, and which read-first files exist."""

    git: GitFacts = msgspec.field(default_factory=GitFacts)
    read_first: tuple[str, ...] = ()
    #: What a `runtime-continuity` archive cites (seed 004's listings); None for continuity's own.
    cited: CitedFiles | None = None


class ArchiveRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What `archive` or `host-switch` was asked for."""

    gate: str | None = None
    full: bool = False
    reason: str | None = None
    from_host: str | None = None
    to_host: str | None = None
    note: dict[str, Any] | None = None
    switch: bool = False


def _note_list(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if isinstance(value, list) and all(isinstance(item, str) for item in value):  # `None`, `False`, a dict's repr
        return tuple(item for item in value if item.strip())  # were stored as text
    raise UsageError("--note-json: done, next and blockers must be strings or lists of strings")


def _note_text(note: dict[str, Any], key: str) -> str | None:
    value = note[key]
    if value is None or isinstance(value, str):
        return value or None
    raise UsageError(f"--note-json: {key} must be a string or null")


#: What of the work state an archive keeps at most, in encoded bytes per list, so that the event holding it stays
#: under MAX_EVENT_BYTES (256 KiB) whatever the state has gathered (every log appends done items, up to 256 of
#: 16,384 characters: an archive of them was refused, and every later one, until a note cleared them). Done keeps
#: its newest items; next and blockers their first (next[0] is the next action). A note's own lists are the
#: caller's input, checked as given.
ARCHIVE_BYTES = {"done": 96 * 1024, "next": 40 * 1024, "blockers": 40 * 1024}
#: The longest goal an archive takes (events.base.Text).
GOAL_CHARS = 16384


def _fitting(items: list[str], budget: int, *, newest_last: bool = False) -> tuple[str, ...]:
    """The items that fit in `budget` encoded bytes: the first ones, or (`newest_last`) the last ones."""
    kept: list[str] = []
    used = 0
    for item in reversed(items) if newest_last else items:
        used += len(msgspec.json.encode(item)) + 1
        if used > budget:
            break
        kept.append(item)
    return tuple(reversed(kept)) if newest_last else tuple(kept)


def _goal_text(goal: str | None) -> str | None:
    """A goal as an archive takes it: a log's note set it unchecked (control characters, any length), and an
    archive refused every time for it; its controls are U+FFFD and it is cut to GOAL_CHARS."""
    if goal is None:
        return None
    import re

    return cut(re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", "\ufffd", goal), GOAL_CHARS) or None


def archived_state(work: WorkState, note: dict[str, Any] | None) -> ArchivedState:
    """The state an archive records: the work state (within ARCHIVE_BYTES), overridden by the note."""
    state = ArchivedState(
        current_goal=_goal_text(work.current_goal),
        done=_fitting(work.done, ARCHIVE_BYTES["done"], newest_last=True),
        in_progress=work.in_progress,
        next=_fitting(work.next, ARCHIVE_BYTES["next"]),
        blockers=_fitting(work.blockers, ARCHIVE_BYTES["blockers"]),
    )
    if not note:
        return state
    changes: dict[str, Any] = {}
    given = [key for key in ("goal", "current_goal") if key in note]  # seed 004's archive: goal || current_goal
    if given:
        changes["current_goal"] = _note_text(note, next((key for key in given if note[key]), given[-1]))
    for key in ("done", "next"):
        if key in note:
            changes[key] = _note_list(note[key])
    for key in ("blockers", "pitfalls"):
        if key in note:
            changes["blockers"] = _note_list(note[key])
            break
    for key in ("in_progress", "blocked"):
        if key in note:
            changes["in_progress"] = _note_text(note, key)
            break
    return msgspec.structs.replace(state, **changes)


def decide_archive(work: WorkState, facts: ArchiveFacts, identity: Identity,
                   request: ArchiveRequest) -> list[Event]:
    """An archive of the work state; for a host switch, the switch after it."""
    if request.gate is not None and request.gate not in GATES:
        raise UsageError("--gate must be one of: user, agent")
    host = request.from_host or identity.host
    envelope = {**identity.fields(), "host": host}
    if request.switch and (not host or not request.to_host):
        raise UsageError("host-switch needs --from-host and --to-host")
    archive = ArchiveCreated(
        **envelope, gate=request.gate, full=request.full or request.switch, source_host=host,
        target_host=request.to_host, reason=request.reason, git=facts.git,
        state=archived_state(work, request.note), read_first=facts.read_first, message=request.reason or "",
        cited=facts.cited,
    )
    events: list[Event] = [_fitted(archive, _noted_fields(request.note))]
    if request.switch:
        assert host is not None and request.to_host is not None
        events.append(HostSwitched(**envelope, from_host=host, to_host=request.to_host, reason=request.reason,
                                   message=f"{host} -> {request.to_host}"))
    return events


#: The most an archive event may encode to before it is sealed (its id, time and chain link added then): what the
#: work state gathered gives way, whatever the git facts beside it take (up to 160 KiB of dirty files and status).
ARCHIVE_EVENT_BYTES = MAX_EVENT_BYTES - 4096


#: The keys an archive's note sets the archived state with (`archived_state`), as seed 004's archive takes them.
NOTE_KEYS = ("goal", "current_goal", "done", "in_progress", "blocked", "next", "blockers", "pitfalls")


def unused_note_keys(note: dict[str, Any] | None) -> str | None:
    """A warning naming the keys of an archive's note that set nothing (a misspelt `nxet` was dropped without a
    word), or None."""
    unused = sorted(key for key in note or () if key not in NOTE_KEYS)
    if not unused:
        return None
    from continuity.core.text import one_line, shortened

    named = ", ".join(shortened(one_line(key), 40) for key in unused[:5]) + (", ..." if len(unused) > 5 else "")
    return f"note key(s) not part of the archived state, ignored: {named} (it takes {', '.join(NOTE_KEYS)})"


def _noted_fields(note: dict[str, Any] | None) -> frozenset[str]:
    """The archived state's fields a note sets (archived_state): the caller's input, never trimmed."""
    keys = set(note or ())
    return frozenset(field for field, names in (("current_goal", {"goal", "current_goal"}), ("done", {"done"}),
                                                ("next", {"next"}),
                                                ("blockers", {"blockers", "pitfalls"})) if keys & names)


def _fitted(archive: ArchiveCreated, noted: frozenset[str]) -> ArchiveCreated:
    """`archive`, the work state it carries trimmed until it encodes within ARCHIVE_EVENT_BYTES: the oldest done
    items first, then the goal (cut by half), then the last blockers and next steps (the first next step, the next
    action, last of all). What a note set (`noted`) is the caller's input: refused as given if it does not fit."""
    state = archive.state
    while len(msgspec.json.encode(archive)) > ARCHIVE_EVENT_BYTES:
        if state.done and "done" not in noted:
            state = msgspec.structs.replace(state, done=state.done[max(1, len(state.done) // 8):])
        elif state.current_goal and len(state.current_goal) > 64 and "current_goal" not in noted:
            state = msgspec.structs.replace(state, current_goal=cut(state.current_goal, len(state.current_goal) // 2))
        elif state.blockers and "blockers" not in noted:
            state = msgspec.structs.replace(state, blockers=state.blockers[:-1])
        elif len(state.next) > 1 and "next" not in noted:
            state = msgspec.structs.replace(state, next=state.next[:-1])
        else:
            break  # what is left (the git facts, the next action) is refused as it stands
        archive = msgspec.structs.replace(archive, state=state)
    return archive


def decide_session_start(identity: Identity, *, source: str, cwd: str | None, message: str,
                         model: str | None = None, transcript_path: str | None = None) -> list[Event]:
    """A session began (warm --auto, a harness's SessionStart, the compat CLI's warm --auto)."""
    return [SessionStarted(**identity.fields(), source=source, model=model, transcript_path=transcript_path,
                           cwd=cwd, message=message)]


def decide_session_end(identity: Identity, *, reason: str | None) -> list[Event]:
    """A session ended."""
    return [SessionEnded(**identity.fields(), reason=reason, message="session ended")]


def decide_pre_compact(work: WorkState, identity: Identity, note: dict[str, Any]) -> list[Event]:
    """Before the context is compacted: checkpoint what is in progress, next and blocking."""
    trigger = note.get("trigger", "auto")
    return [CheckpointRecorded(
        **identity.fields(), phase="pre-compact", message=f"context about to be compacted ({trigger})",
        summary=Summary(in_progress=work.in_progress, next=tuple(work.next), blockers=tuple(work.blockers)),
        note=note or None,
    )]


class Served(msgspec.Struct, frozen=True, kw_only=True):
    """A brief as it was rendered: its text, options, and the projection point it came from."""

    text: str
    format: str
    max_chars: int
    as_of: str | None
    events_folded: int
    #: node -> stamp of its newest event folded (projections/overview.py `nodes`).
    folded_nodes: dict[str, str] = msgspec.field(default_factory=dict)
    renderer: str | None = None
    #: model -> the last event it had folded, when the models stood at different points (else empty).
    model_points: dict[str, str] = msgspec.field(default_factory=dict)


def decide_context_served(identity: Identity, inputs: ViewInputs, served: Served) -> list[Event]:
    """Record what a session was told: the brief's hash and every outside input it used."""
    return [ContextServed(
        **identity.fields(), brief_sha256=sha256_hex(served.text.encode()), format=served.format,
        max_chars=served.max_chars, chars=len(served.text), as_of=served.as_of,
        events_folded=served.events_folded, served_to=identity.session_id, inputs=inputs,
        folded_nodes=served.folded_nodes if len(served.folded_nodes) <= FOLDED_NODES_MAX else {},
        renderer=served.renderer, model_points=served.model_points or msgspec.UNSET,
        message=f"resume brief served ({len(served.text)} chars)",
    )]
