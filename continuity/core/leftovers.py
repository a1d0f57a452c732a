"""Temp files the atomic writer left behind: found for `verify`, removed by `rebuild`.

`fsio.write_atomic` writes `.<name>.<pid>.tmp` beside its target and renames it; a process
killed between the two leaves the temp for good (readers ignore it). Nothing on the hook
path looks for them: a listing per write would cost every write. The search stays inside
the store: folders are walked by descriptor without following a link, `events/` (written by
link, never by the atomic writer) is skipped, and only regular files with exactly that name
are taken. Outside it, this project's Markdown archives folder is swept the same way, and in
the project's `.ai-bridge/` (which the user writes too) only the temps of the files continuity
writes there.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Collection, Iterator, Mapping

from continuity.core.paths import (
    BRIDGE_REL,
    LATEST_LINK,
    RUNTIME_JSON,
    RUNTIME_MD,
    TRANSFER_BUNDLE,
    TRANSFER_MANIFEST,
    TRANSFER_REL,
)
from events import osfs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from continuity.core.store import Store

#: `fsio.write_atomic`'s temp name: `.<name>.<pid>.tmp` (a long name shortened: fsio.temp_stem).
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


def _is_stale(name: str, info: os.stat_result, now: float, targets: Collection[str] | None = None) -> bool:
    """Whether `name` is a left-over temp (of one of `targets` only, when given)."""
    from continuity.core.fsio import temp_stem

    match = TEMP_NAME.fullmatch(name)
    if match is None or (targets is not None and match.group(1) not in {temp_stem(target) for target in targets}):
        return False
    # a regular file (the atomic writer's), or the symlink `latest.md`'s link is made as before its rename
    if not (stat.S_ISREG(info.st_mode) or (stat.S_ISLNK(info.st_mode) and match.group(1) == LATEST_LINK)):
        return False
    return now - info.st_mtime > STALE_SECONDS or not process_alive(int(match.group(2)))


def remove_temps_of(path: str, now: float) -> None:
    """Remove the left-over temps of the one file `path`, beside it (a killed writer's); best effort, silent.

    For files outside the store that no `rebuild` sweeps: a harness's settings (`install`, in folders meant
    to be committed) and an export's `--out`.
    """
    folder, base = os.path.split(path)
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return
    for name in names:
        if not name.endswith(".tmp"):
            continue
        full = os.path.join(folder, name)
        try:
            if _is_stale(name, os.lstat(full), now, (base,)):
                os.unlink(full)
        except OSError:
            continue


def _not_the_log(relative: str) -> bool:
    return relative != "events"


def _walk(top: str, enter: Callable[[str], bool] = _not_the_log,
          ) -> Iterator[tuple[str, str, os.stat_result, int | None]]:
    """(relative folder, name, lstat, folder descriptor or None) of every file below `top`, in the folders
    `enter` (given a folder relative to `top`) allows: by default all but the store's events/."""
    if hasattr(os, "fwalk"):  # by descriptor: a folder swapped for a link mid-walk is not entered
        for folder, dirs, files, fd in os.fwalk(top, follow_symlinks=False):
            relative = os.path.relpath(folder, top)
            dirs[:] = [d for d in dirs if enter(os.path.normpath(os.path.join(relative, d)))]
            for name in files:
                try:
                    info = os.lstat(name, dir_fd=fd)
                except OSError:
                    continue
                yield relative, name, info, fd
        return
    for folder, dirs, files in os.walk(top, followlinks=False):  # pragma: no cover - Windows
        relative = os.path.relpath(folder, top)
        dirs[:] = [d for d in dirs if enter(os.path.normpath(os.path.join(relative, d)))]
        for name in files:
            try:
                info = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            yield relative, name, info, None


def outside_folder(store: Store) -> str | None:
    """The folder outside the store that continuity writes through the atomic writer: this project's
    Markdown archives (`~/.agent/contexts/<project>`, readside/writers.py); None when it cannot be told."""
    from continuity.core.paths import contexts_dir
    from events.errors import ContinuityError

    try:
        return os.path.join(contexts_dir(store), store.reading_project()[0])
    except (OSError, ContinuityError):
        return None


def bridge_files() -> dict[str, frozenset[str]]:
    """The files continuity writes in the project's `.ai-bridge/`, by folder relative to it: the runtime
    documents and `work export`'s default folder."""
    written = (RUNTIME_JSON, RUNTIME_MD,
               *(f"{TRANSFER_REL}/{name}" for name in (".gitignore", TRANSFER_BUNDLE, TRANSFER_MANIFEST)))
    files: dict[str, set[str]] = {}
    for path in written:
        folder, name = path.rsplit("/", 1)
        relative = os.path.relpath(os.sep + folder, os.sep + BRIDGE_REL)  # absolute: relpath asks no working folder
        files.setdefault(relative, set()).add(name)
    return {folder: frozenset(names) for folder, names in files.items()}


def _outside(store: Store) -> list[tuple[str, Mapping[str, frozenset[str]] | None]]:
    """The folders outside the store to sweep, each with the names it may hold temps of (None: any name)."""
    folders: list[tuple[str, Mapping[str, frozenset[str]] | None]] = []
    markdown = outside_folder(store)
    if markdown is not None:
        folders.append((markdown, None))
    folders.append((os.path.join(store.root, *BRIDGE_REL.split("/")), bridge_files()))
    return folders


def stale_temps_everywhere(store: Store, now: float) -> list[str]:
    """The left-over temps of the store (relative to it), then of the Markdown archives folder and of
    `.ai-bridge/` (full paths)."""
    found = stale_temps(store.path, now)
    for folder, only in _outside(store):
        found += [os.path.join(folder, name) for name in stale_temps(folder, now, only)]
    return found


def remove_stale_temps_everywhere(store: Store, now: float) -> tuple[list[str], list[str]]:
    """remove_stale_temps for the store, then for the Markdown archives folder and `.ai-bridge/` (their paths
    shown in full)."""
    removed, warnings = remove_stale_temps(store.path, now)
    for folder, only in _outside(store):
        more, more_warnings = remove_stale_temps(folder, now, only, shown_from=folder)
        removed += more
        warnings += more_warnings
    return removed, warnings


def _candidates(top: str, now: float, only: Mapping[str, frozenset[str]] | None,
                ) -> Iterator[tuple[str, str, int | None]]:
    """(relative folder, name, folder descriptor) of each left-over temp below `top`; with `only`, just the
    temps of its names in its folders (relative to `top`), and no other folder is entered."""
    if not os.path.isdir(top) or os.path.islink(top):
        return
    enter = _not_the_log if only is None else only.__contains__
    for relative, name, info, fd in _walk(top, enter):
        if _is_stale(name, info, now, None if only is None else only.get(relative, ())):
            yield relative, name, fd


def stale_temps(store_path: str, now: float, only: Mapping[str, frozenset[str]] | None = None) -> list[str]:
    """The left-over temp files in the store (or another folder, `only` as for `_candidates`), relative to it,
    sorted (a missing folder has none)."""
    return sorted(os.path.normpath(os.path.join(relative, name))
                  for relative, name, _ in _candidates(store_path, now, only))


def remove_stale_temps(store_path: str, now: float, only: Mapping[str, frozenset[str]] | None = None, *,
                       shown_from: str = "") -> tuple[list[str], list[str]]:
    """Remove the left-over temp files in the store (or another folder, `only` as for `_candidates`);
    (removed, warnings), paths relative to it, or joined to `shown_from` (a folder outside the store is
    named in full)."""
    removed: list[str] = []
    warnings: list[str] = []
    for relative, name, fd in _candidates(store_path, now, only):
        shown = os.path.join(shown_from, os.path.normpath(os.path.join(relative, name)))
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
