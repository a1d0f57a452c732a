"""Workstream decisions and their invariants (seed 002): pure functions, no disk, no clock."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.core.errors import EXIT_INVARIANT, InvariantRefused, UsageError, WorkNotFound
from continuity.core.identity import Identity
from continuity.workstreams import decide, diff, document
from continuity.workstreams.documents import (
    problem_details,
    problems_of,
    resolved_problems,
    runtime_document,
    runtime_markdown,
)
from continuity.workstreams.rules import dependency_cycle, structure_problems
from events.base import Event
from events.workstream import (
    ContextCheckpointed,
    CursorMoved,
    DecisionRecorded,
    ItemRevision,
    StatusChange,
    ValidationEntry,
    ValidationRecorded,
    WorkItemAdded,
    WorkItemData,
    WorkItemRevised,
    WorkItemStatusChanged,
    WorkstreamRevised,
    WorkstreamStarted,
    WorkstreamStatusChanged,
)
from projections.workstreams import WorkstreamsState, active, open_problems
from tests.workstream_docs import edited, item, ledger_entry, legacy, snapshot, tracked

WHO = Identity(project="demo", agent_id="agent-1")
FACTS = decide.Facts(head="a" * 40, fingerprint="f" * 64)


def parse(doc: dict[str, Any]) -> document.Checkpoint:
    return document.parse(msgspec.json.encode(doc))


def checkpoint(state: WorkstreamsState, doc: dict[str, Any]) -> tuple[list[Event], WorkstreamsState]:
    """Decide a checkpoint and fold its events: (events, the state after)."""
    events = decide.decide_checkpoint(state, WHO, parse(doc), FACTS)
    return events, decide.folded(state, events)


def refused(state: WorkstreamsState, doc: dict[str, Any]) -> str:
    with pytest.raises(InvariantRefused) as caught:
        decide.decide_checkpoint(state, WHO, parse(doc), FACTS)
    assert caught.value.exit_code == EXIT_INVARIANT == 12
    return str(caught.value)


@pytest.fixture
def started() -> WorkstreamsState:
    """A state with WS-1 active: A1 IN_PROGRESS, A2 PENDING depending on A1."""
    _, state = checkpoint(WorkstreamsState(), tracked())
    return state


def kinds(events: list[Event]) -> list[str]:
    return [event.kind for event in events]


def test_a_new_workstream_starts_with_its_items_and_ends_with_the_checkpoint() -> None:
    """A first tracked checkpoint: workstream.started, work_item.added, then context.checkpointed."""
    events, state = checkpoint(WorkstreamsState(), tracked(decisions=["use a lock"]))
    assert kinds(events) == ["workstream.started", "work_item.added", "decision.recorded", "context.checkpointed"]
    assert isinstance(events[0], WorkstreamStarted) and events[0].workstream_id == "WS-1"
    ws = active(state)
    assert ws is not None and list(ws.items) == ["A1", "A2"] and ws.items["A2"].depends_on == ["A1"]
    assert [entry.text for entry in state.decisions] == ["use a lock"]


def test_the_same_document_again_records_only_the_checkpoint(started: WorkstreamsState) -> None:
    """Nothing changed: one context.checkpointed and no workstream events."""
    events, _ = checkpoint(started, tracked())
    assert kinds(events) == ["context.checkpointed"]


def test_a_diff_becomes_granular_events(started: WorkstreamsState) -> None:
    """Added, status changed, revised, cursor moved, workstream revised: one event kind each."""
    doc = edited(tracked(), title="Auth fixes, round two", items=[
        item("A1", "COMPLETED"), item("A2", "IN_PROGRESS", dependsOn=["A1"], notes=["started"]), item("A3")],
        cursor={"currentItemId": "A2", "lastCompletedItemId": "A1", "phase": "green",
                "lastCompletedAction": "made A1 pass", "nextAction": "fix A2"})
    events, state = checkpoint(started, doc)
    assert kinds(events) == ["workstream.revised", "work_item.added", "work_item.revised",
                             "work_item.status_changed", "workstream.cursor_moved", "context.checkpointed"]
    assert isinstance(events[0], WorkstreamRevised) and events[0].title == "Auth fixes, round two"
    assert isinstance(events[1], WorkItemAdded) and [i.id for i in events[1].items] == ["A3"]
    assert isinstance(events[2], WorkItemRevised) and events[2].revisions[0].notes == ("started",)
    assert isinstance(events[3], WorkItemStatusChanged)
    assert [(c.item_id, c.from_status, c.status) for c in events[3].changes] == [
        ("A1", "IN_PROGRESS", "COMPLETED"), ("A2", "PENDING", "IN_PROGRESS")]
    assert isinstance(events[4], CursorMoved) and events[4].cursor.current_item_id == "A2"
    ws = active(state)
    assert ws is not None and ws.cursor.next_action == "fix A2" and ws.items["A3"].status == "PENDING"


def test_completing_the_workstream_archives_it_after_its_items(started: WorkstreamsState) -> None:
    """The status change comes last, after the items it needs terminal; then no workstream is active."""
    doc = edited(tracked(), status="COMPLETED", items=[item("A1", "COMPLETED"), item("A2", "CANCELLED")])
    events, state = checkpoint(started, doc)
    assert kinds(events)[-2:] == ["workstream.status_changed", "context.checkpointed"]
    assert isinstance(events[-2], WorkstreamStatusChanged) and events[-2].status == "COMPLETED"
    assert active(state) is None and state.archived == ["WS-1"]


def test_refused_losing_unresolved_items(started: WorkstreamsState) -> None:
    """An unresolved item left out of the document: the contract's text names it."""
    text = refused(started, edited(tracked(), items=[item("A1", "IN_PROGRESS")]))
    assert text == "Checkpoint would lose existing work items: A2"


def test_leaving_out_a_terminal_item_is_allowed_and_keeps_it(started: WorkstreamsState) -> None:
    """Only unresolved ids may not vanish: a completed item left out stays in the projection."""
    _, state = checkpoint(started, edited(tracked(), items=[item("A1", "COMPLETED"), item("A2", dependsOn=["A1"])]))
    _, state = checkpoint(state, edited(tracked(), items=[item("A2")]))
    ws = active(state)
    assert ws is not None and ws.items["A1"].status == "COMPLETED"


def test_refused_reopening_a_terminal_item_from_a_document(started: WorkstreamsState) -> None:
    """COMPLETED -> IN_PROGRESS in a document: reopening needs the explicit command."""
    _, state = checkpoint(started, edited(tracked(), items=[item("A1", "COMPLETED"), item("A2", dependsOn=["A1"])]))
    text = refused(state, edited(tracked(), items=[item("A1", "IN_PROGRESS"), item("A2", dependsOn=["A1"])]))
    assert text.startswith("Work item A1 of workstream WS-1 is COMPLETED: reopening terminal work needs an explicit")


def test_refused_a_terminal_item_changing_its_outcome(started: WorkstreamsState) -> None:
    """COMPLETED -> SUPERSEDED is an invalid transition (terminal is final)."""
    _, state = checkpoint(started, edited(tracked(), items=[item("A1", "COMPLETED"), item("A2", dependsOn=["A1"])]))
    text = refused(state, edited(tracked(), items=[item("A1", "SUPERSEDED"), item("A2", dependsOn=["A1"])]))
    assert text == "Invalid work item status transition for A1 of workstream WS-1: COMPLETED -> SUPERSEDED"


def test_refused_an_invalid_workstream_transition(started: WorkstreamsState) -> None:
    """IN_PROGRESS -> PROPOSED goes backwards."""
    text = refused(started, edited(tracked(), status="PROPOSED"))
    assert text == "Invalid workstream status transition for WS-1: IN_PROGRESS -> PROPOSED"


def test_refused_completing_a_workstream_with_unresolved_items(started: WorkstreamsState) -> None:
    """A terminal workstream must transition its items explicitly."""
    text = refused(started, edited(tracked(), status="COMPLETED"))
    assert text == ("Workstream WS-1 cannot be COMPLETED while work items are unresolved: A1, A2 "
                    "(transition them explicitly first)")


@pytest.mark.parametrize(("deps", "at"), [
    ({"A1": ["A2"], "A2": ["A1"]}, "A1"),
    ({"A1": ["A1"]}, "A1"),
    ({"A1": [], "A2": ["A3"], "A3": ["A4"], "A4": ["A2"]}, "A2"),
])
def test_refused_a_dependency_cycle_naming_the_item(deps: dict[str, list[str]], at: str) -> None:
    """Two-item, self and three-item cycles: `... contains a dependency cycle at <id>`."""
    doc = tracked(items=[item(key, dependsOn=value) for key, value in deps.items()])
    assert refused(WorkstreamsState(), doc) == f"Workstream WS-1 contains a dependency cycle at {at}"


def test_refused_a_dependency_on_an_unknown_item() -> None:
    """dependsOn must name items of the workstream."""
    text = refused(WorkstreamsState(), tracked(items=[item("A1", dependsOn=["ghost"])]))
    assert text == "Work item A1 of workstream WS-1 depends on unknown work items: ghost"


@pytest.mark.parametrize("blockers", [[], ["ghost"], ["A1"]])
def test_refused_blocked_items_without_a_valid_blocker(blockers: list[str]) -> None:
    """BLOCKED with no blocker, an unknown one, or itself."""
    doc = tracked(items=[item("A1", "BLOCKED", blockedBy=blockers), item("A2")])
    assert refused(WorkstreamsState(), doc).startswith("Work item A1 is BLOCKED without a valid blocker")


def test_a_blocked_item_with_a_real_blocker_is_accepted() -> None:
    """BLOCKED by another item of the workstream."""
    events, _ = checkpoint(WorkstreamsState(), tracked(items=[item("A1", "BLOCKED", blockedBy=["A2"]), item("A2")]))
    assert kinds(events)[0] == "workstream.started"


def test_refused_a_cursor_into_nothing() -> None:
    """The cursor's current item must exist."""
    text = refused(WorkstreamsState(), tracked(current="ghost"))
    assert text == "Cursor currentItemId of workstream WS-1 names unknown work item ghost"


def test_refused_switching_workstreams_without_terminating(started: WorkstreamsState) -> None:
    """Another workstream id while WS-1 is unresolved."""
    text = refused(started, tracked("WS-2"))
    assert text == ("Active workstream WS-1 is IN_PROGRESS: terminate it (COMPLETED, CANCELLED or SUPERSEDED) "
                    "before switching to workstream WS-2")


def test_switching_after_terminating_is_allowed(started: WorkstreamsState) -> None:
    """Terminate WS-1 explicitly, then WS-2 starts; WS-1 stays in the archive and cannot change."""
    _, state = checkpoint(started, edited(tracked(), status="CANCELLED",
                                          items=[item("A1", "CANCELLED"), item("A2", "CANCELLED")]))
    events, state = checkpoint(state, tracked("WS-2"))
    assert kinds(events)[0] == "workstream.started" and active(state) is not None
    assert state.archived == ["WS-1"]
    text = refused(WorkstreamsState(archived=state.archived, workstreams={"WS-1": state.workstreams["WS-1"]}),
                   edited(tracked(), title="changed"))
    assert text == "Workstream WS-1 is CANCELLED and archived: it cannot change (start a new workstream id)"


def test_refused_legacy_and_snapshot_checkpoints_over_active_work(started: WorkstreamsState) -> None:
    """v1 and snapshot documents would erase the unresolved tracked workstream."""
    assert refused(started, legacy()).startswith(
        "Legacy schemaVersion 1 checkpoint would lose an active tracked workstream WS-1 (IN_PROGRESS; "
        "unresolved work items: A1, A2)")
    assert refused(started, snapshot()).startswith(
        "Snapshot checkpoint would lose an active tracked workstream WS-1")


def test_legacy_and_snapshot_checkpoints_are_read_when_nothing_is_tracked() -> None:
    """With no unresolved workstream, v1 and snapshot record the document's own fields."""
    for doc, version in ((legacy(), 1), (snapshot(), 2)):
        events, state = checkpoint(WorkstreamsState(), doc)
        assert kinds(events) == ["context.checkpointed"]
        assert isinstance(events[0], ContextCheckpointed) and events[0].schema_version == version
        assert events[0].mode == "snapshot" and state.checkpoint is not None


def test_validation_ids_are_immutable(started: WorkstreamsState) -> None:
    """A new entry is recorded with the facts; the same entry again is no change; other content is refused."""
    events, state = checkpoint(started, tracked(ledger=[ledger_entry("V1")]))
    recorded = [e for e in events if isinstance(e, ValidationRecorded)]
    assert len(recorded) == 1 and recorded[0].head == FACTS.head and recorded[0].fingerprint == FACTS.fingerprint
    again, _ = checkpoint(state, tracked(ledger=[ledger_entry("V1")]))
    assert not any(isinstance(e, ValidationRecorded) for e in again)
    text = refused(state, tracked(ledger=[ledger_entry("V1", "FAIL"), ledger_entry("V2")]))
    assert text == "Validation ledger entry ids are immutable and already exist: V1"


def test_evidence_is_recorded_once() -> None:
    """A decision already recorded is not recorded again; leaving it out does not erase it."""
    _, state = checkpoint(WorkstreamsState(), tracked(decisions=["d1"]))
    events, state = checkpoint(state, tracked(decisions=["d1", "d2"]))
    [recorded] = [e for e in events if isinstance(e, DecisionRecorded)]
    assert recorded.texts == ("d2",)
    _, state = checkpoint(state, tracked(decisions=[]))
    assert [e.text for e in state.decisions] == ["d1", "d2"]


def test_five_hundred_large_items_split_over_events_that_fit() -> None:
    """Items too large for one event are split; every event stays under the size limit."""
    items = [item(f"I{n}", notes=["x" * 3000]) for n in range(500)]
    events, state = checkpoint(WorkstreamsState(), tracked(items=items, current="I0"))
    added = [e for e in events if isinstance(e, WorkItemAdded)]
    assert len(added) > 1 and sum(len(e.items) for e in added) == 500
    assert all(len(msgspec.json.encode(e)) < diff.CHUNK_BYTES + 4096 for e in added)
    ws = active(state)
    assert ws is not None and list(ws.items) == [f"I{n}" for n in range(500)]


def test_granular_item_add_set_and_cursor(started: WorkstreamsState) -> None:
    """The granular decisions: add, a status change, a reopen, a cursor move."""
    data = WorkItemData(id="A3", title="Docs", status="BLOCKED", blocked_by=("A2",))
    [added] = decide.decide_item_add(started, WHO, data)
    state = decide.folded(started, [added])
    done = decide.decide_item_set(state, WHO, decide.ItemSet(item_id="A1", status="COMPLETED"))
    state = decide.folded(state, done)
    with pytest.raises(InvariantRefused, match="reopening terminal work"):
        decide.decide_item_set(state, WHO, decide.ItemSet(item_id="A1", status="PENDING"))
    reopened = decide.decide_item_set(state, WHO, decide.ItemSet(item_id="A1", status="PENDING", reopen=True))
    assert isinstance(reopened[0], WorkItemStatusChanged) and reopened[0].changes[0].reopen
    moved = decide.decide_cursor_set(state, WHO, decide.CursorSet(current_item_id="A3", next_action="unblock A3"))
    assert isinstance(moved[0], CursorMoved) and moved[0].cursor.current_item_id == "A3"


def test_granular_refusals_and_not_found(started: WorkstreamsState) -> None:
    """A blocked item without blocker, a cycle by revision, unknown ids, no active workstream, nothing to do."""
    with pytest.raises(InvariantRefused, match="BLOCKED without a valid blocker"):
        decide.decide_item_add(started, WHO, WorkItemData(id="A3", title="x", status="BLOCKED"))
    with pytest.raises(InvariantRefused, match="dependency cycle at A1"):
        decide.decide_item_set(started, WHO, decide.ItemSet(item_id="A1", depends_on=("A2",)))
    with pytest.raises(WorkNotFound):
        decide.decide_item_set(started, WHO, decide.ItemSet(item_id="ghost", status="COMPLETED"))
    with pytest.raises(WorkNotFound, match="no active workstream"):
        decide.decide_item_add(WorkstreamsState(), WHO, WorkItemData(id="A3", title="x"))
    with pytest.raises(UsageError, match="already exists"):
        decide.decide_item_add(started, WHO, WorkItemData(id="A1", title="x"))
    with pytest.raises(UsageError, match="nothing to change"):
        decide.decide_item_set(started, WHO, decide.ItemSet(item_id="A1"))
    with pytest.raises(InvariantRefused, match="not terminal: nothing to reopen"):
        decide.decide_item_set(started, WHO, decide.ItemSet(item_id="A1", status="PENDING", reopen=True))


def test_a_field_or_status_given_as_it_already_is_changes_nothing(started: WorkstreamsState) -> None:
    """`work item set` with values the item already holds: "already so" (exit 2), nothing recorded, for a status
    as for a revised field (a title set twice wrote a revision each time; a status set twice said to give one)."""
    item = started.workstreams[next(iter(started.workstreams))].items["A1"]
    for same in ({"status": item.status}, {"title": item.title}, {"scope": tuple(item.scope)},
                 {"title": item.title, "status": item.status}):
        with pytest.raises(UsageError, match="nothing to change: work item A1 is already so"):
            decide.decide_item_set(started, WHO, decide.ItemSet(item_id="A1", **same))
    renamed = decide.decide_item_set(started, WHO, decide.ItemSet(item_id="A1", title=item.title + "!",
                                                                  status=item.status))
    assert len(renamed) == 1 and renamed[0].revisions[0].title == item.title + "!"  # type: ignore[attr-defined]
    assert renamed[0].revisions[0].priority is None  # type: ignore[attr-defined]


def test_the_same_change_made_by_two_clones_is_no_conflict(started: WorkstreamsState) -> None:
    """Both clones moved A2 PENDING -> COMPLETED (and the workstream to BLOCKED): the second change found it where it
    lands and was reported as a stale status change, making `work status` and `verify` fail on nothing broken. A
    change that lands elsewhere is still a conflict."""
    same = WorkItemStatusChanged(project="demo", workstream_id="WS-1", changes=(
        StatusChange(item_id="A2", from_status="PENDING", status="COMPLETED"),))
    moved = WorkstreamStatusChanged(project="demo", workstream_id="WS-1", from_status="IN_PROGRESS",
                                    status="BLOCKED")
    state = decide.folded(started, [same, same, moved, moved])
    ws = active(state)
    assert state.problems == [] and ws is not None and (ws.items["A2"].status, ws.status) == ("COMPLETED", "BLOCKED")
    other = WorkItemStatusChanged(project="demo", workstream_id="WS-1", changes=(
        StatusChange(item_id="A2", from_status="PENDING", status="CANCELLED"),))
    assert [(p.kind, p.ids) for p in decide.folded(state, [other]).problems] == [("stale_item_status", ["A2"])]


def test_cycle_detection_ignores_unknown_dependencies() -> None:
    """An unknown dependency is its own problem, not a cycle."""
    _, state = checkpoint(WorkstreamsState(), tracked())
    ws = active(state)
    assert ws is not None
    ws.items["A1"].depends_on = ["ghost"]
    assert dependency_cycle(ws) is None
    assert structure_problems(ws) == ["Work item A1 of workstream WS-1 depends on unknown work items: ghost"]


def test_the_fold_reports_what_only_a_merge_can_produce(started: WorkstreamsState) -> None:
    """Two clones: a second active workstream, a stale status change, a reused validation id: problems, not errors.

    The conflicts are recorded with their kind, workstream and ids; the second active workstream is the state's."""
    other = decide.decide_checkpoint(WorkstreamsState(), WHO, parse(tracked("WS-2")), FACTS)
    stale = WorkItemStatusChanged(project="demo", workstream_id="WS-1", changes=(
        StatusChange(item_id="A1", from_status="PENDING", status="COMPLETED"),))
    entry = ValidationEntry(id="V1", kind="k", result="PASS", repository="r", scope="s", summary="x", timestamp="t")
    v1 = ValidationRecorded(project="demo", entries=(entry,))
    v1_other = ValidationRecorded(project="demo", entries=(msgspec.structs.replace(entry, result="FAIL"),))
    state = decide.folded(started, [*other, stale, v1, v1_other])
    assert [(p.kind, p.workstream_id, p.ids) for p in state.problems] == [
        ("stale_item_status", "WS-1", ["A1"]), ("validation_reused", None, ["V1"])]
    assert "A1 of WS-1: PENDING -> COMPLETED recorded while it was IN_PROGRESS" in state.problems[0].text
    assert "validation id V1 was recorded twice" in state.problems[1].text
    [two] = [p for p in problem_details(state) if p["id"] is None]
    assert (two["kind"], two["workstreamId"], two["ids"]) == ("two_active", "WS-2", ["WS-1"])  # every other active
    assert "WS-2 was started while WS-1 was still active" in two["text"]
    assert state.validations["V1"].entry.result == "PASS"
    third = decide.decide_checkpoint(WorkstreamsState(), WHO, parse(tracked("WS-3")), FACTS)
    three = [p for p in problem_details(decide.folded(state, third)) if p["id"] is None]
    assert [(p["workstreamId"], p["ids"]) for p in three] == [("WS-2", ["WS-1", "WS-3"]),
                                                               ("WS-3", ["WS-1", "WS-2"])]
    assert "WS-3 was started while WS-1, WS-2 were still active" in three[1]["text"]


def test_validate_binds_the_facts_defaults_the_repository_and_keeps_ids_immutable(started: WorkstreamsState) -> None:
    """A new id is recorded with HEAD and fingerprint and the checkpoint's repository; a known id is refused."""
    entry = ValidationEntry(id="V9", kind="lint", result="FAIL", repository="", scope="src", summary="2 errors",
                            timestamp="2026-01-01T00:00:00Z")
    [event] = decide.decide_validate(started, WHO, entry, FACTS)
    assert isinstance(event, ValidationRecorded) and event.workstream_id == "WS-1"
    assert event.entries[0].repository == "repo-a" and (event.head, event.fingerprint) == (FACTS.head,
                                                                                            FACTS.fingerprint)
    state = decide.folded(started, [event])
    with pytest.raises(InvariantRefused, match="immutable and already exist: V9"):
        decide.decide_validate(state, WHO, entry, FACTS)
    with pytest.raises(UsageError, match="--repository"):
        decide.decide_validate(WorkstreamsState(), WHO, entry, FACTS)


def test_a_ledger_id_stays_immutable_after_its_entry_ages_out(started: WorkstreamsState,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 002: ledger ids are immutable. Past the newest entries kept whole an id was forgotten, so it could be
    recorded again with other content; it is kept by a digest of its entry: refused with other content (by
    `validate`, in a checkpoint's ledger, and as a problem when a merge brings it), the same entry again is no
    error and nothing new."""
    from projections import workstreams as model

    monkeypatch.setattr(model, "VALIDATIONS_LIMIT", 2)

    def entry(number: int, result: str = "PASS") -> ValidationEntry:
        return ValidationEntry(id=f"V{number}", kind="k", result=result, repository="repo-a", scope="s",
                               summary="x", timestamp="t")

    state = decide.folded(started, [ValidationRecorded(project="demo", entries=(entry(n),)) for n in (1, 2, 3)])
    assert "V1" not in state.validations and "V1" in state.recorded  # aged out, still known
    with pytest.raises(InvariantRefused, match="immutable and already exist: V1"):
        decide.decide_validate(state, WHO, entry(1, "FAIL"), FACTS)
    with pytest.raises(InvariantRefused, match="immutable and already exist: V1"):
        decide.validation_events(state, {"project": "demo"}, [entry(1, "FAIL")], FACTS, "WS-1")
    assert decide.validation_events(state, {"project": "demo"}, [entry(1)], FACTS, "WS-1") == []
    merged = decide.folded(state, [ValidationRecorded(project="demo", entries=(entry(1, "FAIL"),))])
    assert [(p.kind, p.ids) for p in merged.problems] == [("validation_reused", ["V1"])]
    again = decide.folded(state, [ValidationRecorded(project="demo", entries=(entry(1),))])
    assert again.problems == [] and "V1" not in again.validations


def test_a_forgotten_archived_workstream_never_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the archive bound the oldest workstream leaves the state, but its id stays retired: refused."""
    import projections.workstreams as model

    monkeypatch.setattr(model, "ARCHIVE_LIMIT", 1)
    state = WorkstreamsState()
    for ws_id in ("WS-1", "WS-2"):
        done = [item("A1", "COMPLETED"), item("A2", "COMPLETED")]
        _, state = checkpoint(state, tracked(ws_id))
        _, state = checkpoint(state, edited(tracked(ws_id), status="COMPLETED", items=done))
    assert state.archived == ["WS-2"] and state.retired == ["WS-1"] and "WS-1" not in state.workstreams
    assert refused(state, tracked("WS-1")) == ("Workstream WS-1 is archived: it cannot change "
                                               "(start a new workstream id)")


@pytest.mark.parametrize("other", ["add", "reopen"])
@pytest.mark.parametrize("ending_first", [True, False])
def test_work_left_open_in_a_workstream_another_clone_ended_is_a_problem(
        started: WorkstreamsState, other: str, ending_first: bool) -> None:
    """One clone ends WS-1; the other adds an item or reopens one: in either log order the archived
    workstream's unresolved item is named in `problems`, never hidden by the archive."""
    resolved = edited(tracked(), items=[item("A1", "COMPLETED"), item("A2", "COMPLETED", dependsOn=["A1"])])
    _, both_done = checkpoint(started, resolved)
    ending, _ = checkpoint(both_done, edited(resolved, status="COMPLETED"))
    if other == "add":
        offline = decide.decide_item_add(both_done, WHO, WorkItemData(id="N1", title="found late"))
    else:
        offline = decide.decide_item_set(both_done, WHO, decide.ItemSet(item_id="A2", status="IN_PROGRESS",
                                                                        reopen=True))
    merged = decide.folded(both_done, [*ending, *offline] if ending_first else [*offline, *ending])
    open_id = "N1" if other == "add" else "A2"
    assert merged.workstreams["WS-1"].status == "COMPLETED" and merged.archived == ["WS-1"]
    assert merged.problems == []  # the state's own problem: computed, holds while the state is so
    assert problems_of(merged) == [
        f"workstream WS-1 is COMPLETED (archived) while work items are unresolved: {open_id} (concurrent writers "
        "merged? carry them into an active workstream, then `continuity work item set ID --workstream WS-1 "
        "--status SUPERSEDED`)"]
    with pytest.raises(InvariantRefused, match="archived"):  # only a terminal status, and only for such an item
        decide.decide_item_set(merged, WHO, decide.ItemSet(item_id=open_id, workstream_id="WS-1", status="BLOCKED"))
    with pytest.raises(InvariantRefused, match="archived"):
        decide.decide_item_set(merged, WHO, decide.ItemSet(item_id=open_id, workstream_id="WS-1",
                                                           status="SUPERSEDED", notes=("moved",)))
    with pytest.raises(InvariantRefused, match="archived"):
        decide.decide_item_set(merged, WHO, decide.ItemSet(item_id="A1", workstream_id="WS-1", status="CANCELLED"))
    settled = decide.decide_item_set(merged, WHO, decide.ItemSet(item_id=open_id, workstream_id="WS-1",
                                                                 status="SUPERSEDED"))
    after = decide.folded(merged, settled)
    assert problems_of(after) == [] and after.workstreams["WS-1"].items[open_id].status == "SUPERSEDED"


def _stale(ws_id: str, item_id: str) -> WorkItemStatusChanged:
    """A status change decided on a state the item no longer had (what a merge brings), to another status than the
    one it has (A1 is IN_PROGRESS, A2 PENDING)."""
    status = "PENDING" if item_id == "A1" else "IN_PROGRESS"
    return WorkItemStatusChanged(project="demo", event_id=f"RCE-{ws_id}-{item_id}", workstream_id=ws_id,
                                 changes=(StatusChange(item_id=item_id, from_status="BLOCKED", status=status),))


def test_a_checkpoint_of_the_workstream_resolves_the_recorded_conflicts_it_was_decided_with(
        started: WorkstreamsState) -> None:
    """The next checkpoint of WS-1 names the open conflicts of WS-1 in `acknowledged` and the fold marks them
    resolved by it (who, which event); a conflict of no workstream, or one arriving later, stays open."""
    entry = ValidationEntry(id="V1", kind="k", result="PASS", repository="r", scope="s", summary="x", timestamp="t")
    reused = [ValidationRecorded(project="demo", event_id=f"RCE-v{n}", entries=(entry,) if n else (
        msgspec.structs.replace(entry, result="FAIL"),)) for n in (0, 1)]
    state = decide.folded(started, [_stale("WS-1", "A1"), *reused])
    [stale, reused_v1] = open_problems(state)
    events, after = checkpoint(state, tracked(next_action="settled after the merge"))
    assert events[-1].acknowledged == (stale.id,)  # type: ignore[attr-defined]
    assert [p.id for p in open_problems(after)] == [reused_v1.id]
    [done] = resolved_problems(after)
    assert done["kind"] == "stale_item_status" and done["resolvedBy"]["by"] == "checkpoint"
    assert done["resolvedBy"]["agentId"] == "agent-1" and done["resolvedBy"]["eventId"] == events[-1].event_id
    later = decide.folded(after, [_stale("WS-1", "A2")])  # a conflict the checkpoint was not decided with
    assert [p.ids for p in open_problems(later)] == [["V1"], ["A2"]]


def test_work_resolve_records_who_resolved_which_problems_and_why(started: WorkstreamsState) -> None:
    """`work resolve` names open recorded problems (by id, or --all of a workstream) with a reason; an unknown id
    is exit 7, a resolved one or nothing to resolve a usage error, and a structural problem has no id to name."""
    state = decide.folded(started, [_stale("WS-1", "A1"), _stale("WS-1", "A2")])
    first, second = open_problems(state)
    [event] = decide.decide_resolve(state, WHO, [first.id], "A1 is blocked: checked with the team")
    after = decide.folded(state, [event])
    assert [p.id for p in open_problems(after)] == [second.id]
    [done] = resolved_problems(after)
    assert done["resolvedBy"] == {"by": "resolve", "eventId": event.event_id, "agentId": "agent-1",
                                  "at": event.created_at, "reason": "A1 is blocked: checked with the team"}
    with pytest.raises(UsageError, match="already resolved by resolve"):
        decide.decide_resolve(after, WHO, [first.id], "again")
    with pytest.raises(WorkNotFound, match="unknown problem"):
        decide.decide_resolve(after, WHO, ["P-000000000000"], "ghost")
    with pytest.raises(UsageError, match="--reason"):
        decide.decide_resolve(after, WHO, [second.id], " ")
    with pytest.raises(UsageError, match="nothing to resolve"):
        decide.decide_resolve(after, WHO, [], "all", every=True, workstream_id="WS-2")
    text = runtime_markdown(runtime_document(after, "demo"))
    assert f"- [{second.id}] {second.text}" in text.splitlines()
    assert f"- [{first.id}] {first.text}: resolved by resolve  (agent-1): A1 is blocked: checked with the team" \
        in text.splitlines()
    [every] = decide.decide_resolve(after, WHO, [], "all of WS-1", every=True, workstream_id="WS-1")
    assert problems_of(decide.folded(after, [every])) == []


def test_an_archived_workstream_holding_work_a_merge_left_is_forgotten_last(
        started: WorkstreamsState, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the archive bound the oldest archived workstream is forgotten, unless it still holds unresolved work
    (its problem would vanish with it): then the oldest without any is."""
    import projections.workstreams as model

    monkeypatch.setattr(model, "ARCHIVE_LIMIT", 1)
    done = [item("A1", "COMPLETED"), item("A2", "COMPLETED", dependsOn=["A1"])]
    _, ended = checkpoint(started, edited(tracked(), status="COMPLETED", items=done))
    late = WorkItemAdded(project="demo", workstream_id="WS-1", items=(WorkItemData(id="N1", title="late"),))
    state = decide.folded(ended, [late])
    _, state = checkpoint(state, tracked("WS-2"))
    _, state = checkpoint(state, edited(tracked("WS-2"), status="COMPLETED", items=done))
    assert state.archived == ["WS-1"] and state.retired == ["WS-2"]
    assert [p["kind"] for p in problem_details(state)] == ["unresolved_in_ended"]


def test_a_cycle_a_merge_left_refuses_no_unrelated_granular_edit_and_holds_while_it_is_there(
        started: WorkstreamsState) -> None:
    """Edges that close a cycle only together (two clones): a note on A2, an item added, the cursor moved are
    accepted; a new cycle is still refused, and so is a checkpoint document that keeps the cycle. The problem
    clears when an edit removes an edge."""
    edge = WorkItemRevised(project="demo", workstream_id="WS-1",
                           revisions=(ItemRevision(item_id="A1", depends_on=("A2",)),))
    merged = decide.folded(started, [edge])
    assert problems_of(merged) == ["Workstream WS-1 contains a dependency cycle at A1"]
    note = decide.decide_item_set(merged, WHO, decide.ItemSet(item_id="A2", notes=("unrelated",)))
    merged = decide.folded(merged, note)
    merged = decide.folded(merged, decide.decide_item_add(merged, WHO, WorkItemData(id="A3", title="x")))
    decide.decide_cursor_set(merged, WHO, decide.CursorSet(next_action="elsewhere"))
    with pytest.raises(InvariantRefused, match="cycle at A3"):
        decide.decide_item_set(merged, WHO, decide.ItemSet(item_id="A3", depends_on=("A3",)))
    with pytest.raises(InvariantRefused, match="cycle at A1"):
        decide.decide_checkpoint(merged, WHO, parse(edited(tracked(), items=[
            item("A1", "IN_PROGRESS", dependsOn=["A2"]), item("A2", dependsOn=["A1"]), item("A3")])), FACTS)
    fixed = decide.decide_item_set(merged, WHO, decide.ItemSet(item_id="A1", depends_on=()))
    assert problems_of(decide.folded(merged, fixed)) == []


def _reaches_itself(ws: Any, start: str) -> bool:
    seen: set[str] = set()
    todo = list(ws.items[start].depends_on)
    while todo:
        node = todo.pop()
        if node == start:
            return True
        if node in ws.items and node not in seen:
            seen.add(node)
            todo.extend(ws.items[node].depends_on)
    return False


def test_the_items_on_a_cycle_are_every_item_that_reaches_itself() -> None:
    """cyclic_items (one pass, strongly connected components) names exactly the items that reach themselves
    through dependsOn, on random graphs with self-loops and unknown dependencies."""
    import random

    from continuity.workstreams.rules import cyclic_items

    rng = random.Random(2)
    for _ in range(300):
        _, state = checkpoint(WorkstreamsState(), tracked())
        ws = active(state)
        assert ws is not None
        ids = [f"N{n}" for n in range(rng.randint(1, 9))]
        ws.items = {item_id: msgspec.structs.replace(ws.items["A2"], id=item_id, depends_on=[
            rng.choice([*ids, "ghost"]) for _ in range(rng.randint(0, 3))]) for item_id in ids}

        assert cyclic_items(ws) == [item_id for item_id in ids if _reaches_itself(ws, item_id)]
        assert (dependency_cycle(ws) is None) == (cyclic_items(ws) == [])


OPEN = ("PENDING", "IN_PROGRESS", "BLOCKED")


@st.composite
def documents(draw: Any) -> list[dict[str, Any]]:
    """Three to six checkpoints of one workstream: items added, statuses moved among the open ones, blockers and
    dependencies on earlier items (new ones too), the cursor anywhere."""
    steps = []
    count = draw(st.integers(1, 3))
    for _ in range(draw(st.integers(3, 6))):
        count = min(6, count + draw(st.integers(0, 2)))
        ids = [f"A{index}" for index in range(1, count + 1)]
        items = []
        for index, item_id in enumerate(ids):
            status = draw(st.sampled_from(OPEN))
            others = [other for other in ids if other != item_id]
            blockers = draw(st.lists(st.sampled_from(others), max_size=2, unique=True)) if others and \
                status == "BLOCKED" else []
            if status == "BLOCKED" and not blockers:
                status = "PENDING"
            depends = draw(st.lists(st.sampled_from(ids[:index]), max_size=2, unique=True)) if index else []
            items.append(item(item_id, status, blockedBy=blockers, dependsOn=depends))
        current = draw(st.sampled_from([None, *ids]))
        steps.append(edited(tracked(), items=items, cursor={
            "currentItemId": current, "lastCompletedItemId": None, "phase": None, "lastCompletedAction": None,
            "nextAction": "go on"}))
    return steps


@settings(max_examples=150, deadline=None)
@given(documents())
def test_every_prefix_of_a_checkpoints_events_keeps_the_invariants(steps: list[dict[str, Any]]) -> None:
    """A batch lands file by file, so a kill leaves a prefix of it. A new workstream's first event named a cursor
    item its next event added, and an item leaving BLOCKED lost its blockers (a revision) before its status
    changed: the prefix broke the invariants `verify` checks. Every prefix keeps them now."""
    state = WorkstreamsState()
    for doc in steps:
        try:
            events = decide.decide_checkpoint(state, WHO, parse(doc), FACTS)
        except InvariantRefused:
            continue
        for cut in range(1, len(events) + 1):
            ws = decide.folded(state, events[:cut]).workstreams.get("WS-1")
            assert ws is None or structure_problems(ws) == [], (cut, [event.kind for event in events])
        state = decide.folded(state, events)


def test_a_new_workstream_gets_its_cursor_once_its_items_exist() -> None:
    doc = tracked(current="A2")
    events, state = checkpoint(WorkstreamsState(), doc)
    assert kinds(events) == ["workstream.started", "work_item.added", "workstream.cursor_moved",
                             "context.checkpointed"]
    assert isinstance(events[0], WorkstreamStarted) and events[0].cursor.current_item_id is None
    ws = active(state)
    assert ws is not None and ws.cursor.current_item_id == "A2"
