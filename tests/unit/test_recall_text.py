"""What recall indexes of each event family (projections/recall.py), without disk."""

from __future__ import annotations

from events.archive import ArchiveCreated, ArchivedState
from events.base import CommandRef, Refs, Summary
from events.catalog import EVENT_TYPES
from events.context import ContextServed, ViewInputs
from events.handoff import HandoffRejected
from events.task import RunCompleted, TaskCreated
from events.team import MessageAcked, SnapshotTaken
from events.worklog import CheckpointRecorded
from events.workstream import ApproachRejected, Cursor, CursorMoved
from projections.recall import EXTRA, SKIPPED, text_of


def test_envelope_texts_are_indexed_once_each() -> None:
    """Message, summary, commands and files, one per line; a repeated text appears once."""
    event = CheckpointRecorded(
        project="p", message="moved the cache", summary=Summary(done=("moved the cache",), in_progress="tuning",
                                                                next=("bench it",), blockers=("no GPU",)),
        refs=Refs(files=("src/cache.py",), commands=(CommandRef(command="pytest -k cache", summary="2 failed"),)),
    )
    assert text_of(event).split("\n") == ["moved the cache", "tuning", "bench it", "no GPU", "pytest -k cache",
                                          "2 failed", "src/cache.py"]


def test_family_texts_are_indexed() -> None:
    """Archives, tasks, runs, snapshots, handoffs and workstream evidence add their own texts."""
    archive = ArchiveCreated(project="p", reason="host move",
                             state=ArchivedState(current_goal="ship recall", blockers=("flaky CI",)))
    assert text_of(archive).split("\n") == ["host move", "ship recall", "flaky CI"]
    assert "index the log" in text_of(TaskCreated(project="p", title="index the log", description="with FTS5"))
    assert text_of(RunCompleted(project="p", output_summary="built the index")) == "built the index"
    snapshot = SnapshotTaken(project="p", team="t", agent="a", task="x", objective="find leaks",
                             decisions=("use valgrind",), next_actions=("rerun",))
    assert text_of(snapshot).split("\n") == ["find leaks", "use valgrind", "rerun"]
    assert text_of(HandoffRejected(project="p", handoff_id="h1", note_text="not my area")) == "not my area"
    assert text_of(ApproachRejected(project="p", texts=("mmap the log",))) == "mmap the log"
    moved = CursorMoved(project="p", workstream_id="w", cursor=Cursor(next_action="write docs"))
    assert text_of(moved) == "write docs"


def test_events_with_nothing_to_say_give_no_text() -> None:
    """A served brief (a copy of other events' text) and an acknowledgement are not indexed."""
    served = ContextServed(project="p", message="brief", brief_sha256="0" * 64, inputs=ViewInputs(now="x"))
    assert text_of(served) == ""
    assert text_of(MessageAcked(project="p", team="t", message_id="m", agent="a")) == ""


def test_every_extractor_names_a_known_event_type() -> None:
    """The table holds only event types the decoder knows."""
    assert set(EXTRA) | SKIPPED <= set(EVENT_TYPES)
