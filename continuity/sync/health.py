"""Sync health: what waits to be pushed, the last successful sync, the last failure.

Kept in `local/sync-state.json` (machine-local, never synced): a successful push records
`pushed_through`, the newest event name of this store's own node that was on the branch
when it was recorded. This node's HLC names only grow, so every own event named after it
waits to be pushed, and finding them lists only the day folders from that day on.

Imported by `continuity status` and by sync; nothing here runs git, so asking costs a
few folder listings and one small file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from continuity.core.fsio import write_atomic
from continuity.core.store import Store
from events import clock, names, osfs
from events.durable import days_if_listed

STATE_NAME = "sync-state.json"
OLD_AFTER_US = 24 * 3600 * 1_000_000  # unsynced events older than a day are worth a warning


class Outcome(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One sync's end: when, with which remote and branch, and what came of it."""

    at: str
    remote: str
    branch: str
    commit: str | None = None
    pushed: bool = False
    error: str | None = None
    exit_code: int | None = None


class SyncState(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The machine-local sync state."""

    pushed_through: str | None = None
    last_success: Outcome | None = None
    last_failure: Outcome | None = None
    #: Per branch, the last successful sync that left this clone's log on its remote (engine.refuse_unrelated):
    #: kept apart from `last_success`, which a sync that only fetches (`--no-push`, `work start`) replaces.
    last_pushed: dict[str, Outcome] = msgspec.field(default_factory=dict)


def state_path(store: Store) -> str:
    """Where the state lives: `local/sync-state.json`."""
    return os.path.join(store.local_dir, STATE_NAME)


#: Written by `work import`, removed by `work reconnect`: the store was brought in offline (transfer schema 1).
OFFLINE_MARKER = "offline-import.json"


def offline_marker(store: Store) -> str:
    """Where the offline marker lives: `local/offline-import.json` (machine-local)."""
    return os.path.join(store.local_dir, OFFLINE_MARKER)


def load(store: Store) -> SyncState | None:
    """The saved state, or None when no sync has run here (or the file is unreadable)."""
    try:
        return msgspec.json.decode(osfs.read_regular(state_path(store)), type=SyncState)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def save(store: Store, state: SyncState) -> None:
    """Write the state (best effort: losing it only costs a wider listing next time)."""
    with contextlib.suppress(OSError, ValueError):
        write_atomic(state_path(store), msgspec.json.encode(state) + b"\n", durable=False, within=store.path)


def newest_own(store: Store, node: str) -> str | None:
    """The newest event name this node wrote, looking back from the newest day folder."""
    for day in reversed(days_if_listed(store.events_dir)):
        own = [name for name in _listing(store, day) if _node(name) == node]
        if own:
            return max(own)
    return None


def waiting(store: Store, node: str, pushed_through: str | None) -> Iterator[str]:
    """This node's event names not yet pushed (all of them when nothing was ever pushed), oldest first.

    A day folder at a time: a clone that never synced has its whole history waiting, and
    its readers only count it and name the oldest (`count_and_first`).
    """
    first_day = names.shard_of(pushed_through) if pushed_through else ""
    for day in days_if_listed(store.events_dir):  # unlistable: nothing counts as waiting
        if day < first_day:
            continue
        yield from sorted(name for name in _listing(store, day)
                          if _node(name) == node and (pushed_through is None or name > pushed_through))


def count_and_first(found: Iterable[str]) -> tuple[int, str | None]:
    """How many names `found` gives, and the first of them (None when none), holding none of the others."""
    count, first = 0, None
    for name in found:
        if first is None:
            first = name
        count += 1
    return count, first


def unsynced_warning(store: Store, now_us: int) -> str | None:
    """A warning when events of this clone older than a day still wait to be pushed (None otherwise).

    Silent for a store that never ran sync: a project without a remote is not behind.
    """
    state = load(store)
    if state is None:
        return None
    node = read_node(store)
    if node is None:
        return None
    count, first = count_and_first(name for name in waiting(store, node, state.pushed_through)
                                   if now_us - clock.parse_stamp(name[:22]) > OLD_AFTER_US)
    if first is None:
        return None
    oldest = clock.iso(clock.parse_stamp(first[:22]))
    return (f"{count} event(s) older than a day are not synced yet (oldest {oldest}); "
            "run `continuity sync` (see `continuity sync --status`)")


def report(store: Store, node: str, remote: str, branch: str) -> dict[str, Any]:
    """`sync --status`: what waits to be pushed, the last success, the last failure."""
    state = load(store) or SyncState()
    count, first = count_and_first(waiting(store, node, state.pushed_through))
    return {
        "ok": True, "action": "sync-status", "remote": remote, "branch": branch,
        "waiting": count,
        "oldest_waiting_at": clock.iso(clock.parse_stamp(first[:22])) if first else None,
        "pushed_through": state.pushed_through,
        "last_success": msgspec.to_builtins(state.last_success),
        "last_failure": msgspec.to_builtins(state.last_failure),
    }


def _listing(store: Store, day: str) -> list[str]:
    try:
        return [name for name in os.listdir(os.path.join(store.events_dir, day))
                if len(name) == names.NAME_LENGTH and names.parse_name(name) is not None]
    except OSError:
        return []


def _node(name: str) -> str:
    return name[23:31]


def read_node(store: Store) -> str | None:
    """This store's node id, without creating one (status never writes); None in a copy of the store or on another
    host until its first write makes one (`durable.own_node`): the events of the node it was copied from are not its
    own."""
    from events.durable import own_node

    return own_node(store.local_dir)
