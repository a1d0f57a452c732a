"""The file-system calls that differ between POSIX and Windows, in one place.

Everything else in continuity writes through these: whole-file locks, hard links that never
replace, fsync of a folder, positional reads and writes, and the open flags. POSIX is the
platform tested here; the Windows branch follows the documented semantics of the Microsoft
C runtime and is kept beside the POSIX one so the two cannot drift apart unnoticed:

- Locks: POSIX `flock` (shared or exclusive, released with the descriptor). Windows
  `msvcrt.locking` on the first byte, exclusive only (a shared request takes the exclusive
  lock: readers of a model wait for each other there, which costs time, never safety).
  `LK_LOCK` gives up after about ten seconds, so the Windows branch retries until it holds.
- Links: `os.link` on both (NTFS has hard links); it fails rather than replace a file.
- Folder fsync: POSIX opens the folder and fsyncs it, which makes a new name durable.
  Windows cannot open a folder with `os.open` and NTFS journals names itself: a no-op.
- Positional I/O: `os.pread`/`os.pwrite` on POSIX; a seek then read/write on Windows (the
  descriptor is never shared between threads there).
- Open elsewhere: whether a file is open in another process, for a writer that reuses a
  file (core/fsio.write_swapped). Linux tells by granting a write lease only to the one
  open file there is; elsewhere the answer is "cannot tell", and the writer makes a new file.
- Flags: `O_NOFOLLOW`, `O_CLOEXEC` and `O_DIRECTORY` do not exist on Windows (symlinks are
  refused there by the `lstat` checks every writer makes first); `O_BINARY` is set there, or
  Windows would translate line ends.

Standard library only: the plain append path (events/plain.py) imports this module.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress

WINDOWS = sys.platform == "win32"

CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
BINARY: int = getattr(os, "O_BINARY", 0)
NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)

#: Open an existing file to read; a symlink is refused where the platform can say so, and a FIFO
#: planted where a file belongs does not block the open (O_NONBLOCK changes nothing for a regular file).
READ = os.O_RDONLY | CLOEXEC | NOFOLLOW | BINARY | NONBLOCK
#: Open or create a file to read and write in place (locks, hints, saved models).
UPDATE = os.O_RDWR | os.O_CREAT | CLOEXEC | NOFOLLOW | BINARY
#: Create a new file, truncating any old one (temp files that are renamed or linked into place).
CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | CLOEXEC | NOFOLLOW | BINARY
#: Create a file that must not exist yet.
CREATE_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | CLOEXEC | NOFOLLOW | BINARY
#: Append to a file, creating it when missing.
APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | CLOEXEC | NOFOLLOW | BINARY

if WINDOWS:  # pragma: no cover - exercised through tests/unit/test_osfs.py's stand-in only
    import msvcrt

    #: What LK_LOCK raises when the lock stays held through its retries (the C runtime's EDEADLOCK).
    _EDEADLOCK = 36

    def lock(fd: int, *, shared: bool = False) -> None:
        """Block until this process holds the lock on `fd` (exclusive on Windows)."""
        del shared
        while True:
            os.lseek(fd, 0, os.SEEK_SET)
            try:
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined,unused-ignore]
                return
            except OSError as error:  # LK_LOCK gave up after its ten tries: keep waiting, like flock
                if error.errno != _EDEADLOCK:
                    raise  # not a held lock (a bad descriptor, no access): waiting would spin forever

    def unlock(fd: int) -> None:
        """Release the lock on `fd` (closing the descriptor releases it too)."""
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined,unused-ignore]

    def try_lock(fd: int, *, shared: bool = False) -> bool:
        """Take the lock on `fd` if it is free (exclusive on Windows); whether this process holds it now."""
        del shared
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined,unused-ignore]
        except OSError as error:
            if error.errno in (errno.EACCES, _EDEADLOCK):  # held by another
                return False
            raise
        return True

    def fsync_dir(path: str, fsync: Callable[[int], None] = os.fsync) -> None:
        """Make the names in a folder durable (NTFS journals them: nothing to do)."""
        del path, fsync

    def pread(fd: int, size: int, offset: int) -> bytes:
        """Read up to `size` bytes at `offset`."""
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, size)

    def pwrite(fd: int, data: bytes, offset: int) -> int:
        """Write `data` at `offset`; returns how much was written."""
        os.lseek(fd, offset, os.SEEK_SET)
        return os.write(fd, data)

    #: Whether `open_nowhere_else` can answer here.
    LEASES = False

    def open_nowhere_else(fd: int) -> bool:
        """Whether `fd`'s file is open in no other process: not told here."""
        del fd
        return False

    def open_folder_lock(folder: str) -> int:
        """A descriptor to lock `folder` by (its `.lock` file: folders cannot be opened); the caller closes it."""
        return os.open(os.path.join(folder, ".lock"), UPDATE, 0o666)

    @contextmanager
    def folder_lock(folder: str, seconds: float | None = None) -> Iterator[None]:
        """Hold an exclusive lock named after `folder` (a `.lock` file in it: folders cannot be opened); waiting
        at most `seconds` (then OSError) when given."""
        fd = os.open(os.path.join(folder, ".lock"), UPDATE, 0o666)
        try:
            if seconds is None:
                lock(fd)
            elif not lock_within(fd, seconds):
                raise OSError(errno.EWOULDBLOCK, f"{folder} is locked by another process")
            yield
        finally:
            release(fd)

else:
    import fcntl

    def lock(fd: int, *, shared: bool = False) -> None:
        """Block until this process holds the lock on `fd` (shared or exclusive)."""
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)

    def unlock(fd: int) -> None:
        """Release the lock on `fd` (closing the descriptor releases it too)."""
        fcntl.flock(fd, fcntl.LOCK_UN)

    def try_lock(fd: int, *, shared: bool = False) -> bool:
        """Take the lock on `fd` (shared or exclusive) if it is free; whether this process holds it now."""
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def fsync_dir(path: str, fsync: Callable[[int], None] = os.fsync) -> None:
        """Make the names in a folder durable: fsync the folder itself (`fsync`: tests inject faults)."""
        fd = os.open(path, os.O_RDONLY | DIRECTORY | CLOEXEC)
        try:
            fsync(fd)
        finally:
            os.close(fd)

    def pread(fd: int, size: int, offset: int) -> bytes:
        """Read up to `size` bytes at `offset`."""
        return os.pread(fd, size, offset)

    def pwrite(fd: int, data: bytes, offset: int) -> int:
        """Write `data` at `offset`; returns how much was written."""
        return os.pwrite(fd, data, offset)

    #: Whether `open_nowhere_else` can answer here (Linux; a file system without leases still answers False).
    LEASES = hasattr(fcntl, "F_SETLEASE") and hasattr(fcntl, "F_SETSIG")

    def open_nowhere_else(fd: int) -> bool:
        """Whether `fd` (open to write) is the only open file of its file in any process: Linux grants a write
        lease only then, and it is let go at once. False where that cannot be told (no leases on this system or
        file system, or a file of another user's)."""
        # An open of the file in the instant the lease is held sends its holder a signal: SIGIO by default, which
        # would end this process; SIGURG is ignored unless a handler is set (`_signal` is loaded at start, where
        # `signal` would import enum).
        urgent = getattr(sys.modules.get("_signal"), "SIGURG", None)
        if not LEASES or urgent is None:
            return False
        try:
            fcntl.fcntl(fd, fcntl.F_SETSIG, urgent)
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
        except OSError:  # EAGAIN: open elsewhere; EINVAL, EACCES: cannot be told here
            return False
        with suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        return True

    def open_folder_lock(folder: str) -> int:
        """A descriptor to lock `folder` by (the folder itself: nothing is made in it); the caller closes it."""
        return os.open(folder, os.O_RDONLY | DIRECTORY | CLOEXEC | NOFOLLOW)

    @contextmanager
    def folder_lock(folder: str, seconds: float | None = None) -> Iterator[None]:
        """Hold an exclusive `flock` on the folder itself; waiting at most `seconds` (then OSError) when given."""
        fd = os.open(folder, os.O_RDONLY | DIRECTORY | CLOEXEC)
        try:
            if seconds is None:
                lock(fd)
            elif not lock_within(fd, seconds):
                raise OSError(errno.EWOULDBLOCK, f"{folder} is locked by another process")
            yield
        finally:
            release(fd)


def release(fd: int) -> None:
    """Unlock `fd`, then close it. A close alone leaves a `flock` held while a copy of the descriptor lives: a
    process forked while this one held the lock (a Python API caller's) kept it until it exited, and every other
    process, this one included, waited out its timeouts meanwhile."""
    import contextlib

    with contextlib.suppress(OSError):  # not locked (a wait that gave up), or a Windows range not locked
        unlock(fd)
    os.close(fd)


def lock_within(fd: int, seconds: float, *, shared: bool = False) -> bool:
    """Take the lock on `fd` within `seconds` (polling, pauses growing to 50 ms); whether this process holds it.

    For the waits that must end: a holder stopped mid-write (Ctrl-Z, a hung mount) would otherwise hold up
    every session start behind it."""
    import time

    deadline, pause = time.monotonic() + seconds, 0.001
    while not try_lock(fd, shared=shared):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.05)
    return True


#: What `read_regular` reads at most unless told otherwise: every file it serves is one of ours or git's
#: small ones, and a planted huge (or sparse) file must cost an error, not the machine's memory.
DEFAULT_LIMIT = 64 << 20
#: A pointer file's bound: git's `.git` file, HEAD, `commondir` and loose refs, a store's node id, a mark.
SMALL_LIMIT = 4096


def read_regular(path: str | os.PathLike[str], *, follow: bool = True, limit: int | None = DEFAULT_LIMIT) -> bytes:
    """The bytes of a regular file, opened without blocking (OSError when it is anything else).

    A FIFO, a device or a folder where a store file belongs (planted, or a symlink to
    /dev/zero) is refused at once instead of blocking or being read without end; `follow`
    False refuses a symlink too; `limit` refuses a bigger file before reading it (EFBIG;
    None: no limit). Reads of a regular file are one call of the size fstat gave (more only
    if it grew).
    """
    fd = os.open(path, READ if not follow else os.O_RDONLY | CLOEXEC | BINARY | NONBLOCK)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder", os.fspath(path))
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        if limit is not None and info.st_size > limit:
            raise OSError(errno.EFBIG, f"{info.st_size} bytes, more than expected", os.fspath(path))
        raw = os.read(fd, info.st_size + 1)
        if len(raw) > info.st_size:
            chunks = [raw]
            total = len(raw)
            while limit is None or total <= limit:
                chunk = os.read(fd, (limit + 1 - total) if limit is not None else 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            raw = b"".join(chunks)
    finally:
        os.close(fd)
    if limit is not None and len(raw) > limit:
        raise OSError(errno.EFBIG, "more than expected", os.fspath(path))
    return raw


def open_append(path: str | os.PathLike[str], mode: int = 0o666, *, readable: bool = False) -> int:
    """A descriptor appending to a regular file (made when missing), opened without blocking (`readable`: and
    reading it, with `os.pread`).

    A FIFO planted where a log or an outbox belongs fails at once (ENXIO with no reader, else
    EINVAL "not a regular file") instead of blocking the writer, and a symlink is refused.
    """
    flags = (APPEND & ~os.O_WRONLY) | os.O_RDWR if readable else APPEND
    fd = os.open(path, flags | NONBLOCK, mode)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def mtimes_in(folder: str, names: Iterable[str]) -> dict[str, int]:
    """The mtime (ns) of each of the entries `names` of `folder` that can be stat'ed (following a symlink, as
    `os.stat`), named through one descriptor of the folder: each name is resolved there, not the whole path again
    (a catch-up stats every day folder of the log: half the time). By path where the platform cannot name a file
    through a folder's descriptor (Windows) or the folder cannot be opened so (a link: os.stat follows it)."""
    fd = None
    if os.stat in os.supports_dir_fd:
        with suppress(OSError):
            fd = os.open(folder, os.O_RDONLY | CLOEXEC | DIRECTORY | NOFOLLOW)
    found: dict[str, int] = {}
    try:
        for name in names:
            try:
                info = os.stat(name, dir_fd=fd) if fd is not None else os.stat(os.path.join(folder, name))
            except OSError:
                continue
            found[name] = info.st_mtime_ns
    finally:
        if fd is not None:
            os.close(fd)
    return found


def link(source: str, target: str) -> None:
    """Give `source` a second name `target`; fails with FileExistsError rather than replace a file."""
    os.link(source, target, follow_symlinks=False)  # a name swapped for a link is linked as the link (never read)
