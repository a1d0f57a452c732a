"""`timeline` as a Python API: read the window, render the page, write it atomically.

The default page is `local/timeline.html` in the store (machine-local, git-ignored,
rebuilt by the next `timeline`). A page written inside the store goes through the one
atomic writer with the store as its bound: never through a symlinked folder, never out
of the store. A page written elsewhere (`--out FILE`) replaces the file whole; a symlink
standing at that name is replaced, not followed; a device, a pipe or a socket, or a link to
one or to a process's open file (/dev/null, /dev/stdout), is refused, never replaced. Inside
the store (wherever its folder is really found) only an `.html` page outside `events/` is
written: the store's own files (the log, config, lock, node id) are never replaced by a page.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable

import msgspec

from continuity.core.errors import UsageError
from continuity.core.fsio import write_atomic
from continuity.core.store import Store
from continuity.readside.catchup import Progress
from continuity.timeline.model import Page
from events.errors import WriteFailed

#: Where the page goes by default, under the store.
DEFAULT_RELPATH = os.path.join("local", "timeline.html")


class Written(msgspec.Struct, kw_only=True):
    """What `timeline` wrote: the page's path and size, and what it shows."""

    path: str
    bytes: int
    events: int
    marks: int
    summarized: str | None
    counts: dict[str, int]
    lanes: int
    sessions: int
    warnings: list[str]


def output_path(store: Store, out: str | None) -> tuple[str, str | None]:
    """The page's absolute path, and the folder it must stay within (the store's, when it is inside it)."""
    if out is None:
        return os.path.join(store.path, DEFAULT_RELPATH), store.path
    if not out.strip():
        raise UsageError("--out: the file name is empty")
    path = os.path.abspath(out)
    from events.problems import quoted

    shown = quoted(out, 200, redact=True)  # redacted before it is cut: a token cut short shows most of it
    # `pages/` names a folder even before it exists: abspath would drop the slash and write a file `pages`.
    if os.path.basename(out) in ("", ".", "..") or os.path.isdir(path):  # a link to a folder is one too
        raise UsageError(f"--out: {shown} is a folder; name the page's file (timeline.html)")
    if _special(path):  # replacing /dev/null or /dev/stdout (as root) or a pipe would break what uses it
        raise UsageError(f"--out: {shown} is not a regular file (a device, a pipe, a socket or a "
                         "process's open file such as /dev/stdout); name the page's file (timeline.html)")
    refused = UsageError(f"--out: {shown} would replace a file of the store; inside the store a page "
                         "must be an .html file outside events/")
    home = os.path.realpath(store.path)
    prefix = _store_prefix(path, home)
    if prefix is not None:  # the store, however it is reached (its own path, or a link to it): what follows
        rest = os.path.relpath(path, prefix)  # is written only through real folders below it
        if not path.endswith(".html") or rest.split(os.sep)[0] == "events":
            raise refused
        return os.path.join(home, rest), home
    if _inside(os.path.realpath(os.path.dirname(path)), home):
        events = os.path.realpath(store.events_dir)
        if not path.endswith(".html") or _inside(os.path.realpath(os.path.dirname(path)), events):
            raise refused
    return path, None


def _store_prefix(path: str, home: str) -> str | None:
    """The leading part of `path` that is the store (resolved, it is `home`), or None when none is."""
    prefix = os.sep
    for part in path.split(os.sep)[1:-1]:
        prefix = os.path.join(prefix, part)
        if os.path.realpath(prefix) == home:
            return prefix
    return None


def _special(path: str) -> bool:
    """Whether `path` is, or links to, something other than a file or a folder (a device, a pipe, a socket)
    or a process's open file (/dev/stdout links to /proc/self/fd/1, whatever that is)."""
    try:
        if os.readlink(path).startswith("/proc/"):
            return True
    except (OSError, ValueError):  # not a link
        pass
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # nothing there (or a dangling link): the page is a new file
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def timeline(store: Store, project: str, *, out: str | None = None, since: str | None = None,
             until: str | None = None, progress: Progress | None = None,
             send: Callable[[bytes], None] | None = None) -> Written:
    """Write the timeline page of `project` (events from `since` to `until`, as recall.service.time_window gives
    them: an empty window is refused there), or hand it to `send` (the CLI's `--out -`: path `-`); what was
    written."""
    from continuity.timeline.read import read_page
    from continuity.timeline.render import render

    path, within = ("-", None) if send is not None else output_path(store, out)
    page = read_page(store, project, since=since, until=until, progress=progress)
    data = render(page)
    if send is not None:
        send(data)
    else:
        _write(path, data, within)
    return Written(path=path, bytes=len(data), events=page.events, marks=len(page.marks),
                   summarized=page.summarized, counts=page.counts, lanes=len(page.lanes),
                   sessions=len(page.sessions), warnings=_warnings(page))


def _write(path: str, data: bytes, within: str | None) -> None:
    folder = os.path.dirname(path)
    if within is None and not os.path.isdir(folder):
        raise WriteFailed(f"timeline not written: the folder {folder} does not exist")
    mode = 0o666
    with contextlib.suppress(OSError):  # a page written over a file the user made private stays private
        found = os.lstat(path)
        if stat.S_ISREG(found.st_mode):
            mode = found.st_mode & 0o777
    try:
        write_atomic(path, data, durable=False, within=within, mode=mode)
    except IsADirectoryError:
        raise UsageError(f"--out: {path} is a folder; name the page's file (timeline.html)") from None
    except OSError as error:
        raise WriteFailed(f"timeline not written: {path}: {error.strerror or error}") from None


def _warnings(page: Page) -> list[str]:
    if not page.skipped:
        return list(page.warnings)
    skipped = f"skipped {len(page.skipped)} unreadable event(s) in the timeline; first: {page.skipped[0]}"
    return [*page.warnings, skipped]
