"""Adopting a store the original seed-004 tool wrote: its work history carried into the log, its files kept.

The original kept `.agent/runtime-continuity/` too: `events/<stamp>-event.json` (one flat
file per `log`/`checkpoint`, no hash chain), `archives/RC-*.json`, `state.json`, a README
and two schemas. continuity's `init` (and the first write of `runtime-continuity`) made its
own store in that folder: it replaced the README and the schemas, and the log never read the
flat events, so the project's history stopped at the switch.

Now, when the store is first made (no config.json yet) over such a folder:
- the original's README.md, event.schema.json, archive.schema.json and state.json are
  copied to `local/seed004/` before continuity writes its own;
- each flat event that reads as a seed-004 work log or checkpoint is appended to the log, in
  the original's order, as the same kind of event with the same fields; its note keeps where
  it came from (`{"seed004": {"file", "event_id", "created_at"}}`), the log stamping it now.
  Secret-like text is redacted, never refused (the original stays on disk as it was);
- nothing is deleted or moved: the flat files stay where they are (the log reads only day
  folders), and the original's archives stay in `archives/`, read by `runtime-continuity`.

A flat event already carried (its original id in a note of the log, as after a sync from a
clone that adopted it) is not carried twice. A file that is not such an event is skipped
and named in the result.
"""

from __future__ import annotations

import os
import re
from typing import Any

from continuity.core.store import Store
from events import osfs

#: The original's event file names (`20260723_010203_001-event.json`; any stamp of digits and `_`).
FLAT_EVENT = re.compile(r"^[0-9][0-9_]*-event\.json\Z")
#: The original's files continuity writes its own of, kept under local/ first.
KEPT = ("README.md", "event.schema.json", "archive.schema.json", "state.json")
#: The most a flat event file may hold (the original's events are a few KiB).
FLAT_LIMIT = 1 << 20


class Adopted:
    """What adopting the original store did: events carried, files kept, files skipped (with why)."""

    def __init__(self) -> None:
        self.carried = 0
        self.kept: list[str] = []
        self.skipped: list[str] = []

    def lines(self) -> list[str]:
        """One line per thing done, for `init`'s output (nothing when there was no original store)."""
        lines = []
        if self.carried:
            lines.append(f"carried {self.carried} work event(s) of the original runtime-continuity store into the log")
        if self.kept:
            lines.append(f"kept the original's {', '.join(self.kept)} in local/seed004/")
        lines.extend(f"skipped {item}" for item in self.skipped)
        return lines


def flat_events(store: Store) -> list[str]:
    """The original's flat event files in `events/`, oldest first (their names sort by time)."""
    try:
        return sorted(name for name in os.listdir(store.events_dir) if FLAT_EVENT.match(name))
    except OSError:
        return []


def original_project(store: Store) -> str | None:
    """The project the original's newest flat event names, when it is a valid name of ours (else None)."""
    import json

    from continuity.core.store import check_project_name
    from events.errors import ContinuityError

    for name in reversed(flat_events(store)):
        try:
            value = json.loads(osfs.read_regular(os.path.join(store.events_dir, name), follow=False,
                                                 limit=FLAT_LIMIT))
            return check_project_name(value["project"]) if isinstance(value, dict) else None
        except (OSError, ValueError, KeyError, TypeError, RecursionError, ContinuityError):
            continue
    return None


def keep_original_files(store: Store, result: Adopted) -> None:
    """Copy the original's README, schemas and state.json to local/seed004/ (before init replaces them).

    Only regular files are copied (a link is not followed); a copy that fails stops init
    (WriteFailed), so nothing is replaced unkept.
    """
    from continuity.core.fsio import write_atomic
    from events.errors import WriteFailed

    for name in KEPT:
        path = os.path.join(store.path, name)
        try:
            data = osfs.read_regular(path, follow=False, limit=FLAT_LIMIT)
        except OSError:
            continue
        target = os.path.join(store.local_dir, "seed004", name)
        if os.path.lexists(target):
            continue
        try:
            write_atomic(target, data, within=store.path, make_parents=True)
        except OSError as error:
            raise WriteFailed(f"store not initialized: the original {name} could not be kept in "
                              f"{os.path.dirname(target)} ({error.strerror or error})") from None
        result.kept.append(name)


def carry_events(store: Store, names: list[str], result: Adopted) -> None:
    """Append the flat events not yet carried, in one batch, under a lock (two first writes at once carry
    them once). An event the log refuses (too large, a field it cannot hold) is skipped and named; a write
    that fails is a skipped line too, and the next `init` tries again: adopting never fails a command."""
    from continuity.core.fsio import folder_locked
    from events.errors import ContinuityError

    done = _carried_names(store)
    if all(name in done for name in names):  # every flat event was carried (or skipped) before
        return
    with folder_locked(store.local_dir):  # taken nowhere else; held across the reads and the append
        done = _carried_names(store)
        names = [name for name in names if name not in done]
        if not names:
            return
        try:
            log = store.open_log()
            drafts = _drafts(store, log, names, result)
            if drafts:
                result.carried = len(log.append_many(drafts, redact=True))
        except (OSError, ContinuityError) as error:
            why = getattr(error, "strerror", None) or error
            result.skipped.append(f"the original's events were not carried ({why}); the next write tries again")
            return
        _note_carried(store, done | set(names))


def carry_left(store: Store) -> list[str]:
    """Carry the original's flat events a first write left (a refused batch, a full disk): one listing of
    `events/` and, only when such files are there, the machine's note of what was carried; the skipped lines."""
    names = flat_events(store)
    result = Adopted()
    if names:
        carry_events(store, names, result)
    return [f"skipped {item}" for item in result.skipped]


def _drafts(store: Store, log: Any, names: list[str], result: Adopted) -> list[Any]:
    """The events to append for the flat files `names` not carried yet; each one the log would refuse skipped."""
    from events.errors import ContinuityError, EventUndecodable
    from events.sealing import prepare

    carried = _already_carried(store)
    drafts: list[Any] = []
    for name in names:
        try:
            raw = osfs.read_regular(os.path.join(store.events_dir, name), follow=False, limit=FLAT_LIMIT)
            event = log.codec.decode(raw)
        except (OSError, EventUndecodable) as error:
            result.skipped.append(f"events/{name}: not a seed-004 event ({getattr(error, 'strerror', None) or error})")
            continue
        if event.kind not in ("work.logged", "checkpoint.recorded"):
            result.skipped.append(f"events/{name}: not a seed-004 work log or checkpoint")
            continue
        if event.event_id in carried:
            continue
        origin = {"file": f"events/{name}", "event_id": event.event_id, "created_at": event.created_at}
        draft = _draft(event, {**(event.note or {}), "seed004": origin})
        try:
            prepare(draft, log.codec, redact=True)  # what the batch's append checks, one event at a time
        except ContinuityError as error:
            result.skipped.append(f"events/{name}: the log cannot hold it ({error})")
            continue
        drafts.append(draft)
    return drafts


#: The flat event names carried (or found not to be events) on this machine: `init` reads the log for
#: their ids only when a name is new. Machine-local: another clone reads its log once, and finds them there.
CARRIED = os.path.join("seed004", "carried.txt")


def _carried_names(store: Store) -> set[str]:
    try:
        text = osfs.read_regular(os.path.join(store.local_dir, CARRIED), follow=False, limit=FLAT_LIMIT * 16)
    except OSError:
        return set()
    return set(text.decode("utf-8", "replace").split())


def _note_carried(store: Store, names: set[str]) -> None:
    import contextlib

    from continuity.core.fsio import write_atomic

    with contextlib.suppress(OSError):  # unwritten, the next init reads the log again: slower, never wrong
        write_atomic(os.path.join(store.local_dir, CARRIED), "".join(f"{name}\n" for name in sorted(names)).encode(),
                     within=store.path, make_parents=True)


def _draft(event: Any, note: dict[str, Any]) -> Any:
    import msgspec

    return msgspec.structs.replace(event, event_id="", created_at="", prev=None, note=note)


def _already_carried(store: Store) -> set[str]:
    """The original event ids the log's notes say were carried already."""
    found: set[str] = set()
    for stored in store.open_reader().read():
        origin = (stored.event.note or {}).get("seed004") if stored.event.kind in (
            "work.logged", "checkpoint.recorded") else None
        if isinstance(origin, dict) and isinstance(origin.get("event_id"), str):
            found.add(origin["event_id"])
    return found
