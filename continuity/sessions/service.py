"""The session commands as a Python API: archive, host-switch, status, restore, resume-bundle.

The CLI and the `runtime-continuity` adapter both call these; harnesses written in
Python can too. Writes fail closed (errors raise); reads fail open (warnings).
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from continuity import facts as live
from continuity.core.errors import UsageError
from continuity.core.store import Store, now_us
from continuity.readside.replay import resolve_point, state_until
from continuity.readside.writers import contexts_dir, markdown_path, refresh
from continuity.sessions import brief as bundle
from events import clock
from events.archive import ArchiveCreated, ArchivedState, HostSwitched
from events.base import Event
from events.context import ContextServed
from events.errors import ContinuityError
from events.sealing import StoredEvent, sha256_hex
from projections.state import ProjectState, State, latest_archive, project_state

STALE_ARCHIVE_HOURS = 2


class View(msgspec.Struct, kw_only=True):
    """A projection to answer from: current, or as of an earlier point."""

    state: State
    as_of: str | None = None
    warnings: list[str] = msgspec.field(default_factory=list)


def current_view(store: Store, *, as_of: str | None = None, write: bool = True) -> View:
    """The projection now (caught up, derived files refreshed) or as of a point. Fails open."""
    log = store.open_reader()
    if as_of is not None:
        warnings: list[str] = []
        last_name, _ = resolve_point(log, as_of)
        return View(state=state_until(log, last_name, warnings), as_of=as_of, warnings=warnings)
    try:
        outcome = refresh(store, write=write)
    except OSError as error:
        warnings = [f"projections unavailable ({error.strerror or error}); replayed the log in memory"]
        state = state_until(log, "~", warnings)
        return View(state=state, warnings=warnings)
    return View(state=outcome.state, warnings=outcome.warnings)


# -- archive ---------------------------------------------------------------------------------
def _note_list(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if isinstance(value, list):
        return tuple(str(item) for item in value if str(item).strip())
    raise UsageError("--note-json: done, next and blockers must be strings or lists of strings")


def archived_state(project: ProjectState, note: dict[str, Any] | None) -> ArchivedState:
    """The state an archive records: the projection's work state, overridden by the note."""
    work = project.work
    state = ArchivedState(
        current_goal=work.current_goal,
        done=tuple(work.done),
        in_progress=work.in_progress,
        next=tuple(work.next),
        blockers=tuple(work.blockers),
    )
    if not note:
        return state
    changes: dict[str, Any] = {}
    if "goal" in note:
        changes["current_goal"] = str(note["goal"]) if note["goal"] else None
    for key in ("done", "next"):
        if key in note:
            changes[key] = _note_list(note[key])
    for key in ("blockers", "pitfalls"):
        if key in note:
            changes["blockers"] = _note_list(note[key])
            break
    for key in ("in_progress", "blocked"):
        if key in note:
            changes["in_progress"] = str(note[key]) if note[key] else None
            break
    return msgspec.structs.replace(state, **changes)


def archive(
    store: Store, *, envelope: dict[str, Any], gate: str | None, full: bool, reason: str | None,
    from_host: str | None, to_host: str | None, note: dict[str, Any] | None, redact: bool = False,
    switch: bool = False,
) -> tuple[list[StoredEvent], list[str]]:
    """Take an archive (and record a host switch when asked); returns the stored events."""
    if gate is not None and gate not in ("user", "agent"):
        raise UsageError("--gate must be one of: user, agent")
    view = current_view(store)
    project = project_state(view.state, envelope["project"])
    warnings = list(view.warnings)
    facts = live.git_facts(store.root, warnings)
    read_first = tuple(
        path for path in live.READ_FIRST_CANDIDATES if os.path.exists(os.path.join(store.root, path))
    )
    host = from_host or envelope.get("host")
    drafts: list[Event] = [
        ArchiveCreated(
            **{**envelope, "host": host}, gate=gate, full=full, source_host=host, target_host=to_host,
            reason=reason, git=facts, state=archived_state(project, note), read_first=read_first,
            message=reason or "",
        )
    ]
    if switch:
        if not host or not to_host:
            raise UsageError("host-switch needs --from-host and --to-host")
        drafts.append(HostSwitched(**{**envelope, "host": host}, from_host=host, to_host=to_host,
                                   reason=reason, message=f"{host} -> {to_host}"))
    log = store.open_log()
    stored = log.append_many(drafts, redact=redact)  # the switch's `prev` is its archive
    outcome = refresh(store)
    warnings.extend(outcome.warnings)
    return stored, warnings


def archive_paths(store: Store, state: State, project: str) -> dict[str, Any]:
    """Where the newest archive of a project was written."""
    record = latest_archive(project_state(state, project))
    if record is None:
        return {}
    md = markdown_path(store, record)
    return {
        "archive_id": record.archive_id,
        "archiveJsonPath": os.path.join(store.path, "archives", f"{record.archive_id}.json"),
        "latestJsonPath": os.path.join(store.path, "archives", "latest.json"),
        "archivePath": md,
        "latestPath": os.path.join(os.path.dirname(md), "latest.md"),
        "stamp": record.archive_id.removeprefix("RC-"),
        "archive": msgspec.to_builtins(record),
    }


# -- status ----------------------------------------------------------------------------------
def status(store: Store, project: str, *, as_of: str | None = None) -> dict[str, Any]:
    """The newest archive's age and whether to archive now; counts."""
    view = current_view(store, as_of=as_of)
    state = project_state(view.state, project)
    now = _now_for(view, state)
    record = latest_archive(state)
    result: dict[str, Any] = {"ok": True, "action": "status", "project": project, "as_of": as_of,
                              "events": state.events, "warnings": view.warnings}
    if record is None:
        return result | {"exists": False, "stale_recommendation": "archive_now" if state.events else "ok"}
    age_hours = (clock.parse_iso(now) - clock.parse_iso(record.created_at)) / 3_600_000_000
    return result | {
        "exists": True,
        "latest": record.archive_id,
        "latest_at": record.created_at,
        "age": bundle.age(record.created_at, now),
        "age_hours": round(age_hours, 3),
        "stale_recommendation": "archive_now" if age_hours > STALE_ARCHIVE_HOURS else "ok",
        "count": state.archives_total,
        "last_host": state.sessions.last_host,
        "next_action": record.restore.next_action,
    }


def _now_for(view: View, state: ProjectState) -> str:
    """`now` for a view: the real clock, or the time of the point an audit replays."""
    if view.as_of is None:
        return clock.iso(now_us())
    if view.as_of.startswith("RCE-"):
        return state.last_at or clock.iso(now_us())
    return clock.iso(clock.parse_iso(view.as_of))


# -- resume bundle ---------------------------------------------------------------------------
class Brief(msgspec.Struct, kw_only=True):
    """A rendered resume bundle and what it was rendered from."""

    text: str
    data: dict[str, Any]
    warnings: list[str]
    served: StoredEvent | None = None


def _render(data: dict[str, Any], fmt: str, max_chars: int) -> str:
    if fmt == "json":
        import orjson

        return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"
    return bundle.render_markdown(data, max_chars)


def resume_bundle(
    store: Store, *, project: str, fmt: str = "md", max_chars: int = bundle.DEFAULT_MAX_CHARS,
    record: bool = False, as_of: str | None = None, envelope: dict[str, Any] | None = None,
) -> Brief:
    """The resume bundle now, or as of a point; recorded as `context.served` when asked."""
    if fmt not in ("md", "json"):
        raise UsageError("--format must be md or json")
    if max_chars < bundle.MIN_MAX_CHARS:
        raise UsageError(f"--max-chars must be at least {bundle.MIN_MAX_CHARS}")
    if as_of is not None:
        return _replayed_bundle(store, project=project, fmt=fmt, max_chars=max_chars, as_of=as_of)
    view = current_view(store)
    state = project_state(view.state, project)
    record_archive = latest_archive(state)
    latest_md = None
    if record_archive is not None:
        latest_md = os.path.join(contexts_dir(store), project, "latest.md")
    inputs = live.view_inputs(
        store.root, now_us=now_us(), archived_git=_archived_git(record_archive),
        archived_read_first=record_archive.restore.read_first if record_archive else [],
        handoffs=list(state.refs.handoffs), artifacts=list(state.refs.artifacts),
        latest_markdown=latest_md, warnings=list(view.warnings),
    )
    session_id = (envelope or {}).get("session_id")
    data = bundle.build(state, inputs, session_id=session_id)
    text = _render(data, fmt, max_chars)
    brief = Brief(text=text, data=data, warnings=list(inputs.warnings))
    if record:
        served = ContextServed(
            **(envelope or {"project": project}), brief_sha256=sha256_hex(text.encode()), format=fmt,
            max_chars=max_chars, chars=len(text), as_of=state.last_event_id,
            events_folded=state.events, served_to=(envelope or {}).get("session_id"),
            inputs=inputs, message=f"resume brief served ({len(text)} chars)",
        )
        try:
            brief.served = store.open_log().append(served)
        except ContinuityError as error:
            brief.warnings.append(f"brief served but not recorded: {error}")
    return brief


class _ArchivedGit(msgspec.Struct, frozen=True):
    head: str | None
    dirty_files: tuple[str, ...]


def _archived_git(record: Any) -> _ArchivedGit | None:
    if record is None:
        return None
    return _ArchivedGit(head=record.git.head, dirty_files=tuple(record.refs.dirty_files))


def _replayed_bundle(store: Store, *, project: str, fmt: str, max_chars: int, as_of: str) -> Brief:
    log = store.open_reader()
    warnings: list[str] = []
    last_name, point = resolve_point(log, as_of)
    if point is not None and isinstance(point.event, ContextServed):
        served = point.event
        until = log.find(served.as_of).name if served.as_of else ""
        state = state_until(log, until, warnings) if until else State()
        folded = project_state(state, served.project).events
        if folded != served.events_folded:
            warnings.append(
                f"the log before this point changed since it was served ({folded} events of "
                f"{served.project} now, {served.events_folded} then): the brief may differ"
            )
        data = bundle.build(project_state(state, served.project), served.inputs, session_id=served.served_to)
        text = _render(data, served.format, served.max_chars)
        if sha256_hex(text.encode()) != served.brief_sha256:
            warnings.append("the regenerated brief does not match the hash recorded when it was served")
        return Brief(text=text, data=data, warnings=warnings)
    state = state_until(log, last_name, warnings)
    pstate = project_state(state, project)
    now = pstate.last_at if point is not None else clock.iso(clock.parse_iso(as_of))
    from events.context import ViewInputs

    inputs = ViewInputs(now=now or clock.iso(now_us()), warnings=tuple(warnings))
    data = bundle.build(pstate, inputs, as_of=as_of)
    return Brief(text=_render(data, fmt, max_chars), data=data, warnings=warnings)
