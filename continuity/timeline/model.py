"""The timeline's page model: lanes, sessions and marks folded from events, with no I/O.

A lane is one agent on one host; a session is the span of one session id in its lane; a
mark is an event of a kind worth seeing (checkpoints, archives, host switches, handoffs,
snapshots, task transitions, decisions, session starts and ends, work-log lines). Past
`MARK_LIMIT` marks (or `BYTES_LIMIT` of page for them), the page shows one mark per
session-hour instead, coarser (lane-hour, lane-day) if even that is too many, so the page
stays small however long the log: `Builder.page()` decides once every event is in. Memory
stays small too: once there are more session-hours than a page shows, that level can never
be chosen, and the builder folds its buckets into the next level's as it goes (each keeps
its counts and one event, whatever the number of events it stands for).
"""

from __future__ import annotations

import dataclasses
import html
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from continuity.core.text import one_line
from events import clock
from events.archive import HostSwitched
from events.base import Event
from events.guard import might_hold_secret, redact_text
from events.task import TaskUpdated
from projections.recall import text_of

#: Event kind -> the mark category shown (kinds not named here only extend their session's span).
CATEGORY_OF: dict[str, str] = {
    "host.switched": "host-switch",
    "archive.created": "archive",
    "handoff.created": "handoff",
    "handoff.accepted": "handoff",
    "handoff.rejected": "handoff",
    "handoff.closed": "handoff",
    "snapshot.taken": "snapshot",
    "task.created": "task",
    "task.updated": "task",
    "decision.recorded": "decision",
    "finding.confirmed": "decision",
    "approach.rejected": "decision",
    "checkpoint.recorded": "checkpoint",
    "role.checkpointed": "checkpoint",
    "context.checkpointed": "checkpoint",
    "session.started": "session",
    "session.ended": "session",
    "work.logged": "log",
}
#: Categories, most telling first: a summary mark takes the colour of its most telling event.
CATEGORIES: tuple[str, ...] = ("host-switch", "archive", "handoff", "snapshot", "task", "decision", "checkpoint",
                               "session", "log")
_RANK = {name: rank for rank, name in enumerate(CATEGORIES)}

#: Individual marks shown at most; past this (or BYTES_LIMIT), the page is summarized.
MARK_LIMIT = 5000
#: The page's bytes for its marks at most (`mark_bytes`: each event's bytes as the page writes them, its SVG and
#: hover text) before it is summarized: with the rest of the page, it stays under 2 MB.
BYTES_LIMIT = 1_200_000
#: Summary marks shown at most at one level, and their page bytes at most (`page_bytes`), before a
#: coarser level is used: with the session bars (at most 1,000) the page stays under 2 MB.
SUMMARY_LIMIT = 1500
SUMMARY_BYTES = 1_650_000
#: A mark's SVG without its hover text (the group, its circle, a count).
MARK_SVG = 190
#: Hover text is cut to this many characters (the whole event is one click away).
LABEL_CHARS = 160
#: At the coarsest level, what a summary embeds of its most telling event (each text, each list) is cut to
#: the first of these lengths that keeps the marks within the summary bytes (`fit`).
CUTS = (2000, 500, 120, 40)
HOUR_US = 3_600_000_000
DAY_US = 24 * HOUR_US
#: Summary levels, finest first: (name, bucket width, whether sessions stay apart).
#: The last, one mark per lane, bounds the page by the lanes (agent and host) whatever the log's length:
#: a log of hundreds of agents over a year had more lane-weeks than the page holds (3 MB at 100k events).
LEVELS: tuple[tuple[str, int, bool], ...] = (("session-hour", HOUR_US, True), ("lane-hour", HOUR_US, False),
                                            ("lane-day", DAY_US, False), ("lane-week", 7 * DAY_US, False),
                                            ("lane-4-weeks", 28 * DAY_US, False),
                                            ("lane", 28 * DAY_US * 10**6, False))
_ENCODER = msgspec.json.Encoder()


def category_of(event: Event) -> str | None:
    """The mark category of an event, or None when it makes no mark (a task update that is not a transition)."""
    found = CATEGORY_OF.get(event.kind)
    if found == "task" and isinstance(event, TaskUpdated) and event.status is None:
        return None
    return found


def label_of(event: Event) -> str:
    """One line for hover: time, kind, who and where, then what the event says (cut to LABEL_CHARS)."""
    who = " ".join(part for part in (event.agent_id, event.host and f"@{event.host}",
                                     event.session_id and f"[{event.session_id}]") if part)
    if might_hold_secret(who):  # ids of an event another clone wrote: only their shape was checked
        who = redact_text(who)[0]
    said = _said(event)
    line = f"{event.created_at[:19].replace('T', ' ')} {event.kind} {who}" + (f": {said}" if said else "")
    line = " ".join(line.split())
    return line if len(line) <= LABEL_CHARS else line[:LABEL_CHARS - 1] + "…"


def _said(event: Event) -> str:
    """What the event says, what looks like a secret redacted (before the label's cut: a token it splits would keep
    characters no rule matches); recall's text is redacted already."""
    if isinstance(event, HostSwitched):
        said = f"{event.from_host} -> {event.to_host}" + (f" ({event.reason})" if event.reason else "")
    elif isinstance(event, TaskUpdated) and event.status is not None:
        moved = f"{event.from_status or '?'} -> {event.status}"
        said = f"{event.task_id or ''} {moved}" + (f": {event.note_text}" if event.note_text else "")
    else:
        return text_of(event).replace("\n", " · ")
    return redact_text(said)[0] if might_hold_secret(said) else said


@dataclass(slots=True)
class Lane:
    """One agent on one host: its label and its first event (lanes are shown in order of appearance)."""

    agent: str
    host: str
    first_us: int
    events: int = 0

    @property
    def label(self) -> str:
        """`agent · host`, with stand-ins for what an event did not name."""
        return f"{self.agent or '(no agent)'} · {self.host or '(no host)'}"


@dataclass(slots=True)
class Session:
    """One session id in one lane: from its first to its last event."""

    lane: int
    session_id: str
    first_us: int
    last_us: int
    events: int = 0


@dataclass(slots=True)
class Mark:
    """A mark on the page: one event, or a summary of a bucket of them (`count` > 1 or `level` set)."""

    at_us: int
    lane: int
    session: int | None
    category: str
    label: str
    #: The JSON shown on click: the event's own bytes, or the summary's.
    payload: bytes
    count: int = 1
    level: str | None = None


@dataclass(slots=True)
class _Bucket:
    """What a summary mark shows of a bucket of marked events (a session-hour, or a lane's hour, day or week
    folded from session-hours): its span, how many of each kind, and its most telling event kept whole.

    It is what merging the bucket's session-hours in order of appearance gives, kept as events come so
    a coarser bucket never holds its session-hours: buckets are listed in the order their first
    session-hour appeared (`seq`), a kind where it first appeared (its session-hour's seq, then the
    event's: `order`), and the most telling event is the first of the lowest rank within the first
    session-hour holding that rank (`top_seq` is that session-hour's seq).
    """

    lane: int
    session: int | None
    #: The bucket's hour, day or week (of the epoch).
    unit: int
    seq: int
    first_us: int
    last_us: int
    kinds: Counter[str] = field(default_factory=Counter)
    order: dict[str, tuple[int, int]] = field(default_factory=dict)
    sessions: set[int] = field(default_factory=set)
    top_rank: int = len(CATEGORIES)
    top_seq: int = 0
    top: tuple[bytes, Event] | None = None

    def add(self, at: int, hour_seq: int, event_seq: int, rank: int, session: int | None, raw: bytes,
            event: Event) -> None:
        """Count one marked event of the session-hour `hour_seq` (the `event_seq`-th read)."""
        self.first_us, self.last_us = min(self.first_us, at), max(self.last_us, at)
        self.kinds[event.kind] += 1
        self.order[event.kind] = min(self.order.get(event.kind, (hour_seq, event_seq)), (hour_seq, event_seq))
        if session is not None:
            self.sessions.add(session)
        # The event tops its own session-hour only if it beats that hour's rank, which is never below this
        # bucket's: so it tops the bucket when it is lower, or as low and its session-hour came first.
        if (rank, hour_seq) < (self.top_rank, self.top_seq):
            self.top_rank, self.top_seq, self.top = rank, hour_seq, (raw, event)

    def absorb(self, other: _Bucket) -> None:
        """Fold another bucket's session-hours into this one."""
        self.seq = min(self.seq, other.seq)
        self.first_us, self.last_us = min(self.first_us, other.first_us), max(self.last_us, other.last_us)
        self.kinds.update(other.kinds)
        for kind, at in other.order.items():
            self.order[kind] = min(self.order.get(kind, at), at)
        self.sessions |= other.sessions
        if (other.top_rank, other.top_seq) < (self.top_rank, self.top_seq):
            self.top_rank, self.top_seq, self.top = other.top_rank, other.top_seq, other.top


def _unit(level: int) -> int:
    """Hours per bucket at a level."""
    return LEVELS[level][1] // HOUR_US


def _folded(buckets: Iterable[_Bucket], finer: int, level: int) -> dict[tuple[int, int | None, int], _Bucket]:
    """Buckets of level `finer` folded into level `level`'s (new buckets: `buckets` are left as they are)."""
    by_session, ratio = LEVELS[level][2], _unit(level) // _unit(finer)
    merged: dict[tuple[int, int | None, int], _Bucket] = {}
    for bucket in buckets:
        key = (bucket.lane, bucket.session if by_session else None, bucket.unit // ratio)
        into = merged.get(key)
        if into is None:
            into = merged[key] = _Bucket(lane=key[0], session=key[1], unit=key[2], seq=bucket.seq,
                                         first_us=bucket.first_us, last_us=bucket.last_us)
        into.absorb(bucket)
    return merged


def mark_bytes(payload: bytes, label: str) -> int:
    """About what a mark adds to the page: its JSON as the block writes it (`<`, `>` and `&` as 6-byte escapes,
    U+2028 and U+2029 too: render.script_json), its hover text as shown and escaped, its SVG."""
    escapes = payload.count(b"<") + payload.count(b">") + payload.count(b"&")
    separators = payload.count("\u2028".encode()) + payload.count("\u2029".encode())
    return len(payload) + 5 * escapes + 3 * separators + len(html.escape(one_line(label)).encode()) + MARK_SVG


def page_bytes(mark: Mark) -> int:
    """About what a mark adds to the page (`mark_bytes`)."""
    return mark_bytes(mark.payload, mark.label)


def fit(marks: list[Mark], budget: int) -> list[Mark]:
    """Summary marks of the coarsest level, each embedding its most telling event with its texts and lists cut to
    the first of CUTS that brings the marks within `budget` page bytes (the shortest when none does); the marks as
    they are when they fit whole. A cut summary says so, and names the event `events show` prints whole."""
    if sum(map(page_bytes, marks)) <= budget:
        return marks
    summaries = [msgspec.json.decode(mark.payload) for mark in marks]
    for chars in CUTS:
        cut = [dataclasses.replace(mark, payload=_cut_summary(summary, chars))
               for mark, summary in zip(marks, summaries, strict=True)]
        if sum(map(page_bytes, cut)) <= budget:
            break
    return cut


def _cut_summary(summary: dict[str, Any], chars: int) -> bytes:
    told, sessions = summary["most_telling"], summary["sessions"]
    shorter = _cut(told, chars)
    if shorter == told and len(sessions) <= chars:
        return _ENCODER.encode(summary)
    said = (f"cut to keep the page small: each text of most_telling to {chars} characters, each list (and "
            f"sessions) to {chars} items")
    event_id = told.get("event_id") if isinstance(told, dict) else None
    if isinstance(event_id, str):
        said += f"; `continuity events show {one_line(event_id)[:64]}` prints it whole"
    return _ENCODER.encode({**summary, "sessions": sessions[:chars], "most_telling": shorter, "cut": said})


def _cut(value: Any, chars: int) -> Any:
    """Decoded JSON with each string longer than `chars` cut to them (an ellipsis marking the cut), each list and
    object to its first `chars` items. A string is cut before a secret the cut would split: the page redacts what
    it shows after this (render.shown_payload), and a token's first characters match no rule."""
    if isinstance(value, str):
        if len(value) <= chars:
            return value
        from events.guard import cut

        return cut(value, chars) + "…"
    if isinstance(value, list):
        return [_cut(item, chars) for item in value[:chars]]
    if isinstance(value, dict):
        return {_cut(key, chars): _cut(item, chars) for key, item in list(value.items())[:chars]}
    return value


@dataclass(slots=True)
class Page:
    """Everything the page shows, and what it was made from."""

    project: str
    since: str | None
    until: str | None
    lanes: list[Lane]
    sessions: list[Session]
    marks: list[Mark]
    #: Marks per category (every marked event in the window, summarized or not).
    counts: dict[str, int]
    #: Events of the project in the window; events read in all; first and last time shown.
    events: int
    read: int
    first_us: int | None
    last_us: int | None
    #: None: one mark per event; else the summary level (`session-hour`, ...).
    summarized: str | None = None
    skipped: list[str] = field(default_factory=list)
    #: What the read says besides the events it skipped (day folders stamped early), each as said.
    warnings: list[str] = field(default_factory=list)


class Builder:
    """Fold events (in log order) into a page: `add` each, then `page()`."""

    def __init__(self, project: str, *, since: str | None = None, until: str | None = None,
                 mark_limit: int = MARK_LIMIT, bytes_limit: int = BYTES_LIMIT,
                 summary_limit: int = SUMMARY_LIMIT, summary_bytes: int = SUMMARY_BYTES) -> None:
        self.project, self.since, self.until = project, since, until
        self._low = clock.parse_iso(since) if since is not None else None
        self._high = clock.parse_iso(until) if until is not None else None
        self.mark_limit, self.bytes_limit, self.summary_limit = mark_limit, bytes_limit, summary_limit
        self.summary_bytes = summary_bytes
        self.lanes: list[Lane] = []
        self._lane_of: dict[tuple[str, str], int] = {}
        self.sessions: list[Session] = []
        self._session_of: dict[tuple[int, str], int] = {}
        self.counts: Counter[str] = Counter()
        self.events = self.read = 0
        self.first_us: int | None = None
        self.last_us: int | None = None
        self.skipped: list[str] = []
        self.warnings: list[str] = []
        self._kept: list[tuple[bytes, str, int, int, int | None, str]] | None = []
        self._kept_bytes = 0
        #: Summary buckets at the finest level that can still be shown (`_level`, an index of LEVELS): a level
        #: whose buckets outnumber `summary_limit` never can again, so its buckets are folded into the next.
        self._level = 0
        self._buckets: dict[tuple[int, int | None, int], _Bucket] = {}
        #: The order in which each session-hour appeared (what its buckets' most telling event depends on).
        self._hours: dict[tuple[int, int | None, int], int] = {}

    def in_window(self, at_us: int) -> bool:
        """Whether an event's time (microseconds) is within --since and --until, both included."""
        return (self._low is None or at_us >= self._low) and (self._high is None or at_us <= self._high)

    def add(self, name: str, raw: bytes, event: Event) -> None:
        """Fold one event (its file name and exact bytes too: the page shows them on click).

        An event whose `created_at` is no time (a foreign writer's) is left out and named in
        `skipped`, as an event that does not decode is: reads fail open.
        """
        self.read += 1
        if event.project != self.project:
            return
        try:
            at = clock.parse_iso(event.created_at)
        except (ValueError, OverflowError, TypeError):
            at = None
        if at is None or not clock.FIRST_US <= at <= clock.LAST_US:  # an offset can carry a time past 9999
            self.skipped.append(f"{name}: created_at {event.created_at[:64]!r} is not a time")
            return
        if not self.in_window(at):
            return
        self.events += 1
        self.first_us = at if self.first_us is None else min(self.first_us, at)
        self.last_us = at if self.last_us is None else max(self.last_us, at)
        lane_key = (event.agent_id or "", event.host or "")
        lane = self._lane_of.get(lane_key)
        if lane is None:
            lane = self._lane_of[lane_key] = len(self.lanes)
            self.lanes.append(Lane(agent=lane_key[0], host=lane_key[1], first_us=at))
        self.lanes[lane].events += 1
        session: int | None = None
        if event.session_id:
            session = self._session_of.get((lane, event.session_id))
            if session is None:
                session = self._session_of[(lane, event.session_id)] = len(self.sessions)
                self.sessions.append(Session(lane=lane, session_id=event.session_id, first_us=at, last_us=at))
            span = self.sessions[session]
            span.first_us, span.last_us, span.events = min(span.first_us, at), max(span.last_us, at), span.events + 1
        category = category_of(event)
        if category is None:
            return
        self.counts[category] += 1
        if self._kept is not None:
            label = label_of(event)
            self._kept.append((raw, label, at, lane, session, category))
            self._kept_bytes += mark_bytes(raw, label)
            if len(self._kept) > self.mark_limit or self._kept_bytes > self.bytes_limit:
                self._kept = None  # summarized from here on: memory stays bounded by the buckets
        hour = at // HOUR_US
        hour_seq = self._hours.setdefault((lane, session, hour), len(self._hours))
        by_session, ratio = LEVELS[self._level][2], _unit(self._level)
        key = (lane, session if by_session else None, hour // ratio)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(lane=lane, session=key[1], unit=key[2], seq=hour_seq,
                                                  first_us=at, last_us=at)
        bucket.add(at, hour_seq, self.read, _RANK[category], session, raw, event)
        while len(self._buckets) > self.summary_limit and self._level < len(LEVELS) - 1:
            self._level += 1
            self._buckets = _folded(self._buckets.values(), self._level - 1, self._level)

    def page(self) -> Page:
        """The page: one mark per event, or summary marks when there are too many (see the module's doc)."""
        summarized: str | None = None
        if self._kept is not None:
            marks = [Mark(at_us=at, lane=lane, session=session, category=category, label=label, payload=raw)
                     for raw, label, at, lane, session, category in self._kept]
        else:
            summarized, marks = self._summaries()
        return Page(project=self.project, since=self.since, until=self.until, lanes=self.lanes,
                    sessions=self.sessions, marks=marks, counts={c: self.counts[c] for c in CATEGORIES
                                                                 if self.counts[c]},
                    events=self.events, read=self.read, first_us=self.first_us, last_us=self.last_us,
                    summarized=summarized, skipped=self.skipped, warnings=self.warnings)

    def _summaries(self) -> tuple[str, list[Mark]]:
        """Summary marks at the finest level within `summary_limit` and `summary_bytes` (the coarsest otherwise,
        its embedded events cut to fit: `fit`)."""
        for index in range(self._level, len(LEVELS)):
            level = LEVELS[index][0]
            buckets = (self._buckets if index == self._level
                       else _folded(self._buckets.values(), self._level, index))
            last = index == len(LEVELS) - 1
            if len(buckets) > self.summary_limit and not last:
                continue
            marks = [self._summary(level, bucket) for bucket in sorted(buckets.values(), key=lambda b: b.seq)]
            if last:  # no coarser level: the embedded events are cut to fit
                marks = fit(marks, self.summary_bytes)
            if last or sum(map(page_bytes, marks)) <= self.summary_bytes:
                marks.sort(key=lambda mark: (mark.at_us, mark.lane))
                return level, marks
        raise AssertionError("unreachable: the last level always answers")

    def _summary(self, level: str, bucket: _Bucket) -> Mark:
        kinds: Counter[str] = Counter()
        for kind in sorted(bucket.kinds, key=bucket.order.__getitem__):
            kinds[kind] = bucket.kinds[kind]
        assert bucket.top is not None
        raw, event = bucket.top
        first, last = bucket.first_us, bucket.last_us
        lane = self.lanes[bucket.lane]
        sessions = sorted({self.sessions[session].session_id for session in bucket.sessions})
        count = sum(kinds.values())
        summary = {"summary": level, "lane": lane.label, "sessions": sessions, "from": clock.iso(first),
                   "to": clock.iso(last), "events": count, "kinds": dict(kinds.most_common()),
                   "most_telling": msgspec.json.decode(raw)}
        label = f"{count} events ({level}): " + ", ".join(f"{n} {k}" for k, n in kinds.most_common(3))
        label = f"{label}. {label_of(event)}"
        if len(label) > LABEL_CHARS:
            label = label[:LABEL_CHARS - 1] + "…"
        return Mark(at_us=(first + last) // 2, lane=bucket.lane, session=bucket.session,
                    category=CATEGORIES[bucket.top_rank], label=label, payload=_ENCODER.encode(summary), count=count,
                    level=level)
