"""The durable file-log protocol, on the standard library alone.

Append protocol (docs/architecture.md): under an ``flock`` on the store's lock file,
write each event to a temp file in the store's own ``tmp`` folder, fsync it, ``link()``
it to its final name (never overwrites: EEXIST fails the append), fsync the shard
folder, unlink the temp. A reader never sees a partial event. Temp files left by a
killed writer are swept by the next writer: every temp file is made under the lock, so
any found by a lock holder is garbage. A hint file (``local/head``) saves listing the
newest shard on each append; it is trusted only while that shard is unchanged.

Events live in one folder per UTC day, ``events/<YYYYMMDD>/``: a day's folder mtime
changes whenever a file lands in it (an append, or a git merge bringing an event "in
the past"), which is how projections notice merges without listing every folder. The
first release wrote ``events/<YYYYMMDD>/<HH>/`` instead; a writer that meets such hour
folders moves their events into the day folder (`DurableFolder.adopt_hour_folders`).

This module is the one home of that protocol. `FileEventLog` (events/filelog.py) writes
through it, and so does the plain append path (events/plain.py), which must not load
msgspec: so nothing here imports an event Struct.
"""

from __future__ import annotations

import bisect
import errno
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress

from events import clock, names, osfs
from events.errors import ContinuityError, EventExists, EventsUnlisted, StoreUnsafe, WriteFailed
from events.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:  # on the hook path: `typing` costs its start a few ms
    from contextlib import AbstractContextManager
    from typing import Protocol, TypeVar

try:  # the built-in SHA-256 loads far faster than OpenSSL's (hashlib), and this is the hook path
    from _sha256 import sha256 as _sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import sha256 as _sha256


def sha256_hex(raw: bytes) -> str:
    """The SHA-256 of stored bytes, the value a successor's `prev` holds."""
    digest: str = _sha256(raw).hexdigest()
    return digest


class Head(NamedTuple):
    """What a writer needs of the newest event: its name, hash and HLC time."""

    name: str
    sha256: str
    at_us: int


def head_of(name: str, raw: bytes) -> Head:
    """The head record of a stored file."""
    parsed = names.parse_name(name)
    assert parsed is not None
    return Head(name, sha256_hex(raw), clock.parse_stamp(parsed.stamp))


if TYPE_CHECKING:
    class Sealed(Protocol):
        """A sealed event as the protocol writes it: its file name and its exact bytes."""

        @property
        def name(self) -> str: ...

        @property
        def raw(self) -> bytes: ...

    D = TypeVar("D")
    S = TypeVar("S", bound=Sealed)

    class Appender(Protocol[S]):
        """What `append_sealed` needs of a log: its lock (yielding the head there) and its batch write."""

        def _locked(self, now_us: int | None = None,
                    node: str | None = None) -> AbstractContextManager[Head | None]: ...

        def _write(self, batch: list[S]) -> None: ...


#: Checked under the append lock with the head there (None: empty log); raises to abort.
Precondition = Callable[[Head | None], None]


def chain(drafts: Iterable[D], head: Head | None, now_us: int,
          seal_one: Callable[[D, int, str | None, int | None], S], wall_us: int | None = None) -> list[S]:
    """Seal drafts one after another after `head`: HLC times that always move forward, a `prev` chain; each
    told the writer's clock (`wall_us`, else `now_us`) when its time runs ahead of it (`clock.written_us`)."""
    wall = now_us if wall_us is None else wall_us
    prev = head.sha256 if head else None
    last_us = head.at_us if head else None
    batch: list[S] = []
    for draft in drafts:
        at_us = clock.next_time(now_us, last_us)
        if at_us > clock.LAST_US:  # a head stamped at the end of time (a forged or broken clock's event)
            raise WriteFailed(f"event not written: the newest event{f' {head.name}' if head else ''} is stamped so far "
                              "ahead that no event can follow it (see `continuity verify`)")
        stored = seal_one(draft, at_us, prev, clock.written_us(at_us, wall))
        batch.append(stored)
        prev, last_us = sha256_hex(stored.raw), at_us
    return batch


def append_sealed(log: Appender[S], drafts: Iterable[D], seal_one: Callable[[D, int, str | None, int | None], S],
                  now_us: Callable[[], int], precondition: Precondition | None = None,
                  node: str | None = None) -> list[S]:
    """Under the log's lock: check `precondition`, seal `drafts` after the head, write them as one batch.

    `seal_one(draft, at_us, prev, written_us)` makes a draft's stored form; whatever `precondition`
    raises aborts the append before anything is written.
    """
    now = now_us()  # read first: the head is the newest event that counts as now for it (counts_as_now)
    with log._locked(now, node) as head:
        if precondition is not None:
            precondition(head)
        # the clock read again under the lock: what an event records of it is when it was written, not when its
        # writer began to wait for the lock
        batch = chain(drafts, head, now, seal_one, now_us())
        if batch:
            log._write(batch)
    return batch


class FileOps:
    """The system calls the file log makes. Tests subclass it to inject faults."""

    def open(self, path: str, flags: int, mode: int = 0o777) -> int:
        """os.open."""
        return os.open(path, flags, mode)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        """os.write (may write less than asked)."""
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        """os.fsync."""
        os.fsync(fd)

    def link(self, source: str, target: str) -> None:
        """A hard link: fails with EEXIST rather than replace a file."""
        osfs.link(source, target)

    def mkdir(self, path: str) -> None:
        """os.mkdir."""
        os.mkdir(path)


#: The most a reader takes of one event file. Events are sealed at 256 KiB at most, so a bigger
#: file was not written by a log (something planted, or a disk error): refused, never read whole.
READ_LIMIT = 1 << 20


class Unreadable(bytes):
    """What a reader is given for an event file, or a day folder (named `<day>/`), it cannot read: no bytes,
    and why (`reason`), so the reader names it with its own words instead of failing to decode nothing."""

    reason: str

    def __new__(cls, reason: str) -> Unreadable:
        made = super().__new__(cls, b"")
        made.reason = reason
        return made


def unreadable_error(raw: bytes, error: Exception | None = None) -> str:
    """The reason a reader gives for a file it could not decode: why it could not be read, else the decoder's."""
    return f"cannot be read ({raw.reason})" if isinstance(raw, Unreadable) else str(error)


def read_event_file(path: str) -> bytes:
    """The bytes of one event file (OSError if it is not one).

    Opened without following a symlink and without blocking, and refused unless it is a
    regular file of at most READ_LIMIT bytes: an entry planted under an event's name (a
    FIFO, a device, a symlink to /dev/zero, a huge file) is an unreadable event for the
    reader, which names it, never a hang or an unbounded read.
    """
    return osfs.read_regular(path, follow=False, limit=READ_LIMIT)


def misfiled(events_dir: str) -> list[tuple[str, str]]:
    """(day folder, name) of each event file filed under another day than its name's, oldest folder first.

    Such a file (moved by hand, or copied in) is replayed out of order here and never carried by
    `sync` (a branch takes an event only under its own day): `verify` names it, `sync` warns.
    """
    found: list[tuple[str, str]] = []
    for day in list_days(events_dir):
        try:
            entries = sorted(os.listdir(os.path.join(events_dir, day)))
        except OSError:
            continue
        found.extend((day, name) for name in entries
                     if names.parse_name(name) is not None and names.shard_of(name) != day)
    return found


def false_days(events_dir: str) -> list[str]:
    """Entries of an events folder named with eight digits that are no real date (`00000101`, `20261399`):
    no reader takes them or what they hold; `verify` names them."""
    try:
        entries = os.listdir(events_dir)
    except OSError:
        return []
    return sorted(entry for entry in entries
                  if len(entry) == 8 and entry.isascii() and entry.isdigit() and not names.is_day(entry))


def unread_entries(events_dir: str) -> list[tuple[str, str]]:
    """(path, why) of the entries of an events folder that hold what no reader takes, for `verify`: a file (or FIFO)
    named like a day folder, an event file outside any day folder, and a folder named like no day that holds event
    files at any depth (a day folder renamed, `20261204.bak`, or moved into another). Links are named by `verify` as
    such; names of eight digits that are no date by `false_days`; seed 004's flat files are no event names. Inside a
    day folder, a folder other than the first release's hour folders (`hour_folders`) that holds event files at any
    depth too (a day folder moved into another)."""
    found: list[tuple[str, str]] = []
    try:
        with os.scandir(events_dir) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError:
        return []
    for entry in entries:
        if entry.is_symlink():
            continue
        if names.is_day(entry.name):
            if not entry.is_dir(follow_symlinks=False):
                found.append((f"events/{entry.name}", "is named like a day folder but is no folder: the log holds "
                              "nothing there (a synced day comes back with `continuity sync` once it is moved away)"))
            else:
                found.extend(_folders_within(entry.path, f"events/{entry.name}/"))
            continue
        if not entry.is_dir(follow_symlinks=False):
            if names.parse_name(entry.name) is not None:
                found.append((f"events/{entry.name}", f"is an event file outside any day folder: no reader takes "
                              f"it; move it into events/{entry.name[:8]}/"))
            continue
        if len(entry.name) == 8 and entry.name.isdigit():
            continue
        found.extend(_held(entry.path, f"events/{entry.name}/"))
    return found


def _held(folder: str, shown: str) -> list[tuple[str, str]]:
    """`folder` (named `shown`) when it holds event files at any depth, where no reader takes them."""
    count = sum(1 for _, _, files in os.walk(folder) for name in files if names.parse_name(name) is not None)
    if not count:
        return []
    return [(shown, f"holds {count} event file(s) outside any day folder (a day folder renamed, or moved into "
             "another?): no reader takes them; move each into events/<the first 8 characters of its name>/")]


def _folders_within(day: str, shown: str) -> list[tuple[str, str]]:
    """The folders of a day folder (not an hour folder: those are moved into it) that hold event files."""
    try:
        with os.scandir(day) as scan:
            folders = sorted(entry.name for entry in scan
                             if entry.is_dir(follow_symlinks=False) and entry.name not in _HOURS)
    except OSError:  # a day that cannot be listed: verify names it itself
        return []
    return [found for name in folders for found in _held(os.path.join(day, name), f"{shown}{name}/")]


def list_days(events_dir: str, links: list[str] | None = None, others: list[str] | None = None) -> list[str]:
    """The day folders of an events folder, oldest first.

    A stray file named like a day is not one, and neither is a symlink: nothing outside
    the store is read as events (`verify` reports both). With `links`, the names of such
    symlinks are added to it, for a read to warn of what it leaves out; with `others`, the
    names of the rest (a file or FIFO where a day folder was): they hold no event, but a
    read says so (`no_folder`), as a day folder deleted and replaced looks like an empty log.
    """
    days = []
    try:
        with os.scandir(events_dir) as entries:
            for entry in entries:
                if names.is_day(entry.name):
                    if entry.is_dir(follow_symlinks=False):
                        days.append(entry.name)
                    elif entry.is_symlink():
                        if links is not None:
                            links.append(entry.name)
                    elif others is not None:
                        others.append(entry.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(days)


def no_folder(events_dir: str, day: str) -> str:
    """How a read names an entry `list_days` left out under a day's name: `events/<day> is a symlink` (or `is no
    folder`: a file or FIFO in its place), then what that means."""
    if os.path.islink(os.path.join(events_dir, day)):
        return f"events/{day} is a symlink: its events are not read (see `continuity verify`)"
    return (f"events/{day} is no folder: it holds no events, and that day's are not in this store (see "
            "`continuity verify`)")


def left_out(events_dir: str) -> list[str]:
    """What a listing of the log leaves out without a word otherwise: a symlink or a file where a day folder was
    (the read models say so; `events list`, `tail` and the MCP `events` tool listed the rest as if that day held
    nothing), one `no_folder` line each."""
    links: list[str] = []
    try:
        list_days(events_dir, links, links)
    except OSError:  # events/ that cannot be listed: the read says so itself
        return []
    return [no_folder(events_dir, day) for day in sorted(links)]


def days_if_listed(events_dir: str) -> list[str]:
    """`list_days` for a reader that can do without: none when events/ cannot be listed (no permission, EIO)."""
    try:
        return list_days(events_dir)
    except OSError:
        return []


def readable_days(events_dir: str) -> list[str]:
    """`list_days` for a reader that must read every event: events/ that cannot be listed is EventsUnlisted (exit 1),
    one line, not an OSError from deep inside (a catch-up instead serves its models as saved: readside/catchup.py)."""
    try:
        return list_days(events_dir)
    except OSError as error:
        raise EventsUnlisted(f"events/ cannot be listed ({error.strerror or type(error).__name__}): "
                             "no event can be read") from None


def node_record(node: str, local_dir: str) -> bytes:
    """What `local/node` holds: the id and the host it was made on (the first releases' one line), then the folder it
    was made in (`local/`'s inode number) on a line of its own, so that a copy of the store (`cp -r` of the project, a
    backup restored beside it) is not taken for the store it was copied from: two copies writing under one node id
    fork that node's chain for good. The host name is the rest of the first line (it may hold spaces, or be empty;
    `_host`)."""
    return f"{node} {_host()}\n{os.lstat(local_dir).st_ino}\n".encode("utf-8", "surrogateescape")


def _host() -> str:
    """This host's name as `local/node` spells it: a line break or backslash in it escaped (the kernel takes any
    bytes), bytes that are not UTF-8 kept as they are (surrogateescape)."""
    return os.uname().nodename.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def node_file(local_dir: str) -> tuple[str | None, bool]:
    """(the node id `local/node` names for this host and folder, or None; whether the file is in today's form).

    A file of the first releases (one line: id and host) names its node on the host it was made on, as it did
    then, and so does one of a few development builds (id, host and folder on one line); `Store.node` rewrites
    either in today's form on the next write, keeping the id (so an upgrade changes no node).
    """
    try:
        text = osfs.read_regular(os.path.join(local_dir, "node"), limit=osfs.SMALL_LIMIT).decode(
            "utf-8", "surrogateescape")
        here = str(os.lstat(local_dir).st_ino)
    except OSError:
        return None, False
    lines = text.removesuffix("\n").split("\n")
    node, space, host = lines[0].partition(" ")
    if not space or not names.NODE_PATTERN.match(node) or len(lines) > 2:
        return None, False
    if len(lines) == 2:
        return (node, True) if host == _host() and lines[1] == here else (None, False)
    if host == _host():
        return node, False
    before, _, folder = host.rpartition(" ")
    return (node, False) if before == _host() and folder == here else (None, False)


def own_node(local_dir: str) -> str | None:
    """The node id this machine writes this store under (`local/node`, `node_record`), without making one; None
    when there is none, or when the file was made on another host or in another folder (a store copied, here or to
    another machine, makes a new one on its first write)."""
    return node_file(local_dir)[0]


#: How far back a clock may have gone and still follow what its own node wrote: further ahead than this, an event
#: under this node's id is early like any other (a peer can forge one: the id is in every file name, and one
#: followed at the end of time stopped this clone's writes). A clock reset by years shows its events as early.
OWN_AHEAD_US = 30 * 86_400 * 1_000_000
#: Where the node sits in an event file name: `<stamp: 22>-<node: 8>-<hash>.json`.
_NODE_AT = slice(23, 31)


def now_limit(now_us: int, node: str | None, days: list[str], entries_of: Callable[[str], list[str]]) -> str:
    """The newest day whose events count as now (`names.last_day`), for a clock reading `now_us`: the rule alone.

    Later days hold events stamped early, which wait; but not this node's own: a clock that went
    back (a machine that lost its time) finds what it wrote itself later than it reads, and then the
    newest of those counts as now. `days` are the log's days, oldest first; `entries_of(day)` names
    a day's files, asked only for days past the clock's limit.
    """
    limit = names.last_day(now_us)
    if node is None or not days or days[-1] <= limit:
        return limit
    farthest = names.last_day(now_us + OWN_AHEAD_US)  # a node id is in every file name: a peer can forge ours
    for day in reversed(days):
        if day <= limit:
            break
        if day > farthest:
            continue
        own = [entry for entry in entries_of(day) if len(entry) == names.NAME_LENGTH and entry[_NODE_AT] == node
               and entry.startswith(day) and names.parse_name(entry) is not None]
        if own:
            return names.last_day(clock.parse_stamp(max(own)[:22]))
    return limit


def counts_as_now(events_dir: str, now_us: int, node: str | None, days: list[str] | None = None) -> str:
    """`now_limit` over an events folder (its day folders listed unless given)."""

    def entries_of(day: str) -> list[str]:
        try:
            return os.listdir(os.path.join(events_dir, day))
        except OSError:
            return []

    return now_limit(now_us, node, days if days is not None else days_if_listed(events_dir), entries_of)


#: The names of the first release's hour folders.
_HOURS = frozenset(f"{hour:02d}" for hour in range(24))


def _is_hour(entry: str) -> bool:
    return entry in _HOURS


def holds_hours(entries: list[str]) -> bool:
    """Whether a day folder's entries name an hour folder of the first release ("00"-"23"), by name only.

    One pass in C over the listing (hours "21"-"23" sort after event names of the 2020s, so the
    least entry alone would not tell).
    """
    return not _HOURS.isdisjoint(entries)


def _hour_folder_in(day_path: str, entries: list[str]) -> bool:
    """Whether one of a day folder's hour-named entries is a real folder (a stray file named "00" is not one)."""
    for entry in _HOURS.intersection(entries):
        with suppress(OSError):
            if stat.S_ISDIR(os.lstat(os.path.join(day_path, entry)).st_mode):
                return True
    return False


def hour_folders(events_dir: str) -> list[str]:
    """The first release's hour folders (`<day>/<HH>`) still in an events folder, oldest first.

    No reader lists them: their events count only once moved into their day folder.
    """
    found: list[str] = []
    for day in days_if_listed(events_dir):  # unlistable: no hour folder found (a reader says why it reads nothing)
        try:
            with os.scandir(os.path.join(events_dir, day)) as entries:
                found.extend(f"{day}/{entry.name}" for entry in entries
                             if _is_hour(entry.name) and entry.is_dir(follow_symlinks=False))
        except OSError:
            continue
    return sorted(found)


def _same_bytes(first: str, second: str) -> bool:
    try:
        return read_event_file(first) == read_event_file(second)
    except OSError:
        return False


def real_folder(path: str) -> bool:
    """Whether `path` exists as a folder that is not a symlink (False when missing)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def refuse_link(path: str, *, note: str = " (nothing written)", passing: type[OSError] = FileNotFoundError) -> None:
    """StoreUnsafe when `path` exists as a symlink or as something other than a folder (`note` ends the line). A
    path whose `lstat` fails with `passing` passes (the store's own check passes any it cannot reach: `Store`)."""
    try:
        mode = os.lstat(path).st_mode
    except passing:
        return
    if stat.S_ISLNK(mode):
        raise StoreUnsafe(f"unsafe store: {path} is a symlink{note}")
    if not stat.S_ISDIR(mode):
        raise StoreUnsafe(f"unsafe store: {path} is not a folder{note}")


#: How a write refused over a newest event that is not what its name says ends its line.
WAY_BACK = ("move it out of the store and run `continuity sync` (a synced event comes back as it was written); see "
            "`continuity verify`")

# A file in `local/` that only a sync writes (continuity/sync/files.py): its presence says this store's events may have
# left it, so one deleted by hand may live on in other clones.
SYNC_MARKS = "sync.json"
HINT_NAME = "head"  # the head hint file in `local/`
LOST_WAY_BACK = ("run `continuity sync`: a synced event comes back as it was written, and one that never left this "
                 "store is let go; see docs/sync.md")


def forget_lost_head(events_dir: str, local_dir: str) -> bool:
    """Remove the head hint when the event it names is gone (sync calls this once it has written back what the
    branch holds: what is still missing then never left this store). True if it was removed."""
    path = os.path.join(local_dir, HINT_NAME)
    name = _hinted(path, completed=True)  # a pending hint: a writer between its links and its hint
    if name is None or os.path.lexists(os.path.join(events_dir, names.shard_of(name), name)):
        return False
    with suppress(FileNotFoundError):
        os.unlink(path)
    return True


def untrust_hint(local_dir: str) -> None:
    """Make the head hint untrusted (its day mtime 0) but keep the event it names: a writer lists the day folders
    again, and still knows the newest event this store wrote when it is gone (`DurableFolder._lost_head`)."""
    path = os.path.join(local_dir, HINT_NAME)
    try:
        fd = os.open(path, os.O_RDWR | osfs.CLOEXEC | osfs.NOFOLLOW | osfs.NONBLOCK)
    except OSError:
        return
    try:
        name, sha, recorded = osfs.pread(fd, 200, 0).decode().split()
        osfs.pwrite(fd, f"{name} {sha} {0:>{len(recorded)}}\n".encode(), 0)
    except (OSError, ValueError, UnicodeDecodeError):
        with suppress(OSError):
            os.unlink(path)
    finally:
        os.close(fd)


LANDED_NAME = "landed"  # in `local/`: rewritten after every landing of events that did not come through an append


def mark_landed(local_dir: str) -> bool:
    """Say that events landed in the log other than by an append (a sync's union): `local/landed` gets a new random
    token, overwritten in place (no fsync: it matters only to decisions in flight, which a crash ends).

    An append's head moves only when the new events sort last; a sync can land events that sort before it (another
    clone's, stamped earlier). A decision taken from a catch-up compares this token under the log's lock
    (continuity/readside/decided.py), so it is taken again after such a landing. Whatever else is found at its name
    (a symlink, a hard link, a FIFO, a folder: planted, or left by a tool) is replaced, never written through (a
    folder holding files is moved aside, to `landed.aside-<random>`): a token that cannot change would let a
    decision in flight through on the state before the landing. False when it cannot be written even so."""
    path = os.path.join(local_dir, LANDED_NAME)
    token = os.urandom(8).hex().encode() + b"\n"  # always 17 bytes: never a shorter tail left
    for flags in (os.O_CREAT, os.O_CREAT | os.O_EXCL):
        try:
            fd = os.open(path, os.O_WRONLY | flags | osfs.CLOEXEC | osfs.NOFOLLOW | osfs.NONBLOCK, 0o666)
        except OSError:
            fd = -1
        if fd >= 0:
            try:
                found = os.fstat(fd)
                if stat.S_ISREG(found.st_mode) and found.st_nlink == 1:
                    osfs.pwrite(fd, token, 0)
                    return True
            except OSError:
                return False
            finally:
                os.close(fd)
        try:  # not a file of ours: take it away, then make one (O_EXCL: nothing planted in between is opened)
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                os.unlink(path)
            else:
                try:
                    os.rmdir(path)
                except OSError:  # someone's files: kept, beside it
                    os.rename(path, f"{path}.aside-{os.urandom(4).hex()}")
        except OSError:
            return False
    return False


def landed_mark(local_dir: str) -> bytes | None:
    """The token `mark_landed` last wrote, or None (no landing yet, or unreadable: then a landing turns it into
    a token, which differs)."""
    try:
        return osfs.read_regular(os.path.join(local_dir, LANDED_NAME), follow=False, limit=64)
    except OSError:
        return None


_SHA = re.compile(r"[0-9a-f]{64}")


def _hinted(path: str, *, completed: bool = False) -> str | None:
    """The event name a head hint file holds (None when it holds none; with `completed`, also when it is pending)."""
    try:
        fd = os.open(path, osfs.READ)
    except OSError:
        return None
    try:
        name, sha, _ = osfs.pread(fd, 200, 0).decode().split()
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)
    if names.parse_name(name) is None or (completed and sha == "-" * 64):
        return None
    return name


def _newest_name(entries: list[str], day: str) -> str | None:
    """The greatest event name among a day folder's entries (parsing one name, not all of them).

    A name of another day (a file copied into the wrong folder) is not where the log keeps that
    event: the head is never taken from it (its path, from its name, leads elsewhere).
    """
    shaped = [entry for entry in entries if len(entry) == names.NAME_LENGTH and entry.startswith(day)]
    while shaped:
        name = max(shaped)
        if names.parse_name(name) is not None:
            return name
        shaped.remove(name)
    return None


class DurableFolder:
    """The writing half of the file log: lock, head, sweep, durable create, hint."""

    def __init__(self, events_dir: str | os.PathLike[str], local_dir: str | os.PathLike[str], *,
                 fs: FileOps | None = None) -> None:
        self.events_dir = os.fspath(events_dir)
        local = os.fspath(local_dir)
        self.local_dir = local
        self.tmp_dir = os.path.join(local, "tmp")
        self.lock_path = os.path.join(local, "lock")
        self.hint_path = os.path.join(local, HINT_NAME)
        self.fs = fs or FileOps()
        self._swept = False
        self.moved_from_hours = 0  # events of the first release's hour folders this object moved
        self.hours_left: str | None = None  # why a day listing left some of them unread (for a reader to warn)
        self._lock_fd: int | None = None
        self._hint_fd: int | None = None
        #: How long an append waits for the append lock (None: as long as it takes). A hook sets it: its harness
        #: kills it after a few seconds, and a holder stopped mid-append (Ctrl-Z) must not hold the agent up.
        self.lock_wait: float | None = None

    def now_limit(self, now_us: int, days: list[str] | None = None) -> str:
        """For a reader: the newest day folder that counts as now, with this machine's own node (`counts_as_now`)."""
        return counts_as_now(self.events_dir, now_us, own_node(self.local_dir), days)

    def early_days(self, now_us: int) -> list[str]:
        """The day folders past what counts as now: their events are stamped early, and wait."""
        days = list_days(self.events_dir)
        limit = self.now_limit(now_us, days)
        return [day for day in days if day > limit]

    def path_of(self, name: str) -> str:
        """Where the event file of this name lives."""
        return os.path.join(self.events_dir, names.shard_of(name), name)

    # -- writing ---------------------------------------------------------------------------
    @contextmanager
    def _locked(self, now_us: int | None = None, node: str | None = None) -> Iterator[Head | None]:
        # The lock and hint files stay open for the life of the log object: a writer that
        # appends in a loop saves two opens per event. The flock is released after each batch.
        if self._lock_fd is None:
            self._lock_fd = open_lock(self.lock_path)
        fd = self._lock_fd
        take_lock(fd, self.lock_wait, self.lock_path)
        try:
            try:
                if not self._swept:
                    self._sweep()
                    self._swept = True
                head = self._head_locked(now_us, node)
            except OSError as error:  # a day folder that cannot be listed (EACCES, EIO): nothing is written
                if not os.path.isdir(os.path.dirname(self.events_dir)):  # moved away since this log took its lock
                    raise WriteFailed(gone(os.path.dirname(self.events_dir))) from None
                raise _write_failed(error) from None
            yield head
        finally:
            osfs.unlock(fd)

    def adopt_hour_folders(self) -> tuple[int, list[str]]:
        """Move the events the first release wrote under `<day>/<HH>/` into their day folder, under the lock.

        Returns how many moved and the hour folders that keep files (a name that is no event
        of that day, no regular file, or one whose day folder holds other bytes under it:
        `verify` names them).
        """
        before = self.moved_from_hours
        with self._locked():  # the lock's own head lookup may adopt them first
            _, kept = self._adopt_hours()
        return self.moved_from_hours - before, kept

    def day_entries(self, day_path: str) -> list[str]:
        """A day folder's entries (unsorted), once the first release's hour folders are moved into their days.

        A store that cannot be written keeps them: `hours_left` then says so, for the reader to
        warn (`verify` names what stays unread). The folder is listed again even after a failed
        move, so the events linked before it are read.
        """
        entries = os.listdir(day_path)
        if holds_hours(entries) and _hour_folder_in(day_path, entries):
            try:
                _, kept = self.adopt_hour_folders()
            except ContinuityError as error:
                self.hours_left = self.hours_left or hours_left_warning([], error)
            else:
                self.hours_left = self.hours_left or (hours_left_warning(kept) if kept else None)
            entries = os.listdir(day_path)
        return entries

    def _adopt_hours(self) -> tuple[int, list[str]]:
        # Each event is linked to its day-folder name (never overwriting), the day folder is
        # made durable, and only then the hour copy is unlinked: the bytes and the name stay,
        # only the folder changes, so the hash chain and every id are untouched.
        moved, kept = 0, []
        try:
            for folder in hour_folders(self.events_dir):
                day = folder.split("/")[0]
                hour_path = os.path.join(self.events_dir, folder)
                linked, fresh = [], 0
                for name in sorted(os.listdir(hour_path)):
                    source, target = os.path.join(hour_path, name), os.path.join(self.events_dir, day, name)
                    if (names.parse_name(name) is None or names.shard_of(name) != day
                            or not stat.S_ISREG(os.lstat(source).st_mode)):  # a planted link stays unread
                        continue
                    try:
                        self.fs.link(source, target)
                        fresh += 1
                    except FileExistsError:  # a move stopped before its unlinks, or an hour copy that stays
                        if not _same_bytes(source, target):
                            continue
                    linked.append(source)
                if linked:
                    self._fsync_dir(os.path.join(self.events_dir, day))
                for source in linked:
                    # The event is durable in its day folder now: a copy that cannot be removed only
                    # keeps its hour folder (named below, retried by the next move), never fails a write.
                    with suppress(OSError):
                        os.unlink(source)
                moved += fresh  # an event already in its day folder is not moved again
                try:
                    os.rmdir(hour_path)
                except OSError:
                    kept.append(folder)
        except OSError as error:
            raise _write_failed(error) from None
        self.moved_from_hours += moved
        return moved, kept

    def close(self) -> None:
        """Close the lock and hint files (reopened on the next append)."""
        for attribute in ("_lock_fd", "_hint_fd"):
            fd = getattr(self, attribute, None)
            if fd is not None:
                with suppress(OSError):
                    os.close(fd)
                setattr(self, attribute, None)

    def __del__(self) -> None:
        self.close()

    def _sweep(self) -> None:
        """Remove temp files left by writers that died (once per log object, under the lock)."""
        refuse_link(self.tmp_dir)
        try:
            entries = os.listdir(self.tmp_dir)
        except FileNotFoundError:
            with suppress(FileExistsError):  # local/ is there (the lock was taken in it): tmp/ alone is made
                os.mkdir(self.tmp_dir)
            return
        for entry in entries:
            with suppress(OSError):
                os.unlink(os.path.join(self.tmp_dir, entry))

    def _head_locked(self, now_us: int | None = None, node: str | None = None) -> Head | None:
        """The head new events follow: the newest event that counts as now for the clock reading `now_us` and the
        writing `node` (`counts_as_now`; any, when `now_us` is None)."""
        days = list_days(self.events_dir)
        limit = None if now_us is None else counts_as_now(self.events_dir, now_us, node, days)
        hinted = self._head_from_hint(limit, days)
        if hinted is not None:
            return hinted
        found = self._newest(adopt=True, limit=limit)
        lost = self._lost_head(found, limit)
        if lost is not None:
            # deleted by hand after this store wrote it: a new event would follow an older one, two children of one
            # parent under one node, which `verify` names a forgery in every clone that holds both, for good
            raise StoreUnsafe(f"the newest event this store wrote, events/{names.shard_of(lost)}/{lost}, is gone "
                              f"(deleted?): nothing was written; {LOST_WAY_BACK}")
        if found is None:
            return None
        try:
            raw = read_event_file(self.path_of(found))
        except FileNotFoundError:
            raise
        except PermissionError as error:  # an event all the same (a teammate's, made under a strict umask): kept
            raise WriteFailed(f"event not written: the newest event events/{names.shard_of(found)}/{found} cannot "
                              f"be read by this user ({error.strerror or error}): its owner can give read access "
                              "(`chmod a+r` it); do not move it out of the store, it is an event") from None
        except OSError as error:  # something planted under an event's name: no event can chain to it
            raise StoreUnsafe(f"the newest event {found} cannot be read ({error.strerror or error}): nothing "
                              f"was written; {WAY_BACK}") from None
        head = head_of(found, raw)
        parsed = names.parse_name(found)
        if parsed is None or head.sha256[:names.HASH_CHARS] != parsed.hash12:
            # edited by hand (`sed -i`, an editor saving by rename): a new event chained to these bytes would name a
            # parent no clone holds once the original comes back, and `verify` would fail everywhere for good
            raise StoreUnsafe(f"the newest event {found} does not match the hash in its name (edited?): nothing was "
                              f"written; {WAY_BACK}")
        return head

    def _lost_head(self, found: str | None, limit: str | None) -> str | None:
        """The event the hint names, when it is gone, newer than `found` and may have left this store by a sync.

        Only a completed hint counts (a pending one may name an event never linked), read by its path (a sync that
        forgot it unlinked the file this object may still hold open). In a store that never synced (no SYNC_MARKS)
        a deleted event never left it, and no clone can hold a sibling of the next one: nothing to refuse.
        """
        name = _hinted(self.hint_path, completed=True)
        if name is None or (found is not None and name <= found):
            return None
        if (limit is not None and names.shard_of(name) > limit) or os.path.lexists(self.path_of(name)):
            return None
        return name if os.path.lexists(os.path.join(self.local_dir, SYNC_MARKS)) else None

    def _head_from_hint(self, limit: str | None = None, days: list[str] | None = None) -> Head | None:
        """The head as the last writer recorded it, if nothing changed since (else None).

        The hint holds the head's name, SHA-256 and its day folder's mtime after the link.
        It is trusted only if that folder's mtime is unchanged (no file added since, by us
        or by a git checkout) and no newer day exists; otherwise the folder is listed. A
        writer marks the hint pending before it links, so one killed mid-append leaves a
        hint nobody trusts.
        """
        try:
            raw = osfs.pread(self._hint_file(), 200, 0)
        except OSError:
            return None
        head = self._trusted(raw, days, limit=limit)
        if head is None:
            return None
        try:  # one small file read: a damaged name or SHA in the hint would be a parent no event is, for good
            if sha256_hex(read_event_file(self.path_of(head.name))) != head.sha256:
                return None
        except OSError:
            return None
        return head

    def head_hint(self, days: list[str] | None = None, mtime: Callable[[str], int] | None = None) -> Head | None:
        """The head as the last local append recorded it, if nothing changed since (else None).

        The reader's form of the writers' hint check: the hint file is only read, never
        created. Catch-up uses it to know the newest day folder unchanged without listing it,
        and passes the day folders and their mtimes it has already taken.
        """
        try:
            fd = os.open(self.hint_path, osfs.READ)
        except OSError:
            return None
        try:
            raw = osfs.pread(fd, 200, 0)
        except OSError:
            return None
        finally:
            os.close(fd)
        head = self._trusted(raw, days, mtime)
        if head is None or not os.path.lexists(self.path_of(head.name)):
            return None  # a name damaged in the hint (a time no event has): not the newest day's state
        return head

    def _trusted(
        self, raw: bytes, days: list[str] | None = None, mtime: Callable[[str], int] | None = None,
        limit: str | None = None,
    ) -> Head | None:
        """The head a hint's bytes name, if its day folder is unchanged and still the newest (up to `limit`)."""
        try:
            name, sha, recorded = raw.decode().split()
            day = names.shard_of(name)
            now = mtime(day) if mtime is not None else os.stat(os.path.join(self.events_dir, day)).st_mtime_ns
            if now != int(recorded):
                return None
            listed = days if days is not None else list_days(self.events_dir)
            if limit is not None:
                listed = listed[:bisect.bisect_right(listed, limit)]
            if listed[-1] != day:
                return None
            parsed = names.parse_name(name)
        except (OSError, ValueError, IndexError, UnicodeDecodeError):
            return None
        if parsed is None or not _SHA.fullmatch(sha) or sha[:names.HASH_CHARS] != parsed.hash12:
            return None  # pending ("-" * 64), or damaged: a new event would name a parent of bytes no event has
        return Head(name, sha, clock.parse_stamp(parsed.stamp))

    def _write_hint(self, name: str, sha: str, mtime_ns: int) -> None:
        """Record the head for the next writer; a lost hint only costs a folder listing."""
        # Fixed width and overwritten in place: truncating a file that was just written
        # makes ext4 flush it (auto_da_alloc), which would cost more than the append.
        with suppress(OSError):
            osfs.pwrite(self._hint_file(), f"{name} {sha} {mtime_ns:>20}\n".encode(), 0)

    def _hint_file(self) -> int:
        if self._hint_fd is None:
            self._hint_fd = _open_local(self.hint_path)
        elif os.fstat(self._hint_fd).st_nlink == 0:  # a sync removed it since: a hint nobody else would read
            os.close(self._hint_fd)
            self._hint_fd = None
            return self._hint_file()
        return self._hint_fd

    def _newest(self, *, adopt: bool = False, limit: str | None = None) -> str | None:
        """The newest event's name (in a day folder up to `limit`, when given); with `adopt` (under the lock), hour
        folders met on the way are adopted first."""
        for day in reversed(list_days(self.events_dir)):
            if limit is not None and day > limit:
                continue
            day_path = os.path.join(self.events_dir, day)
            entries = os.listdir(day_path)
            if adopt and holds_hours(entries) and _hour_folder_in(day_path, entries):
                moved, _ = self._adopt_hours()
                if moved:  # the first release's events chain before anything new: look again
                    return self._newest(limit=limit)
            name = _newest_name(entries, day)
            if name is not None:
                return name
        return None

    def _write(self, batch: list[S]) -> None:
        pid = os.getpid()
        temps: list[str] = []
        finals: list[str] = []
        try:
            for stored in batch:
                temp = os.path.join(self.tmp_dir, f"{stored.name}.{pid}.tmp")
                temps.append(temp)
                self._write_file(temp, stored.raw)
            shards = {self._ensure_shard(stored.name): None for stored in batch}
            # Mark the hint pending first: a writer killed between its links and the final
            # hint must not leave a hint the next writer trusts (mtime ticks can be coarse).
            self._write_hint(batch[-1].name, "-" * 64, 0)
            for temp, stored in zip(temps, batch, strict=True):
                final = self.path_of(stored.name)
                try:
                    self.fs.link(temp, final)
                except FileExistsError:
                    raise EventExists(f"event not written: {stored.name} already exists") from None
                finals.append(final)
            for shard in shards:
                self._fsync_dir(shard)
            last = batch[-1]
            mtime_ns = os.stat(os.path.dirname(self.path_of(last.name))).st_mtime_ns
            self._write_hint(last.name, sha256_hex(last.raw), mtime_ns)
        except OSError as error:
            self._undo(finals)
            if not os.path.isdir(os.path.dirname(self.events_dir)):  # moved away since this log took its lock
                raise WriteFailed(gone(os.path.dirname(self.events_dir))) from None
            raise _write_failed(error) from None
        except WriteFailed:
            self._undo(finals)
            raise
        finally:
            for temp in temps:
                with suppress(OSError):
                    os.unlink(temp)

    def _write_file(self, path: str, data: bytes) -> None:
        fd = self.fs.open(path, osfs.CREATE_NEW, 0o444)
        try:
            view = memoryview(data)
            while view:
                written = self.fs.write(fd, view)
                if written <= 0:
                    raise OSError(errno.EIO, "write made no progress")
                view = view[written:]
            self.fs.fsync(fd)
        finally:
            os.close(fd)

    def _ensure_shard(self, name: str) -> str:
        path = os.path.join(self.events_dir, names.shard_of(name))
        if real_folder(path):
            return path
        refuse_link(path)
        try:  # events/ again where a user removed it, never the store around it: a store moved away stays gone
            os.mkdir(self.events_dir)
        except FileExistsError:
            pass
        except FileNotFoundError:
            raise WriteFailed(gone(os.path.dirname(self.events_dir))) from None
        try:
            self.fs.mkdir(path)
        except FileExistsError:
            refuse_link(path)
            return path
        self._fsync_dir(self.events_dir)
        return path

    def _fsync_dir(self, path: str) -> None:
        osfs.fsync_dir(path, self.fs.fsync)

    def _undo(self, finals: list[str]) -> None:
        """Take back the links of a batch that failed, so no part of it stays visible."""
        for final in finals:
            with suppress(OSError):
                os.unlink(final)


def hours_left_warning(kept: list[str], error: Exception | None = None) -> str:
    """The warning of a read that leaves files of the first release's hour folders unread (`kept`, or a failed move)."""
    if error is not None:
        return f"events under events/<day>/<HH>/ (the first release's layout) are not read: {error}"
    return f"events/{kept[0]}/ holds files that are not read (the first release's layout; see `continuity verify`)"


def _open_local(path: str) -> int:
    """A lock or hint file in `local/`, opened (made, with its folder, when missing); O_NOFOLLOW: one replaced by a
    symlink is refused, not followed."""
    try:
        return os.open(path, osfs.UPDATE, 0o666)
    except FileNotFoundError:
        folder = os.path.dirname(path)
        try:  # local/ again (machine-local, rebuildable), never the store around it: a store moved away stays gone
            os.mkdir(folder)
        except FileExistsError:
            pass
        except FileNotFoundError:
            raise WriteFailed(gone(os.path.dirname(folder))) from None
        return os.open(path, osfs.UPDATE, 0o666)


def open_lock(path: str) -> int:
    """The append lock file (`local/lock`), opened to be locked: StoreUnsafe when a link, a FIFO or a folder stands
    there, WriteFailed when it cannot be opened."""
    try:
        return _open_local(path)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENXIO, errno.ENOTDIR, errno.EISDIR):  # a link, FIFO, folder
            raise StoreUnsafe(f"unsafe store: {path} is not a regular file (a symlink, a folder or a FIFO planted "
                              "there); nothing written") from None
        raise _write_failed(error) from None


def take_lock(fd: int, wait: float | None, path: str) -> None:
    """Take the append lock on `fd`: as long as it takes (`wait` None), or within `wait` seconds, else WriteFailed
    (a hook's: a holder stopped mid-append must not hold the agent up)."""
    if wait is None:
        osfs.lock(fd)
    elif not osfs.lock_within(fd, wait):
        raise WriteFailed(f"event not written: another process has held the append lock ({path}) for {wait:g} s")


def gone(store: str) -> str:
    """What an append says when the store it was opened on is no longer there."""
    return f"event not written: the store is gone ({store} is not there: moved or removed)"


def _write_failed(error: OSError) -> WriteFailed:
    reason = error.strerror or str(error)
    if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        reason = f"store is not writable ({reason})"
    where = error.filename  # which file or folder: in a store shared by a group, one a teammate's umask made private
    if isinstance(where, (str, bytes)):
        reason = f"{reason}: {os.fsdecode(where)}"
    return WriteFailed(f"event not written: {reason}")
