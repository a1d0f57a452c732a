"""What a commit on the continuity branch holds, and the union of two of them.

The branch's tree mirrors the store's events folder:

    events/                                  a tree
      <YYYYMMDD>/                            one tree per UTC day, as in the store
        <stamp>-<node>-<hash12>.json         one blob per event, its bytes exactly as on disk

Anything else (other root entries, odd names under `events/`) is carried through merges
but never written into the store; an entry git refuses to write into a tree again (a name
with a slash, a mode that does not match its object) is left out, with a warning. Only the
day trees that differ between two commits are read, so comparing two histories costs what
changed, not the size of the log.
"""

from __future__ import annotations

from collections.abc import Iterable

from continuity.core.errors import EventConflict
from continuity.sync.objects import TREE, Entry, ObjectReader, TreeWriter
from events import names
from events.errors import WriteFailed

EVENTS = "events"
FILE_MODES = ("100644", "100755")
#: The most a commit object on the branch may hold (ours are a few hundred bytes).
COMMIT_LIMIT = 1 << 20


def is_day(name: str) -> bool:
    """True for a day folder's name (`YYYYMMDD`)."""
    return len(name) == 8 and name.isascii() and name.isdigit()


def is_event(day: str, entry: Entry) -> bool:
    """True when a day tree's entry is an event file that belongs in that day."""
    return entry.mode in FILE_MODES and names.parse_name(entry.name) is not None and names.shard_of(entry.name) == day


class Snapshot:
    """A commit's root entries, its day trees (day -> tree id) and any odd entries under events/."""

    def __init__(self, commit: str | None = None, root: list[Entry] | None = None,
                 days: dict[str, str] | None = None, extra: list[Entry] | None = None) -> None:
        self.commit = commit
        self.root = root or []
        self.days = days or {}
        self.extra = extra or []


def read_snapshot(reader: ObjectReader, commit: str | None) -> Snapshot:
    """The snapshot of a commit (an empty one for None)."""
    if commit is None:
        return Snapshot()
    kind, data = reader.read_bounded(commit, COMMIT_LIMIT)
    first = data.split(b"\n", 1)[0].split() if data is not None else []
    if kind != "commit" or len(first) != 2 or first[0] != b"tree":
        raise WriteFailed(f"sync failed: {commit} is not a commit with a tree")
    root = reader.read_tree(first[1].decode())
    days: dict[str, str] = {}
    extra: list[Entry] = []
    events = next((entry for entry in root if entry.name == EVENTS and entry.mode == TREE), None)
    if events is not None:
        for entry in reader.read_tree(events.sha):
            if entry.mode == TREE and is_day(entry.name):
                days[entry.name] = entry.sha
            else:
                extra.append(entry)
    return Snapshot(commit, root, days, extra)


def holds_no_events(snapshot: Snapshot) -> bool:
    """True when a commit's tree holds files but no events folder: a branch of code, not one sync writes."""
    return bool(snapshot.root) and not any(entry.name == EVENTS and entry.mode == TREE for entry in snapshot.root)


def day_entries(reader: ObjectReader, tree: str | None) -> dict[str, Entry]:
    """A day tree's entries by name (none for None)."""
    return {} if tree is None else {entry.name: entry for entry in reader.read_tree(tree)}


class Union:
    """The union of a local and a remote snapshot, and what it takes to reach it."""

    def __init__(self) -> None:
        #: (day, entry) of remote events this store lacks.
        self.incoming: list[tuple[str, Entry]] = []
        #: (day, entry) of local events the remote lacks.
        self.local_only: list[tuple[str, Entry]] = []
        #: day -> its tree id, or the entries of a merged day tree still to write.
        self.days: dict[str, str | list[Entry]] = {}
        #: remote entries that are not event files and are not written into the store.
        self.skipped: list[str] = []


def plan_union(reader: ObjectReader, local: Snapshot, remote: Snapshot) -> Union:
    """Compare two snapshots day by day; raise EventConflict on one name with two contents."""
    union = Union()
    for day in sorted(set(local.days) | set(remote.days)):
        mine, theirs = local.days.get(day), remote.days.get(day)
        if mine == theirs:
            union.days[day] = mine  # type: ignore[assignment]  # equal, and at least one is set
            continue
        local_entries, remote_entries = day_entries(reader, mine), day_entries(reader, theirs)
        _take(union, day, dict(local_entries), remote_entries, "has other bytes on the remote than here (same name, "
              "other content): sync refused and changed nothing; run `continuity verify` on both clones")
        union.local_only.extend((day, local_entries[name]) for name in local_entries.keys() - remote_entries.keys())
        if mine is None or theirs is None:
            union.days[day] = mine or theirs  # type: ignore[assignment]
        else:
            union.days[day] = list({**remote_entries, **local_entries}.values())
    return union


def plan_union_many(reader: ObjectReader, base: Snapshot, others: list[Snapshot]) -> Union:
    """The union of a base snapshot with several others (clones' node refs), day by day.

    `incoming` holds the events the base lacks, each once; one name with two contents, in
    any two of the snapshots, raises EventConflict. A day tree equal to the base's, or seen
    already in another snapshot, is not read again.
    """
    union = Union()
    for day in sorted(set(base.days).union(*(snapshot.days for snapshot in others))):
        mine = base.days.get(day)
        theirs = sorted({snapshot.days[day] for snapshot in others if day in snapshot.days} - {mine})
        if not theirs:
            union.days[day] = mine  # type: ignore[assignment]  # some snapshot has the day, and not another tree
            continue
        merged = day_entries(reader, mine)
        added = False
        for tree in theirs:
            added = _take(union, day, merged, day_entries(reader, tree), "has two contents on the remote (its branch "
                          "and the clones' refs disagree: same name, other content): sync refused and changed "
                          "nothing; run `continuity verify` on the clones") or added
        if not added:  # the others' trees hold nothing new (a day tree may be empty: a hostile ref)
            if mine is not None:
                union.days[day] = mine
        elif mine is None and len(theirs) == 1:
            union.days[day] = theirs[0]
        else:
            union.days[day] = list(merged.values())
    return union


def _take(union: Union, day: str, merged: dict[str, Entry], entries: dict[str, Entry], conflict: str) -> bool:
    """Add a day tree's entries that `merged` lacks (events to `incoming`, others to `skipped`); True if any.

    An event name `merged` holds with other bytes raises EventConflict (`conflict` says where).
    """
    added = False
    for name, entry in entries.items():
        own = merged.get(name)
        if own is None:
            merged[name] = entry
            added = True
            if is_event(day, entry):
                union.incoming.append((day, entry))
            else:
                union.skipped.append(f"{EVENTS}/{day}/{name}")
        elif own.sha != entry.sha and is_event(day, entry):
            raise EventConflict(f"{EVENTS}/{day}/{name} {conflict}")
    return added


def write_root(writer: TreeWriter, snapshots: Iterable[Snapshot], days: dict[str, str | list[Entry]]) -> str:
    """A root tree: the snapshots' root entries (the first one's win), with an events tree of `days`."""
    ordered = list(snapshots)[::-1]
    events: dict[str, Entry] = {}
    root: dict[str, Entry] = {}
    for snapshot in ordered:
        events.update((entry.name, entry) for entry in snapshot.extra)
        root.update((entry.name, entry) for entry in snapshot.root)
    for day, tree in sorted(days.items()):
        sha = tree if isinstance(tree, str) else writer.write(tree)
        events[day] = Entry(TREE, day, sha)
    root[EVENTS] = Entry(TREE, EVENTS, writer.write(events.values()))
    return writer.write(root.values())
