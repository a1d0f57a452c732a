"""The checkpoint channel's pure parts: the note, the fold, what is due on a sink, the delivery events."""

from __future__ import annotations

import json

from continuity.core.identity import Identity
from continuity.moments.decide import decide_delivered, note, pending
from events.moments import DELIVERED_LIMIT, MomentsDelivered
from events.team import SnapshotTaken
from projections.moments import MODEL, note_objective

IDENTITY = Identity(project="p", agent_id="amy")


def snap(event_id: str, task: str, objective: str = "o") -> SnapshotTaken:
    return SnapshotTaken(project="p", event_id=event_id, created_at=f"2026-01-01T00:00:0{event_id[-1]}.000000Z",
                         team="core", agent="amy", task=task, objective=objective)


def test_the_note_is_compact_json_in_contract_order() -> None:
    """Keys v, kind, agent, task, objective, path; no spaces; non-ASCII kept as is."""
    text = note("amy", "t", "héllo", "team/core/member/amy/continuity/t/latest.json")
    assert text == ('{"v":1,"kind":"checkpoint","agent":"amy","task":"t","objective":"héllo",'
                    '"path":"team/core/member/amy/continuity/t/latest.json"}')
    assert list(json.loads(text)) == ["v", "kind", "agent", "task", "objective", "path"]


def test_the_objective_slice_is_hard() -> None:
    """140 characters, no ellipsis; shorter text and None as they are."""
    assert note_objective("a" * 141) == "a" * 140 and note_objective("a" * 140) == "a" * 140
    assert note_objective(None) == "" and note_objective("x" * 139 + "CUT").endswith("xC")


def test_the_fold_marks_deliveries_per_sink() -> None:
    """One moment per snapshot in log order; a delivery marks only its sink, and only moments it names."""
    state = MODEL.empty()
    for index, event in enumerate([snap("e1", "a"), snap("e2", "b", "z" * 500), snap("e3", "c")]):
        MODEL.apply(state, f"n{index}", event)
    MODEL.apply(state, "n9", MomentsDelivered(project="p", event_id="d1", team="core", sink="outbox",
                                              moments=("e1", "e3", "unknown")))
    team = MODEL.project(state, "p").teams["core"]
    assert [moment.moment_id for moment in pending(team, "outbox")] == ["e2"]
    assert [moment.moment_id for moment in pending(team, "command")] == ["e1", "e2", "e3"]
    assert team.moments["e1"].delivered == {"outbox": "d1"} and len(team.moments["e2"].objective) == 140
    assert [moment.moment_id for moment in pending(team, "command", only={"e3"})] == ["e3"]


def test_delivery_events_are_chunked() -> None:
    """A backlog bigger than one event's limit is recorded in several events, every id once, in order."""
    ids = [f"m{index}" for index in range(DELIVERED_LIMIT * 2 + 5)]
    events = decide_delivered(IDENTITY, "core", "outbox", ids)
    assert [len(each.moments) for each in events] == [DELIVERED_LIMIT, DELIVERED_LIMIT, 5]
    assert [moment for each in events for moment in each.moments] == ids
    assert all(each.sink == "outbox" and each.team == "core" and each.agent_id == "amy" for each in events)
