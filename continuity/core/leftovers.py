"""Temp files the atomic writer left behind: found for `verify`, removed by `rebuild`.

`fsio.write_atomic` writes `.<name>.<pid>.tmp` beside its target and renames it; a process
killed between the two leaves the temp for good (readers ignore it). Nothing on the hook
path looks for them: a listing per write would cost every write. The search stays inside
the store: folders are walked by descriptor without following a link, `events/` (written by
link, never by the atomic writer) is skipped, and only regular files with exactly that name
are taken.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator

from continuity.core.paths import LATEST_LINK
from events import osfs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from continuity.core.store import Store

#: `fsio.write_atomic`'s temp name: `.<name>.<pid>.tmp`.
TEMP_NAME = re.compile(r"\.(.+)\.([0-9]{1,10})\.tmp")
#: A temp older than this is left over even when its pid is running (pids are reused).
STALE_SECONDS = 3600


def process_alive(pid: int) -> bool:
    """Whether a process with this id runs (on Windows, where signal 0 would end it, always True)."""
    if pid <= 0:
        return False
    if osfs.WINDOWS:  # pragma: no cover - os.kill there terminates; age alone decides
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    except (OverflowError, OSError):
        return False
    return True


def _is_stale(name: str, info: os.stat_result, now: float) -> bool:
    match = TEMP_NAME.fullmatch(name)
    if match is None:
        return False
    # a regular file (the atomic writer's), or the symlink `latest.md`'s link is made as before its rename
    if not (stat.S_ISREG(info.st_mode) or (stat.S_ISLNK(info.st_mode) and match.group(1) == LATEST_LINK)):
        return False
    return now - info.st_mtime > STALE_SECONDS or not process_alive(int(match.group(2)))


def _walk(store_path: str) -> Iterator[tuple[str, str, os.stat_result, int | None]]:
    """(relative folder, name, lstat, folder descriptor or None) of every file below the store but events/."""
    if hasattr(os, "fwalk"):  # by descriptor: a folder swapped for a link mid-walk is not entered
        for folder, dirs, files, fd in os.fwalk(store_path, follow_symlinks=False):
            relative = os.path.relpath(folder, store_path)
            if relative == ".":
                dirs[:] = [d for d in dirs if d != "events"]
            for name in files:
                try:
                    info = os.lstat(name, dir_fd=fd)
                except OSError:
                    continue
                yield relative, name, info, fd
        return
    for folder, dirs, files in os.walk(store_path, followlinks=False):  # pragma: no cover - Windows
        relative = os.path.relpath(folder, store_path)
        if relative == ".":
            dirs[:] = [d for d in dirs if d != "events"]
        for name in files:
            try:
                info = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            yield relative, name, info, None


def outside_folder(store: Store) -> str | None:
    """The folder outside the store that continuity writes through the atomic writer: this project's
    Markdown archives (`~/.agent/contexts/<project>`, readside/writers.py); None when it cannot be told."""
    from continuity.readside.writers import contexts_dir
    from events.errors import ContinuityError

    try:
        return os.path.join(contexts_dir(store), store.reading_project()[0])
    except (OSError, ContinuityError):
        return None


def stale_temps_everywhere(store: Store, now: float) -> list[str]:
    """The left-over temps of the store (relative to it), then of the Markdown archives folder (full paths)."""
    found = stale_temps(store.path, now)
    outside = outside_folder(store)
    if outside is not None:
        found += [os.path.join(outside, name) for name in stale_temps(outside, now)]
    return found


def remove_stale_temps_everywhere(store: Store, now: float) -> tuple[list[str], list[str]]:
    """remove_stale_temps for the store, then for the Markdown archives folder (its paths shown in full)."""
    removed, warnings = remove_stale_temps(store.path, now)
    outside = outside_folder(store)
    if outside is not None:
        more, more_warnings = remove_stale_temps(outside, now)
        removed += [os.path.join(outside, name) for name in more]
        warnings += more_warnings
    return removed, warnings


def stale_temps(store_path: str, now: float) -> list[str]:
    """The left-over temp files in the store, relative to it, sorted (a missing store has none)."""
    if not os.path.isdir(store_path) or os.path.islink(store_path):
        return []
    return sorted(os.path.normpath(os.path.join(relative, name))
                  for relative, name, info, _ in _walk(store_path) if _is_stale(name, info, now))


def remove_stale_temps(store_path: str, now: float) -> tuple[list[str], list[str]]:
    """Remove the left-over temp files in the store; (removed, warnings), paths relative to the store."""
    if not os.path.isdir(store_path) or os.path.islink(store_path):
        return [], []
    removed: list[str] = []
    warnings: list[str] = []
    for relative, name, info, fd in _walk(store_path):
        if not _is_stale(name, info, now):
            continue
        shown = os.path.normpath(os.path.join(relative, name))
        try:
            if fd is not None:
                os.unlink(name, dir_fd=fd)
            else:  # pragma: no cover - Windows
                os.unlink(os.path.join(store_path, relative, name))
        except FileNotFoundError:
            continue
        except OSError as error:
            warnings.append(f"left-over temp file not removed: {shown} ({error.strerror or error})")
            continue
        removed.append(shown)
    return sorted(removed), warnings
