"""The store's side of sync: finding local events not on the branch, bringing remote ones in.

Remote events are written the way the log writes its own (docs/architecture.md): a temp
file in `local/incoming/<day>/`, made durable, then `link()`ed to its final name (never
overwriting), under the store's append lock so appends never interleave with the union.
A day the store does not have yet arrives whole: its staged folder is renamed into
`events/` (one rename instead of a link and an unlink per event; never over an existing
folder). A big batch is made durable with one `syncfs` instead of one fsync per file.
Every byte is checked against the hash in its file name before anything is linked.

`local/sync.json` remembers each day folder's mtime when its files were last compared
with the branch, so a sync lists only the days that changed (and always the newest one,
where coarse mtimes could hide an append).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import sys
from collections.abc import Callable, Iterator

import msgspec
import orjson

from continuity.core.errors import EventConflict
from continuity.core.fsio import write_atomic
from continuity.core.store import Store
from continuity.sync.objects import Entry, ObjectReader
from events import names, osfs
from events.durable import READ_LIMIT, SYNC_MARKS, mark_landed, read_event_file, real_folder, refuse_link, untrust_hint
from events.errors import StoreUnsafe, WriteFailed
from events.filelog import list_days

MARKS_NAME = SYNC_MARKS  # its presence also tells a writer that events may have left the store
#: 2: the commit saved is one whose every event the store holds (sync brings in what another store of
#: the repository put on the branch); a file without it is read as none, so such events come in once.
MARKS_FORMAT = 2
SYNCFS_FROM = 64  # below this many files, one fsync each is cheaper than flushing the file system


class _Prev(msgspec.Struct):
    prev: str | None = None


_PREV = msgspec.json.Decoder(_Prev)


def prev_of(raw: bytes) -> str | None:
    """The `prev` hash an event's bytes carry (None when absent or unreadable)."""
    try:
        return _PREV.decode(raw).prev
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


#: How a refused batch of remote events ends its message (restore says what earlier batches wrote instead).
REFUSED = "sync refused and changed nothing"


def hash_matches(name: str, raw: bytes) -> bool:
    """True when the bytes hash to the 12 hex digits in the event's file name."""
    parsed = names.parse_name(name)
    return parsed is not None and hashlib.sha256(raw).hexdigest()[: names.HASH_CHARS] == parsed.hash12


class _Named(msgspec.Struct):
    event_id: str
    created_at: str


_NAMED = msgspec.json.Decoder(_Named)


def names_its_event(name: str, raw: bytes) -> bool:
    """True when the bytes are a JSON object with the event id and time its (well-formed) file name spells.

    The hash in a name says only that these are the bytes someone named so: a file of anything else (text that is
    no JSON, another event's id: an impersonation) would be carried to every clone, where the read models leave it
    out and `verify` fails for good. The rest of the event is not decoded here: a kind or a version this release
    does not read is another release's event, carried as it is; so is one nested too deeply to read at all (its
    readers skip it with a warning, as they always did)."""
    try:
        claimed = _NAMED.decode(raw)
    except RecursionError:
        return True
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    return names.content_matches(name, claimed.event_id, claimed.created_at)


def unfit_event(name: str, raw: bytes) -> str | None:
    """Why an event file's bytes are not the event its name says (None when they are): its hash, or its content."""
    if not hash_matches(name, raw):
        return "does not match the hash in its name"
    if not names_its_event(name, raw):
        return "is not the event its name says (no event, or another event's id or time)"
    return None


# -- locks and marks -----------------------------------------------------------------------
@contextlib.contextmanager
def flocked(path: str) -> Iterator[None]:
    """Hold an exclusive `flock` on `path` (the lock dies with the process); a symlink there is StoreUnsafe,
    a lock that cannot be made or opened (a read-only file system, a socket planted there) WriteFailed."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, osfs.UPDATE, 0o666)
    except OSError as error:
        what = {errno.ELOOP: "a symlink", errno.EISDIR: "a folder"}.get(error.errno or 0)
        if what is None:
            raise WriteFailed(f"cannot take the lock {path} ({error.strerror or error}): nothing written") from None
        raise StoreUnsafe(f"unsafe store: {path} is {what} (nothing written)") from None
    try:
        osfs.lock(fd)
        yield
    finally:
        osfs.release(fd)


def append_lock(store: Store) -> contextlib.AbstractContextManager[None]:
    """The lock every append takes (`local/lock`, as in events/filelog.py)."""
    return flocked(os.path.join(store.local_dir, "lock"))


#: In the repository's shared git folder: the worktrees of one repository share its branches.
REPOSITORY_LOCK = "continuity-sync.lock"


@contextlib.contextmanager
def sync_lock(store: Store, common_dir: str) -> Iterator[None]:
    """One sync at a time per store (`local/sync.lock`) and per repository (REPOSITORY_LOCK in its shared
    git folder: another worktree's store moves the same branch); appends do not wait for either."""
    with flocked(os.path.join(store.local_dir, "sync.lock")), flocked(os.path.join(common_dir, REPOSITORY_LOCK)):
        yield


def saved_marks(store: Store, ref: str) -> tuple[str | None, dict[str, int]]:
    """(the commit this store last left the branch at, day -> mtime of days wholly on the branch then).

    (None, {}) when nothing is saved for `ref` (a store that never synced here, a lost file, an older format).
    """
    try:
        saved = orjson.loads(osfs.read_regular(os.path.join(store.local_dir, MARKS_NAME)))
        commit = saved.get("commit")
        # an object id only: nothing git could read as an option
        is_oid = isinstance(commit, str) and len(commit) in (40, 64) and not commit.strip("0123456789abcdef")
        if saved.get("format") == MARKS_FORMAT and saved.get("ref") == ref and is_oid:
            return commit, {str(day): int(mtime) for day, mtime in saved["days"].items()}
    except (OSError, orjson.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError):
        pass
    return None, {}


def load_marks(store: Store, ref: str, commit: str | None) -> dict[str, int]:
    """Day -> mtime of days wholly on the branch at `commit` (empty when saved for another commit)."""
    saved, days = saved_marks(store, ref)
    return days if commit is not None and saved == commit else {}


def save_marks(store: Store, ref: str, commit: str | None, days: dict[str, int]) -> None:
    """Remember which day folders are wholly on the branch (a lost file only costs a listing)."""
    data = orjson.dumps({"format": MARKS_FORMAT, "ref": ref, "commit": commit, "days": days},
                        option=orjson.OPT_SORT_KEYS)
    with contextlib.suppress(OSError):
        write_atomic(os.path.join(store.local_dir, MARKS_NAME), data, durable=False)


SEEN_NAME = "sync-nodes.json"


def load_seen(store: Store, folder: str) -> dict[str, str]:
    """Node -> the commit of its node ref that this store last took in, for one remote's branch (`folder`)."""
    try:
        saved = orjson.loads(osfs.read_regular(os.path.join(store.local_dir, SEEN_NAME)))
        return {str(node): str(commit) for node, commit in saved.get(folder, {}).items()}
    except (OSError, orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
        return {}


def save_seen(store: Store, folder: str, seen: dict[str, str]) -> None:
    """Remember which node-ref commits are taken in (losing it only costs reading them again)."""
    path = os.path.join(store.local_dir, SEEN_NAME)
    try:
        saved = orjson.loads(osfs.read_regular(path))
        if not isinstance(saved, dict):
            saved = {}
    except (OSError, orjson.JSONDecodeError):
        saved = {}
    saved[folder] = dict(sorted(seen.items()))
    with contextlib.suppress(OSError):
        write_atomic(path, orjson.dumps(saved, option=orjson.OPT_SORT_KEYS), durable=False)


# -- local events not on the branch --------------------------------------------------------
def unrecorded(store: Store, on_branch: Callable[[str], set[str]], marks: dict[str, int],
               misfiled: list[str] | None = None,
               lost: dict[str, set[str]] | None = None) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Local event files whose names the branch lacks, by day; and the day marks after listing.

    `on_branch(day)` gives the names the branch holds for a day. A day whose mtime matches
    its mark is skipped, except the newest day. The mark is taken before the listing: a
    file landing after it changes the mtime, so the next sync lists that day again. An event
    filed under another day than its name's is not recorded (a branch holds an event only
    under its own day); its `events/<day>/<name>` is added to `misfiled`. The names the branch
    holds for a listed day and the store does not (a file deleted by hand changes its day's
    mtime) go to `lost`, by day, unless filed under another day here.
    """
    days = list_days(store.events_dir)
    elsewhere: set[str] = set()
    missing: dict[str, list[str]] = {}
    new_marks: dict[str, int] = {}
    for day in days:
        path = os.path.join(store.events_dir, day)
        mtime_ns = os.stat(path).st_mtime_ns
        if marks.get(day) == mtime_ns and day != days[-1]:
            new_marks[day] = mtime_ns
            continue
        local, wrong = set(), False
        try:
            entries = os.listdir(path)
        except OSError as error:  # its events cannot be recorded, nor a merge be known to hold them: stop here
            from events.errors import WriteFailed

            raise WriteFailed(f"sync: events/{day}/ cannot be read ({error.strerror or error}); nothing was "
                              "synced") from None
        for entry in entries:
            if len(entry) == names.NAME_LENGTH and names.parse_name(entry) is not None:
                if names.shard_of(entry) == day:
                    local.add(entry)
                else:
                    wrong = True
                    elsewhere.add(entry)
                    if misfiled is not None:
                        misfiled.append(f"events/{day}/{entry}")
        branch = on_branch(day)
        absent = sorted(local - branch)
        if absent:
            missing[day] = absent
        if lost is not None and len(branch) > len(local) - len(absent):
            lost[day] = branch - local
        if not wrong:  # a day holding a misfiled event is listed (and warned of) again by every sync
            new_marks[day] = mtime_ns
    if lost is not None:
        for day in list(lost):
            lost[day] -= elsewhere
            if not lost[day]:
                del lost[day]
    return missing, new_marks


def check_local(store: Store, missing: dict[str, list[str]]) -> list[str]:
    """Paths of the files about to be recorded; refuses one whose bytes do not match its name."""
    paths = []
    for day, day_names in missing.items():
        for name in day_names:
            path = os.path.join(store.events_dir, day, name)
            try:
                raw = read_event_file(path)
            except FileNotFoundError:
                raise
            except OSError as error:
                raise EventConflict(f"events/{day}/{name} cannot be read as an event ({error.strerror or error}): "
                                    "sync refused to record it; see `continuity verify`") from None
            if not hash_matches(name, raw):
                raise EventConflict(f"events/{day}/{name} does not match the hash in its name (edited?): "
                                    "sync refused to record it; see `continuity verify`")
            paths.append(path)
    return paths


def read_prevs(store: Store, entries: list[tuple[str, Entry]]) -> set[str]:
    """The `prev` hashes of local events (missing files are skipped)."""
    prevs = set()
    for day, entry in entries:
        try:
            prev = prev_of(read_event_file(os.path.join(store.events_dir, day, entry.name)))
        except OSError:
            continue
        if prev:
            prevs.add(prev)
    return prevs


# -- remote events into the store ----------------------------------------------------------
class Staged:
    """Remote events written to temp files (a folder per day), checked, durable, and not yet visible."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.files: list[tuple[str, str, str]] = []  # (day, name, temp path)
        self.prevs: set[str] = set()
        #: The bytes of staged events kept in memory (stage's `keep`): day -> name -> bytes.
        self.held: dict[str, dict[str, bytes]] = {}
        #: True when one `syncfs` made everything durable, names in the day folders included.
        self.synced = False

    def day_folder(self, day: str) -> str:
        """Where the day's events are staged."""
        return os.path.join(self.folder, day)

    def discard(self) -> None:
        """Remove the temp files."""
        shutil.rmtree(self.folder, ignore_errors=True)


class Forged(EventConflict):
    """A remote event whose bytes are not what its name says, or bigger than any event (`sha`: its blob, at
    `events/<day>/<name>`)."""

    def __init__(self, message: str, sha: str, day: str, name: str) -> None:
        super().__init__(message)
        self.sha = sha
        self.day = day
        self.name = name


class Twins:
    """Finds a second file of one event: another name (another hash) for an event id already met among the incoming
    events or already in the store's day folder. A writer never stamps two events alike under one node, so a
    second file of an id is forged or replayed; taken in, every clone's `verify` failed on it for good, and a
    reader saw whichever file it listed first."""

    def __init__(self, events_dir: str | None) -> None:
        self.events_dir = events_dir
        self.met: dict[str, str] = {}  # event id (a name's first 31 characters) -> the name met with it
        self.listed: set[str] = set()  # days whose store folder was read into `met`

    def of(self, day: str, name: str) -> str | None:
        """The other file's name when `name` is a second file of its event (None: the first one met)."""
        if self.events_dir is not None and day not in self.listed:
            self.listed.add(day)
            with contextlib.suppress(OSError):  # no such day here yet
                for here in os.listdir(os.path.join(self.events_dir, day)):  # a name's id is its first 31
                    if here.endswith(".json") and not here.startswith("."):  # characters (no temp file's)
                        self.met.setdefault(here[:31], here)
        other = self.met.setdefault(name[:31], name)
        return None if other == name else other

    def refusal(self, day: str, name: str, kind: str, raw: bytes) -> str | None:
        """Why a remote event is refused (not a file, not what its name says, a second file of an event met
        already), or None."""
        unfit = "is not a file" if kind != "blob" else unfit_event(name, raw)
        if unfit is None and (other := self.of(day, name)) is not None:
            unfit = f"is a second file of the event {other} names"
        return unfit


def check_incoming(reader: ObjectReader, incoming: list[tuple[str, Entry]], events_dir: str | None = None) -> None:
    """Forged for the first remote event whose bytes are not what its name says (or are bigger than any event), or
    that is a second file of an event met already (Twins; in the store too, with `events_dir`), as `stage`
    refuses it: read before a union that holds it is pushed anywhere, so a refused sync has changed nothing on the
    remote either."""
    twins = Twins(events_dir)
    for (day, entry), (kind, raw) in zip(incoming, reader.read_many([entry.sha for _, entry in incoming], READ_LIMIT),
                                         strict=True):
        if raw is None:
            raise Forged(f"events/{day}/{entry.name} on the remote is bigger than any event can be "
                         f"(tampered?): {REFUSED}", entry.sha, day, entry.name)
        unfit = twins.refusal(day, entry.name, kind, raw)
        if unfit is not None:
            raise Forged(f"events/{day}/{entry.name} on the remote {unfit} (tampered?): {REFUSED}", entry.sha, day,
                         entry.name)


def stage(store: Store, reader: ObjectReader, incoming: list[tuple[str, Entry]],
          progress: Callable[[str], None] | None = None, keep: int = 0, *, prevs: bool = True) -> Staged:
    """Write each incoming blob to a temp file, checking its bytes against its name; then make them durable.

    `keep`: how many bytes of the events to keep in memory as well (`Staged.held`: each event
    that still fits in what is left of it), for the read models to fold without reading the
    files back. `prevs=False` skips collecting the events' `prev` hashes (`Staged.prevs`: only
    the fork count of a sync with local events reads them).
    """
    staged = Staged(os.path.join(store.local_dir, "incoming"))
    refuse_link(staged.folder)  # a link there would take the staged events (and the sweep) out of the store
    staged.discard()  # leftovers of a sync that died (only syncs use it, one at a time)
    try:
        os.makedirs(staged.folder)
        twins = Twins(store.events_dir)
        day_folder, folder_day, made = "", None, set()
        for count, ((day, entry), (kind, raw)) in enumerate(
            zip(incoming, reader.read_many([entry.sha for _, entry in incoming], READ_LIMIT), strict=True), 1
        ):
            if raw is None:
                raise EventConflict(f"events/{day}/{entry.name} on the remote is bigger than any event can be "
                                    f"(tampered?): {REFUSED}")
            unfit = twins.refusal(day, entry.name, kind, raw)
            if unfit is not None:
                raise EventConflict(f"events/{day}/{entry.name} on the remote {unfit} (tampered?): {REFUSED}")
            if day != folder_day:
                day_folder, folder_day = staged.day_folder(day), day
                if day not in made:  # a batch need not come day by day
                    _make_day_folder(day_folder)
                    made.add(day)
            temp = f"{day_folder}/{entry.name}"
            _write(temp, raw)
            staged.files.append((day, entry.name, temp))
            if keep >= len(raw):
                keep -= len(raw)
                staged.held.setdefault(day, {})[entry.name] = raw
            if prevs:
                prev = prev_of(raw)
                if prev:
                    staged.prevs.add(prev)
            if progress is not None and count % 5000 == 0:
                progress(f"received {count}/{len(incoming)} events")
        staged.synced = _make_durable(staged.folder, [temp for _, _, temp in staged.files])
    except OSError as error:
        staged.discard()
        raise WriteFailed(f"remote events not written: {error.strerror or error}") from None
    except BaseException:
        staged.discard()
        raise
    return staged


def install(store: Store, staged: Staged) -> tuple[int, set[str]]:
    """Move staged events to their final names under the append lock; (count added, days touched).

    A day the store lacks is renamed into place whole (never over a folder that appeared: the
    rename refuses, or, where it cannot, appends make day folders only under this lock). In a
    day the store has, each event is linked, after every name was checked: a local file with
    the same name and other bytes refuses the whole batch before anything moves. Afterwards
    the head hint is dropped: the next append lists the newest day instead of trusting it
    (mtimes can be coarse).
    """
    with append_lock(store):
        by_day: dict[str, list[tuple[str, str]]] = {}
        for day, name, temp in staged.files:
            by_day.setdefault(day, []).append((name, temp))
        whole: list[tuple[str, int]] = []  # (day, events) moved as a folder
        todo = []
        refuse_link(store.events_dir)
        for day in sorted(by_day):
            folder = os.path.join(store.events_dir, day)
            refuse_link(folder)  # a symlink would take the events out of the store
            if not os.path.lexists(folder):
                if not real_folder(staged.day_folder(day)):  # swapped for a link while staging
                    raise StoreUnsafe(f"unsafe store: {staged.day_folder(day)} is not the folder sync made "
                                      "(nothing written)")
                whole.append((day, len(by_day[day])))
                continue
            for name, temp in by_day[day]:
                final = f"{folder}/{name}"
                if os.path.lexists(final):
                    if not _same_bytes(final, temp):
                        raise EventConflict(f"events/{day}/{name} exists here with other bytes than on the "
                                            f"remote: {REFUSED}")
                    continue
                todo.append((day, temp, final))
        linked: list[str] = []
        moved: list[str] = []
        try:
            if whole and not os.path.isdir(store.events_dir):  # made when first written (Store.check_safe)
                os.makedirs(store.events_dir)
                osfs.fsync_dir(os.path.dirname(store.events_dir))
            for day, _ in whole:
                if not staged.synced:  # the names in it, before it is renamed into the store
                    osfs.fsync_dir(staged.day_folder(day))
                _move_folder(staged.day_folder(day), os.path.join(store.events_dir, day))
                moved.append(day)
            if moved:
                osfs.fsync_dir(store.events_dir)
            for _, temp, final in todo:
                osfs.link(temp, final)
                linked.append(final)
            for day in {day for day, _, _ in todo}:
                osfs.fsync_dir(os.path.join(store.events_dir, day))
        except BaseException as error:
            _take_back(store, staged, linked, moved)
            if isinstance(error, OSError):
                raise WriteFailed(f"remote events not written: {error.strerror or error}") from None
            raise
        if linked or moved:  # the head may have changed: the hint is not trusted, but still names our newest
            untrust_hint(store.local_dir)
            mark_landed(store.local_dir)  # and events may sort before it: decisions in flight are taken again
    days = {day for day, _, _ in todo} | set(moved)
    return len(linked) + sum(count for _, count in whole), days


def _take_back(store: Store, staged: Staged, linked: list[str], moved: list[str]) -> None:
    """Undo a batch's links and folder moves, so nothing of it stays visible (best effort: the write failed)."""
    for final in linked:
        with contextlib.suppress(OSError):
            os.unlink(final)
    for day in moved:  # back where it was staged
        with contextlib.suppress(OSError):
            os.rename(os.path.join(store.events_dir, day), staged.day_folder(day))
    if moved:
        with contextlib.suppress(OSError):
            osfs.fsync_dir(store.events_dir)


def _make_day_folder(path: str) -> None:
    """Make a day's staging folder; anything already at its name was put there by someone else."""
    try:
        os.mkdir(path)
    except FileExistsError:
        raise StoreUnsafe(f"unsafe store: {path} appeared while sync was staging events (nothing written)") from None


def _move_folder(source: str, target: str) -> None:
    """Rename a staged day folder to `target`, which must not exist (FileExistsError otherwise)."""
    if _rename_noreplace(source, target):
        return
    if os.path.lexists(target):  # under the append lock: no append makes it meanwhile
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), target)
    os.rename(source, target)


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, osfs.CREATE_NEW, 0o444)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _make_durable(folder: str, paths: list[str]) -> bool:
    """fsync each file, or one `syncfs` of the file system for a big batch (Linux): True after a `syncfs`
    (the names in `folder` are durable too; after fsyncs, a folder to be renamed needs its own)."""
    if len(paths) >= SYNCFS_FROM and _syncfs(folder):
        return True
    for path in paths:
        fd = os.open(path, osfs.READ)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return False


def _libc_call(name: str) -> Callable[..., int] | None:
    """A Linux libc function called with errno kept (None elsewhere, or where there is no such function)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return getattr(ctypes.CDLL(None, use_errno=True), name)  # type: ignore[no-any-return]
    except (OSError, AttributeError, TypeError):
        return None


def _errno() -> int:
    import ctypes

    return ctypes.get_errno()


def _syncfs(folder: str) -> bool:
    syncfs = _libc_call("syncfs")
    if syncfs is None:
        return False
    fd = os.open(folder, os.O_RDONLY | osfs.DIRECTORY | osfs.CLOEXEC)
    try:
        if syncfs(fd) != 0:
            error = _errno()
            raise OSError(error, os.strerror(error))
    finally:
        os.close(fd)
    return True


AT_FDCWD = -100
RENAME_NOREPLACE = 1


def _rename_noreplace(source: str, target: str) -> bool:
    """`renameat2(RENAME_NOREPLACE)` (Linux): True when renamed; False where the call or the file system lacks it.

    FileExistsError when `target` exists, as a folder or anything else."""
    renameat2 = _libc_call("renameat2")
    if renameat2 is None:
        return False
    if renameat2(AT_FDCWD, os.fsencode(source), AT_FDCWD, os.fsencode(target), RENAME_NOREPLACE) == 0:
        return True
    error = _errno()
    if error in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EPERM):  # an old kernel, a file system
        return False  # without it, a sandbox refusing the call: the checked rename gives the real error
    raise OSError(error, os.strerror(error), target)


def _same_bytes(first: str, second: str) -> bool:
    try:
        return read_event_file(first) == read_event_file(second)
    except OSError:
        return False
