"""The timeline's summary marks: folded as events come, they are what keeping every session-hour gave.

The reference below is the builder as it was before it folded: every session-hour's bucket (its
counts and its most telling event, decoded and as bytes) kept to the end, then merged per level in
order of appearance. The page drawn from either must be the same, byte for byte.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable

import msgspec
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from continuity.timeline import model
from continuity.timeline.model import CATEGORIES, HOUR_US, LABEL_CHARS, LEVELS, Builder, Mark, Page
from continuity.timeline.render import render
from events import clock
from events.archive import ArchiveCreated, ArchivedState, HostSwitched
from events.base import Event
from events.codec import default_codec
from events.handoff import HandoffCreated
from events.sealing import StoredEvent, seal
from events.session import SessionStarted
from events.task import RunStarted, TaskCreated, TaskUpdated
from events.team import SnapshotTaken
from events.worklog import CheckpointRecorded, WorkLogged
from events.workstream import DecisionRecorded
from tests import timeline_fixture as fixture

PROJECT = fixture.PROJECT
START_US = fixture.START_US


@dataclasses.dataclass(slots=True)
class _OldBucket:
    lane: int
    session: int | None
    first_us: int
    last_us: int
    kinds: Counter[str] = dataclasses.field(default_factory=Counter)
    top_rank: int = len(CATEGORIES)
    top: tuple[bytes, Event] | None = None


class Reference(Builder):
    """The builder before folding: one bucket per session-hour kept to the end, merged per level by `page()`."""

    def __init__(self, project: str, **options: int) -> None:
        super().__init__(project, **options)  # type: ignore[arg-type]
        self.hours: dict[tuple[int, int | None, int], _OldBucket] = {}

    def add(self, name: str, raw: bytes, event: Event) -> None:
        marked = sum(self.counts.values())
        super().add(name, raw, event)
        if sum(self.counts.values()) == marked:
            return
        category = model.category_of(event)
        assert category is not None
        at = clock.parse_iso(event.created_at)
        lane = self._lane_of[(event.agent_id or "", event.host or "")]
        session = self._session_of[(lane, event.session_id)] if event.session_id else None
        bucket = self.hours.setdefault((lane, session, at // HOUR_US), _OldBucket(lane, session, at, at))
        bucket.first_us, bucket.last_us = min(bucket.first_us, at), max(bucket.last_us, at)
        bucket.kinds[event.kind] += 1
        if model._RANK[category] < bucket.top_rank:
            bucket.top_rank, bucket.top = model._RANK[category], (raw, event)

    def _summaries(self) -> tuple[str, list[Mark]]:
        for level, width, by_session in LEVELS:
            merged: dict[tuple[int, int | None, int], list[_OldBucket]] = {}
            for bucket in self.hours.values():
                key = (bucket.lane, bucket.session if by_session else None, bucket.first_us // width)
                merged.setdefault(key, []).append(bucket)
            last = level == LEVELS[-1][0]
            if len(merged) > self.summary_limit and not last:
                continue
            marks = [self._old_summary(level, group) for group in merged.values()]
            if last:  # cutting the embedded events is no part of folding: the builder's own
                marks = model.fit(marks, self.summary_bytes)
            if last or sum(map(model.page_bytes, marks)) <= self.summary_bytes:
                marks.sort(key=lambda mark: (mark.at_us, mark.lane))
                return level, marks
        raise AssertionError("unreachable")

    def _old_summary(self, level: str, group: list[_OldBucket]) -> Mark:
        kinds: Counter[str] = Counter()
        for bucket in group:
            kinds.update(bucket.kinds)
        best = min(group, key=lambda bucket: bucket.top_rank)
        assert best.top is not None
        raw, event = best.top
        first, last = min(b.first_us for b in group), max(b.last_us for b in group)
        sessions = sorted({self.sessions[b.session].session_id for b in group if b.session is not None})
        count = sum(kinds.values())
        summary = {"summary": level, "lane": self.lanes[best.lane].label, "sessions": sessions,
                   "from": clock.iso(first), "to": clock.iso(last), "events": count,
                   "kinds": dict(kinds.most_common()), "most_telling": msgspec.json.decode(raw)}
        label = f"{count} events ({level}): " + ", ".join(f"{n} {k}" for k, n in kinds.most_common(3))
        label = f"{label}. {model.label_of(event)}"
        if len(label) > LABEL_CHARS:
            label = label[:LABEL_CHARS - 1] + "…"
        session = best.session if level == "session-hour" else None
        return Mark(at_us=(first + last) // 2, lane=best.lane, session=session,
                    category=CATEGORIES[best.top_rank], label=label, payload=msgspec.json.encode(summary), count=count,
                    level=level)


AGENTS = (("ann", "claude-code"), ("bob", "codex"), ("ann", "codex"))
SESSIONS = (None, "S-1", "S-2", "S-3")
TEXTS = ("fixed", "refund tests pass", fixture.HOSTILE, "word " * 60, "交接")
#: Draft makers, one per marked kind (most telling first) and two that make no mark.
KINDS: tuple[Callable[[dict[str, str | None], str], Event], ...] = (
    lambda who, text: HostSwitched(**who, from_host="claude-code", to_host="codex", reason=text),  # type: ignore[arg-type]
    lambda who, text: ArchiveCreated(**who, gate="agent", reason=text, state=ArchivedState()),  # type: ignore[arg-type]
    lambda who, text: HandoffCreated(**who, handoff_id="H-1", to_agent="carl", message=text),  # type: ignore[arg-type]
    lambda who, text: SnapshotTaken(**who, team="core", agent="bob", task="refunds", objective=text),  # type: ignore[arg-type]
    lambda who, text: TaskCreated(**who, task_id="T-1", title=text),  # type: ignore[arg-type]
    lambda who, text: TaskUpdated(**who, task_id="T-1", status="completed", from_status="in_progress",  # type: ignore[arg-type]
                                  version=2, note_text=text),
    lambda who, text: DecisionRecorded(**who, texts=(text,)),  # type: ignore[arg-type]
    lambda who, text: CheckpointRecorded(**who, message=text),  # type: ignore[arg-type]
    lambda who, text: SessionStarted(**who, source="startup"),  # type: ignore[arg-type]
    lambda who, text: WorkLogged(**who, message=text),  # type: ignore[arg-type]
    lambda who, text: WorkLogged(**who, message=text),  # type: ignore[arg-type]
    lambda who, text: TaskUpdated(**who, task_id="T-1", note_text=text, version=3),  # type: ignore[arg-type]
    lambda who, text: RunStarted(**who, task_id="T-1", run_id="R-1"),  # type: ignore[arg-type]
)

#: (minutes from START_US, agent and host, session, kind, text), in log order (times need not be).
Draft = tuple[int, int, int, int, int]


def stored(drafts: Iterable[Draft]) -> list[StoredEvent]:
    """The drafts sealed as a writer would, in the order given (a foreign clock may step back)."""
    codec, events = default_codec(), []
    for minutes, lane, session, kind, text in drafts:
        agent, host = AGENTS[lane]
        who = {"project": PROJECT, "agent_id": agent, "host": host, "session_id": SESSIONS[session]}
        draft = KINDS[kind](who, TEXTS[text])
        events.append(seal(draft, at_us=START_US + minutes * 60_000_000, node="fixture1", prev=None, codec=codec))
    return events


def both(events: list[StoredEvent], **options: int) -> tuple[Page, Page, Builder]:
    """The page from the builder and from the reference, and the builder."""
    builder, reference = Builder(PROJECT, **options), Reference(PROJECT, **options)  # type: ignore[arg-type]
    for event in events:
        builder.add(event.name, event.raw, event.event)
        reference.add(event.name, event.raw, event.event)
    return builder.page(), reference.page(), builder


def held(builder: Builder) -> tuple[int, int]:
    """Summary buckets the builder holds, and the distinct events they keep."""
    buckets = builder._buckets.values()
    return len(buckets), len({id(bucket.top) for bucket in buckets})


#: Mostly three busy hours and checkpoints and log lines (ties of rank between session-hours), some
#: events spread over three weeks.
minutes = st.one_of(st.sampled_from((0, 20, 40, 70, 100, 130)), st.integers(0, 21 * 24 * 60))
kinds = st.one_of(st.sampled_from((6, 7, 9)), st.integers(0, len(KINDS) - 1))
drafts = st.tuples(minutes, st.sampled_from((0, 0, 1, 2)), st.sampled_from((1, 2, 1, 2, 3, 0)), kinds,
                   st.integers(0, len(TEXTS) - 1))
#: Two session-hours of a lane-hour, the later first with a checkpoint, then the earlier: the earlier's shows.
TIE_OF_RANK = [(0, 0, 1, 9, 0), (1, 0, 2, 7, 1), (2, 0, 1, 7, 0)]
#: The same, with a decision kind first seen in the earlier session-hour after the later one's.
TIE_OF_KINDS = [(0, 0, 1, 9, 0), (1, 0, 2, 7, 1), (2, 0, 1, 6, 0), (3, 0, 2, 9, 0), (65, 1, 0, 9, 0)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=st.lists(drafts, min_size=3, max_size=60), in_order=st.booleans(), mark_limit=st.integers(0, 12),
       summary_limit=st.integers(0, 6), summary_bytes=st.one_of(st.just(model.SUMMARY_BYTES),
                                                                st.integers(0, 30_000)))
@example(log=TIE_OF_RANK, in_order=False, mark_limit=0, summary_limit=1, summary_bytes=model.SUMMARY_BYTES)
@example(log=TIE_OF_KINDS, in_order=False, mark_limit=0, summary_limit=1, summary_bytes=model.SUMMARY_BYTES)
def test_folded_summaries_draw_the_page_keeping_every_session_hour_drew(
        log: list[Draft], in_order: bool, mark_limit: int, summary_limit: int, summary_bytes: int) -> None:
    """Whatever the log, its order and the limits, the page is byte for byte the reference's; few buckets are held."""
    events = stored(sorted(log) if in_order else log)
    page, expected, builder = both(events, mark_limit=mark_limit, summary_limit=summary_limit,
                                   summary_bytes=summary_bytes)
    assert (page.summarized, page.marks) == (expected.summarized, expected.marks)
    assert render(page) == render(expected)
    buckets, kept = held(builder)
    assert kept == buckets
    assert buckets <= summary_limit or builder._level == len(LEVELS) - 1


def test_past_the_summary_limit_the_page_is_the_same_and_the_buckets_stay_few() -> None:
    """Past SUMMARY_LIMIT session-hours (default limits) the page is unchanged; at most SUMMARY_LIMIT buckets held."""
    # Two agents taking turns every 20 minutes for 30 days, in three sessions: 2,160 session-hours, 1,440 lane-hours.
    log = [(minute, minute // 20 % 2, 1 + minute // 20 % 3, minute // 20 % len(KINDS), minute // 20 % 2)
           for minute in range(0, 30 * 24 * 60, 20)]
    page, expected, builder = both(stored(log))
    assert page.summarized == expected.summarized == "lane-hour"
    assert render(page) == render(expected)
    assert len(builder._hours) > model.SUMMARY_LIMIT  # the finest level could no longer be chosen...
    buckets, kept = held(builder)
    assert buckets == len(page.marks) <= model.SUMMARY_LIMIT and kept == buckets  # ...so its buckets were folded


def test_held_buckets_do_not_grow_with_the_log() -> None:
    """Ten times the log over ten times the hours: the builder holds no more buckets or events than the page shows."""
    def holding(days: int) -> tuple[int, int, int]:
        log = [(minute, minute // 60 % 2, 1 + minute // 300 % 3, minute // 60 % len(KINDS), 0)
               for minute in range(0, days * 24 * 60, 60)]
        page, _, builder = both(stored(log), mark_limit=10, summary_limit=20)
        return (*held(builder), len(page.marks))

    small, large = holding(3), holding(30)
    assert small[0] == small[1] == small[2] <= 20
    assert large[0] == large[1] == large[2] <= 20


def test_many_lanes_over_many_weeks_end_in_one_mark_per_lane() -> None:
    """More lane-weeks than the page holds (hundreds of agents over a year gave a 3 MB page): coarser levels
    follow, down to one mark per lane, so the marks are bounded by the lanes, not the log's length; the page
    is still the reference's."""
    log = [(week * 7 * 24 * 60 + lane, lane, 1 + week % 3, week % len(KINDS), week % len(TEXTS))
           for week in range(60) for lane in range(3)]
    page, expected, builder = both(stored(log), mark_limit=10, summary_limit=50)  # 180 lane-weeks, 16 4-weeks a lane
    assert page.summarized == expected.summarized == "lane-4-weeks" and len(page.marks) == 3 * 16
    page, expected, builder = both(stored(log), mark_limit=10, summary_limit=5)
    assert page.summarized == expected.summarized == "lane"
    assert len(page.marks) == len(page.lanes) == 3
    assert sum(mark.count for mark in page.marks) == sum(page.counts.values())
    assert render(page) == render(expected)
    assert held(builder)[0] == 3
