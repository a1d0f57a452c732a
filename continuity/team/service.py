"""The team commands' API, shared by the CLI, the hooks and the MCP tools: load, decide, record."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from continuity.core.identity import Identity
from continuity.core.store import Store
from continuity.readside.catchup import Outcome
from events import clock
from events.base import Event
from events.errors import ContinuityError
from events.sealing import StoredEvent
from projections import roles as roles_model
from projections.roles import RolesState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from projections.team import Member, Snapshot, Teams


def refresh_roles(store: Store, deadline: float | None = None) -> Outcome:
    """Catch the `roles` model up (role documents written as it folds); `deadline`: see catchup.catch_up."""
    from continuity.readside.writers import refresh

    return refresh(store, ("roles",), deadline=deadline)


def record_roles(store: Store, identity: Identity, decide: Callable[[RolesState], list[Event]], *,
                 redact: bool = False) -> tuple[list[StoredEvent], list[str]]:
    """Decide from the current roles and append, re-deciding under the append lock (continuity/readside/decided.py)."""
    from continuity.readside.decided import record_decided, refreshed

    return record_decided(store, roles_model.MODEL, identity.project, refreshed(roles_model.MODEL), decide,
                          redact=redact, what="role")


def caught_up(store: Store, project: str, names: tuple[str, ...],
              deadline: float | None = None) -> tuple[dict[str, Any], list[str]]:
    """After a write: the named models caught up (documents written), for one project; never raises.

    `deadline`: see catchup.catch_up (the write stands; a catch-up cut short says so in the warnings)."""
    from continuity.readside.writers import refresh
    from projections.registry import REGISTRY

    try:
        outcome = refresh(store, names, deadline=deadline)
    except (OSError, ContinuityError) as error:  # a durable write stands whatever the read side does
        return {}, [f"projections not caught up ({error})"]
    states = {name: REGISTRY[name].project(outcome.models.state(name), project) for name in names}
    return states, outcome.warnings


def readable_roles(store: Store, project: str, deadline: float | None = None) -> tuple[RolesState | None, list[str]]:
    """The project's roles caught up, or None when they cannot be read whole (an unreadable event, a day
    folder that is a symlink, an unsafe store, a failing disk, or `deadline` passed first): then which roles
    an agent holds is unknown, not empty."""
    try:
        outcome = refresh_roles(store, deadline)
    except (OSError, ContinuityError) as error:
        return None, [f"role state not read ({error})"]
    if outcome.linked_days or outcome.skipped or outcome.stopped:  # events left out: an unread one may be a role's
        return None, outcome.warnings
    return roles_model.MODEL.project(outcome.models.state("roles"), project), outcome.warnings


class TeamRead:
    """What a team read needs: the loaded models for the project, `now`, and warnings."""

    def __init__(self, store: Store, names: tuple[str, ...], as_of: str | None = None) -> None:
        from continuity.core.store import now_us  # looked up when called: one clock, replaceable in tests
        from continuity.readside.query import current_view

        self.store = store
        self.project, warnings = store.reading_project()
        self.view = current_view(store, names, as_of=as_of)
        self.warnings: list[str] = warnings + self.view.warnings
        # as of a point: its writer's clock where its event says it (replay.point_written), as ages count
        self.now_us = now_us() if as_of is None else (
            clock.parse_iso(self.view.at) if self.view.at else as_of_us(as_of))

    def of(self, name: str) -> Any:
        """One loaded model's state for the project."""
        return self.view.project(self.project).of(name)


class NoStoreRead:
    """A team read where there is no store to read: every model as before any event, and why."""

    def __init__(self, reason: str, as_of: str | None = None) -> None:
        from continuity.core.store import now_us

        self.project = ""
        self.warnings = [f"{reason}; nothing read"]
        self.now_us = now_us() if as_of is None else as_of_us(as_of)

    def of(self, name: str) -> Any:
        """A model's state before any event."""
        from projections.registry import REGISTRY

        return REGISTRY[name].initial()


def team_read(store: Store | None, names: tuple[str, ...], as_of: str | None, missing: str) -> TeamRead | NoStoreRead:
    """The read of `names` from the store, or, with none (`missing` says why), every model before any event."""
    return TeamRead(store, names, as_of) if store is not None else NoStoreRead(missing, as_of)


def as_of_us(point: str) -> int:
    """`now` for an audit replay: the point's own time (an event id carries its stamp)."""
    from events import clock

    try:  # the point is checked here too: a read with no store to replay (NoStoreRead) reaches this first
        return clock.parse_stamp(point[4:26]) if point.startswith("RCE-") else clock.parse_iso(point)
    except (ValueError, OverflowError):
        from continuity.readside.replay import bad_point

        raise bad_point(point) from None


# -- the commands' API: the CLI and the MCP tools build these requests and call these ------------
class ResumeRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Whose resume brief: the team, the agent, one task (default: the newest), freshness, a replay point."""

    team: str
    agent: str
    task: str | None = None
    max_age: str | None = None
    as_of: str | None = None


class BriefingRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Whose briefing: the team, the agent (None: every member), everyone's sections, a replay point."""

    team: str
    agent: str | None = None
    all: bool = False
    as_of: str | None = None


class InboxRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Whose inbox (and read messages too with `all`), or a message to acknowledge."""

    team: str
    agent: str | None = None
    ack: str | None = None
    all: bool = False


class SendRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A message from `agent` to `to` in a team."""

    team: str
    to: str
    message: str
    agent: str | None = None


class ResumeResult(msgspec.Struct, kw_only=True):
    """A resume read: the `--json` object, the text brief, the freshness failure line (None: fresh enough)."""

    data: dict[str, Any]
    brief: str
    line: str | None
    warnings: list[str]


def take_snapshot(store: Store, identity: Identity, request: Any) -> tuple[dict[str, Any], list[str]]:
    """Decide and append one snapshot, catch the team documents up, emit its moment (fail open).

    WriteFailed propagates: the caller says nothing was saved.
    """
    from continuity.core.store import now_us
    from continuity.moments.deliver import emit_after_save
    from continuity.readside.writers import refresh
    from continuity.team.decide import decide_snapshot
    from continuity.team.plain import snapshot_relpath

    stored = store.open_log().append_many(decide_snapshot(identity, request, now_us()))[0]
    event: Any = stored.event
    try:
        warnings = refresh(store, ("team",)).warnings
    except (OSError, ContinuityError) as error:  # the snapshot is durable whatever the read side does
        warnings = [f"projections not caught up ({error})"]
    return {"ok": True, "action": "snapshot", "checkpoint_id": f"CHK-{event.created_at}-{event.task}",
            "event_id": stored.event_id, "path": snapshot_relpath(event.team, event.agent, event.task)}, \
        warnings + emit_after_save(store, identity, [stored])


def resume(store: Store | None, request: ResumeRequest, *, missing: str = "no store") -> ResumeResult:
    """The resume brief of an agent's newest snapshot (or one task's), its age now, and freshness. A pure read.

    With no store (`missing` says why) there is no snapshot, as in seed 000's team folder with no files: the
    "No continuity snapshot found." brief, and `--max-age` fails as for any unknown age (a cold start reads on).
    So with a team or agent name no snapshot can have (`../x`, `a b`): the warning says which, as briefing's does.
    """
    from continuity.core.errors import UsageError
    from continuity.team import resume as brief
    from continuity.team.decide import checked_name

    try:  # not "none found" and nothing more: the name is the mistake
        checked_name(request.team, "team", "resume")
        checked_name(request.agent, "agent", "resume")
    except UsageError as error:  # a secret-like name is refused (exit 4): shown back, it would print the secret
        store, missing = None, str(error)
    read = team_read(store, ("team",), request.as_of, missing)
    teams = read.of("team")
    tasks = None if request.task is None else _task_names(request.task)
    snapshot = _pick(teams.teams.get(request.team, {}).get(request.agent), tasks)
    if snapshot is None and teams.forgotten and isinstance(read, TeamRead):  # let go of past the model's bounds
        snapshot = _pick(_from_log(read, request.team, request.agent, tasks, request.as_of), tasks)
    age = brief.age_seconds(snapshot.age_from, read.now_us) if snapshot is not None else None
    error_code, line = brief.freshness(request.max_age, age, snapshot)
    return ResumeResult(data=brief.as_json(snapshot, age, error_code), brief=brief.brief(snapshot, age), line=line,
                        warnings=read.warnings)


def _task_names(task: str) -> list[str]:
    """The names a task may be saved under: as `snapshot` saves it (slugified) first, then as typed (printed
    by an earlier release), then as an earlier slug made it."""
    from continuity.team.plain import slug_before_digests

    earlier = slug_before_digests(task)
    return [_task_key(task), task, *([earlier] if earlier else [])]


def _pick(member: Member | None, tasks: list[str] | None) -> Snapshot | None:
    """The member's newest snapshot, or the first of `tasks` it has."""
    from continuity.team import resume as brief

    if tasks is None:
        return brief.pick(member, None)
    return next((found for task in tasks if (found := brief.pick(member, task)) is not None), None)


def _from_log(read: TeamRead, team: str, agent: str, tasks: list[str] | None, as_of: str | None) -> Member | None:
    """The agent's snapshots in `team` (of `tasks` only, when given), folded again from the log as the model was
    (the same replay: an event that is not the one its name says, or that a served brief's store did not hold
    yet, is left out): what the team model let go of past its bounds (100 teams, 500 agents a team, 200 tasks an
    agent) is still the log's, and resume finds it there instead of answering that there is none. A pure read of
    every event up to the model's point, as a rebuild of the one model reads them, made only where the model has
    let go of any snapshot; reads fail open, with a warning."""
    from continuity.readside.replay import known_at, models_until, resolve_point
    from events.errors import StoreUnsafe
    from events.team import SnapshotTaken
    from projections.registry import REGISTRY

    try:
        try:
            log = read.store.open_reader()
        except StoreUnsafe:  # `local/` cannot be trusted: the log itself still can be read, as the view read it
            log = read.store.open_events_only()
        until, view_only = read.view.models.last_name, None
        if as_of is not None:
            until, point = resolve_point(log, as_of)
            view_only = known_at(until, point)

        def wanted(name: str, event: Event) -> bool:
            return isinstance(event, SnapshotTaken) and event.project == read.project and event.team == team and \
                event.agent == agent and (tasks is None or event.task in tasks) and \
                (view_only is None or view_only(name, event))

        warnings: list[str] = []
        models = models_until(log, until or "", warnings, ("team",), only=wanted)
    except (ContinuityError, OSError) as error:
        read.warnings.append(f"older snapshots not read from the log ({error})")
        return None
    read.warnings.extend(warnings)
    found: Teams = REGISTRY["team"].project(models.state("team"), read.project)
    return found.teams.get(team, {}).get(agent)


def _task_key(task: str) -> str:
    """The task as `snapshot` saved it (slugified), so the same name finds it; unusable as a name: as given."""
    from continuity.core.errors import UsageError
    from continuity.team.plain import task_slug

    try:
        return task_slug(task)
    except UsageError:
        return task


BRIEFING_MODELS = ("inbox", "roles", "team", "handoffs", "tasks")


def briefing(store: Store | None, request: BriefingRequest, *, missing: str = "no store") -> tuple[
        dict[str, Any], list[str]]:
    """The session-start briefing (seed 000's `coord.teams.briefing.v1`); never raises for a bad read.

    With no store (`missing` says why), or a team or agent name that cannot be one, every
    section is empty and marked degraded: a session start is never blocked.
    """
    from continuity.core.errors import UsageError
    from continuity.core.idfields import resolve_fields
    from continuity.team import board
    from continuity.team.decide import checked_name
    from events.errors import SecretRefused

    try:  # a name that cannot be one (a path, a control character, 10 MB, a token) reads nothing, blocks nothing
        team = checked_name(request.team, "team", "briefing")
    except (UsageError, SecretRefused) as error:
        team, store, missing = "", None, str(error)
    read = team_read(store, BRIEFING_MODELS, request.as_of, missing)
    agent = resolve_fields(read.project, {"agent_id": request.agent},  # the project as read; a bad name degrades
                           names_only=False)["agent_id"]
    try:  # from --agent or CONTINUITY_AGENT
        agent = None if agent is None else checked_name(agent, "agent", "briefing")
    except (UsageError, SecretRefused) as error:
        agent, read = None, NoStoreRead(str(error), request.as_of)
    degraded = degraded_reason(read.warnings)
    data = board.briefing(inbox=read.of("inbox"), roles=read.of("roles"), teams=read.of("team"),
                          handoffs=read.of("handoffs"), team=team, agent=agent, everyone=request.all,
                          now_us=read.now_us, degraded=degraded)
    data["work"] = board.section(_work(read, agent), degraded)
    return data, read.warnings


def _work(read: TeamRead | NoStoreRead, agent: str | None) -> dict[str, Any]:
    """The agent's open runs and open tasks (every open task when no agent is named), and the newest memories."""
    from continuity.sessions.brief import age
    from continuity.tasks.resume import work_of
    from events import clock

    now = clock.iso(read.now_us)
    return work_of(read.of("tasks"), lambda then: age(then, now), agent_id=agent, session_id=None, run_id=None)


def degraded_reason(warnings: list[str]) -> str | None:
    """Why a read is not whole (an unreadable event, a day folder that is a symlink, projections that could not
    be read), or None."""
    for warning in warnings:
        if (warning.startswith("skipped ") or "unavailable" in warning or "nothing read" in warning
                or "its events are not read" in warning or "left out" in warning):
            return warning
    return None


def inbox(store: Store, identity: Identity, request: InboxRequest, as_of: str | None = None,
          ) -> tuple[dict[str, Any], list[str]]:
    """An agent's inbox (unread; read ones too with `all`), or, with `ack`, that message marked read."""
    from continuity.core.errors import UsageError
    from continuity.team import board
    from continuity.team.decide import checked_name, decide_ack

    team = checked_name(request.team, "team", "inbox")
    if not identity.agent_id:
        raise UsageError("inbox: give --agent or set CONTINUITY_AGENT")
    agent = checked_name(identity.agent_id, "agent", "inbox")
    if request.ack is not None:
        if as_of is not None:
            raise UsageError("inbox: --ack records; it does not go with --as-of")
        from continuity.readside.decided import record_decided, refreshed
        from projections.inbox import MODEL

        message_id = checked_name(request.ack, "ack", "inbox")
        stored, warnings = record_decided(store, MODEL, identity.project, refreshed(MODEL),
                                          lambda state: decide_ack(state, identity, team, agent, message_id),
                                          what="inbox")
        return {"ok": True, "action": "ack", "message_id": message_id, "event_id": stored[0].event_id}, warnings
    read = TeamRead(store, ("inbox",), as_of)
    items = board.inbox_items(read.of("inbox"), team, agent, read=request.all)
    return {"team": team, "agent": agent, "messages": items}, read.warnings


def send(store: Store, identity: Identity, request: SendRequest) -> tuple[dict[str, Any], list[str]]:
    """Append one message to an agent of a team; the inbox model catches up."""
    import os

    from continuity.team.decide import checked_name, decide_send

    team = checked_name(request.team, "team", "send")
    if request.agent is not None:
        checked_name(request.agent, "agent", "send")
    to = checked_name(request.to, "agent", "send")
    message_id = f"MSG-{os.urandom(5).hex()}"
    stored = store.open_log().append_many(decide_send(identity, team, to, request.message, message_id))[0]
    return {"ok": True, "action": "send", "message_id": message_id, "to": to, "event_id": stored.event_id}, \
        caught_up(store, identity.project, ("inbox",))[1]
