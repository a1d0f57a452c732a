"""The one atomic writer, and the small file helpers built on it.

Paths are plain strings: this module is on the hook path (the node id is written with it).
"""

from __future__ import annotations

import contextlib
import errno
import os

from events import osfs

TYPE_CHECKING = False
if TYPE_CHECKING:  # on the hook path: `typing` costs its start a few ms
    from collections.abc import Iterator
    from typing import Any


@contextlib.contextmanager
def folder_locked(folder: str, seconds: float | None = None) -> Iterator[bool]:
    """Hold an exclusive lock on `folder` while a "newest" document in it is compared and replaced.

    Fails open: a folder that cannot be locked (missing, or a file system without locks), or whose
    lock another process holds past `seconds` (when given), is written without it. Never nest two
    of these on one folder in a process: the second waits for the first forever (or `seconds`).
    """
    with contextlib.ExitStack() as stack:
        held = False
        with contextlib.suppress(OSError):
            stack.enter_context(osfs.folder_lock(folder, seconds))
            held = True
        yield held


#: How long a catch-up waits for the lock of a folder it writes a derived document in. Its holders hold it for a
#: compare and a rename (milliseconds): one that holds it longer is stopped (Ctrl-Z, a hung mount), and a session
#: start must not wait for it. The document is written without the lock then (a later catch-up fixes its order).
DOCUMENT_LOCK_SECONDS = 2.0


def ensure_folder(base: str, folder: str) -> None:
    """Make `folder` exist as real folders below `base`, refusing any symlink or file on the way.

    `base` and every folder from it down are checked with lstat, so a write never leaves
    the store through a link planted inside it (StoreUnsafe, exit 6).
    """
    relative = relative_folder(base, folder)
    if relative == ".." or relative.startswith(".." + os.sep):
        from events.errors import StoreUnsafe

        raise StoreUnsafe(f"unsafe store: {folder} is outside {base} (nothing written)")
    path = base
    _real_folder(path, make=False)
    for part in ([] if relative == "." else relative.split(os.sep)):
        path = os.path.join(path, part)
        _real_folder(path, make=True)


def check_folder(base: str, folder: str) -> None:
    """Refuse (StoreUnsafe, exit 6) a symlink or file on the way from `base` down to `folder`; make nothing.

    For reads of a file the program then removes (the default checkpoint document): a missing
    folder is fine (the read finds nothing), a link planted on the way is not followed.
    """
    relative = relative_folder(base, folder)
    path = base
    for part in ([] if relative == "." else relative.split(os.sep)):
        path = os.path.join(path, part)
        try:
            _real_folder(path, make=False)
        except FileNotFoundError:
            return


def relative_folder(base: str, folder: str) -> str:
    """`os.path.relpath(folder, base)`, without its normalizing in the common case (every derived write asks)."""
    if folder == base:
        return "."
    sep = os.sep
    if (folder.startswith(base + sep) and sep + "." not in folder[len(base):] and sep * 2 not in folder
            and not folder.endswith(sep) and not base.endswith(sep)):
        return folder[len(base) + 1:]
    return os.path.relpath(folder, base)


def project_file(root: str, path: str) -> str | None:
    """Where `path` (relative to the project, or absolute) really is, if inside the project; None otherwise.

    Paths come from events, which any writer or a synced teammate may have written: a view
    reads a file only when it resolves, symlinks followed, inside the project root. A path
    that leads elsewhere (`/home/...`, `../x`, a link out) is never opened or even looked up,
    so no view reveals what lies outside the project, or records it in `context.served`.
    """
    top = os.path.realpath(root)
    full = os.path.realpath(os.path.join(top, path))
    return full if full == top or full.startswith(top.rstrip(os.sep) + os.sep) else None


def _real_folder(path: str, *, make: bool) -> None:
    import stat

    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        if not make:
            raise
        try:
            os.mkdir(path)
            return
        except FileExistsError:  # another process made it since the lstat: check what it made
            mode = os.lstat(path).st_mode
    if stat.S_ISDIR(mode):
        return
    from events.errors import StoreUnsafe

    what = "a symlink" if stat.S_ISLNK(mode) else "not a folder"
    raise StoreUnsafe(f"unsafe store: {path} is {what} (nothing written)")


def write_atomic(
    path: str | os.PathLike[str], data: bytes, *, durable: bool = True, keep_mode: bool = False,
    follow_symlink: bool = False, make_parents: bool = False, within: str | None = None, mode: int = 0o666,
    sweep: bool = False,
) -> None:
    """Write a file whole or not at all: a temp file in the same folder, then rename.

    `durable` fsyncs the data first. Derived files skip it: after a power cut one may be
    empty or old, and the next read rebuilds it from the log, which is durable.
    `mode` is a new file's permissions; `keep_mode` keeps an existing file's instead (and its owner, when root
    writes another user's file);
    `follow_symlink` replaces a symlink's target instead of the link; `within` (the store's
    folder) makes the parents as real folders and refuses any symlink between it and the file.
    The temp file is removed on every failure path; one a killed writer left is removed by `sweep` (for
    files outside the store, which no `rebuild` sweeps).
    """
    path = os.fspath(path)
    if follow_symlink:
        path = os.path.realpath(path)
    folder = os.path.dirname(path)
    if within is not None:
        ensure_folder(within, folder)
    elif make_parents and folder:
        os.makedirs(folder, exist_ok=True)
    owner = None
    kept = False  # an existing file's mode was read: given to the new one (else the umask applies, as to any file)
    if keep_mode:
        with contextlib.suppress(FileNotFoundError):
            found = os.stat(path)
            mode, kept = found.st_mode & 0o7777, True
            # root writing another user's file (`sudo continuity install`) gives it back to that user: replaced by a
            # file of root's, a 0600 settings file could no longer be read by its owner
            if os.geteuid() == 0 and (found.st_uid, found.st_gid) != (0, 0):
                owner = (found.st_uid, found.st_gid)
    if sweep:
        import time

        from continuity.core.leftovers import remove_temps_of

        remove_temps_of(path, time.time())
    temp = os.path.join(folder, f".{temp_stem(os.path.basename(path))}.{os.getpid()}.tmp")
    try:
        fd = os.open(temp, osfs.CREATE, mode)
    except OSError as error:  # the file it was writing is named, unless the temp's own name is in the way
        if error.errno in (errno.EEXIST, errno.EISDIR, errno.ELOOP):
            raise
        if error.errno == errno.ENOENT and os.path.isdir(folder or "."):  # /proc, /sys: the folder is there
            raise OSError(error.errno, "this folder takes no new files", path) from None
        raise OSError(error.errno, error.strerror, path) from None
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
            if owner is not None:
                try:
                    os.fchown(fd, *owner)
                except OSError as error:  # best effort: an owner a user namespace's root cannot give (unmapped)
                    if error.errno not in (errno.EPERM, errno.EINVAL):
                        raise
            if kept:  # a new file keeps the umask's mode: fchmod(0o666) made every file install made world-writable
                os.fchmod(fd, mode)
        except OSError as error:  # a full disk names the file it could not write (no error of stdout's)
            raise OSError(error.errno, error.strerror, path) from None
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


#: How the names `write_swapped` keeps beside a file end (`.<name><suffix>`; the store's .gitignore has `*.tmp`).
SPARE_SUFFIXES = (".spare.tmp", ".prior.tmp")


def spare_names(path: str) -> tuple[str, str]:
    """The spare file `write_swapped` keeps beside `path`, and the name the current file is kept under meanwhile."""
    folder, name = os.path.split(path)
    spare, prior = (os.path.join(folder, f".{temp_stem(name)}{suffix}") for suffix in SPARE_SUFFIXES)
    return spare, prior


def write_swapped(path: str, data: bytes) -> None:
    """Replace `path` as `write_atomic` does (a reader opening it finds the old bytes or the new, whole), reusing
    the file it replaces for the next write instead of making a new file and freeing the old one.

    For the documents every catch-up rewrites (state.json, projects.json): a new file per write and the rename
    over the old one cost about 0.4 ms of a catch-up on ext4 (the new file's blocks allocated and flushed at the
    rename, the old file's freed). Here the next bytes go into a spare file in place, the current file is kept
    under a second name by a hard link, the spare is renamed over the current, and the kept file becomes the next
    spare. Only for a derived file, with the caller holding the folder's lock (two writers would share the spare),
    inside a folder already checked. The spare is written only when no process has it open (osfs.open_nowhere_else):
    a reader that opened the document before it was replaced keeps reading those bytes, never the next ones. It
    gets the mode a new file of this process would (the umask's). Like any derived file written without fsync,
    after a power cut the file may hold an older version or a mix of two (the next catch-up or `rebuild` writes it
    again). Where a spare cannot be used it is `write_atomic`: no leases (Windows, macOS, a file system without
    them) or no hard links; a link, a FIFO, a folder or a file with a second name at the spare's name; a spare
    another process has open or holds a lease on, or that is another user's.
    """
    spare, prior = spare_names(path)
    mode = _new_file_mode()
    written = None if mode is None else _into_spare(spare, data, path, mode)
    if not written:
        if written is False:  # a link, a FIFO or a file with a second name there: never written into, removed
            with contextlib.suppress(OSError):
                os.unlink(spare)
        write_atomic(path, data, durable=False)
        return
    kept = _keep_as(path, prior)
    try:
        os.replace(spare, path)
    except OSError as error:  # a read-only folder: named by the document, as the plain way names it
        raise OSError(error.errno, error.strerror, path) from None
    if kept:
        with contextlib.suppress(OSError):
            os.rename(prior, spare)


def _new_file_mode() -> int | None:
    """The mode a file this process makes now gets (0o666 less the umask), as a new temp file's would be; None where
    a spare cannot be used (Windows, no leases to tell a reader by) or the umask cannot be read without changing it
    (`os.umask` sets it: another thread making a file meanwhile would get no umask at all). Read at each write
    (5 us): a program using the API may change its umask."""
    if not osfs.LEASES:
        return None
    try:
        fd = os.open("/proc/self/status", os.O_RDONLY | osfs.CLOEXEC)  # Linux, as leases are
        try:
            status = os.read(fd, 8192)
        finally:
            os.close(fd)
        start = status.index(b"\nUmask:") + 7
        return 0o666 & ~int(status[start:status.index(b"\n", start)], 8)
    except (OSError, ValueError):
        return None


def _into_spare(spare: str, data: bytes, path: str, mode: int) -> bool | None:
    """Write `data` over the spare file in place (made when missing) and give it `mode`: True. False: what stands
    there is no spare to keep (a link, a FIFO, a file with a second name, another user's); None: not now (a reader
    has it open, another program holds a lease on it, or this file system cannot tell: it is kept for a later
    write, not made and removed again at every one)."""
    import stat

    try:  # O_NONBLOCK: a lease another program holds on it (Samba's oplocks) is never waited for (45 s)
        fd = os.open(spare, osfs.UPDATE | osfs.NONBLOCK, mode)
    except BlockingIOError:
        return None
    except OSError:  # a link (never followed) or a folder planted there, a read-only folder: the plain way
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:  # never a file that has another name
            return False
        if info.st_uid != os.geteuid():  # another user's: a lease could not be had on it, nor its mode set
            return False
        if not osfs.open_nowhere_else(fd):  # a reader still reading it from when it was the document
            return None
        offset = 0
        while offset < len(data):  # a write of a few kB is whole; a short one goes on where it stopped
            offset += osfs.pwrite(fd, data[offset:], offset)
        if info.st_size > len(data):
            os.ftruncate(fd, len(data))
        if stat.S_IMODE(info.st_mode) != mode:  # made under another umask (or changed): as a new file would be
            os.fchmod(fd, mode)
    except OSError as error:  # a full disk names the file it could not write
        raise OSError(error.errno, error.strerror, path) from None
    finally:
        os.close(fd)
    return True


def _keep_as(path: str, prior: str) -> bool:
    """Give the regular file at `path` the second name `prior` (a hard link); whether it now has it. Anything else
    there (a link planted in its place) is left for the rename to replace, never kept."""
    import stat

    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        osfs.link(path, prior)
    except FileExistsError:  # a writer killed before its last rename left it
        with contextlib.suppress(OSError):
            os.unlink(prior)
        try:
            osfs.link(path, prior)
        except OSError:
            return False
    except OSError:  # none yet, or a file system without hard links: the old file is freed by the rename
        return False
    return True


#: The longest name (in bytes) a temp file stands for as it is: past it, the temp's name would pass the file system's
#: limit on a name (255 bytes) while the file's own does not.
TEMP_STEM_BYTES = 230


def temp_stem(name: str) -> str:
    """What `write_atomic`'s temp name (`.<stem>.<pid>.tmp`) holds for the file `name`: the name, or for a name near
    the 255-byte limit its first 200 bytes and a digest of the whole (a valid 250-byte name failed to be written,
    "File name too long", for its temp's name)."""
    raw = os.fsencode(name)
    if len(raw) <= TEMP_STEM_BYTES:
        return name
    import hashlib

    return f"{os.fsdecode(raw[:200])}~{hashlib.sha256(raw).hexdigest()[:12]}"


def write_if_changed(
    path: str | os.PathLike[str], data: bytes, *, durable: bool = False, within: str | None = None,
    swap: bool = False,
) -> bool:
    """Write atomically (making the folder) unless the file already holds these bytes.

    An empty folder standing where the file belongs is removed first, so a derived file
    is repaired rather than skipped forever; `within` as for `write_atomic`.
    """
    path = os.fspath(path)
    try:
        if osfs.read_regular(path, limit=len(data)) == data:  # a bigger file differs: it is never read
            return False
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        if not os.path.islink(path):
            os.rmdir(path)  # OSError when it holds anything: the caller warns
    except OSError as error:
        # EINVAL: a FIFO or a device stands there, EFBIG: a bigger file; the rename replaces either
        if error.errno not in (errno.EINVAL, errno.EFBIG):
            raise
    replace_file(path, data, durable=durable, within=within, swap=swap)
    return True


def write_if_differs(path: str, data: bytes, current: bytes | None, *, within: str | None = None,
                     swap: bool = False) -> None:
    """`write_if_changed` for a file whose bytes the caller has read already (`current`; None: no file was read,
    and write_if_changed's checks of what stands there are made)."""
    if current is None:
        write_if_changed(path, data, within=within, swap=swap)
    elif data != current:
        replace_file(path, data, within=within, swap=swap)


def replace_file(path: str, data: bytes, *, durable: bool = False, within: str | None = None,
                 swap: bool = False) -> None:
    """Write `data` as `path`, whole, making the folder (`write_if_changed` once the bytes are known to differ);
    `swap` (a derived file written without fsync, the folder's lock held): by `write_swapped`."""
    if swap and not durable:
        if within is not None:
            ensure_folder(within, os.path.dirname(path))
        write_swapped(path, data)
    else:
        write_atomic(path, data, durable=durable, make_parents=True, within=within)


#: The most `read_json` reads: the JSON files it serves (seed 004's run and session files) are small.
JSON_LIMIT = 16 << 20


def read_json(path: str | os.PathLike[str], *, within: str | None = None, unread: Any = None) -> Any:
    """A JSON file's value, or `unread` (None) when it is missing, not JSON, or more than JSON_LIMIT bytes.

    `within` (the project): a path that leads outside it, through `..` or a symlink, is not
    read (None), so no file from elsewhere is copied into the project's own files.
    """
    import msgspec

    try:
        if within is None:
            return msgspec.json.decode(osfs.read_regular(path, limit=JSON_LIMIT))
        real = project_file(within, os.fspath(path))
        if real is None:
            return unread
        return msgspec.json.decode(osfs.read_regular(real, follow=False, limit=JSON_LIMIT))
    except (OSError, msgspec.DecodeError, RecursionError):
        return unread


def pretty_json(data: Any) -> bytes:
    """Pretty JSON for files people read: two-space indent, field order as declared, newline. A string holding a
    lone surrogate (a path whose bytes are not UTF-8: a HOME or contexts folder so named) is written as its escape
    (surrogate_json); msgspec refuses it, and the catch-up writing state.json ended every read in exit 70."""
    import msgspec

    try:
        return msgspec.json.format(msgspec.json.encode(data), indent=2) + b"\n"
    except UnicodeEncodeError:
        return surrogate_json(data, indent=2) + b"\n"


def indented_json(data: Any) -> bytes:
    """`data` as JSON indented by two spaces (no final newline).

    orjson refuses values nested more than 255 levels and integers beyond 64 bits; msgspec
    takes both, so an event stored before notes were bounded (or a forged one a sync carried
    here) still prints.
    """
    import orjson

    try:
        return orjson.dumps(data, option=orjson.OPT_INDENT_2)
    except orjson.JSONEncodeError:
        pass
    try:
        return pretty_json(data)[:-1]
    except UnicodeEncodeError:  # a path whose bytes are not UTF-8 (Python keeps them as lone surrogates)
        return surrogate_json(data, indent=2)


def surrogate_json(data: Any, *, indent: int | None = None) -> bytes:
    """JSON of `data` whose strings may hold lone surrogates (a file name's bytes that are not UTF-8), each
    written as its `\\uXXXX` escape: JSON that decodes to the same string (`os.fsencode` gives the bytes back)."""
    import json

    import msgspec

    separators = None if indent else (",", ":")
    text = json.dumps(msgspec.to_builtins(data), indent=indent, ensure_ascii=False, separators=separators)
    return text.encode("utf-8", "backslashreplace")


def schema_json(kind: Any, title: str) -> bytes:
    """A JSON Schema file generated from a type (or from a ready schema dict), keys sorted."""
    import orjson

    if isinstance(kind, dict):
        schema = dict(kind)
    else:
        import msgspec

        schema = msgspec.json.schema(kind)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = title
    return orjson.dumps(schema, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def reason_of(error: BaseException, within: str | None = None) -> str:
    """An OS or store error as a short reason for a warning, with the path it names (relative to the folder
    `within` when inside it); another error as it says (an unsafe folder names its path itself)."""
    if not isinstance(error, OSError):
        return str(error)
    reason = error.strerror or str(error)
    if not error.filename:
        return reason
    path = os.fsdecode(error.filename)
    if within is not None and path.startswith(os.path.join(within, "")):
        path = path[len(os.path.join(within, "")):]
    return f"{reason} ({path})"


def move_aside(path: str) -> str | None:
    """Rename `path` to a name of this process's beside it, in one step (a file written to `path` meanwhile
    lands under `path`, never under the aside name); the aside name, or None when `path` is gone."""
    aside = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.aside")
    with contextlib.suppress(FileNotFoundError):  # a leftover of a run killed between the two steps
        os.unlink(aside)
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return None
    return aside


def missing_folders(path: str) -> list[str]:
    """The folders from `path` up that do not exist yet, deepest first: what making `path` makes (and what a
    command that fails takes away again)."""
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return missing


def remove_empty_folders(folders: list[str]) -> None:
    """Remove `folders` (missing_folders' list, deepest first) while each is empty; stop at the first that is not
    (something else was put there meanwhile) or is gone. Best effort."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            break
