"""Small helpers the folds share: bounded lists and maps, so state stays flat in size."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import msgspec

from events import clock

if TYPE_CHECKING:
    from collections.abc import Callable

    from events.base import Event

T = TypeVar("T")


def written_apart(event: Event) -> str | msgspec.UnsetType:
    """An event's writer's clock (`clock.written`) where it differs from its `created_at`, else UNSET: an entry
    keeps it in a field left out of the saved model and of every view's JSON when unset, so ages count from it
    and nothing changes for an event whose log time is its writer's."""
    found = clock.written(event)
    return msgspec.UNSET if found == event.created_at else found


def append_bounded(items: list[T], item: T, limit: int) -> None:
    """Append, dropping the oldest items past `limit`."""
    items.append(item)
    if len(items) > limit:
        del items[: len(items) - limit]


def append_unique(items: list[str], new: tuple[str, ...] | list[str], limit: int) -> None:
    """Append the new items not already present (an item stated again keeps its place), keeping at most `limit`."""
    for item in new:
        if item not in items:
            items.append(item)
    if len(items) > limit:
        del items[: len(items) - limit]


def merge_unique(items: list[str], new: tuple[str, ...] | list[str], limit: int) -> None:
    """Add the new items, each as the newest (an item stated again moves to the end), keeping at most `limit`."""
    for item in new:
        if item in items:
            items.remove(item)
        items.append(item)
    if len(items) > limit:
        del items[: len(items) - limit]


def touch_bounded(mapping: dict[str, T], key: str, value: T, limit: int) -> int:
    """Set `mapping[key]` as the newest entry; forget the least recently touched past `limit`. How many went."""
    mapping.pop(key, None)
    mapping[key] = value
    forgotten = 0
    while len(mapping) > limit:
        del mapping[next(iter(mapping))]
        forgotten += 1
    return forgotten


def touch_keeping(mapping: dict[str, T], key: str, value: T, limit: int, keep: Callable[[T], bool],
                  hard: int | None = None) -> None:
    """`touch_bounded`, forgetting past `limit` only entries `keep` lets go of (the least recently touched first,
    never the one just touched): state someone still depends on (a role held under a lease, an unread message,
    an open run) is not forgotten for being old. When every other entry is kept, the mapping holds more than
    `limit`; past `hard` (when given: for what may be left open for good, a run whose agent died) the least
    recently touched go whatever they hold. Entries are let go of only when a new key comes in (a touch of a
    known one changes no size): a mapping of kept entries is not scanned at every event."""
    known = key in mapping
    mapping.pop(key, None)
    mapping[key] = value
    excess = len(mapping) - limit
    if known or excess <= 0:
        return
    going = []
    for old, entry in mapping.items():
        if old != key and not keep(entry):
            going.append(old)
            if len(going) == excess:
                break
    for old in going:
        del mapping[old]
    while hard is not None and len(mapping) > hard:
        del mapping[next(iter(mapping))]


def touch_list(items: list[str], item: str, limit: int) -> None:
    """Move `item` to the end (newest), keeping at most `limit` items."""
    if items and items[-1] == item:
        return
    if item in items:
        items.remove(item)
    items.append(item)
    if len(items) > limit:
        del items[: len(items) - limit]
