"""Integrity check of a whole log in one streaming pass.

For each file, in replay order: the name parses, the bytes hash to the name, they
decode to a known type, the id matches the name, `prev` names an earlier event whose
bytes still hash to it, and time moves forward along the chain. Two children of one
parent are a fork: written by two nodes it is a merge (reported, fine); by one node it
cannot happen honestly (forged, replayed or a copied store) and is an error.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import msgspec

from events import clock, names
from events.codec import Codec
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


class _Seen:
    __slots__ = ("children", "name", "node", "real_sha", "stamp_us")

    def __init__(self, name: str, node: str, stamp_us: int, real_sha: str) -> None:
        self.name = name
        self.node = node
        self.stamp_us = stamp_us
        self.real_sha = real_sha
        self.children: list[tuple[str, str]] | None = None


def verify_records(records: Iterable[tuple[str, bytes]], codec: Codec) -> VerifyReport:
    """Verify (file name, bytes) pairs given in replay order."""
    report = VerifyReport()
    by_hash12: dict[str, _Seen] = {}
    has_child: set[str] = set()
    ids: set[str] = set()
    nodes: set[str] = set()
    problems = report.problems

    for name, raw in records:
        report.events += 1
        parsed = names.parse_name(name)
        if parsed is None:
            problems.append(Problem(name, "malformed file name"))
            continue
        real_sha = hashlib.sha256(raw).hexdigest()
        stamp_us = clock.parse_stamp(parsed.stamp)
        seen = _Seen(name, parsed.node, stamp_us, real_sha)
        by_hash12.setdefault(parsed.hash12, seen)
        nodes.add(parsed.node)
        if not raw:
            problems.append(Problem(name, "unreadable or empty file"))
            continue
        if real_sha[: names.HASH_CHARS] != parsed.hash12:
            problems.append(Problem(name, "edited bytes: content does not match the hash in its name"))
            continue
        try:
            event = codec.decode(raw)
        except UnknownEventType as error:
            report.unknown_types[error.kind] = report.unknown_types.get(error.kind, 0) + 1
            problems.append(Problem(name, f"unknown type: {error.kind}"))
            continue
        except EventUndecodable as error:
            problems.append(Problem(name, f"undecodable: {error}"))
            continue
        expected_id = names.event_id(parsed.stamp, parsed.node)
        if event.event_id != expected_id:
            reason = f"renamed or forged: event_id {event.event_id!r} does not match its file name"
            problems.append(Problem(name, reason))
            continue
        if event.event_id in ids:
            problems.append(Problem(name, f"duplicate event id {event.event_id}"))
            continue
        ids.add(event.event_id)
        if event.created_at != clock.iso(stamp_us):
            problems.append(Problem(name, "renamed or forged: created_at does not match its file name"))
            continue
        if event.prev is None:
            report.roots += 1
            continue
        parent = by_hash12.get(event.prev[: names.HASH_CHARS])
        if parent is None or parent.name >= name:
            problems.append(Problem(name, f"missing predecessor: no earlier event has sha256 {event.prev[:12]}…"))
            continue
        # A parent whose own bytes were edited is reported already; its link still stands.
        parent_intact = parent.real_sha[: names.HASH_CHARS] == event.prev[: names.HASH_CHARS]
        if parent_intact and parent.real_sha != event.prev:
            problems.append(Problem(name, "prev does not match its predecessor's bytes"))
            continue
        if stamp_us <= parent.stamp_us:
            problems.append(Problem(name, "time goes backwards from its predecessor"))
            continue
        has_child.add(parent.name)
        if parent.children is None:
            parent.children = []
        parent.children.append((name, parsed.node))

    for seen in by_hash12.values():
        if seen.children is None or len(seen.children) < 2:
            continue
        report.forks.append(Fork(names.id_of_name(seen.name), [names.id_of_name(c) for c, _ in seen.children]))
        by_node: dict[str, list[str]] = {}
        for child, node in seen.children:
            by_node.setdefault(node, []).append(child)
        for siblings in by_node.values():
            if len(siblings) < 2:
                continue
            dead_ends = [child for child in siblings if child not in has_child]
            suspects = dead_ends if 0 < len(dead_ends) < len(siblings) else siblings[1:]
            for child in suspects:
                problems.append(
                    Problem(child, "forged or replayed: a second child of one parent from the same node")
                )
    problems.sort(key=lambda problem: problem.name)
    report.forks.sort(key=lambda fork: fork.parent)
    report.nodes = sorted(nodes)
    return report
