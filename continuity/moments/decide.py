"""Decisions of the checkpoint channel: what a moment says, which are due on a sink, the delivery events."""

from __future__ import annotations

import json
from typing import Any

from continuity.core.identity import Identity
from events.base import Event
from events.moments import DELIVERED_LIMIT, MomentsDelivered
from projections.moments import Moment, TeamMoments, note_objective


def note(agent: str, task: str, objective: str, path: str) -> str:
    """The moment's note: compact JSON, keys in seed 000's order, the objective's hard 140-character slice."""
    return json.dumps({"v": 1, "kind": "checkpoint", "agent": agent, "task": task,
                       "objective": note_objective(objective), "path": path},
                      separators=(",", ":"), ensure_ascii=False)


def record(team: str, moment: Moment, path: str, data_type: str, api_version: str | None,
           tags: list[str] | None) -> dict[str, Any]:
    """What a sink receives for one moment (one JSON line in the outbox, the stdin of a command)."""
    return {"moment_id": moment.moment_id, "team": team, "data_type": data_type, "api_version": api_version,
            "source": moment.agent, "recorded_at": moment.created_at, "tags": tags,
            "note": note(moment.agent, moment.task, moment.objective, path)}


def pending(moments: TeamMoments, sink: str, only: set[str] | None = None) -> list[Moment]:
    """The moments a sink has not received, in log order (only those named in `only`, when given)."""
    return [moment for moment in moments.moments.values()
            if sink not in moment.delivered and (only is None or moment.moment_id in only)]


def decide_delivered(identity: Identity, team: str, sink: str, moment_ids: list[str]) -> list[Event]:
    """The delivery cursor: which moments a sink received (one event per DELIVERED_LIMIT moments)."""
    fields = identity.fields()
    return [MomentsDelivered(**fields, team=team, sink=sink, moments=tuple(moment_ids[start:start + DELIVERED_LIMIT]),
                             message=f"checkpoint moments delivered to {sink}")
            for start in range(0, len(moment_ids), DELIVERED_LIMIT)]
