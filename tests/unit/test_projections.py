"""Each fold on its own, without disk: events in, state out."""

from __future__ import annotations

import itertools
from typing import Any

from continuity.readside.views import Models
from events.archive import ArchiveCreated, ArchivedState, GitFacts, HostSwitched
from events.base import Event, Refs, Summary
from events.context import ContextServed, ViewInputs
from events.session import SessionEnded, SessionStarted
from events.worklog import CheckpointRecorded, WorkLogged
from projections import refs, sessions
from projections import worklog as work
from projections.readmodel import ReadModel
from projections.registry import REGISTRY

_ids = itertools.count(1)


def stamped(event: Event) -> Event:
    """Give a draft the id and time the log would (increasing)."""
    import msgspec

    n = next(_ids)
    return msgspec.structs.replace(
        event, event_id=f"RCE-20260723_0102{n:02d}_000000-node0001",
        created_at=f"2026-07-23T01:02:{n:02d}.000000Z",
    )


def fold(events: list[Event]) -> Models:
    """Every registered read model over the events, as the catch-up folds them."""
    models = Models.empty(tuple(REGISTRY))
    for index, event in enumerate(events):
        event = stamped(event)
        for name, model in REGISTRY.items():
            model.apply(models.state(name), f"20260723_0102{index:02d}_000000-node0001-{index:012x}.json", event)
    return models


def apply_to(model: ReadModel[Any], state: Any, event: Event) -> Any:
    """Dispatch one event through a model's table, as the registry does for one project."""
    found = model.fold_for(type(event))
    return state if found is None else found(state, "name", event)


def test_work_log_adds_and_checkpoint_replaces() -> None:
    """A log adds what it states; a checkpoint that states anything replaces in progress/next/blockers."""
    state = work.WorkState()
    apply_to(work.MODEL, state, stamped(WorkLogged(project="p", summary=Summary(done=("a",), next=("n1", "n2"),
                                                                      blockers=("b1",)))))
    assert (state.done, state.next, state.blockers) == (["a"], ["n1", "n2"], ["b1"])
    apply_to(work.MODEL, state, stamped(WorkLogged(project="p", message="just a note")))
    assert state.next == ["n1", "n2"] and state.blockers == ["b1"]
    apply_to(work.MODEL, state, stamped(CheckpointRecorded(project="p", summary=Summary(done=("c",), next=("n3",)))))
    assert state.done == ["a", "c"] and state.next == ["n3"] and state.blockers == []
    assert state.in_progress is None and state.last_checkpoint_id is not None
    apply_to(work.MODEL, state, stamped(CheckpointRecorded(project="p", message="message only")))
    assert state.next == ["n3"]


def test_decisions_questions_and_goal() -> None:
    """Logs typed decision/question are kept (bounded); note.goal sets the goal."""
    state = work.WorkState()
    for i in range(30):
        apply_to(work.MODEL, state, stamped(WorkLogged(project="p", type="decision", message=f"d{i}")))
    question = WorkLogged(project="p", type="question", message="why?", note={"goal": "ship"})
    apply_to(work.MODEL, state, stamped(question))
    assert len(state.decisions) == work.NOTES_LIMIT and state.decisions[-1].text == "d29"
    assert state.questions[0].text == "why?" and state.current_goal == "ship"


def test_archive_replaces_the_work_state() -> None:
    """An archive's recorded state becomes the work state."""
    state = work.WorkState(done=["old"], next=["old next"])
    archived = ArchivedState(current_goal="g", done=("x",), in_progress="y", next=("z",), blockers=("w",))
    apply_to(work.MODEL, state, stamped(ArchiveCreated(project="p", state=archived)))
    assert (state.current_goal, state.done, state.in_progress, state.next, state.blockers) == (
        "g", ["x"], "y", ["z"], ["w"])


def test_sessions_runs_compactions_and_hosts() -> None:
    """Sessions track host, end and compactions; runs their phase; a switch moves the last host."""
    state = sessions.SessionsState()
    for event in (
        SessionStarted(project="p", session_id="s1", host="claude-code", source="startup", model="m1"),
        WorkLogged(project="p", session_id="s1", run_id="r1", task_id="t1", phase="editing", message="x"),
        SessionStarted(project="p", session_id="s1", host="claude-code", source="compact"),
        HostSwitched(project="p", session_id="s1", host="claude-code", from_host="claude-code", to_host="codex"),
        SessionEnded(project="p", session_id="s2", host="codex"),
    ):
        apply_to(sessions.MODEL, state, stamped(event))
    s1 = state.sessions["s1"]
    assert (s1.compactions, s1.model, s1.host, s1.events, s1.ended_at) == (1, "m1", "codex", 4, None)
    assert state.sessions["s2"].ended_at is not None
    assert state.runs["r1"].last_phase == "editing" and state.runs["r1"].task_id == "t1"
    assert state.last_host == "codex"


def test_sessions_and_runs_are_bounded() -> None:
    """However many sessions the log holds, the state keeps the most recent few hundred: ended ones past
    SESSIONS_LIMIT, sessions not ended (a harness that died without a SessionEnd) past OPEN_SESSIONS_LIMIT."""
    state = sessions.SessionsState()
    for i in range(sessions.OPEN_SESSIONS_LIMIT + 50):
        apply_to(sessions.MODEL, state, stamped(WorkLogged(project="p", session_id=f"s{i}", run_id=f"r{i}")))
    assert len(state.sessions) == sessions.OPEN_SESSIONS_LIMIT and len(state.runs) == sessions.RUNS_LIMIT
    assert f"s{sessions.OPEN_SESSIONS_LIMIT + 49}" in state.sessions and "s0" not in state.sessions
    ended = sessions.SessionsState()
    for i in range(sessions.SESSIONS_LIMIT + 50):
        apply_to(sessions.MODEL, ended, stamped(SessionEnded(project="p", session_id=f"s{i}")))
    assert len(ended.sessions) == sessions.SESSIONS_LIMIT and "s0" not in ended.sessions


def test_refs_keep_the_latest_mention() -> None:
    """Handoffs and artifacts map a path to the last event that mentioned it."""
    state = refs.RefsState()
    first = stamped(WorkLogged(project="p", refs=Refs(handoffs=("h/H-1.json",), artifacts=("a.json",))))
    second = stamped(WorkLogged(project="p", phase="testing", refs=Refs(artifacts=("a.json",))))
    apply_to(refs.MODEL, state, first)
    apply_to(refs.MODEL, state, second)
    assert state.handoffs["h/H-1.json"].event_id == first.event_id
    assert state.artifacts["a.json"].event_id == second.event_id and state.artifacts["a.json"].phase == "testing"


def test_state_is_per_project_with_an_index_and_archives() -> None:
    """The top fold keeps projects apart, indexes recent events and builds archive records."""
    state = fold([
        CheckpointRecorded(project="a", summary=Summary(next=("ship it",)), run_id="r1"),
        WorkLogged(project="b", message="other project"),
        ArchiveCreated(project="a", gate="user", reason="eod", git=GitFacts(head="abc", dirty_files=("x.py",)),
                       state=ArchivedState(next=("ship it",)), read_first=("AGENTS.md",)),
        ContextServed(project="a", brief_sha256="0" * 64, inputs=ViewInputs(now="2026-07-23T01:03:00.000000Z")),
    ])
    a, b = state.project("a"), state.project("b")
    assert (a.events, b.events, state.events_folded) == (3, 1, 4)
    assert [entry.kind for entry in a.recent] == ["checkpoint.recorded", "archive.created", "context.served"]
    record = a.latest_archive()
    assert record is not None and record.archive_id.startswith("RC-20260723_")
    assert record.restore.next_action == "ship it"
    assert record.restore.read_first == ["AGENTS.md", ".agent/runtime-continuity/archives/latest.json"]
    assert record.refs.dirty_files == ["x.py"] and record.refs.runs == [".agent/runs/r1.json"]
    assert len(record.refs.latest_events) == 2 and a.served == 1
    assert state.project("nobody").events == 0


def test_folding_is_deterministic() -> None:
    """The same events folded twice give equal states."""
    events: list[Any] = [WorkLogged(project="p", message=str(i), session_id="s") for i in range(5)]
    stamped_events = [stamped(e) for e in events]
    one, two = Models.empty(tuple(REGISTRY)), Models.empty(tuple(REGISTRY))
    for index, event in enumerate(stamped_events):
        for name, model in REGISTRY.items():
            model.apply(one.state(name), f"n{index}", event)
            model.apply(two.state(name), f"n{index}", event)
    assert one.states == two.states


def test_touch_keeping_lets_go_only_when_a_new_key_comes_in() -> None:
    """Kept entries past the bound are not scanned at every touch of a known key (a session not ended is touched
    by each of its events: scanning the 200 kept at each made a rebuild ten times slower); a new key lets go of the
    oldest entries `keep` does not hold, never itself, and past `hard` of the oldest whatever they hold."""
    from projections.common import touch_keeping

    looked: list[int] = []

    def keep(value: int) -> bool:
        looked.append(value)
        return value % 2 == 1  # odd values are kept

    mapping: dict[str, int] = {}
    for number in (1, 3, 5):
        touch_keeping(mapping, f"k{number}", number, 2, keep, hard=4)
    assert list(mapping) == ["k1", "k3", "k5"] and looked == [1, 3]  # over the bound, nothing to let go of
    looked.clear()
    touch_keeping(mapping, "k1", 2, 2, keep, hard=4)  # a known key, now let go of-able: no scan, kept for now
    assert looked == [] and list(mapping) == ["k3", "k5", "k1"]
    touch_keeping(mapping, "k7", 7, 2, keep, hard=4)  # a new key: the one not kept goes
    assert list(mapping) == ["k3", "k5", "k7"]
    for number in (9, 11):
        touch_keeping(mapping, f"k{number}", number, 2, keep, hard=4)
    assert list(mapping) == ["k5", "k7", "k9", "k11"]  # past `hard`, the oldest went though kept
