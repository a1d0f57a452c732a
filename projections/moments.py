"""The checkpoint channel (seed 000): one moment per snapshot, and which sinks have received it.

Every `snapshot.taken` (park's included) yields one moment; `moments.delivered` marks moments
received by a sink, so delivery happens once per sink. A moment keeps the note's objective
already cut to its hard 140-character slice; the note, the path and the tags are the view's
business (continuity/moments/).
"""

from __future__ import annotations

import msgspec

from events.moments import MomentsDelivered
from events.team import SnapshotTaken
from projections.common import touch_bounded
from projections.readmodel import ReadModel

TEAMS_LIMIT = 100
MOMENTS_LIMIT = 2000
#: The note's objective is a hard slice of this many characters: no ellipsis (seed 000).
NOTE_OBJECTIVE_CHARS = 140


def note_objective(objective: str | None) -> str:
    """The objective as the note carries it: its first 140 characters, no ellipsis."""
    return (objective or "")[:NOTE_OBJECTIVE_CHARS]


class Moment(msgspec.Struct, kw_only=True):
    """One moment: the snapshot it shadows, and the sinks that received it (sink -> delivery event)."""

    moment_id: str
    agent: str
    task: str
    objective: str
    created_at: str
    delivered: dict[str, str] = msgspec.field(default_factory=dict)


class TeamMoments(msgspec.Struct, kw_only=True):
    """A team's moments in log order (the newest MOMENTS_LIMIT)."""

    moments: dict[str, Moment] = msgspec.field(default_factory=dict)


class MomentsState(msgspec.Struct, kw_only=True):
    """Every team's moments, by team."""

    teams: dict[str, TeamMoments] = msgspec.field(default_factory=dict)


def on_snapshot(state: MomentsState, name: str, event: SnapshotTaken) -> MomentsState:
    """A snapshot was saved: its moment is due on every sink."""
    team = state.teams.get(event.team)
    if team is None:
        team = TeamMoments()
    touch_bounded(state.teams, event.team, team, TEAMS_LIMIT)  # the least recently active team goes first
    touch_bounded(team.moments, event.event_id, Moment(
        moment_id=event.event_id, agent=event.agent, task=event.task, objective=note_objective(event.objective),
        created_at=event.created_at), MOMENTS_LIMIT)
    return state


def on_delivered(state: MomentsState, name: str, event: MomentsDelivered) -> MomentsState:
    """A sink received moments: mark each one this model still holds."""
    team = state.teams.get(event.team)
    if team is None:
        return state
    for moment_id in event.moments:
        moment = team.moments.get(moment_id)
        if moment is not None and event.sink not in moment.delivered:
            moment.delivered[event.sink] = event.event_id
    return state


MODEL = ReadModel(
    "moments", format=3, state=MomentsState, initial=MomentsState,
    folds={SnapshotTaken: on_snapshot, MomentsDelivered: on_delivered},
    bounds={"TEAMS_LIMIT": TEAMS_LIMIT, "MOMENTS_LIMIT": MOMENTS_LIMIT},
)
