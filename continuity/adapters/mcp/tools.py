"""The six tools: `log`, `checkpoint`, `archive`, `resume_bundle`, `status`, `events`.

Each calls the Python API the CLI calls (continuity/cli/worklog.py, sessions.py, events_cmd.py)
and returns what the CLI prints with `--json`, warnings included (there is no stderr to a
client).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from continuity.adapters.mcp.registry import pick, tool, tool_input
from continuity.core.identity import Identity, resolve_identity
from continuity.core.paths import event_relpath
from continuity.core.store import Store, check_project_name, check_project_to_read
from continuity.sessions.brief import DEFAULT_MAX_CHARS, MAX_MAX_CHARS, MIN_MAX_CHARS
from continuity.worklog.decide import WorkRequest
from events.base import Name


class WriteOptions(msgspec.Struct, frozen=True, kw_only=True):
    """How an append treats secret-like text."""

    redact: bool = False


class ArchiveRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What `archive` was asked to take."""

    gate: Literal["user", "agent"] | None = None
    reason: str | None = None
    full: bool = False
    from_host: Name | None = None
    to_host: Name | None = None
    note: dict[str, Any] | None = None
    redact: bool = False


class BundleRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What `resume_bundle` was asked to render (the session it serves is the identity's)."""

    max_chars: Annotated[int, msgspec.Meta(ge=MIN_MAX_CHARS, le=MAX_MAX_CHARS)] = DEFAULT_MAX_CHARS
    format: Literal["md", "json"] = "md"
    record: bool = False
    as_of: str | None = None


class StatusRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Which project `status` reports on, and as of when."""

    project: str | None = None
    as_of: str | None = None


class EventsRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Which recent events to list."""

    kind: str | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 20


WorkInput = tool_input("WorkInput", "A work-log entry or checkpoint, and who writes it.",
                       WorkRequest, Identity, WriteOptions)
ArchiveInput = tool_input("ArchiveInput", "An archive to take, and who takes it.", ArchiveRequest, Identity,
                          help_for={"note": "override the archived state: {goal, done, in_progress, next, blockers} "
                                                  "(seed 004's current_goal, blocked, pitfalls too; any other key is "
                                                  "named in a warning)"})
BundleInput = tool_input("BundleInput", "A resume bundle to render, and who it is served to.",
                         BundleRequest, Identity)
StatusInput = tool_input("StatusInput", "Which project `status` reports on, and as of when.", StatusRequest)
EventsInput = tool_input("EventsInput", "Which recent events to list.", EventsRequest, help_for={
    "kind": "only events of this kind (checkpoint.recorded) or family (checkpoint); an unknown kind is refused"})

def identity(request: Any, store: Store, *, reading: list[str] | None = None, names_only: bool = True,
             current_run: bool = True) -> Identity:
    """Who writes: the arguments, else the CONTINUITY_* environment (as the CLI), else the store's project.

    As in the CLI and the hooks, a call that names no run is made in the session's current
    run (`start_agent_run` made it current), so `log` and `checkpoint` files and commands are
    attributed to it. The run tools set their events' own run over it: nothing is counted twice. Not for a read
    as of a point (`current_run` False): that hint is about now.
    """
    from continuity.adapters.mcp.registry import CLIENT
    from continuity.core.identity import clean_label
    from continuity.tasks.current import with_current_run

    given = {name: getattr(request, name) for name in Identity.__struct_fields__}
    harness = {"host": clean_label(CLIENT.get())}  # the client's (display) name is the host when no argument is
    asked = given.pop("project")
    project = read_project_of(asked, store, reading) if reading is not None else project_of(asked, store)
    who = resolve_identity(project, given, harness, names_only=names_only)
    return with_current_run(who, store.local_dir) if current_run else who


def project_of(project: str | None, store: Store) -> str:
    """The project asked for, else the store's; refused (like the CLI) when no event could carry it."""
    return check_project_name(store.project if project is None else project)  # "" is refused, as `--project ""`


def asked_project(project: str | None, store: Store) -> str:
    """For a read of the workstreams, tasks or memories: the project asked for (refused as the CLI refuses a name
    no event could carry: a token is never echoed in the answer), else the one the store reads under."""
    return check_project_to_read(project) if project is not None else store.reading_project()[0]


def read_project_of(project: str | None, store: Store, warnings: list[str]) -> str:
    """For a read: the project asked for, else config.json's, else (a broken config) the log's, with a warning
    added to `warnings`; a store a write would refuse is read as the CLI reads it (reads fail open)."""
    if project is not None:
        return check_project_to_read(project)
    name, said = store.reading_project()
    warnings.extend(said)
    return check_project_to_read(name)


def _append(request: Any, store: Store, *, checkpoint: bool) -> dict[str, Any]:
    from continuity.worklog.decide import decide_checkpoint, decide_log

    decide = decide_checkpoint if checkpoint else decide_log
    work = pick(WorkRequest, request)
    if work.files:  # an absolute path inside the project from its root, as a hook records it
        from continuity.adapters.hook_entries import project_paths

        work = msgspec.structs.replace(work, files=project_paths(work.files, store.root))
    drafts = decide(identity(request, store), work)
    stored = store.open_log().append_many(drafts, redact=request.redact)[0]
    return {"ok": True, "action": "checkpoint" if checkpoint else "log", "event_id": stored.event_id,
            "event_path": event_relpath(stored.name),
            "event": msgspec.to_builtins(stored.event)}


@tool("log", WorkInput, "Record a work-log entry: what happened, what is done, the next steps, blockers.")
def log(request: Any, store: Store) -> dict[str, Any]:
    """The `log` tool."""
    return _append(request, store, checkpoint=False)


@tool("checkpoint", WorkInput, "Record a phase checkpoint to resume from; the in_progress, next and blockers it "
      "states replace the old ones.")
def checkpoint(request: Any, store: Store) -> dict[str, Any]:
    """The `checkpoint` tool."""
    return _append(request, store, checkpoint=True)


@tool("archive", ArchiveInput, "Take an archive of the working state (JSON under archives/ and Markdown).")
def archive(request: Any, store: Store) -> dict[str, Any]:
    """The `archive` tool."""
    from continuity.sessions import decide, service

    who = identity(request, store)
    wanted = decide.ArchiveRequest(gate=request.gate, full=request.full, reason=request.reason,
                                   from_host=request.from_host, to_host=request.to_host, note=request.note)
    stored, warnings = service.archive(store, who, wanted, redact=request.redact)
    paths = service.archive_paths(store, None, who.project, service.own_archive(store, who.project,
                                                                                stored[0].event_id))
    return {"ok": True, "action": "archive", "project": who.project,
            "event_ids": [s.event_id for s in stored], "warnings": warnings, **paths}


@tool("resume_bundle", BundleInput, "Everything a new session needs to resume the work, within a size budget. "
      "Call it first in a new session.")
def resume_bundle(request: Any, store: Store) -> dict[str, Any]:
    """The `resume_bundle` tool."""
    from continuity.core.errors import UsageError
    from continuity.sessions import service

    said: list[str] = []
    if request.record and request.as_of is not None:  # as the CLI: a replay is never recorded
        raise UsageError("record records; it does not go with as_of")
    record = request.record and bool(request.project or store.config_problem is None)  # never under a guess
    now = request.as_of is None  # the session's current run is now's: as of a point, only a run asked for
    try:
        who = identity(request, store, reading=said, current_run=now)
    except UsageError as error:  # an id no event may carry (CONTINUITY_*): a read still answers, unrecorded
        who = identity(request, store, reading=said, names_only=False, current_run=now)
        if record:
            record = False
            said.append(f"the brief is served but not recorded: {error}")
    from continuity.core.identity import served_to

    who, record, left_out = served_to(who, record)
    said += left_out
    brief = service.resume_bundle(store, who, fmt=request.format, max_chars=request.max_chars,
                                  record=record, as_of=request.as_of)
    body = {"brief": brief.text} if brief.format == "md" else {"bundle": brief.data}  # a served brief: as served
    return {"ok": True, "action": "resume-bundle", "project": who.project, "format": brief.format,
            **body, "warnings": [*said, *brief.warnings], "recorded": brief.served.event_id if brief.served else None}


@tool("status", StatusInput, "Age of the newest archive, whether to archive now, and the next action.")
def status(request: Any, store: Store) -> dict[str, Any]:
    """The `status` tool."""
    from continuity.sessions import service

    said: list[str] = []
    result = service.status(store, read_project_of(request.project, store, said), as_of=request.as_of)
    result["warnings"] = [*said, *result.get("warnings", [])]
    return result


@tool("events", EventsInput, "The newest events of the log (optionally of one kind), oldest first. Read-only.")
def events(request: Any, store: Store) -> dict[str, Any]:
    """The `events` tool."""
    from continuity.core.kinds import kinds_for
    from events.durable import left_out

    log, warnings = store.open_events_reader()
    warnings += left_out(log.events_dir)  # as `events list`: a day that is a symlink or a file, said
    kinds = frozenset(kinds_for([request.kind])) if request.kind is not None else None  # as `events list --kind`
    recent = log.read_newest(  # from the end of the log: a long history costs nothing more
        request.limit, keep=lambda event: kinds is None or event.kind in kinds,
        on_error=lambda name, error: warnings.append(f"{name}: {error}"))
    if log.hours_left:
        warnings.append(log.hours_left)
    return {"ok": True, "action": "events", "count": len(recent), "warnings": warnings,
            "events": [msgspec.to_builtins(s.event) for s in recent]}
