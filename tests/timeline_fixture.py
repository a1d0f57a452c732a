"""A small log for the timeline's tests: every mark category, three lanes, hostile text, fixed times."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from events import names
from events.archive import ArchiveCreated, ArchivedState, HostSwitched
from events.base import Event, Summary
from events.codec import default_codec
from events.handoff import HandoffAccepted, HandoffCreated
from events.sealing import StoredEvent, seal, sha256_hex
from events.session import SessionEnded, SessionStarted
from events.task import RunStarted, TaskCreated, TaskUpdated
from events.team import SnapshotTaken
from events.worklog import CheckpointRecorded, WorkLogged
from events.workstream import DecisionRecorded

#: 2026-11-30T09:00:00Z: the fixture spans two days (the axis shows a day line).
START_US = 1_796_029_200_000_000
MINUTE_US = 60_000_000
PROJECT = "demo"
#: A message that must be shown as text and run nothing.
HOSTILE = ("\u202eright-to-left\u202c \u009b1m <script>document.title='pwned-script'</script> then "
           "<img src=x onerror=\"window.__pwned=1;document.title='pwned-img'\"> &amp; \u2028 done")

ANN = {"project": PROJECT, "agent_id": "ann", "host": "claude-code", "session_id": "S-ann-1"}
ANN2 = {"project": PROJECT, "agent_id": "ann", "host": "claude-code", "session_id": "S-ann-2"}
BOB = {"project": PROJECT, "agent_id": "bob", "host": "codex", "session_id": "S-bob-1"}
CARL = {"project": PROJECT, "agent_id": "carl", "host": "cursor"}


def drafts() -> list[tuple[int, Event]]:
    """(minutes after START_US, draft) in log order."""
    return [
        (0, SessionStarted(**ANN, source="startup")),
        (5, WorkLogged(**ANN, message="edited the order model")),
        (9, WorkLogged(**ANN, message=HOSTILE)),
        (20, CheckpointRecorded(**ANN, message="order totals fixed", summary=Summary(next=("refund tests",)))),
        (25, TaskCreated(**ANN, task_id="T-1", title="refund endpoint")),
        (30, TaskUpdated(**ANN, task_id="T-1", status="in_progress", from_status="queued", version=2)),
        (31, TaskUpdated(**ANN, task_id="T-1", note_text="just a note", version=3)),  # no transition: no mark
        (33, RunStarted(**ANN, task_id="T-1", run_id="R-1")),  # no mark, but part of the session
        (40, DecisionRecorded(**ANN, texts=("keep refunds idempotent",))),
        (50, ArchiveCreated(**ANN, gate="agent", reason="switching host", state=ArchivedState(next=("tests",)))),
        (51, HostSwitched(**ANN, from_host="claude-code", to_host="codex", reason="continue in Codex")),
        (52, SessionEnded(**ANN, reason="switch")),
        (60, SessionStarted(**BOB, source="resume")),
        (70, WorkLogged(**BOB, message="wrote refund tests")),
        (90, HandoffCreated(**BOB, handoff_id="H-1", to_agent="carl", message="take over the push race")),
        (95, SnapshotTaken(**BOB, team="core", agent="bob", task="refunds", objective="refunds shipped")),
        (16 * 60, HandoffAccepted(**CARL, handoff_id="H-1", note_text="on it")),
        (16 * 60 + 30, WorkLogged(**CARL, message="flaky test: push race")),
        (24 * 60 + 10, SessionStarted(**ANN2, source="startup")),
        (24 * 60 + 20, CheckpointRecorded(**ANN2, message="day two: refunds merged")),
    ]


#: Marks per category the fixture makes (a note-only task update and a run start make none).
COUNTS = {"host-switch": 1, "archive": 1, "handoff": 2, "snapshot": 1, "task": 2, "decision": 1, "checkpoint": 2,
          "session": 4, "log": 4}
MARKS = sum(COUNTS.values())
EVENTS = len(drafts())


def sealed(extra: list[tuple[int, Event]] | None = None) -> Iterator[StoredEvent]:
    """The fixture's events as stored (chained, fixed node), in log order."""
    codec, prev = default_codec(), None
    for minutes, draft in sorted([*drafts(), *(extra or [])], key=lambda pair: pair[0]):
        stored = seal(draft, at_us=START_US + minutes * MINUTE_US, node="fixture1", prev=prev, codec=codec)
        prev = sha256_hex(stored.raw)
        yield stored


def write(events_dir: Path, extra: list[tuple[int, Event]] | None = None) -> None:
    """Write the fixture's events into a store's events folder (a fixture, not the write path)."""
    for stored in sealed(extra):
        folder = events_dir / names.shard_of(stored.name)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / stored.name).write_bytes(stored.raw)
