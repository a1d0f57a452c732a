"""Integrity check of a whole log in one streaming pass.

For each file, in replay order: the name parses, the bytes hash to the name, they
decode to a known type, the id matches the name, `prev` names an earlier event whose
bytes still hash to it, and time moves forward along the chain. Two children of one
parent are a fork: written by two nodes it is a merge (reported, fine); by one node it
cannot happen honestly (forged, replayed or a copied store) and is an error.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Callable, Iterable

import msgspec

from events import clock, names
from events.codec import Codec
from events.durable import Unreadable
from events.errors import EventUndecodable, UnknownEventType


class Problem(msgspec.Struct, frozen=True):
    """One broken event: its file name and why."""

    name: str
    reason: str


class Fork(msgspec.Struct, frozen=True):
    """A parent with more than one child: where two histories were merged."""

    parent: str
    children: list[str]


class VerifyReport(msgspec.Struct):
    """What `verify` found."""

    events: int = 0
    nodes: list[str] = msgspec.field(default_factory=list)
    roots: int = 0
    forks: list[Fork] = msgspec.field(default_factory=list)
    problems: list[Problem] = msgspec.field(default_factory=list)
    unknown_types: dict[str, int] = msgspec.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when no event is broken."""
        return not self.problems

    @property
    def first_problem(self) -> Problem | None:
        """The earliest broken event in replay order."""
        return self.problems[0] if self.problems else None


#: How many of the latest events `verify` keeps at hand to find a `prev` among. A `prev` further
#: back (a clone that wrote again after a long time apart, a forgery) sends it through the log a
#: second time, keeping just those parents: its memory is this window and the log's anomalies
#: (forks, dead ends), never the log's length.
WINDOW = 8192


class _Seen:
    __slots__ = ("children", "name", "node", "real_sha", "stamp_us")

    def __init__(self, name: str, node: str, stamp_us: int, real_sha: str) -> None:
        self.name = name
        self.node = node
        self.stamp_us = stamp_us
        self.real_sha = real_sha
        self.children: list[tuple[str, str]] | None = None


def verify_records(read: Callable[[], Iterable[tuple[str, bytes]]], codec: Codec, *,
                   window: int | None = None) -> VerifyReport:
    """Verify the (file name, bytes) pairs `read()` gives in replay order.

    `read` is called a second time only when some `prev` points further back than `window`
    events (default WINDOW): that pass keeps those parents for good, and its report is the answer.
    Events that land between the passes (a sync) may point far back to other parents: then one
    more pass keeps those too, until a pass finds no far parent it was not keeping.
    """
    window = WINDOW if window is None else window
    keep: frozenset[str] = frozenset()
    while True:
        passed = _Pass(codec, window, keep=keep)
        report = passed.run(read())
        if passed.far_parents <= keep:  # a parent kept and still not found is missing
            return report
        keep |= passed.far_parents


class _Pass:
    """One streaming pass: the latest `window` events at hand, and those whose hash is in `keep` for good."""

    def __init__(self, codec: Codec, window: int, keep: frozenset[str]) -> None:
        self.codec = codec
        self.window = window
        self.keep = keep
        self.recent: collections.OrderedDict[str, _Seen] = collections.OrderedDict()
        self.kept: dict[str, _Seen] = {}
        self.far_parents: set[str] = set()  # the hash12 of each `prev` not at hand
        self.forked: list[_Seen] = []  # parents with two children or more, once out of the window
        self.childless: set[str] = set()  # names nothing continued, once out of the window
        self.last_id: str | None = None
        self.report = VerifyReport()

    def run(self, records: Iterable[tuple[str, bytes]]) -> VerifyReport:
        """Check every record, then the forks; the report, problems in replay order."""
        report, nodes = self.report, set()
        for name, raw in records:
            if isinstance(raw, Unreadable):  # a file, or a day folder (`<day>/`), that cannot be read
                report.events += not name.endswith("/")
                report.problems.append(Problem(name, f"cannot be read ({raw.reason})"))
                continue
            report.events += 1
            parsed = names.parse_name(name)
            if parsed is None:
                report.problems.append(Problem(name, "malformed file name"))
                continue
            seen = _Seen(name, parsed.node, clock.parse_stamp(parsed.stamp), hashlib.sha256(raw).hexdigest())
            self._remember(parsed.hash12, seen)
            nodes.add(parsed.node)
            reason = self._check(seen, parsed, raw)
            if reason is not None:
                report.problems.append(Problem(name, reason))
        for seen in [*self.recent.values(), *self.kept.values()]:
            self._retire(seen)
        self._forks()
        report.problems.sort(key=lambda problem: problem.name)
        report.forks.sort(key=lambda fork: fork.parent)
        report.nodes = sorted(nodes)
        return report

    def _remember(self, hash12: str, seen: _Seen) -> None:
        """Keep `seen` findable as a parent: for good when asked to, else while it is among the latest."""
        if hash12 in self.keep:
            self.kept.setdefault(hash12, seen)
        elif hash12 not in self.recent:  # the first file of a hash stays the one found
            self.recent[hash12] = seen
            if len(self.recent) > self.window:
                self._retire(self.recent.popitem(last=False)[1])

    def _retire(self, seen: _Seen) -> None:
        """What the fork check needs of an event no longer at hand: whether it was continued, and by whom."""
        if seen.children is None:
            self.childless.add(seen.name)
        elif len(seen.children) > 1:
            self.forked.append(seen)

    def _check(self, seen: _Seen, parsed: names.ParsedName, raw: bytes) -> str | None:
        """Why this event is broken (None: it is not); links it to its parent when it is whole."""
        name, real_sha = seen.name, seen.real_sha
        if not raw:
            return "unreadable or empty file"
        if real_sha[: names.HASH_CHARS] != parsed.hash12:
            return "edited bytes: content does not match the hash in its name"
        try:
            event = self.codec.decode(raw)
        except UnknownEventType as error:
            unknown = self.report.unknown_types
            unknown[error.kind] = unknown.get(error.kind, 0) + 1
            return f"unknown type: {error.kind}"
        except EventUndecodable as error:
            return f"undecodable: {error}"
        if event.event_id != names.event_id(parsed.stamp, parsed.node):
            return f"renamed or forged: event_id {event.event_id!r} does not match its file name"
        if event.event_id == self.last_id:  # one id is one stamp and node: its files sort side by side
            return f"duplicate event id {event.event_id}"
        self.last_id = event.event_id
        if event.created_at != clock.iso(seen.stamp_us):
            return "renamed or forged: created_at does not match its file name"
        if event.prev is None:
            self.report.roots += 1
            return _written_problem(event)
        wanted = event.prev[: names.HASH_CHARS]
        parent = self.kept.get(wanted) or self.recent.get(wanted)
        if parent is None:
            self.far_parents.add(wanted)
        if parent is None or parent.name >= name:
            return f"missing predecessor: no earlier event has sha256 {event.prev[:12]}…"
        # A parent whose own bytes were edited is reported already; its link still stands.
        parent_intact = parent.real_sha[: names.HASH_CHARS] == wanted
        if parent_intact and parent.real_sha != event.prev:
            return "prev does not match its predecessor's bytes"
        if seen.stamp_us <= parent.stamp_us:
            return "time goes backwards from its predecessor"
        if parent.children is None:
            parent.children = []
        parent.children.append((name, parsed.node))
        return _written_problem(event)

    def _forks(self) -> None:
        """Report every parent with two children; name the same-node sibling nothing continued as forged."""
        for seen in self.forked:
            children = seen.children or []
            self.report.forks.append(Fork(names.id_of_name(seen.name), [names.id_of_name(c) for c, _ in children]))
            by_node: dict[str, list[str]] = {}
            for child, node in children:
                by_node.setdefault(node, []).append(child)
            for siblings in by_node.values():
                if len(siblings) < 2:
                    continue
                dead_ends = [child for child in siblings if child in self.childless]
                suspects = dead_ends if 0 < len(dead_ends) < len(siblings) else siblings[1:]
                for child in suspects:
                    self.report.problems.append(
                        Problem(child, "forged or replayed: a second child of one parent from the same node (or "
                                       "written after that node's clock went back by more than 30 days)")
                    )


def _written_problem(event: object) -> str | None:
    """Why an event's `written_at` is none its writer's clock could have read (None when it is, or absent): not a
    real time, not before `created_at`, or further before it than `clock.WRITTEN_SPAN_US`. The log writes none such;
    the views take `created_at` in its place (`clock.written`), so this is evidence, not harm done."""
    found = getattr(event, "written_at", None)
    if isinstance(found, str) and clock.written(event) != found:
        return "forged: its written_at is no time its writer's clock could have read when the log stamped it"
    return None
