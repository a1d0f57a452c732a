"""`continuity sync`: record local events on the branch, fetch, union, merge, push, catch up.

1. Record: local event files the branch lacks (its index: tree.py) become a commit on
   `refs/heads/<branch>` (blobs by `hash-object`, or one pack by `fast-import` when there
   are many; only the changed day trees by `mktree`; `commit-tree`; `update-ref` with the
   expected old value). Under `delta` the commit's tree holds those events only, in parts
   of RECORD_CHUNK.
2. Fetch: list the remote's branch and the clones' own refs of that branch
   (`refs/continuity/<branch>/nodes/<node>`, one per clone; other names there are not
   ours) with `git ls-remote`, then fetch, in one `git fetch`, those that differ from their
   copies here: the branch into a tracking ref (`refs/remotes/<remote>/<branch>`), node
   refs into `refs/continuity-nodes/<remote>/<branch>/` (fetch_remote).
3. Union: read the own trees of the commits the branch here lacks, day tree by day tree
   against the index: the branch first, then the node refs that moved since this clone
   last took them in (`local/sync-nodes.json`) and that the union does not hold yet. One
   name with two contents refuses the sync before anything changes. Remote events this
   store lacks are checked against the hash in their names, made durable and linked into
   the events folder.
4. Merge: a commit whose parents are the branch and the remote's branch (its tree holds
   nothing new under `delta`, the union under `full`; or a fast-forward); then, for the
   node refs, one more commit whose parents are that one and each node commit taken in,
   so the branch holds every clone's history.
5. Push without force, in one `git push`, to this clone's node ref and to the shared
   branch. The node ref is this clone's alone, so it is never contended: once it lands,
   the events are on the remote, whatever happens to the branch. The branch is shared:
   when another clone moved it first, the sync still succeeds and the branch catches up
   at a later sync (any clone's), which takes in the node refs. A refused node ref (a
   declining hook, a copy of this store pushing the same node) goes back to 2 after an
   exponential backoff with full jitter, until `sync_retry_seconds` (config.json, default
   60) run out: then SyncGaveUp (exit 10), the events safe locally. A transport failure is
   exit 8.
6. Projections catch up: events that arrived "in the past" trigger their rebuild rule.

Each sync's outcome is kept in `local/sync-state.json` (health.py) for `sync --status`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

import msgspec

from continuity.core.errors import EventConflict, RemoteUnreachable, SyncGaveUp, UsageError
from continuity.core.store import Store
from continuity.sync import files, health
from continuity.sync.credentials import guard_remote, mask_url
from continuity.sync.git import CONTENTION_SIGNS, NETWORK_TIMEOUT, Repo, node_refs
from continuity.sync.objects import Entry, ObjectReader, TreeWriter
from continuity.sync.settings import branch_of, layout_of, located, located_key, remote_of, shadowed_remote, shadowing
from continuity.sync.tree import (
    COMMIT_LIMIT,
    DELTA_MARK,
    EVENTS,
    FULL_MARK,
    MERGE_NOTE,
    Snapshot,
    TwoContents,
    Union,
    day_entries,
    holds_no_events,
    is_event,
    plan_commits,
    read_snapshot,
    write_index,
    write_root,
)
from events import names
from events.durable import READ_LIMIT, forget_lost_head, list_days
from events.errors import ContinuityError, WriteFailed

if TYPE_CHECKING:
    from continuity.readside.views import Models

RETRY_SECONDS = 60.0  # default total time for retrying refused pushes (`sync_retry_seconds`)
MAX_TIMEOUT = 86400.0  # the longest `sync_timeout` taken: a day (a bigger one overflows the clock's waits)
BACKOFF_BASE = 0.05  # seconds; attempt n waits uniform(0, min(BACKOFF_CAP, BASE * 2**n))
BACKOFF_CAP = 8.0
RESTORE_BATCH = 20_000  # events staged and linked at a time by restore: memory does not grow with history
PROGRESS_FROM = 1000  # events; smaller transfers are quiet
RECORD_CHUNK = 10_000  # events per commit when `delta` records many: what one push's parent makes the server walk
INDEX_CHUNK = 4096  # commits united at a time when an index is built from the history
FRONTIER_MAX = 64  # whole-tree commits checked for a shortcut when an index is built from history
INDEX_REFS = "refs/continuity-index"  # this clone's index of each branch (never pushed)
REMOTE_CONFLICT = ("has other bytes on the remote than here (same name, other content): sync refused and changed "
                   "nothing; run `continuity verify` on both clones")
NODES_CONFLICT = ("has two contents on the remote (its branch and the clones' refs disagree: same name, other "
                  "content): sync refused and changed nothing; run `continuity verify` on the clones")
MERGE_TEXT = (b"This commit adds no events. Under continuity sync's delta layout each commit's tree holds the events "
             b"it adds; the events of a commit are those of its whole history.\n")
HISTORY_CONFLICT = ("has two contents in the branch's history (same name, other content): sync refused and changed "
                    "nothing; run `continuity verify` on the clones")

Progress = Callable[[str], None]


class Landing(Protocol):
    """Told of each batch `restore` brings into the store (clone-store folds the read models batch by batch)."""

    #: Bytes of a batch's events kept in memory for `landed` (the rest are read back from their files).
    keep: int

    def landing(self) -> None:
        """Called before a batch's events are moved into the store."""

    def landed(self, held: dict[str, dict[str, bytes]]) -> None:
        """Called once a batch's events are in the store: the bytes kept of them, day -> name -> bytes."""


class SyncReport(msgspec.Struct, kw_only=True):
    """What a sync did."""

    ok: bool = True
    branch: str
    remote: str
    commit: str | None = None
    remote_commit: str | None = None
    added_local: int = 0
    added_remote: int = 0
    #: Events the local branch gained from another store of this repository (each git worktree has its
    #: own store, and they share the branch), written into this one.
    added_branch: int = 0
    #: Events of the branch that the store lacked (a file deleted by hand), written back.
    written_back: int = 0
    pushed: bool = False
    branch_updated: bool = False
    #: Why the remote refused the shared branch while it took this clone's ref (a hook that declines it, a
    #: non-bare remote with it checked out); None when it moved, or moved meanwhile (a later sync catches up).
    branch_refused: str | None = None
    merged: bool = False
    forks: int = 0
    attempts: int = 0
    projections_rebuilt: bool = False
    events_folded: int = 0
    warnings: list[str] = msgspec.field(default_factory=list)


def given_remote(repo: Repo, remote: str | None) -> str | None:
    """A remote given on the command line as a relative path to a local repository, as the absolute path it names
    from the folder the command runs in (git runs in the work tree's root, and config.json keeps it for commands
    run from any folder: `clone-store r.git` recorded "r.git", read later from elsewhere); anything else as is."""
    if remote is None or os.path.isabs(remote) or remote in repo.remotes() or not os.path.isdir(remote):
        return remote
    return os.path.abspath(remote)


def _remote_key(repo: Repo, remote: str) -> tuple[str, bool]:
    """(the name refs use for a remote: its own name, or a digest of a URL; True when it is a named remote)."""
    if remote in repo.remotes():
        return remote, True
    if located(remote, repo.root):
        return located_key(remote), False
    shown = mask_url(remote)
    raise UsageError(f"no git remote named {shown!r} (add one with `git remote add {shown} URL`, "
                     "or pass --remote NAME)")


def tracking_ref(repo: Repo, remote: str, branch: str) -> str:
    """Where the remote's branch is fetched to: `refs/remotes/<remote>/<branch>`, or a private ref for a URL."""
    key, named = _remote_key(repo, remote)
    return f"refs/remotes/{key}/{branch}" if named else f"refs/continuity/{key}/{branch}"


def nodes_folder(repo: Repo, remote: str, branch: str) -> str:
    """Where the remote's node refs of a branch are fetched to: `refs/continuity-nodes/<remote>/<branch>`."""
    return f"refs/continuity-nodes/{_remote_key(repo, remote)[0]}/{branch}"


def fetch_remote(repo: Repo, remote: str, branch: str, tracking: str, nodes: str,
                 warnings: list[str]) -> tuple[str | None, dict[str, str]]:
    """Bring in what moved on the remote; (its branch's commit or None, node -> commit of its node refs).

    The remote's refs are listed first (`git ls-remote`), and only the branch and the node
    refs that differ from their copies here are fetched, in one `git fetch`. A node ref the
    remote cannot serve (it names a missing object: git refuses the whole fetch then, so the
    refs are fetched again one by one) or that names no commit is skipped with a warning: one
    clone's broken ref must not stop the team's syncs. The branch failing is exit 8.
    """
    listed_tip, listed = repo.list_remote(remote, branch)
    here = repo.refs_under(nodes)
    # in a shallow clone the branch may be here at the clone's depth (`--no-single-branch`): fetched to deepen it
    moved = listed_tip is not None and (listed_tip != repo.rev(tracking) or repo.shallow)
    specs = [f"+refs/heads/{branch}:{tracking}"] if moved else []
    specs += [f"+{node_refs(branch)}/{node}:{nodes}/{node}" for node in sorted(listed)
              if here.get(node) != listed[node]]
    shown = mask_url(remote)
    if repo.fetch_refs(remote, specs) is not None:
        for spec in specs:
            failed = repo.fetch_refs(remote, [spec])
            if failed is None:
                continue
            if spec.startswith("+refs/heads/"):
                raise repo.unreachable(remote, branch, failed)
            node = spec.rpartition("/")[2]
            del listed[node]
            why = ("a hook of this repository declined its copy here (its reference-transaction hook must let "
                   "continuity's refs move)" if b"aborted by hook" in failed else "the remote cannot serve it")
            _warn_once(warnings, f"skipped {node_refs(branch)}/{node} on {shown}: {why} ({repo.message(failed)})")
    here = repo.refs_under(nodes)
    tips = {node: here[node] for node in listed if node in here}
    kinds = repo.object_types(sorted(set(tips.values())))
    for node, commit in list(tips.items()):
        if kinds[commit] != "commit":
            del tips[node]
            _warn_once(warnings, f"skipped {node_refs(branch)}/{node} on {shown}: a {kinds[commit]}, not a commit")
    tip = repo.rev(tracking) if listed_tip is not None else None
    if listed_tip is not None and tip is None:  # a blob or a tree: no sync can move it on (nor read it)
        _warn_once(warnings, f"{no_commit_branch(branch, shown)}: it is left as it is, and this clone's ref carries "
                             "the events (remove the branch on the remote and the next sync makes it again)")
    return tip, tips


def no_commit_branch(branch: str, shown: str) -> str:
    """The start of the warning about a remote branch that names no commit."""
    return f"the shared branch refs/heads/{branch} on {shown} names no commit"


def _warn_once(warnings: list[str], warning: str) -> None:
    if warning not in warnings:
        warnings.append(warning)


class Syncer:
    """One sync of one store with one remote, holding its git processes."""

    def __init__(self, store: Store, repo: Repo, branch: str, remote: str, progress: Progress | None) -> None:
        self.store = store
        self.repo = repo
        self.branch = branch
        self.ref = f"refs/heads/{branch}"
        self.remote = remote
        self.shown = mask_url(remote)  # how the remote appears in reports and messages
        self._tracking: str | None = None  # asked of git when first needed (export never needs it)
        self._nodes: str | None = None
        self.node = store.node()
        self.node_ref = f"{node_refs(branch)}/{self.node}"  # this clone's own ref on the remote
        self.progress = progress
        self.reader = ObjectReader(repo)
        self.report = SyncReport(branch=branch, remote=self.shown)
        self.tip = repo.rev(self.ref)
        self.marks: dict[str, int] = {}
        self.retry_seconds = retry_seconds_of(store)
        self.recorded_through: str | None = None  # this node's newest event on the branch
        self.restored = False
        self.in_sync = False  # the remote's branch holds the branch's tip
        self.allow_unrelated = False  # unite with a remote branch that shares no history (refuse_unrelated)
        self.remote_nodes: set[str] = set()  # the clones with a node ref on the remote, as last fetched
        state = health.load(store)
        last = None
        if state is not None:  # (a record from before `last_pushed` was kept: its last success, if it pushed)
            last = state.last_pushed.get(branch) or state.last_success
        #: The last successful sync of this branch that left the remote holding this clone's events (its remote as
        #: shown, and the branch's commit then), else None: a sync that exchanged nothing, one that only fetched,
        #: one of another `sync_branch`, or none (local/sync-state.json is this clone's only record of it).
        self.synced_with: tuple[str, str] | None = (
            (last.remote, last.commit) if last is not None and last.branch == branch and last.commit and last.pushed
            else None)
        self.delta = layout_of(store) == "delta"
        self.index_ref = f"{INDEX_REFS}/{branch}"
        self.indexes: dict[str, Snapshot] = {}  # commit -> every event of its history, as one tree
        self._note: Snapshot | None = None
        self.delivered = False  # the remote holds every event of the branch's tip (on its branch or a node ref)
        self.landing: Landing | None = None  # told of each batch restore brings in

    @property
    def tracking(self) -> str:
        """Where the remote's branch is fetched to (tracking_ref)."""
        if self._tracking is None:
            self._tracking = tracking_ref(self.repo, self.remote, self.branch)
        return self._tracking

    @property
    def nodes(self) -> str:
        """Where the remote's node refs are fetched to (nodes_folder)."""
        if self._nodes is None:
            self._nodes = nodes_folder(self.repo, self.remote, self.branch)
        return self._nodes

    def close(self) -> None:
        """Keep the index of the branch's tip, and end the git processes."""
        try:
            self._save_index()
        finally:
            self.reader.close()

    def _fresh_reader(self) -> None:
        """A new cat-file after a fetch: a running git may not look for packs that arrived after it started."""
        self.reader.close()
        self.reader = ObjectReader(self.repo)

    @contextlib.contextmanager
    def _writer(self) -> Iterator[TreeWriter]:
        writer = TreeWriter(self.repo)  # started after the objects it names exist (mktree does not rescan packs)
        try:
            yield writer
        finally:
            writer.close()
            if writer.dropped:
                _warn_once(self.report.warnings, f"left out of the branch {len(writer.dropped)} entries git cannot "
                                                 f"write into a tree (first: {writer.dropped[0]!r}): no events; "
                                                 "only a hand-made tree holds such entries")

    def _message(self, text: str) -> str:
        return f"{text}\n\n{DELTA_MARK if self.delta else FULL_MARK}"

    def _commit(self, index: Snapshot, parents: list[str], message: str) -> str:
        """A commit of `parents` whose history holds the events of `index`: its tree is empty under `delta`
        (it adds nothing), the whole index under `full`."""
        with self._writer() as writer:
            tree = write_root(writer, [self._merge_note()], {}) if self.delta else write_index(writer, index)
        commit = self.repo.commit_tree(tree, parents, self._message(message))
        self.indexes[commit] = index
        return commit

    def _merge_note(self) -> Snapshot:
        """What a `delta` merge's tree holds: `events/README` saying why it holds no events (not an empty tree:
        an events folder tells any release it is a continuity commit, and the empty tree is an object a
        hand-made tree may name as a file, which a server then cannot send)."""
        if self._note is None:
            blob = self.repo.run("hash-object", "-w", "--stdin", input=MERGE_TEXT).decode().strip()
            self._note = Snapshot(extra=[Entry("100644", MERGE_NOTE, blob)])
        return self._note

    def _commits(self, heads: list[str], bases: list[str]) -> list[str]:
        """The commits of `heads` not in `bases`' history, newest first."""
        return [line[0] for line in self.repo.rev_list(heads, bases)]

    def _plan(self, base: Snapshot, commits: list[str], conflict: str, *, incoming: bool = True) -> Union:
        """plan_commits with every changed day tree written."""
        with self._writer() as writer:
            return plan_commits(self.reader, base, commits, conflict, writer=writer, incoming=incoming)

    # -- the index: every event of a commit's history, as one tree ------------------------------
    def index_of(self, commit: str | None) -> Snapshot:
        """The events of `commit`'s whole history (its own tree and its ancestors'), as one snapshot.

        Kept at INDEX_REFS for the branch's tip (a commit naming the tip it indexes): a sync reads the
        commits new since then. Built from the history when that index is missing or on another line.
        """
        if commit is None:
            return Snapshot()
        known = self.indexes.get(commit)
        if known is not None:
            return known
        index = None
        with contextlib.suppress(WriteFailed):  # a lost or damaged index is built again
            saved, of = self._saved_index()
            if saved is not None and of == commit:
                index = read_snapshot(self.reader, saved)
            elif saved is not None and of is not None and self.repo.is_ancestor(of, commit):
                index = self._plan(read_snapshot(self.reader, saved), self._commits([commit], [of]),
                                   HISTORY_CONFLICT, incoming=False).snapshot()
        if index is None:
            index = self._built_index(commit)
        self.indexes[commit] = index
        return index

    def _saved_index(self) -> tuple[str | None, str | None]:
        """(the index commit, the commit it indexes), or (None, None)."""
        saved = self.repo.rev(self.index_ref)
        if saved is None:
            return None, None
        kind, data = self.reader.read_bounded(saved, COMMIT_LIMIT)
        words = data.partition(b"\n\n")[2].split() if kind == "commit" and data is not None else []
        of = words[-1].decode("ascii", "replace") if words else ""
        is_oid = len(of) == 2 * self.repo.oid_bytes and not of.strip("0123456789abcdef")
        return (saved, of) if is_oid else (None, None)

    def _built_index(self, commit: str) -> Snapshot:
        """The index of `commit` read from its history.

        A history with no `delta` commit, none of whose commits drops an event file, was written whole: its
        tip's tree is the index. Otherwise the own trees of every commit are united, INDEX_CHUNK commits at a
        time (memory stays that of one chunk and one day), except the history of whole-tree commits below
        the `delta` ones (a first release's history before a clone moved to `delta`), whose trees are read
        instead.
        """
        if not self.repo.rev_list([commit], grep=DELTA_MARK, limit=1) and self._keeps_every_event(commit):
            return read_snapshot(self.reader, commit)
        whole: list[str] = []
        if self.repo.rev_list([commit], grep=DELTA_MARK, invert=True, limit=1):  # layouts mixed
            marked = self.repo.rev_list([commit], grep=DELTA_MARK, parents=True)
            delta = {line[0] for line in marked}
            frontier = sorted({parent for line in marked for parent in line[1:]} - delta)
            whole = [] if len(frontier) > FRONTIER_MAX else [
                parent for parent in frontier
                if not self.repo.rev_list([parent], grep=DELTA_MARK, limit=1) and self._keeps_every_event(parent)]
        index = Snapshot()
        done = 0
        commits = itertools.chain(whole, self.repo.each_commit([commit], whole))
        while chunk := list(itertools.islice(commits, INDEX_CHUNK)):
            index = self._plan(index, chunk, HISTORY_CONFLICT, incoming=False).snapshot()
            done += len(chunk)
            self._say(done, f"read the history of branch {self.branch}: {done:,} commits")
        return index

    def _keeps_every_event(self, commit: str) -> bool:
        """True when no commit of `commit`'s history drops an event file its parent had: with no `delta` commit
        in it either, its tree then holds every event of its history (a hand-made commit may drop some)."""
        result = self.repo.try_run("log", "-m", "-1", "--format=%H", "--diff-filter=D", commit, "--", f"{EVENTS}/")
        return result.returncode == 0 and not result.stdout.strip()  # git failing: the trees are read one by one

    def _warn_first_release(self, heads: list[str], bases: list[str]) -> None:
        """Warn, under `delta`, when commits an earlier release wrote (no `Continuity-Layout` line) come in: such
        a release reads only the tip's tree, so its clone misses the events of `delta` commits."""
        if not self.delta:
            return
        listed = self.repo.try_run("log", "--format=%x01%s%x02%B", *heads, "--not", *bases).stdout
        old = [record for record in listed.decode(errors="replace").split("\x01")[1:]
               if record.startswith("continuity: ") and "Continuity-Layout:" not in record.partition("\x02")[2]]
        if old:
            _warn_once(self.report.warnings, f"{len(old)} commits written by an earlier release of continuity came "
                                             f"from {self.shown}: such a release reads only the branch tip's tree "
                                             "and misses the events of this release's commits; upgrade its clones, "
                                             "or set sync_layout to \"full\" on every clone until then "
                                             "(docs/sync.md)")

    def _save_index(self) -> None:
        """Keep the tip's index for the next sync (a cache: failing to keep it costs that sync a rebuild)."""
        index = self.indexes.get(self.tip) if self.tip is not None else None
        if index is None:
            return
        with contextlib.suppress(WriteFailed, OSError):
            if self._saved_index()[1] == self.tip:
                return
            with self._writer() as writer:
                tree = write_index(writer, index)
            commit = self.repo.commit_tree(tree, [], f"continuity: index of {self.tip}")
            self.repo.try_run("update-ref", "-m", "continuity index", self.index_ref, commit)

    def _say(self, count: int, message: str) -> None:
        if self.progress is not None and count >= PROGRESS_FROM:
            self.progress(message)

    def _move(self, commit: str) -> None:
        self.repo.update_ref(self.ref, commit, self.tip)
        self.tip = commit

    def refuse_foreign(self, commit: str | None, where: str, related: str | None = None) -> None:
        """refuse_foreign with this sync's repository, reader and branch."""
        refuse_foreign(self.repo, self.reader, self.branch, commit, where, related)

    def check_branches(self, *, ask_remote: bool = False) -> None:
        """Refuse a branch of code before anything moves (refuse_foreign): the branch here (unless it shares
        history with the commit this store last left it at) and its copy of the remote's. The remote's own is
        checked when fetched (_union_branch, reconnect), under undo_new_branch. A branch named like a remote's
        tracking ref (`origin/main`) is refused first: git would read it for the user's `origin/main`.

        `ask_remote` (a sync, which goes to the remote next anyway): a copy of code that the remote's branch no
        longer is (the copy a push of code left here, the remote repaired since) is left to the fetch, which
        replaces it and checks what it brings; refusing it would refuse every sync until someone fetched."""
        shadowed = shadowed_remote(self.branch, self.repo.remotes())
        if shadowed is not None:
            raise UsageError(shadowing(self.branch, shadowed))
        last, _ = files.saved_marks(self.store, self.ref)
        self.refuse_foreign(self.tip, "here", last if last is not None and self.repo.rev(last) else None)
        copy = None
        with contextlib.suppress(UsageError):  # a remote git does not know: there is no copy of its branch here
            copy = self.repo.rev(self.tracking)
        try:
            self.refuse_foreign(copy, f"of {self.shown}", self.tip)
        except UsageError:
            if not ask_remote or self.repo.list_remote(self.remote, self.branch)[0] == copy:
                raise

    @contextlib.contextmanager
    def undo_new_branch(self) -> Iterator[None]:
        """The branch here, when this run made it (recording the first local events), is removed again on a
        refusal: a refused sync leaves no branch of that name behind (the events stay in the store)."""
        made = self.tip is None
        try:
            yield
        except UsageError:
            if made and self.tip is not None:
                self.repo.try_run("update-ref", "-d", self.ref, self.tip)
                self.tip = None
            raise

    def adopt(self) -> int:
        """Write the events the local branch gained since this store last synced; how many.

        Every store of a repository shares its branches: each git worktree has a store of its
        own, and another one's sync moves the branch here too. The commit this store last left
        the branch at is remembered (the marks file); the days that differ between it and the
        tip are compared, and what the store lacks is brought in. With no such commit known
        (a store that never synced in this repository, or a lost file), or one git does not
        have, every event of the branch that the store lacks is written, once.
        """
        if self.tip is None:
            return 0
        last, _ = files.saved_marks(self.store, self.ref)
        if last == self.tip:
            return 0
        if last is None or self.repo.rev(last) is None:
            return self.restore(self.tip)
        # the own trees of the commits since: under `full` each holds the whole history, so what `last`'s
        # tree held is left out (the store holds it); under `delta` they hold only what they add
        union = plan_commits(self.reader, read_snapshot(self.reader, last), self._commits([self.tip], [last]),
                             HISTORY_CONFLICT)
        # a whole-tree commit since (a `full` teammate's) lists events the store holds: not staged again
        lacking = [(day, entry) for day, entry in union.incoming
                   if not os.path.lexists(os.path.join(self.store.events_dir, day, entry.name))]
        return self._bring_in(lacking, [])

    def holds_unrecorded(self, commit: str) -> bool:
        """Whether `commit`'s history holds every local event the branch lacks (by name, which spells the
        content's hash): an import killed after it wrote a transfer's events and before it moved the branch
        left the store so, and recording them would fork the branch from the transfer that carries them."""
        index = self.index_of(self.tip)
        missing, _ = files.unrecorded(self.store, lambda day: set(day_entries(self.reader, index.days.get(day))),
                                      files.load_marks(self.store, self.ref, self.tip))
        if not missing:
            return True
        target = self.index_of(commit)
        return all(set(day_names) <= day_entries(self.reader, target.days.get(day)).keys()
                   for day, day_names in missing.items())

    def record(self, *, write_back: bool = True) -> int:
        """Commit the local events the branch lacks; how many. Write back those the branch holds and the store
        lost (`_write_back`)."""
        marks = files.load_marks(self.store, self.ref, self.tip)
        if not marks:  # every day folder is listed below anyway; with marks, the first release's are long gone
            self._adopt_first_release_folders()
        index = self.index_of(self.tip)
        # listed before the record step lists: everything up to it is on the branch afterwards
        self.recorded_through = health.newest_own(self.store, self.store.node())

        def on_branch(day: str) -> set[str]:
            return set(day_entries(self.reader, index.days.get(day)))

        wrong_day: list[str] = []
        lost: dict[str, set[str]] = {}
        missing, self.marks = files.unrecorded(self.store, on_branch, marks, wrong_day, lost)
        if write_back:  # else a restore follows, which streams them in
            self._write_back(index, lost, {path.rpartition("/")[2] for path in wrong_day})
        if wrong_day:
            _warn_once(self.report.warnings, (
                f"{len(wrong_day)} event file(s) filed under another day than their name's are not carried (first: "
                f"{wrong_day[0]}); `continuity verify` names them: move each into its own day folder"))
        count = sum(len(day_names) for day_names in missing.values())
        if not count:
            return 0
        self._say(count, f"recording {count} local events on branch {self.branch}")
        shas = iter(self.repo.hash_files(files.check_local(self.store, missing)))
        added = {day: [Entry("100644", name, next(shas)) for name in day_names] for day, day_names in missing.items()}
        with self._writer() as writer:
            days = dict(index.days)
            for day, entries in added.items():
                merged = day_entries(self.reader, index.days.get(day))
                merged.update((entry.name, entry) for entry in entries)
                days[day] = writer.write(merged.values())
            after = Snapshot(None, index.root, days, index.extra)
            if self.delta:  # parts of RECORD_CHUNK events: a push's parent never holds more
                trees = [write_root(writer, [], part) for part in _parts(added, RECORD_CHUNK)]
            else:
                trees = [write_index(writer, after)]
        node = self.store.node()
        commit = self.tip
        for number, tree in enumerate(trees, 1):
            part = f" (part {number} of {len(trees)})" if len(trees) > 1 else ""
            commit = self.repo.commit_tree(tree, [commit] if commit else [],
                                           self._message(f"continuity: record {count} events from node {node}{part}"))
        assert commit is not None
        self.indexes[commit] = after
        self._move(commit)
        return count

    def _write_back(self, index: Snapshot, lost: dict[str, set[str]], misfiled: set[str]) -> None:
        """Write back the events the branch holds and the store lost (a file or a day folder deleted by hand): a
        store ends a sync with every event of its branch. Events are never removed, so the next write would otherwise
        follow an older head than the branch's and fork this node's own chain for good (`verify` in every clone)."""
        gone: dict[str, set[str] | None] = {**lost}  # None: the whole day folder is gone
        if index.days:
            here = set(list_days(self.store.events_dir))
            gone.update((day, None) for day in index.days if day not in here)
        if not gone:
            return
        # newest first, and the newest alone in the first batch: a write that lands meanwhile (a hook, a `log`) follows
        # the real head; oldest first, it followed an old one between batches, a second child from this node: a fork.
        # The days that count as now go first: a day stamped early holds no head an append follows (`counts_as_now`)
        from continuity.core.store import now_us  # at call time: a test's clock

        now_day = names.last_day(now_us())
        newest, written, limit = "", 0, 1
        batch: list[tuple[str, Entry]] = []
        for day in sorted(gone, key=lambda day: (day <= now_day, day), reverse=True):
            wanted = gone[day]
            entries = [entry for entry in self.reader.read_tree(index.days[day])  # one filed under another day is
                       if (wanted is None or entry.name in wanted) and entry.name not in misfiled  # there already
                       and is_event(day, entry)]
            for entry in sorted(entries, key=lambda each: each.name, reverse=True):
                newest = newest or f"events/{day}/{entry.name}"
                batch.append((day, entry))
                if len(batch) >= limit:  # then RESTORE_BATCH at a time: a whole events/ deleted stays bounded
                    written += self._bring_in(batch, [], quiet=True)
                    batch, limit = [], RESTORE_BATCH
        if batch:
            written += self._bring_in(batch, [], quiet=True)
        self.report.written_back += written
        if written:
            self.report.warnings.append(
                f"wrote back {written} event(s) of branch {self.branch} that the store lacked (newest: {newest}): "
                "event files are never removed; one deleted by hand comes back with the next sync")

    def _adopt_first_release_folders(self) -> None:
        """Move the first release's hour folders into their days (else their events are listed nowhere, never
        recorded). It lists every day folder, so only a sync that lists them all anyway (no marks) asks."""
        from continuity.readside.catchup import adopt_first_release_folders, moved_line

        moved, unread = adopt_first_release_folders(self.store.open_reader())
        if moved:
            self.report.warnings.append(moved_line(moved))
        self.report.warnings.extend([unread] if unread else [])

    def union_with(self, remote_tip: str | None, fresh: dict[str, str]) -> tuple[str | None, list[Union]]:
        """The commit that unites the branch with the remote's branch and the fresh node refs; the unions behind it.

        The remote's branch first (a merge of the two, or a fast-forward), then the node refs
        that moved since this clone last took them in: one more commit on top whose parents are
        the first union and each of those node commits (git takes any number of parents).
        """
        target, union = self._union_branch(remote_tip)
        unions = [union] if union is not None else []
        # a node commit the union already holds (every commit's tree holds its parents' events) adds nothing
        held = self.repo.merged_into(self.nodes, target) if target is not None and fresh else set()
        others = [fresh[node] for node in sorted(fresh) if node not in held and fresh[node] != target]
        if target is None and others:  # no branch anywhere yet: one node ref is the base
            target, others = others[0], others[1:]
        if not others:
            return target, unions
        assert target is not None
        self._fresh_reader()
        joined = self._plan(self.index_of(target), self._commits(others, [target]), NODES_CONFLICT)
        self._warn_first_release(others, [target])
        message = f"continuity: union with {len(others)} clones' refs on {self.shown} ({len(joined.incoming)} events)"
        unions.append(joined)
        # each node commit becomes a parent: the branch then holds each clone's pushed history, so an
        # offline transfer made from one of them fast-forwards later
        return self._commit(joined.snapshot(), [target, *others], message), unions

    def _checked_union(self, remote_tip: str | None, fresh: dict[str, str], push: bool) -> tuple[
            str | None, list[Union], dict[str, str]]:
        """`union_with`, what it takes in checked before it is pushed anywhere (`land` stages it after the push):
        an event that is not what its name says refuses the sync, nothing pushed, unless a clone's node ref alone
        brought it, which is then skipped with a warning naming it (one clone's ref must not stop the team's
        syncs; the branch holding it does)."""
        while True:
            try:
                target, unions = self.union_with(remote_tip, fresh)
            except TwoContents as clash:  # a copy under an event's name with other bytes: which one is not it?
                if not self._skip_clashing(clash, remote_tip, fresh):
                    raise
                continue
            if not fresh and (not push or target is None or target == remote_tip):
                return target, unions, fresh  # nothing goes out, no clone's ref in it: `land` refuses it unwritten
            try:
                for union in unions:
                    files.check_incoming(self.reader, union.incoming, self.store.events_dir)
            except files.Forged as forged:
                if not self._skip_bringing(forged.day, forged.name, {forged.sha}, remote_tip, fresh,
                                           str(forged).removesuffix(": " + files.REFUSED)):
                    raise
                continue
            return target, unions, fresh

    def _skip_clashing(self, clash: TwoContents, remote_tip: str | None, fresh: dict[str, str]) -> bool:
        """A clashing event name: skip the node refs that brought its copy whose bytes are not what the name says
        (its hash, its content), as `_skip_bringing` does. Such a copy stopped every clone's sync and every
        clone-store, for good."""
        if not fresh:
            return False
        self._fresh_reader()
        unfit = {sha for sha, (_, raw) in zip(clash.shas, self.reader.read_many(list(clash.shas), READ_LIMIT),
                                              strict=True)
                 if raw is None or files.unfit_event(clash.name, raw) is not None}
        return bool(unfit) and self._skip_bringing(
            clash.day, clash.name, unfit, remote_tip, fresh,
            f"it holds {EVENTS}/{clash.day}/{clash.name} with bytes that do not match the hash in its name (tampered?)")

    def _skip_bringing(self, day: str, name: str, shas: set[str], remote_tip: str | None, fresh: dict[str, str],
                       said: str) -> bool:
        """Skip, with a warning (`said`) naming each, the fresh node refs that bring one of the blobs `shas` at
        `events/<day>/<name>` (a commit of theirs new to this clone holds it at that path); True if any was. False
        when none does, or when the remote's branch brings one there: that refuses the sync. At that path only: the
        same bytes under another name (a branch event's own bytes copied under this name) are not that file, and a
        ref holding them where they belong brings nothing wrong."""
        def brings(head: str, known: list[str]) -> bool:
            for new in self._commits([head], known):
                entry = day_entries(self.reader, read_snapshot(self.reader, new).days.get(day)).get(name)
                if entry is not None and entry.sha in shas:
                    return True
            return False

        if not fresh:
            return False
        self._fresh_reader()  # the check that found the copy may have left its reader's stream early (ended it)
        if remote_tip is not None and brings(remote_tip, [c for c in [self.tip] if c]):  # new to this clone
            return False
        known = [commit for commit in (self.tip, remote_tip) if commit is not None]
        holding = [node for node in fresh if brings(fresh[node], known)]
        for node in holding:
            _warn_once(self.report.warnings, f"skipped {node_refs(self.branch)}/{node} on {self.shown}: {said}")
            del fresh[node]
        return bool(holding)

    def _fresh(self, nodes: dict[str, str], seen: dict[str, str], remote_tip: str | None) -> dict[str, str]:
        """The node refs to take in: those that moved since this store last took them in, and this clone's
        own ref whenever the branch here does not hold it (a copy of the store pushed it, or the branch
        here was lost): its commit must become a parent, or this clone's next push is no fast-forward."""
        fresh = {node: commit for node, commit in nodes.items()
                 if node != self.node and commit not in (seen.get(node), self.tip, remote_tip)}
        own = nodes.get(self.node)
        if own is not None and own not in (self.tip, remote_tip) and (
                self.tip is None or not self.repo.is_ancestor(own, self.tip)):
            fresh[self.node] = own
        return fresh

    def _readable(self, fresh: dict[str, str], remote_tip: str | None) -> dict[str, str]:
        """The node refs to take in whose commits sync can read; one it refuses (a commit over the bound, a
        tree git cannot parse) is skipped with a warning naming it: one clone's broken ref must not stop the
        team's syncs (it is read again next time)."""
        if not fresh:
            return fresh
        self._fresh_reader()
        known = [commit for commit in (self.tip, remote_tip) if commit is not None]
        with contextlib.suppress(WriteFailed):  # all at once first (one git process); else node by node
            for new in self._commits(list(fresh.values()), known):
                read_snapshot(self.reader, new)
            return fresh
        readable = {}
        for node, commit in fresh.items():
            try:  # each commit new to this clone: under `delta` a node's history holds its events
                for new in self._commits([commit], known):
                    read_snapshot(self.reader, new)
            except WriteFailed as error:
                _warn_once(self.report.warnings, f"skipped {node_refs(self.branch)}/{node} on {self.shown}: "
                                                 f"{str(error).removeprefix('sync failed: ')}")
                continue
            readable[node] = commit
        return readable

    def _union_branch(self, remote_tip: str | None) -> tuple[str | None, Union | None]:
        """The commit that unites the branch with the remote's tip, and the union behind it.

        Writes git objects only (day trees, a merge commit): the store and the branch's ref
        move in `land`, after the push, so a refused push costs no file writes, and the time
        between fetch and push (what other clones race against) stays short.
        """
        tip = self.tip
        if remote_tip is None or remote_tip == tip or (tip and self.repo.is_ancestor(remote_tip, tip)):
            return tip, None
        self._fresh_reader()
        self.refuse_foreign(remote_tip, f"on {self.shown}", tip)
        if tip is None:  # nothing recorded here: take the remote's branch (its events stream in, in land)
            return remote_tip, None
        self.refuse_unrelated(tip, remote_tip)
        union = self._plan(self.index_of(tip), self._commits([remote_tip], [tip]), REMOTE_CONFLICT)
        self._warn_first_release([remote_tip], [tip])
        if self.repo.is_ancestor(tip, remote_tip):  # its history holds this one's: a fast-forward
            self.indexes[remote_tip] = union.snapshot()
            return remote_tip, union
        if union.incoming:
            union.local_only = self._local_only(tip, remote_tip)
        message = f"continuity: merge {self.shown}/{self.branch} ({len(union.incoming)} events)"
        return self._commit(union.snapshot(), [tip, remote_tip], message), union

    def refuse_unrelated(self, tip: str, remote_tip: str) -> None:
        """Refuse a remote branch that shares no history with this clone's log once this clone has pushed it: another
        project's log (a remote's URL changed, a wrong `--remote`) or one started over. United, its events would be
        this store's for good, and the next sync would push them on. The same log is one that shares history with
        the branch here, with the commit this clone's last sync of the branch left on its remote (a local branch
        lost and made again from the store, a store restored into a fresh clone), or that holds this clone's node
        ref. A clone that has not pushed the branch yet unites with whatever the remote holds (the team's branch:
        its own was started by `continuity init`); `allow_unrelated` unites them too."""
        if self.allow_unrelated or self.synced_with is None or self.node in self.remote_nodes:
            return
        shown, commit = self.synced_with
        if (self.repo.related(tip, remote_tip) or len(commit) != 2 * self.repo.oid_bytes
                or commit.strip("0123456789abcdef") or not self.repo.rev(commit)
                or self.repo.related(commit, remote_tip)):
            return  # (a commit this clone's git no longer holds proves nothing either way: not refused for it)
        before = f" (it last synced with {shown})" if shown != self.shown else ""
        raise UsageError(f"branch {self.branch!r} on {self.shown} shares no history with this clone's log, which it "
                         f"has pushed before{before}: another project's log, or one started over; nothing moved. "
                         "Check the remote (`git remote -v`); `continuity sync --allow-unrelated` (or "
                         "`work reconnect --union`, offline) unites them for good")

    def _local_only(self, tip: str, remote_tip: str) -> list[tuple[str, Entry]]:
        """The events the branch's history adds to the remote's (to count the forks they meet), as far as the
        `delta` commits since the two parted say (each holds what it adds); a whole-tree commit among them is
        left out (it holds the whole history: reading it costs what the history costs, for a count)."""
        commits = [line[0] for line in self.repo.rev_list([tip], [remote_tip], grep=DELTA_MARK)]
        return plan_commits(self.reader, Snapshot(), commits, HISTORY_CONFLICT).incoming

    def land(self, target: str | None, unions: list[Union]) -> int:
        """Bring the unions' remote events into the store, then move the branch to `target`; how many added."""
        if target is None or target == self.tip:
            return 0
        added = 0
        if self.tip is None:
            added = self.restore(target)
            self.restored = True
        else:
            for union in unions:
                self.report.warnings.extend(f"not an event file, left on the branch only: {path}"
                                            for path in union.skipped[:5])
                added += self._bring_in(union.incoming, union.local_only)
            self.report.merged = bool(unions) and target != self.report.remote_commit
        self._move(target)
        return added

    def run(self, *, push: bool, restore: bool) -> None:
        """Take in what the branch gained here (adopt), record, then fetch, unite and push until this clone's
        node ref lands or the retry time runs out."""
        self.check_branches(ask_remote=True)
        with self.undo_new_branch():
            self._run(push=push, restore=restore)

    def _run(self, *, push: bool, restore: bool) -> None:
        report = self.report
        if self.repo.shallow:
            self._deepen()
        if not restore:
            report.added_branch = self.adopt()
        report.added_local = self.record(write_back=not restore)
        if not restore:  # the branch's events are back: a hint naming one still gone names one that never left
            forget_lost_head(self.store.events_dir, self.store.local_dir)
        deadline = time.monotonic() + self.retry_seconds
        seen = files.load_seen(self.store, self.nodes)
        while True:
            report.attempts += 1
            remote_tip, nodes = fetch_remote(self.repo, self.remote, self.branch, self.tracking, self.nodes,
                                             report.warnings)
            report.remote_commit = remote_tip
            self.remote_nodes = set(nodes)
            fresh = self._readable(self._fresh(nodes, seen, remote_tip), remote_tip)
            target, unions, fresh = self._checked_union(remote_tip, fresh, push)
            if not push or target is None or target == remote_tip:
                report.added_remote += self.land(target, unions)
                self.in_sync = self.delivered = target is not None and target == remote_tip
                files.save_seen(self.store, self.nodes, {**seen, **fresh})
                break
            self._say(report.added_local, f"pushing to {self.shown}/{self.branch}")
            outcome = self.repo.push_refs(self.remote, [(target, self.node_ref), (target, self.ref)])
            refused = outcome[self.node_ref]
            if refused is None or outcome[self.ref] is None:  # either ref holds the union now
                report.added_remote += self.land(target, unions)
                report.pushed = self.delivered = True
                report.branch_updated = self.in_sync = outcome[self.ref] is None
                declined = outcome[self.ref]
                if declined is not None and remote_tip is None and any(
                        warning.startswith(no_commit_branch(self.branch, self.shown)) for warning in report.warnings):
                    report.branch_refused = declined  # it never moves on: said by fetch_remote's warning
                elif declined is not None and declined.startswith("[remote rejected]") and not any(
                        sign in declined for sign in CONTENTION_SIGNS):  # not the branch moving: the remote's no
                    report.branch_refused = declined
                    report.warnings.append(f"{self.shown} refused the shared branch {self.ref} ({declined}): this "
                                           "clone's ref carried the events; other clones take them from it")
                if self.in_sync:
                    report.remote_commit = target
                    with contextlib.suppress(WriteFailed):
                        self.repo.update_ref(self.tracking, target, remote_tip)
                if refused is None:
                    with contextlib.suppress(WriteFailed):  # the copy here, as fetch_remote left it
                        self.repo.update_ref(f"{self.nodes}/{self.node}", target, nodes.get(self.node))
                    fresh = {**fresh, self.node: target}
                else:  # a server that takes branches only (some forges): the branch carried it
                    report.warnings.append(f"{self.shown} refused this clone's ref {self.node_ref} ({refused}); "
                                           "the branch carried the events")
                files.save_seen(self.store, self.nodes, {**seen, **fresh})
                break
            left = deadline - time.monotonic()
            if left <= 0:
                raise SyncGaveUp(
                    f"sync gave up after {report.attempts} refused pushes in {self.retry_seconds:g} s "
                    f"(last: {refused}); the events are safe locally and the next sync will carry them"
                )
            time.sleep(min(left, random.uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * 2 ** report.attempts))))
        if restore and not self.restored:
            report.added_remote += self.restore(self.tip)
        if restore:  # clone-store: what the branch holds is in the store only now
            forget_lost_head(self.store.events_dir, self.store.local_dir)
        files.save_marks(self.store, self.ref, self.tip, self.marks)

    def _deepen(self) -> None:
        """In a shallow clone, fetch the branch's whole history before anything reads it; when that deepened it, the
        index kept from the cut history is built again: an event below the cut (a `clone-store` of a release that
        fetched at the clone's depth) was in no index, so no sync took it in or wrote it back. A remote out of
        reach is said by the fetch that follows."""
        cut = self.repo.shallow_cut()
        with contextlib.suppress(RemoteUnreachable, WriteFailed):
            self.repo.fetch_refs(self.remote, [f"+refs/heads/{self.branch}:{self.tracking}"])
        if self.repo.shallow_cut() != cut:
            self.indexes.clear()
            self.repo.try_run("update-ref", "-d", self.index_ref)

    def restore(self, commit: str | None, *, kept: bool = True) -> int:
        """Write the events of `commit` that the store lacks (a new store, or lost files); how many.

        Streams day by day in batches of RESTORE_BATCH: a long history never sits in memory whole.
        A batch refused after others landed says they are kept, unless `kept` is False (the caller
        removes what landed: a store an import made).
        """
        if commit is None:
            return 0
        self._fresh_reader()
        days = self.index_of(commit).days
        added = 0
        batch: list[tuple[str, Entry]] = []
        skipped: list[str] = []  # said as a sync's union says them (the first five)
        for number, day in enumerate(sorted(days), 1):
            folder = os.path.join(self.store.events_dir, day)
            present = set(os.listdir(folder)) if os.path.isdir(folder) else set()
            for entry in self.reader.read_tree(days[day]):
                if not is_event(day, entry):
                    if len(skipped) < 5:
                        skipped.append(f"events/{day}/{entry.name}")
                elif entry.name not in present:
                    present.add(entry.name)  # once: a hand-made tree may list a name twice
                    batch.append((day, entry))
            if len(batch) >= RESTORE_BATCH or number == len(days):
                try:
                    added += self._bring_in(batch, [], quiet=True, landing=self.landing)
                except EventConflict as error:
                    if not added or not kept:
                        raise
                    # the batches before were written and stay: each event was checked against its name
                    raise EventConflict(str(error).replace(files.REFUSED, (
                        f"refused there; the {added:,} events written before it (each checked against its name) "
                        "are kept"))) from None
                batch = []
                if self.progress is not None and added:
                    self.progress(f"restored {added:,} events ({number}/{len(days)} days)")
        self.report.warnings.extend(f"not an event file, left on the branch only: {path}" for path in skipped)
        return added

    def _bring_in(self, incoming: list[tuple[str, Entry]], local_only: list[tuple[str, Entry]], *,
                  quiet: bool = False, landing: Landing | None = None) -> int:
        """Stage, check and link remote events into the store; count the forks they join."""
        if not incoming:
            return 0
        if not quiet:
            self._say(len(incoming), f"writing {len(incoming)} events from {self.shown}")
        staged = files.stage(self.store, self.reader, incoming, None if quiet else self.progress,
                             keep=landing.keep if landing is not None else 0, prevs=bool(local_only))
        try:
            if landing is not None:
                landing.landing()
            added, touched = files.install(self.store, staged)
        finally:
            staged.discard()
        if landing is not None and added:
            landing.landed(staged.held)
        if local_only:
            self.report.forks += len(staged.prevs & files.read_prevs(self.store, local_only))
        for day in touched:  # listed again next time: an append may have landed since the record step
            self.marks.pop(day, None)
        return added


def refuse_foreign(repo: Repo, reader: ObjectReader, branch: str, commit: str | None, where: str,
                   related: str | None = None) -> None:
    """Refuse a commit of the branch that holds files but no events folder (holds_no_events): sync_branch
    names a branch of code, and sync would commit events onto it and push them to the team's.

    One that shares history with `related` (the branch here) is no branch of code: a commit a teammate
    pushed onto the continuity branch; the union puts the events back.
    """
    if commit is None or not holds_no_events(read_snapshot(reader, commit)):
        return
    if related is None or not repo.related(related, commit):
        raise UsageError(f"branch {branch!r} {where} holds files but no events (no events/ folder of day "
                         "folders): it is not a continuity branch (a branch of code?); set sync_branch to a branch "
                         "only sync writes (default: continuity)")


def refuse_checked_out(repo: Repo, branch: str) -> None:
    """Refuse before anything moves when a work tree of the repository has the branch checked out (or is
    rebasing or bisecting it): moving it would change that work tree's HEAD under its index and files."""
    where = repo.checked_out(f"refs/heads/{branch}")
    if where is not None:
        place = "here" if os.path.realpath(where) == os.path.realpath(repo.toplevel) else f"in the work tree {where}"
        raise UsageError(f"branch {branch!r} is checked out {place} (or being rebased or bisected there): switch "
                         "that work tree to another branch first (sync never touches a work tree)")


def retry_seconds_of(store: Store) -> float:
    """How long refused pushes are retried: `sync_retry_seconds` in config.json, else RETRY_SECONDS."""
    return store.number_setting("sync_retry_seconds", 0, 3600, RETRY_SECONDS)


def open_repo(store: Store) -> Repo:
    """The git work tree around the store, with the network timeout from config (`sync_timeout`)."""
    return Repo(store.root, network_timeout=store.number_setting("sync_timeout", 1, MAX_TIMEOUT, NETWORK_TIMEOUT))


def sync(store: Store, *, remote: str | None = None, push: bool = True, branch: str | None = None,
         progress: Progress | None = None, catch_up: bool = True, restore: bool = False,
         landing: Landing | None = None, reconnecting: bool = False, unrelated: bool = False) -> SyncReport:
    """Exchange events with the remote's continuity branch (see the module docstring).

    `restore` also writes every event on the branch that the store lacks (clone-store), telling
    `landing` of each batch it brings in. A remote URL that embeds credentials is refused before
    git contacts it (credentials.py). A store brought in offline is refused unless `reconnecting`
    (`work reconnect --union`, which asked for this union).
    """
    store.check_safe()
    repo = open_repo(store)
    branch = branch_of(store, branch)
    remote = remote_of(store, given_remote(repo, remote))
    warnings = guard_remote(repo, remote)
    refuse_checked_out(repo, branch)
    if not reconnecting and os.path.exists(health.offline_marker(store)):
        raise UsageError("this store was brought in offline (`continuity work import`): leave offline mode with "
                         "`continuity work reconnect`, which pushes or fast-forwards and never merges diverged "
                         "histories unless asked (`--union`)")
    with files.sync_lock(store, repo.common_dir):
        syncer = Syncer(store, repo, branch, remote, progress)
        syncer.landing = landing
        syncer.allow_unrelated = unrelated
        _ = syncer.tracking  # an unknown remote name is refused before anything changes
        report = syncer.report
        report.warnings.extend(warnings)
        try:
            syncer.run(push=push, restore=restore)
        except BaseException as error:
            _remember_failure(store, syncer, error)
            if isinstance(error, ContinuityError):  # said before the error too (the credential remote's warning)
                error.warnings = list(report.warnings)
            if catch_up and (report.added_remote or report.added_branch):  # added events still reach projections
                _catch_up(store, report, progress)
            raise
        finally:
            syncer.close()
            report.commit = syncer.tip
        _remember_success(store, syncer)
    if catch_up:
        _catch_up(store, report, progress)
    return report


def _remember_success(store: Store, syncer: Syncer) -> None:
    report = syncer.report
    state = health.load(store) or health.SyncState()
    if syncer.delivered and syncer.recorded_through is not None:
        state.pushed_through = syncer.recorded_through
    last = state.last_success  # a push an earlier release recorded there alone: kept before it is replaced
    if last is not None and last.pushed and last.commit and last.branch not in state.last_pushed:
        state.last_pushed[last.branch] = last
    state.last_success = health.Outcome(at=_now_iso(), remote=report.remote, branch=report.branch,
                                        commit=report.commit, pushed=syncer.delivered)
    if syncer.delivered and report.commit:
        state.last_pushed[report.branch] = state.last_success
    health.save(store, state)


def _remember_failure(store: Store, syncer: Syncer, error: BaseException) -> None:
    from events.errors import ContinuityError

    if not isinstance(error, ContinuityError | KeyboardInterrupt):
        return
    state = health.load(store) or health.SyncState()
    message = str(error) if isinstance(error, ContinuityError) else "interrupted"
    state.last_failure = health.Outcome(at=_now_iso(), remote=syncer.report.remote, branch=syncer.report.branch,
                                        commit=syncer.tip, error=message,
                                        exit_code=getattr(error, "exit_code", None))
    health.save(store, state)


def _now_iso() -> str:
    from continuity.core.store import now_us
    from events import clock

    return clock.iso(now_us())


def _catch_up(store: Store, report: SyncReport, progress: Progress | None = None) -> None:
    from continuity.readside.catchup import PAST_CHANGED
    from continuity.readside.writers import refresh
    from continuity.recall.service import catch_up_index
    from projections.registry import REGISTRY

    counted = counting(progress, "caught up") if progress is not None else None
    outcome = refresh(store, tuple(REGISTRY), progress=counted)  # every model: tasks and memories too
    report.projections_rebuilt = outcome.rebuilt
    report.events_folded = outcome.folded
    report.warnings.extend(warning for warning in outcome.warnings if PAST_CHANGED not in warning)
    _forget_ended_runs(store, outcome.models)
    report.warnings.extend(catch_up_index(store, counting(progress, "indexed for recall") if progress else None))


def _forget_ended_runs(store: Store, models: Models) -> None:
    """A run another clone completed is no longer any session's current run here: its hint (machine-local, read by
    the plain `log` and hook paths, which fold nothing) went on attributing this clone's entries to it."""
    from continuity.tasks.current import RUNS_DIR, forget_runs

    if not os.path.isdir(os.path.join(store.local_dir, RUNS_DIR)):  # no run was ever started here
        return
    tasks = models.state("tasks").projects.values()  # refresh above loads every registered model
    ended = {run_id for state in tasks for run_id, run in state.runs.items() if run.completed_at is not None}
    if ended:
        forget_runs(store.local_dir, ended.__contains__)


def counting(progress: Progress, verb: str) -> Callable[[int, int | None], None]:
    """A read-model progress callback `(done, total)` told as sync's one-line news."""
    return lambda done, total: progress(f"{verb} {done:,}" + (f"/{total:,}" if total else "") + " events")


def _parts(added: dict[str, list[Entry]], size: int) -> Iterator[dict[str, str | list[Entry]]]:
    """Day -> entries, cut into parts of at most `size` entries (a day may span two parts)."""
    part: dict[str, str | list[Entry]] = {}
    held = 0
    for day in sorted(added):
        entries = added[day]
        offset = 0
        while offset < len(entries):
            taken = entries[offset:offset + size - held]
            offset += len(taken)
            part[day] = taken
            held += len(taken)
            if held == size:
                yield part
                part, held = {}, 0
    if part:
        yield part
