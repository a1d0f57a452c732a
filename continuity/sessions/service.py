"""The session commands as a Python API: archive, host-switch, status, restore, resume-bundle.

The CLI, the hooks, the MCP server and the `runtime-continuity` adapter call these;
harnesses written in Python can too. Each gathers the facts, calls a decision, appends
its events and lets the read models catch up. Writes fail closed (errors raise); reads
fail open (warnings).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import msgspec

from continuity import facts as live
from continuity.core.errors import UsageError
from continuity.core.identity import Identity
from continuity.core.paths import LATEST_LINK, RECALL_INDEX_NAME, contexts_dir
from continuity.core.store import Store, now_us
from continuity.readside.query import View, current_view, now_for
from continuity.readside.views import BRIEF_MODELS, BRIEF_VIEWS, SESSION_MODELS, SPARSE_MODELS
from continuity.readside.writers import markdown_path, refresh
from continuity.sessions import brief as bundle
from continuity.sessions.decide import (
    ArchiveFacts,
    ArchiveRequest,
    Served,
    decide_archive,
    decide_context_served,
    unused_note_keys,
)
from continuity.sessions.recordable import recordable
from events import clock
from events.base import Event
from events.context import ContextServed, RecalledEvent, ViewInputs
from events.errors import ContinuityError, WriteFailed
from events.guard import cut, redact_text, redact_tree
from events.sealing import StoredEvent, sha256_hex
from projections.worklog import WorkState

STALE_ARCHIVE_HOURS = 2


# -- archive ---------------------------------------------------------------------------------
def archive(store: Store, identity: Identity, request: ArchiveRequest, *, redact: bool = False,
            facts: ArchiveFacts | None = None, deadline: float | None = None,
            work_from: Callable[[WorkState], WorkState] | None = None) -> tuple[list[StoredEvent], list[str]]:
    """Take an archive (and record a host switch when asked); returns the stored events and warnings.

    `facts` given (the compat CLI gathers seed 004's) replace the git facts gathered here. `deadline` (a hook
    the harness kills): the work state must be caught up whole by then, else nothing is taken (WriteFailed:
    an archive of a state days old would claim it as the latest); the catch-up keeps its progress. `work_from`:
    the work state to archive, given the project's (the compat CLI's, from the original tool's newest archive);
    called under the log's lock as the decision is.
    """
    from continuity.readside.decided import OutOfTime, record_decided, viewed
    from projections.registry import REGISTRY

    warnings: list[str] = []
    if facts is None:
        facts = ArchiveFacts(git=live.git_facts(store.root, warnings), read_first=live.read_first(store.root))
    given = observed_redacted(facts, warnings)
    try:
        # An entry logged between the read and the append would be lost: the archive restates the work state
        # whole, and the work log folds it as the state from then on. Decided again under the lock (decided.py).
        stored, read = record_decided(store, REGISTRY["worklog"], identity.project, viewed("worklog", deadline),
                                      lambda work: decide_archive(work if work_from is None else work_from(work),
                                                                  given, identity, request), redact=redact,
                                      what="work state")  # the switch's `prev` is its archive
    except OutOfTime:
        raise WriteFailed("archive not taken: the work state is still catching up (a rebuild, or new formats after "
                          "an upgrade); `continuity archive` takes it once caught up") from None
    warnings[:0] = read
    unused = unused_note_keys(request.note)
    if unused:
        warnings.append(unused)
    warnings.extend(caught_up(store, deadline))
    return stored, warnings


def observed_redacted(facts: ArchiveFacts, warnings: list[str]) -> ArchiveFacts:
    """The facts with what looks like a secret in what was observed (git's status, branch and commit subjects, the
    files a seed-004 archive cites) redacted, and a warning naming the fields: an untracked file named like a token
    made every archive refuse (exit 4, `archive_failed`) until it was renamed. What the user gave (the request, a
    note's next action) is still refused, or redacted with `--redact`, as every write's fields are."""
    from events.archive import CitedFiles, GitFacts

    applied: list[str] = []
    git = fit_fields(redact_tree(msgspec.to_builtins(facts.git), "git", applied), GitFacts)
    cited = None
    if facts.cited is not None:
        listed = msgspec.to_builtins(facts.cited)
        given = listed.pop("next_action", None)
        cited = {**fit_fields(redact_tree(listed, "cited", applied), CitedFiles), "next_action": given}
    if not applied:
        return facts
    fields = dict.fromkeys(entry.rsplit(":", 1)[0].split("[", 1)[0] for entry in applied)
    warnings.append(f"what the archive observed looks like a secret in {', '.join(fields)}: stored as "
                    "[REDACTED:<rule>] (a file or commit subject named like a token)")
    return msgspec.structs.replace(facts, git=msgspec.convert(git, GitFacts),
                                   cited=None if cited is None else msgspec.convert(cited, CitedFiles))


def fit_fields(fields: dict[str, Any], struct: type[msgspec.Struct]) -> dict[str, Any]:
    """Redacted facts cut back to their fields' bounds (events/plain_table.py's): `[REDACTED:<rule>]` may be longer
    than what it replaced (a path of 1,012 characters went past 1,024, and the archive failed as an internal error)."""
    from events.guard import cut
    from events.plain_table import STRUCTS

    bounds = {name: _most(kind) for name, kind, _ in STRUCTS[struct.__name__]}
    fitted: dict[str, Any] = {}
    for name, value in fields.items():
        most = bounds.get(name)
        if most is not None and isinstance(value, str):
            value = cut(value, most)
        elif most is not None and isinstance(value, list):
            value = [cut(item, most) if isinstance(item, str) else item for item in value]
        fitted[name] = value
    return fitted


def _most(kind: tuple[Any, ...]) -> int | None:
    """The longest text a field (or each item of a list field) takes, from its type in the plain table."""
    if kind[0] == "union":
        return next((most for most in map(_most, kind[1]) if most is not None), None)
    if kind[0] == "tuple":
        return _most(kind[1])
    return kind[2] if kind[0] == "str" else None


def caught_up(store: Store, deadline: float | None = None) -> list[str]:
    """After a durable append: catch the read models up; any failure is a warning, never an error."""
    try:
        return refresh(store, deadline=deadline).warnings
    except (OSError, ContinuityError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        return [f"the event is saved, but projections were not updated: {reason}"]


def own_archive(store: Store, project: str, event_id: str) -> Any:
    """The archive record of the archive event just written, or None: from the caught-up models, else (a catch-up
    that stopped short of it, say at a day folder it could not list) replayed from the log up to that event."""
    from continuity.readside.query import current_view

    record = current_view(store, ("archives",), write=False).project(project).archive_of(event_id)
    if record is None:
        try:
            record = current_view(store, ("archives",), as_of=event_id).project(project).archive_of(event_id)
        except (OSError, ContinuityError):
            return None
    return record


def archive_paths(store: Store, view: View | None, project: str, record: Any = None) -> dict[str, Any]:
    """Where the newest archive of a project (or `record`) was written."""
    if record is None and view is not None:
        record = view.project(project).latest_archive()
    if record is None:
        return {}
    md = markdown_path(store, record)
    return {
        "archive_id": record.archive_id,
        "archiveJsonPath": os.path.join(store.path, "archives", f"{record.archive_id}.json"),
        "latestJsonPath": os.path.join(store.path, "archives", "latest.json"),
        "archivePath": md,
        "latestPath": os.path.join(os.path.dirname(md), LATEST_LINK),
        "stamp": record.archive_id.removeprefix("RC-"),
        "archive": msgspec.to_builtins(record),
    }


# -- status ----------------------------------------------------------------------------------
def status(store: Store, project: str, *, as_of: str | None = None) -> dict[str, Any]:
    """The newest archive's age and whether to archive now; counts; and, as the brief warns of them, the workstream
    and task problems a merge left (the tasks and workstreams models are read only for a project that used them)."""
    view = current_view(store, (*SESSION_MODELS, "tasks", "workstreams"), as_of=as_of, views=BRIEF_VIEWS,
                        sparse={"tasks": project, "workstreams": project})
    state = view.project(project)
    view.warnings.extend(bundle.merge_warnings(state))
    now = now_for(view)
    if as_of is None:
        try:
            ahead = live.clock_ahead_warning(store.open_reader(), now_us())
        except (OSError, ContinuityError):
            ahead = None
        if ahead:
            view.warnings.append(ahead)
        behind = _unsynced_warning(store)
        if behind:
            view.warnings.append(behind)
        elsewhere = _none_of_project(store, view, state.events, project)
        if elsewhere:
            view.warnings.append(elsewhere)
    record = state.latest_archive()
    result: dict[str, Any] = {"ok": True, "action": "status", "project": project, "as_of": as_of,
                              "events": state.events, "warnings": view.warnings}
    if record is None:
        return result | {"exists": False, "stale_recommendation": "archive_now" if state.events else "ok"}
    taken = state.latest_archive_at() or record.created_at  # by its writer's clock
    age_hours = (clock.parse_iso(now) - clock.parse_iso(taken)) / 3_600_000_000
    return result | {
        "exists": True,
        "latest": record.archive_id,
        "latest_at": record.created_at,
        "age": bundle.age(taken, now),
        "age_hours": round(age_hours, 3),
        "stale_recommendation": "archive_now" if age_hours > STALE_ARCHIVE_HOURS else "ok",
        "count": state.archives_total,
        "last_host": state.sessions.last_host,
        "next_action": record.restore.next_action,
    }


def _none_of_project(store: Store, view: View, events: int, project: str, recorded: int = 0) -> str | None:
    """A warning when the log holds events but none of `project` beyond the `recorded` this command just wrote
    (config.json's project renamed by hand, a --project misspelt): the answer looked like a new store's."""
    folded = view.models.events_folded
    if events > recorded or folded <= events or view.stopped:  # a catch-up cut short may not have reached them yet
        return None
    try:
        head = store.open_reader().head()
    except (OSError, ContinuityError):
        head = None
    newest = head.event.project if head is not None else None
    said = f"; the newest event is project {newest}'s" if newest and newest != project else ""
    return (f"the store holds {folded - events} events of other projects and none of project {project}{said} "
            "(is it the project config.json, or --project, should name?)")


def _unsynced_warning(store: Store) -> str | None:
    """Events of this clone older than a day still unsynced (sync is imported here only, off the hook path)."""
    try:
        from continuity.sync.health import unsynced_warning

        return unsynced_warning(store, now_us())
    except (OSError, ValueError, ContinuityError):
        return None


# -- resume bundle ---------------------------------------------------------------------------
class Brief(msgspec.Struct, kw_only=True):
    """A rendered resume bundle and what it was rendered from."""

    text: str
    data: dict[str, Any]
    warnings: list[str]
    served: StoredEvent | None = None
    #: `md` or `json`: what `text` is (a served brief replays in the format it was served in).
    format: str = "md"


def _render(data: dict[str, Any], fmt: str, max_chars: int) -> str:
    """The brief's text. The guard runs on writes only, so an event a sync brought in (or one written by hand) may
    hold a secret: the text shown (to the agent, by the SessionStart hook) has it redacted. `data` is redacted
    already for JSON (`_shown`); Markdown is redacted as one text (walking the data costs the hook ~10 ms)."""
    if fmt == "json":
        import orjson

        return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"
    budget = max_chars
    for _ in range(3):  # redaction markers longer than what they replaced: filled again to a budget smaller by that
        rendered = bundle.render_markdown(data, budget)
        text = redact_text(rendered)[0]
        if bundle.units(text) <= max_chars:
            return text
        budget = max_chars - (bundle.units(text) - bundle.units(rendered))
    return _within(text, max_chars)


def _within(text: str, max_chars: int) -> str:
    """`text` cut to `max_chars` UTF-16 code units as the harnesses count them (`brief.units`), at its last line
    break within them when there is one; never half of a surrogate pair."""
    kept = text.encode("utf-16-le", "surrogatepass")[:max_chars * 2].decode("utf-16-le", "ignore")
    line_end = kept.rfind("\n")
    return kept[:line_end + 1] if line_end > 0 else kept


def _shown(data: dict[str, Any], fmt: str) -> dict[str, Any]:
    """The brief's data as a JSON brief shows it: what looks like a secret redacted (see `_render`)."""
    if fmt != "json":
        return data
    shown: dict[str, Any] = redact_tree(data, "", [])
    return shown


def resume_bundle(
    store: Store, identity: Identity, *, fmt: str = "md", max_chars: int = bundle.DEFAULT_MAX_CHARS,
    record: bool = False, as_of: str | None = None, deadline: float | None = None, recorded: int = 0,
) -> Brief:
    """The resume bundle now, or as of a point; recorded as `context.served` when asked.

    `deadline` (`time.monotonic()`): a brief that must be served in time (a session start's hook) stops
    catching the models up past it and says so (catchup.catch_up); the brief is then the log up to there.
    """
    if fmt not in ("md", "json"):
        raise UsageError("--format must be md or json")
    if max_chars < bundle.MIN_MAX_CHARS:
        raise UsageError(f"--max-chars must be at least {bundle.MIN_MAX_CHARS}")
    project = identity.project
    if as_of is not None:
        return _replayed_bundle(store, identity, fmt=fmt, max_chars=max_chars, as_of=as_of)
    # A model the project never used is not decoded, nor its module imported (catchup.catch_up's `sparse`).
    view = current_view(store, BRIEF_MODELS, views=BRIEF_VIEWS, deadline=deadline,
                        sparse={name: project for name in SPARSE_MODELS})
    state = view.project(project)
    record_archive = state.latest_archive()
    latest_md = None
    if record_archive is not None:
        latest_md = os.path.join(contexts_dir(store), project, LATEST_LINK)
    behind = _unsynced_warning(store)  # part of the inputs: a served brief replays with it
    elsewhere = _none_of_project(store, view, state.events, project, recorded)
    inputs = live.view_inputs(
        store.root, now_us=now_us(), archived_git=_archived_git(record_archive),
        archived_read_first=record_archive.restore.read_first if record_archive else [],
        handoffs=list(state.refs.handoffs), artifacts=list(state.refs.artifacts),
        latest_markdown=latest_md, warnings=[*view.warnings, *([behind] if behind else []),
                                             *([elsewhere] if elsewhere else [])],
    )
    earlier = _earlier(store, state)
    if earlier:  # part of the inputs: a served brief replays with the hits it showed
        inputs = msgspec.structs.replace(inputs, recall=earlier)
    inputs = recordable(inputs)  # the brief is rendered from what its event can record
    data = _shown(bundle.build(state, inputs, session_id=identity.session_id, agent_id=identity.agent_id,
                               run_id=identity.run_id, host=identity.host), fmt)
    text = _render(data, fmt, max_chars)
    brief = Brief(text=text, data=data, warnings=list(inputs.warnings), format=fmt)
    if record:
        served = Served(text=text, format=fmt, max_chars=max_chars, as_of=state.last_event_id,
                        events_folded=state.events, folded_nodes=dict(state.overview.nodes), renderer=renderer(),
                        model_points=_model_points(view))
        try:
            brief.served = store.open_log().append_many(decide_context_served(identity, inputs, served))[0]
        except ContinuityError as error:
            brief.warnings.append(f"{NOT_RECORDED}: {error}")
    return brief


#: How a brief's warnings begin when the brief was served and its `context.served` could not be written.
NOT_RECORDED = "brief served but not recorded"
#: How many earlier events on the brief's subject it shows by default (`brief_recall` in config.json).
BRIEF_RECALL_DEFAULT = 3
BRIEF_RECALL_MAX = 10


def brief_recall_limit(config: dict[str, Any]) -> int:
    """`brief_recall` in config.json: false or 0 turns the section off, a number up to 10 sets its size."""
    value = config.get("brief_recall", True)
    if value is True:
        return BRIEF_RECALL_DEFAULT
    if isinstance(value, int) and not isinstance(value, bool):
        return min(max(value, 0), BRIEF_RECALL_MAX)
    return 0 if value is False or value is None else BRIEF_RECALL_DEFAULT


def _earlier(store: Store, state: Any) -> tuple[RecalledEvent, ...]:
    """The brief's recall hits, from the index as it stands (never built here: this is the hook path)."""
    limit = brief_recall_limit(store.config)
    if not limit or not os.path.isfile(os.path.join(store.local_dir, RECALL_INDEX_NAME)):
        return ()  # no index yet (the first `recall` builds it): nothing to load sqlite3 for
    from continuity.recall.service import earlier

    subjects, shown = bundle.subject(state)
    try:
        hits = earlier(store, state.project, subjects, shown, limit=limit)
    except (OSError, ContinuityError):
        return ()
    return tuple(RecalledEvent(event_id=hit.event_id, created_at=hit.created_at, kind=hit.kind,
                               agent_id=hit.agent_id, snippet=cut(hit.snippet, SNIPPET_CHARS),
                               written_at=hit.written_at) for hit in hits)


SNIPPET_CHARS = 300


class _ArchivedGit(msgspec.Struct, frozen=True):
    head: str | None
    dirty_files: tuple[str, ...]


def _archived_git(record: Any) -> _ArchivedGit | None:
    if record is None:
        return None
    return _ArchivedGit(head=record.git.head, dirty_files=tuple(record.refs.dirty_files))


def handoffs_then(store: Store, project: Any) -> tuple[dict[str, str], dict[str, str]]:
    """The state and addressee of each continuity handoff the project's events mention, as its model stood at the
    point read (a brief as of a point no brief was served at has no documents read then: every handoff showed as
    "unknown" and addressed to anyone, an accepted one pending for every agent). Other documents stay unknown."""
    from projections.handoffs import HandoffsState

    handoffs: HandoffsState = project.of("handoffs")
    folder = os.path.relpath(os.path.join(store.path, "handoffs"), store.root).replace(os.sep, "/") + "/"
    states: dict[str, str] = {}
    addressed: dict[str, str] = {}
    for path in project.refs.handoffs:
        if not (path.startswith(folder) and path.endswith(".json")):
            continue
        handoff = handoffs.get(path[len(folder):-len(".json")])
        if handoff is None:
            continue
        states[path] = handoff.state
        if handoff.to_agent or handoff.to_host:
            addressed[path] = f"agent:{handoff.to_agent}" if handoff.to_agent else f"host:{handoff.to_host}"
    return states, addressed


def renderer() -> str:
    """What renders briefs here: this continuity and its brief's revision, and the Unicode database its text
    escaping reads."""
    import unicodedata

    from continuity import __version__
    from continuity.sessions.brief import BRIEF_REVISION

    return f"continuity {__version__} (brief {BRIEF_REVISION}), Unicode {unicodedata.unidata_version}"


def _model_points(view: Any) -> dict[str, str]:
    """Each brief model's last event folded, when they differ (a catch-up cut short by its deadline), else {}."""
    points = {name: view.models.state(name).last_name or "" for name in BRIEF_MODELS}
    return points if len(set(points.values())) > 1 else {}


def _folded_by(served: ContextServed) -> Callable[[str, Event], bool]:
    """Which events the served brief folded: its project's, each node's up to the stamp it recorded.

    Events of other projects never change a project's view, so they are left out. A brief
    recorded without `folded_nodes` (written before it existed) folded every event up to `as_of`.
    """
    from events.names import parse_name

    project, nodes = served.project, served.folded_nodes

    def folded(name: str, event: Event) -> bool:
        if event.project != project:
            return False
        if not nodes:
            return True
        parsed = parse_name(name)
        return parsed is not None and parsed.stamp <= nodes.get(parsed.node, "")

    return folded


def _folded_at(served: ContextServed, until: str) -> Callable[[str, Event], bool]:
    """`_folded_by` for a brief whose models stood at different points: up to its overview's point the clones it
    names bound what was folded; past it (models ahead of the overview) only each model's own point does."""
    folded = _folded_by(served)

    def known(name: str, event: Event) -> bool:
        return event.project == served.project and (name > until or folded(name, event))

    return known


def _unreplayable(served: ContextServed) -> str | None:
    """Why a served brief's record cannot be built again (its time, or the last event it folded, is none), or None."""
    from continuity.readside.replay import bound_of
    from events.problems import quoted

    try:
        clock.parse_iso(served.inputs.now)
    except (ValueError, OverflowError):
        return f"its time {quoted(served.inputs.now)} is not a time"
    if served.as_of and bound_of(served.as_of) is None:
        return f"the last event it folded, {quoted(served.as_of)}, is no event id"
    return None


def _replayed_bundle(store: Store, identity: Identity, *, fmt: str, max_chars: int, as_of: str) -> Brief:
    """The brief as of a point: a served brief again, byte for byte, or the log as it stood then.

    As of another point, the session, agent and run (`--run`) are the asker's; a run not asked for is the
    session's open run then (the current-run hint is about now: callers leave it out).
    """
    from continuity.readside.replay import bound_of, models_until, point_written, resolve_point
    from continuity.readside.views import Models

    log, warnings = store.open_events_reader()  # a replay reads the log alone: a planted local/ fails it open
    last_name, point = resolve_point(log, as_of)
    unusable = _unreplayable(point.event) if point is not None and isinstance(point.event, ContextServed) else None
    if unusable is not None:  # a served event a writer of ours never made: the log as it stood there, and why
        warnings.append(f"{as_of} recorded a brief that cannot be replayed ({unusable}): shown as the log stood "
                        "at that point")
    elif point is not None and isinstance(point.event, ContextServed):
        served = point.event
        # the last event folded bounds the replay by its id alone: unreadable now, it is skipped and said
        until = (bound_of(served.as_of) or "") if served.as_of else ""  # an id: _unreplayable
        folded = _folded_by(served) if until else None
        points = served.model_points if isinstance(served.model_points, dict) else {}
        if points:  # models at different points when it was served: each folds to its own
            models = models_until(log, max(points.values()), warnings, BRIEF_MODELS, only=_folded_at(served, until),
                                  whole=True, points=points)
        else:
            models = (models_until(log, until, warnings, BRIEF_MODELS, only=folded, whole=True) if folded
                      else Models.empty(BRIEF_MODELS))
        state = models.project(served.project)
        if state.events != served.events_folded:
            warnings.append(
                f"the log before this point changed since it was served ({state.events} events of "
                f"{served.project} now, {served.events_folded} then): the brief may differ"
            )
        data = _shown(bundle.build(state, served.inputs, session_id=served.served_to, agent_id=served.agent_id,
                                   run_id=served.run_id, host=served.host), served.format)
        text = _render(data, served.format, served.max_chars)
        if sha256_hex(text.encode()) != served.brief_sha256:
            other = f" (served by {served.renderer}, replayed by {renderer()})" if (
                served.renderer and served.renderer != renderer()) else ""
            warnings.append(f"the regenerated brief does not match the hash recorded when it was served{other}")
        return Brief(text=text, data=data, warnings=warnings, format=served.format)
    pstate = models_until(log, last_name, warnings, BRIEF_MODELS, whole=True).project(identity.project)
    states, addressed = handoffs_then(store, pstate)
    inputs = ViewInputs(now=point_written(as_of, point), handoff_states=states, handoff_to=addressed,
                        warnings=tuple(warnings))
    data = _shown(bundle.build(pstate, inputs, as_of=as_of, session_id=identity.session_id,
                               agent_id=identity.agent_id, run_id=identity.run_id, host=identity.host), fmt)
    return Brief(text=_render(data, fmt, max_chars), data=data, warnings=warnings, format=fmt)
