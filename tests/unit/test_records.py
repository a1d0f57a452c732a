"""Hook-path records: events/records.NamedTuple behaves as `typing.NamedTuple`; names and days are ASCII."""

from __future__ import annotations

import pickle
import typing
from pathlib import Path

from events.durable import Head
from events.names import ParsedName, parse_name
from events.records import NamedTuple


class Pair(NamedTuple):
    """A record with a method."""

    left: str
    right: int

    def total(self) -> str:
        return f"{self.left}{self.right}"


class TypedPair(typing.NamedTuple):
    left: str
    right: int


def test_fields_order_unpacking_equality_and_methods_match_typing() -> None:
    mine, theirs = Pair("a", 1), TypedPair("a", 1)
    assert Pair._fields == TypedPair._fields == ("left", "right")
    assert tuple(mine) == tuple(theirs) and mine == ("a", 1) and hash(mine) == hash(("a", 1))
    left, right = mine
    assert (left, right) == ("a", 1) and mine.right == 1 and mine[0] == "a"
    assert mine._replace(right=2) == Pair("a", 2) and isinstance(mine._replace(right=2), Pair)
    assert repr(mine) == "Pair(left='a', right=1)" and mine.total() == "a1"
    assert Pair._make(["b", 3]) == Pair(left="b", right=3) and mine._asdict() == {"left": "a", "right": 1}
    assert Pair.__doc__ == "A record with a method." and Pair.__module__ == __name__
    assert not hasattr(mine, "__dict__")  # slots, as typing's: no per-instance dict


def test_the_hook_path_records_are_tuples_with_their_fields() -> None:
    parsed = parse_name("20261201_061812_257532-d9ef379c-e06ac8d70fdd.json")
    assert parsed == ParsedName("20261201_061812_257532", "d9ef379c", "e06ac8d70fdd")
    assert isinstance(parsed, tuple) and parsed.node == "d9ef379c"
    head = Head("n", "s", 5)
    assert head.at_us == 5 and pickle.loads(pickle.dumps(head)) == head


FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
GOOD = "20261201_061812_257532-d9ef379c-e06ac8d70fdd.json"


def test_names_and_days_take_ascii_digits_only_and_no_trailing_newline(tmp_path: Path) -> None:
    """An event name, an event id and a day folder are ASCII: other scripts' digits (which `\\d` and
    `str.isdigit` accept, and `int` reads) or a trailing newline make them something else, skipped."""
    from continuity.sync.tree import is_day
    from events.filelog import list_days
    from events.names import NODE_PATTERN, parse_event_id

    assert parse_name(GOOD) is not None
    assert parse_name(GOOD.translate(FULLWIDTH)) is None and parse_name(GOOD[:3] + "٣" + GOOD[4:]) is None
    assert parse_name(GOOD + "\n") is None and NODE_PATTERN.match("d9ef379c\n") is None
    assert parse_event_id("RCE-20261201_061812_257532-d9ef379c") is not None
    assert parse_event_id("RCE-20261201_061812_257532-d9ef379c\n") is None
    assert parse_event_id("RCE-20261201_061812_257532-d9ef379c".translate(FULLWIDTH)) is None
    assert is_day("20261201") and not is_day("20261201".translate(FULLWIDTH))
    for day in ("20261201", "20261201".translate(FULLWIDTH), "2026120١"):
        (tmp_path / day).mkdir()
    assert list_days(str(tmp_path)) == ["20261201"]


def test_an_event_following_a_head_stamped_ahead_records_the_writers_clock_read_under_the_lock() -> None:
    """`chain` stamps after the head and, where that runs more than a second past the writer's clock, tells the
    sealer the clock as read under the lock (`wall_us`): not the reading taken before a long wait for the lock."""
    from types import SimpleNamespace

    from events.durable import chain

    seen: list[tuple[int, int | None]] = []

    def seal_one(draft: str, at_us: int, prev: str | None, written_us: int | None) -> SimpleNamespace:
        seen.append((at_us, written_us))
        return SimpleNamespace(raw=draft.encode())

    head = Head("x", "0" * 64, 100_000_000)
    chain(["a", "b"], head, 10_000_000, seal_one, 40_000_000)
    assert seen == [(100_000_001, 40_000_000), (100_000_002, 40_000_000)]
    seen.clear()
    chain(["a"], head, 99_500_000, seal_one)  # half a second behind the head: the stamp is the clock's, nearly
    assert seen == [(100_000_001, None)]
    seen.clear()
    chain(["a"], None, 5_000_000, seal_one)
    assert seen == [(5_000_000, None)]
