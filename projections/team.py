"""Team continuity (seed 000): each agent's newest snapshot per task, and its newest overall.

The per-agent pointer is a fold over the ordered log, so it never moves backwards: a
snapshot replaces the pointer only when it is at least as new (by `created_at`, then
task, then checkpoint id, as resume breaks ties). Paths are the writer's business.
"""

from __future__ import annotations

import msgspec

from events.team import SnapshotTaken
from projections.common import touch_bounded
from projections.readmodel import ReadModel

TEAMS_LIMIT = 100
AGENTS_LIMIT = 500
TASKS_LIMIT = 200


class Snapshot(msgspec.Struct, kw_only=True):
    """One snapshot as its document shows it (seed 000's fields), and the event it came from."""

    checkpoint_id: str
    agent: str
    task: str
    objective: str
    decisions: list[str]
    next_actions: list[str]
    open_questions: list[str]
    artifacts: list[str]
    context_used_percent: int | None
    transcript_path: str | None
    created_at: str
    event_id: str
    #: The writer's wall clock when it took the snapshot (None before events carried it): what its age is read
    #: from (`created_at` is the log's time, which a clock ahead elsewhere can push later).
    taken_at: str | None = None

    @property
    def age_from(self) -> str:
        """The time a snapshot's age is counted from: `created_at`, unless an event stamped ahead pushed it more
        than a second past the writer's clock (then `taken_at`)."""
        from events import clock

        if self.taken_at:
            try:
                if clock.parse_iso(self.created_at) - clock.parse_iso(self.taken_at) > PUSHED_US:
                    return self.taken_at
            except (ValueError, OverflowError):  # a time that does not parse: the log's, as before
                return self.created_at
        return self.created_at


#: How far past the writer's clock the log's time may be before a snapshot's age is counted from the former.
PUSHED_US = 1_000_000


class Member(msgspec.Struct, kw_only=True):
    """An agent of a team: its newest snapshot per task, and which one is newest overall."""

    tasks: dict[str, Snapshot] = msgspec.field(default_factory=dict)
    latest_task: str | None = None


class Teams(msgspec.Struct, kw_only=True):
    """Every team of a project, by name; each its members by agent. `forgotten` counts the teams, members and
    tasks let go of past the bounds: where it is not 0, a snapshot not found here may be in the log still
    (`continuity.team.service.resume` looks there)."""

    teams: dict[str, dict[str, Member]] = msgspec.field(default_factory=dict)
    forgotten: int = 0


def order_key(snapshot: Snapshot) -> tuple[str, str, str]:
    """How snapshots compare for "newest": created_at, then task, then checkpoint id."""
    return (snapshot.created_at, snapshot.task, snapshot.checkpoint_id)


def on_snapshot(state: Teams, name: str, event: SnapshotTaken) -> Teams:
    """Keep the snapshot as its task's newest, and move the agent's pointer forward only."""
    team = state.teams.get(event.team)
    if team is None:
        team = {}
    # the least recently active team goes first
    state.forgotten += touch_bounded(state.teams, event.team, team, TEAMS_LIMIT)
    member = team.get(event.agent) or Member()
    snapshot = Snapshot(
        checkpoint_id=f"CHK-{event.created_at}-{event.task}", agent=event.agent, task=event.task,
        objective=event.objective, decisions=list(event.decisions), next_actions=list(event.next_actions),
        open_questions=list(event.open_questions), artifacts=list(event.artifacts),
        context_used_percent=event.context_used_percent, transcript_path=event.transcript_path,
        created_at=event.created_at, event_id=event.event_id, taken_at=event.taken_at,
    )
    same_task = member.tasks.get(event.task)
    if same_task is None or order_key(snapshot) >= order_key(same_task):
        state.forgotten += touch_bounded(member.tasks, event.task, snapshot, TASKS_LIMIT)
    current = member.tasks.get(member.latest_task) if member.latest_task else None
    if member.tasks.get(event.task) is snapshot and (current is None or order_key(snapshot) >= order_key(current)):
        member.latest_task = event.task
    state.forgotten += touch_bounded(team, event.agent, member, AGENTS_LIMIT)
    return state


MODEL = ReadModel(
    "team", format=5, state=Teams, initial=Teams, folds={SnapshotTaken: on_snapshot},
    bounds={"TEAMS_LIMIT": TEAMS_LIMIT, "AGENTS_LIMIT": AGENTS_LIMIT, "TASKS_LIMIT": TASKS_LIMIT},
)
