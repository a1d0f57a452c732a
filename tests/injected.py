"""Injected I/O errors for whole commands, and what a store must look like after one.

`SyscallFaults` replaces the `os` calls that change a disk (write, pwrite, fsync, link,
replace, rename, mkdir, symlink and opens for writing; with `removals`, unlink and rmdir
too) for the length of a `with`, and fails the ones it is told to with a real errno. The
file system itself stays real: every call it does not fail goes through. `run` runs
`continuity.cli.main` in-process, `converged` checks that the next catch-up leaves every
derived file as a rebuild writes it.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.helpers import environment

CHANGES_DISK = ("write", "pwrite", "fsync", "link", "replace", "rename", "mkdir", "symlink", "open")
#: Calls that take files away, wrapped only when asked (`removals=True`): a move's last steps.
REMOVES = ("unlink", "rmdir")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT
_REAL: dict[str, Callable[..., Any]] = {name: getattr(os, name) for name in CHANGES_DISK + REMOVES}


class SyscallFaults:
    """Fail disk-changing calls with `error`: from the `at`-th on (a full disk), only it, or those `match` picks.

    `match(name, first_argument)` chooses calls by what they touch (a path fragment) instead
    of by count. `calls` counts every disk-changing call made; `hits` lists the failed ones.
    """

    def __init__(self, error: int = errno.ENOSPC, *, at: int | None = None, persistent: bool = True,
                 match: Callable[[str, Any], bool] | None = None, removals: bool = False, short: bool = False) -> None:
        self.error, self.at, self.persistent, self.match = error, at, persistent, match
        #: The first failing `write` writes half its bytes and returns that count, as a disk filling up does.
        self.short = short
        self.wrapped = CHANGES_DISK + REMOVES if removals else CHANGES_DISK
        self.calls = 0
        self.hits: list[tuple[str, Any]] = []

    def _fails(self, name: str, first: Any) -> bool:
        if self.match is not None:
            return self.match(name, first)
        if self.at is None:
            return False
        return self.calls == self.at or (self.persistent and self.calls > self.at)

    def _wrap(self, name: str) -> Callable[..., Any]:
        real = _REAL[name]

        def call(*args: Any, **kwargs: Any) -> Any:
            if name == "open" and not (args[1] & _WRITE_FLAGS):
                return real(*args, **kwargs)
            self.calls += 1
            first = args[0] if args else None
            if self._fails(name, first):
                self.hits.append((name, first))
                if self.short and name == "write" and len(self.hits) == 1 and len(args[1]) > 1:
                    return real(args[0], bytes(args[1][:len(args[1]) // 2]))
                named = isinstance(first, (str, bytes, os.PathLike))  # as the system's error names its path
                raise OSError(self.error, os.strerror(self.error), *([first] if named else []))
            return real(*args, **kwargs)

        return call

    def __enter__(self) -> SyscallFaults:
        for name in self.wrapped:
            setattr(os, name, self._wrap(name))
        return self

    def __exit__(self, *exc: object) -> None:
        for name, real in _REAL.items():
            setattr(os, name, real)


def path_contains(fragment: str) -> Callable[[str, Any], bool]:
    """A `match` failing every call whose path holds `fragment` (a derived file, say)."""
    return lambda name, first: isinstance(first, (str, bytes, os.PathLike)) and fragment in os.fsdecode(first)


def run(argv: list[str], faults: SyscallFaults | None = None) -> tuple[int, str, str]:
    """`continuity ARGV` in-process: (exit code, stdout, stderr), under `faults` if given."""
    from continuity.cli import main

    out = io.TextIOWrapper(io.BytesIO(), write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), write_through=True)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), faults or contextlib.nullcontext():
        code = main(argv)
    assert isinstance(out.buffer, io.BytesIO) and isinstance(err.buffer, io.BytesIO)
    return code, out.buffer.getvalue().decode(), err.buffer.getvalue().decode()


def event_files(root: Path) -> list[str]:
    """The store's event files, by name."""
    return sorted(path.name for path in (root / ".agent" / "runtime-continuity" / "events").rglob("*.json"))


def comparable(files: dict[str, bytes], home: Path) -> dict[str, bytes]:
    """Derived files as compared: `latest.md` by what it shows (a symlink, or the copy written where links fail)."""
    found = dict(files)
    for key in [key for key in found if key.endswith("/latest.md") and key.startswith("contexts/")]:
        found[key] = (home / ".agent" / key).read_bytes()
    return found


def log_only_runtime(files: dict[str, bytes]) -> dict[str, bytes]:
    """`files` with `.ai-bridge/context-runtime.json` and `.md`, where a write of this clone's wrote what it observed
    of the worktree (freshness, context state, membership), as a catch-up from the log alone writes them: the rest
    of those files must match a rebuild's byte for byte."""
    import json

    from continuity.core.fsio import pretty_json
    from continuity.workstreams.documents import NOT_OBSERVED, runtime_markdown

    found = dict(files)
    key = next((key for key in found if key.endswith("ai-bridge/context-runtime.json")), None)
    if key is None:
        return found
    doc = json.loads(found[key])
    if "observedAt" not in doc:
        return found
    for live in ("contextState", "membership", "memberConfig", "observedAt"):
        doc.pop(live, None)
    doc["validationFreshness"] = {"head": None, "fingerprint": None, "problem": NOT_OBSERVED, "entries": {}}
    found[key] = pretty_json(doc)
    found[key.removesuffix(".json") + ".md"] = runtime_markdown(doc).encode()
    return found


def stale_after_catch_up(root: Path, home: Path) -> list[str]:
    """The derived files the next catch-up leaves other than a full rebuild writes them (a list of names)."""
    from continuity.core.store import find_store
    from continuity.readside.writers import refresh
    from projections.registry import REGISTRY
    from tests.integration.test_catchup_property import delete_derived, derived_files

    refresh(find_store(root=str(root)), tuple(REGISTRY))
    caught_up = comparable(derived_files(root, home), home)
    delete_derived(root, home)
    assert run(["rebuild"])[0] == 0
    rebuilt = comparable(derived_files(root, home), home)
    stale = [key for key in sorted(set(caught_up) | set(rebuilt)) if caught_up.get(key) != rebuilt.get(key)]
    for key in stale:  # shown by pytest with a failure: what differs, not only where
        import difflib

        before, after = (files.get(key, b"<missing>").decode("utf-8", "replace").splitlines()
                         for files in (caught_up, rebuilt))
        print(f"--- {key}: caught up / rebuilt")
        print("\n".join(list(difflib.unified_diff(before, after, "caught up", "rebuilt", lineterm=""))[:80]))
    return stale


@contextlib.contextmanager
def identity(agent: str = "amy", session: str = "s1") -> Iterator[None]:
    """CONTINUITY_* identity for the commands inside (restored after)."""
    with environment(CONTINUITY_AGENT=agent, CONTINUITY_SESSION_ID=session, CONTINUITY_HOST="claude-code"):
        yield
