"""What a commit on the continuity branch holds, and the union of two of them.

The branch's tree mirrors the store's events folder:

    events/                                  a tree
      <YYYYMMDD>/                            one tree per UTC day, as in the store
        <stamp>-<node>-<hash12>.json         one blob per event, its bytes exactly as on disk

The events of a commit are those of its own tree and of every commit before it (the union
along its history). Two layouts write that history (`sync_layout` in config.json):

- `delta` (the default): each commit's tree holds only the events it adds (a merge's tree holds
  none, only a note saying so), so a push costs the server what it adds. A git server checks every push by walking
  the trees of the refs it holds and of the pushed commit's parents: with whole trees that
  walk is the size of the history, at every push.
- `full` (the first releases' layout, for teams with clones on such a release): each commit's
  tree holds every event of its history. Those releases read only the tip's tree.

Reading never depends on the layout: what a commit range adds is the union of its commits'
own trees (plan_commits), compared day tree by day tree with the events already known, so
one clone on `full` and another on `delta` sync together. Each clone keeps the whole
events tree of its branch's tip as a local index (`refs/continuity-index/<branch>`, never
pushed): what recording compares against, and what restore lists.

Anything else (other root entries, odd names under `events/`) is carried in the index but
never written into the store; an entry git refuses to write into a tree again (a name with
a slash, a mode that does not match its object) is left out, with a warning. Only the day
trees that differ are read, so comparing two histories costs what changed, not the size of
the log.
"""

from __future__ import annotations

from collections.abc import Iterable

from continuity.core.errors import EventConflict
from continuity.sync.objects import TREE, Entry, ObjectReader, TreeWriter
from events import names
from events.errors import WriteFailed

EVENTS = "events"
#: A line of every commit message a `delta` writer makes: its tree holds only what it adds.
DELTA_MARK = "Continuity-Layout: delta"
#: The same line of a commit a `full` writer of this release makes (its tree holds the whole history).
FULL_MARK = "Continuity-Layout: full"
#: What a `delta` merge's tree holds (events/README: why it holds no events); not carried into the index.
MERGE_NOTE = "README"
FILE_MODES = ("100644", "100755")
#: The most a commit object on the branch may hold (ours are a few hundred bytes).
COMMIT_LIMIT = 1 << 20


def is_day(name: str) -> bool:
    """True for a day folder's name (`YYYYMMDD`)."""
    return names.is_day(name)


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


def read_snapshot(reader: ObjectReader, commit: str | None, read: set[str] | None = None) -> Snapshot:
    """The snapshot of a commit (an empty one for None).

    `read` collects the events trees seen: a commit whose events tree is among them gets no days
    (a caller that unions many commits reads each tree once).
    """
    if commit is None:
        return Snapshot()
    kind, data = reader.read_bounded(commit, COMMIT_LIMIT)
    if kind == "commit" and data is None:  # a message of megabytes: no commit sync makes, never read whole
        raise WriteFailed(f"sync failed: commit {commit} is over {COMMIT_LIMIT >> 20} MiB, more than a commit of "
                          "continuity's holds: it is not read")
    first = data.split(b"\n", 1)[0].split() if data is not None else []
    if kind != "commit" or len(first) != 2 or first[0] != b"tree":
        raise WriteFailed(f"sync failed: {commit} is not a commit with a tree")
    root = reader.read_tree(first[1].decode())
    days: dict[str, str] = {}
    extra: list[Entry] = []
    events = next((entry for entry in root if entry.name == EVENTS and entry.mode == TREE), None)
    if events is not None and (read is None or events.sha not in read):
        if read is not None:
            read.add(events.sha)
        for entry in reader.read_tree(events.sha):
            if entry.mode == TREE and is_day(entry.name):
                days[entry.name] = entry.sha
            else:
                extra.append(entry)
    return Snapshot(commit, root, days, extra)


def holds_no_events(snapshot: Snapshot) -> bool:
    """True when a commit's tree holds files but no events: a branch of code, not one sync writes. Its tree has no
    events folder, or one of no day folder holding files of its own (a project's `events/handlers.py`: a merge
    sync made on such a branch replaced its tree, and pushed a tip without the code). An events folder of a merge
    note alone (`events/README`) is sync's own."""
    if not snapshot.root:
        return False
    if not any(entry.name == EVENTS and entry.mode == TREE for entry in snapshot.root):
        return True
    return not snapshot.days and any(entry.name != MERGE_NOTE for entry in snapshot.extra)


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
        #: root entries and odd entries under events/ of the commits read (carried in the index).
        self.root: dict[str, Entry] = {}
        self.extra: dict[str, Entry] = {}

    def snapshot(self) -> Snapshot:
        """The union as a snapshot (every day's tree written)."""
        days = {day: tree for day, tree in self.days.items() if isinstance(tree, str)}
        assert len(days) == len(self.days), "day trees not written"
        return Snapshot(None, list(self.root.values()), days, list(self.extra.values()))


def plan_commits(reader: ObjectReader, base: Snapshot, commits: Iterable[str], conflict: str, *,
                 writer: TreeWriter | None = None, incoming: bool = True) -> Union:
    """The union of `base` (the events known, as one tree) with the own trees of `commits`.

    Day by day: a day tree equal to the base's, or read already, is not read again. `incoming`
    lists the events the base lacks (each once), unless not asked (an index being built: a
    whole history must not sit in memory). One name with two contents raises EventConflict
    (`conflict` says where). With a `writer`, each changed day's tree is written as it is
    merged, and `days` holds every day's tree id (the base's days included).
    """
    union = Union()
    trees: dict[str, set[str]] = {}
    read: set[str] = set()
    for commit in commits:
        snapshot = read_snapshot(reader, commit, read)
        for entry in snapshot.root:
            if entry.name != EVENTS:
                union.root.setdefault(entry.name, entry)
        for entry in snapshot.extra:
            if entry.name != MERGE_NOTE:
                union.extra.setdefault(entry.name, entry)
        for day, tree in snapshot.days.items():
            if tree != base.days.get(day):
                trees.setdefault(day, set()).add(tree)
    union.root = {**union.root, **{entry.name: entry for entry in base.root if entry.name != EVENTS}}
    union.extra = {**union.extra, **{entry.name: entry for entry in base.extra}}
    union.days = dict(base.days)
    for day in sorted(trees):
        mine = base.days.get(day)
        merged = day_entries(reader, mine)
        added = False
        for tree in sorted(trees[day]):
            added = _take(union, day, merged, day_entries(reader, tree), conflict, incoming) or added
        if not added:  # the trees hold nothing new (an empty day tree: a hostile ref)
            continue
        if mine is None and len(trees[day]) == 1:
            union.days[day] = next(iter(trees[day]))  # the one tree is the union: nothing to write
        else:
            union.days[day] = writer.write(merged.values()) if writer is not None else list(merged.values())
    return union


class TwoContents(EventConflict):
    """One event name with two contents in a union (`day`, `name`: where; `shas`: the two blobs, the one taken
    first and the one met after)."""

    def __init__(self, message: str, day: str, name: str, shas: tuple[str, str]) -> None:
        super().__init__(message)
        self.day = day
        self.name = name
        self.shas = shas


def _take(union: Union, day: str, merged: dict[str, Entry], entries: dict[str, Entry], conflict: str,
          incoming: bool = True) -> bool:
    """Add a day tree's entries that `merged` lacks (events to `incoming` when asked, others to `skipped`);
    True if any.

    An event name `merged` holds with other bytes raises TwoContents (`conflict` says where).
    """
    added = False
    for name, entry in entries.items():
        own = merged.get(name)
        if own is None:
            merged[name] = entry
            added = True
            if is_event(day, entry):
                if incoming:
                    union.incoming.append((day, entry))
            else:
                union.skipped.append(f"{EVENTS}/{day}/{name}")
        elif own.sha != entry.sha and is_event(day, entry):
            raise TwoContents(f"{EVENTS}/{day}/{name} {conflict}", day, name, (own.sha, entry.sha))
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


def write_index(writer: TreeWriter, index: Snapshot) -> str:
    """The root tree of an index (a snapshot whose every day tree is written): the whole history as one tree."""
    return write_root(writer, [index], dict(index.days))
