"""`continuity clone-store`: a fresh clone of the code resumes from the remote's continuity branch and node refs.

A remote URL that embeds credentials is refused before anything is fetched or written, so
no secret reaches config.json; a configured git remote is remembered by its name.

The read models are built as the events land: sync's restore brings them in a batch at a
time (whole days), and each batch is folded from the bytes just written instead of reading
a million files back, by a worker process while this one stages the next batch (Folding).
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
from typing import Any

import orjson

from continuity.core.errors import UsageError
from continuity.core.fsio import write_atomic
from continuity.core.store import Store, config_json
from continuity.sync.credentials import guard_remote, mask_url
from continuity.sync.engine import Progress, fetch_remote, given_remote, nodes_folder, sync, tracking_ref
from continuity.sync.foldworker import read_frame, write_frame
from continuity.sync.git import Repo
from continuity.sync.objects import ObjectReader
from continuity.sync.settings import DEFAULT_BRANCH, DEFAULT_REMOTE, branch_of, remote_of, shadowed_remote, shadowing
from continuity.sync.tree import day_entries, is_event, read_snapshot
from events import osfs
from events.durable import READ_LIMIT
from events.errors import ContinuityError, SecretRefused, WriteFailed

NEWEST_COMMITS = 16  # commits read for the newest event's project name
HELD_BYTES = 32 << 20  # bytes of a restored batch kept in memory for its fold (the rest are read back)
WORKER_WAIT = 60.0  # seconds the fold worker gets to end once its input is closed
WORKER_LOG = "fold-worker.log"  # under local/: what the worker printed, kept only when it printed something


def clone_store(root: str, remote: str, *, branch: str | None = None,
                progress: Progress | None = None) -> dict[str, Any]:
    """Fetch the branch, create the store if missing (project name from the newest event),
    write its events into the store and rebuild the projections."""
    from continuity.core.initialize import init_store
    from continuity.readside.writers import refresh

    repo = Repo(root)
    store = Store(root)
    store.check_safe()
    branch_name = branch_of(store, branch)
    remote_name = remote_of(store, given_remote(repo, remote))
    warnings = guard_remote(repo, remote_name)
    shadowed = shadowed_remote(branch_name, repo.remotes())
    if shadowed is not None:  # before the fetch writes a tracking ref for it
        raise UsageError(shadowing(branch_name, shadowed))
    found: list[str] = []  # sync warns of broken node refs again, with the rest
    tip, tips = fetch_remote(repo, remote_name, branch_name, tracking_ref(repo, remote_name, branch_name),
                             nodes_folder(repo, remote_name, branch_name), found)
    heads = [commit for _, commit in sorted(tips.items())]
    if tip is None and not heads:
        raise UsageError(f"{mask_url(remote_name)!r} has no branch {branch_name!r}: nothing to clone (start one with "
                         "`continuity init` and `continuity sync`)")
    initialized = not os.path.exists(store.config_path)
    undo = None
    if initialized:
        from continuity.sync.transfer import undo_new_store

        undo = undo_new_store(root, store.path)
    try:
        if initialized:
            project = _newest_project(repo, [tip] if tip is not None else heads)
            try:
                store, _ = init_store(root, project=project, language=None, adopt=False)
            except (UsageError, SecretRefused):  # a name this version refuses: fall back to the folder's name
                store, _ = init_store(root, project=None, language=None, adopt=False)
        store = _remember(store, branch_name, remote_name)
        folding = Folding(store)
        try:
            report = sync(store, remote=remote_name, push=False, branch=branch_name, progress=progress,
                          catch_up=False, restore=True, landing=folding)
            folded = folding.finish()
        finally:
            folding.close()
    except BaseException:
        if undo is not None and not _holds_events(store):  # refused before any event landed: no store is left
            undo()
        raise
    from continuity.sync.engine import counting
    from projections.registry import REGISTRY

    rebuilt = counting(progress, "rebuilt") if progress is not None else None
    if not folded:  # nothing landed, a fold failed, or batches landed before others: from the files
        outcome = refresh(store, tuple(REGISTRY), rebuild=True, progress=rebuilt)
        if folding.failure is not None:
            outcome.warnings.insert(0, "the read models were rebuilt from the files after the restore: folding "
                                    f"them as the events landed failed ({folding.failure})")
    else:
        outcome = refresh(store, tuple(REGISTRY), finish_rebuild=True, progress=rebuilt)
        outcome.folded = outcome.models.events_folded  # every event the models hold, as a rebuild counts them
        folding.count_skipped(outcome.met, outcome.first_met)  # those tried again were counted when first met
        outcome.warnings = [line for line in outcome.warnings if not _skipped_line(line)]
        if folding.skipped:  # one line for the whole restore, as one rebuild says it
            outcome.warnings.insert(0, f"skipped {folding.skipped} unreadable event(s); first: "
                                       f"{folding.first_skipped}")
        if rebuilt is not None:  # as the rebuild after the restore said it (the batches' folds say nothing)
            rebuilt(outcome.folded, outcome.folded)
    return {
        "ok": True, "action": "clone-store", "store": store.path, "project": store.project,
        "initialized": initialized, "branch": branch_name, "remote": mask_url(remote_name), "commit": report.commit,
        "added_remote": report.added_remote, "added_local": report.added_local, "events": outcome.folded,
        "warnings": list(dict.fromkeys(warnings + report.warnings + outcome.warnings)),  # sync warns again
    }


class Folding:
    """Folds the read models a restored batch at a time, as each lands (sync's `Landing`).

    The first batch is folded here, rebuilding every model (as `rebuild` would); the later
    ones go to a worker process (foldworker.py), which catches them up while this process
    stages the next batch, and answers before that batch moves in. A fold that fails, or a
    worker that stops, leaves clone-store to rebuild the models from the files afterwards.
    So does a later batch whose catch-up had to rebuild (its events sort before others the
    store holds: sync brought the newest in first, and folding on would rebuild once per
    batch), and a batch whose fold warned (a document not written, models not saved: the
    next catch-up would fold some events again): one rebuild then says it once.
    """

    keep = HELD_BYTES
    here = 1  # batches folded in this process before the rest go to the worker

    def __init__(self, store: Store) -> None:
        self.store = store
        self.batches = 0
        self.failure: str | None = None
        self.abandoned = False  # the rest is left to one rebuild after the restore
        self.skipped = 0
        self.first_skipped: str | None = None
        self.worker: subprocess.Popen[bytes] | None = None
        self.waiting = False  # a batch sent to the worker is not answered yet

    def landing(self) -> None:
        self._answer()

    def landed(self, held: dict[str, dict[str, bytes]]) -> None:
        if self.failure is not None or self.abandoned:
            return
        self.batches += 1
        if self.batches <= self.here or not sys.executable:
            self._fold_here(held, rebuild=self.batches == 1)
            return
        try:
            if self.worker is None:
                self.worker = _start_worker(self.store)
        except OSError as error:
            self._fail(f"the fold worker did not start ({error.strerror or error})")
            return
        try:
            assert self.worker.stdin is not None
            write_frame(self.worker.stdin, {"rebuild": False, "held": held})
            self.waiting = True
        except ValueError:  # a frame past the worker's limit (huge events): this batch is folded here
            self._fold_here(held, rebuild=False)
        except OSError:
            self._fail("the fold worker stopped")

    def finish(self) -> bool:
        """Wait for the last batch's fold; True when every batch landed was folded."""
        self._answer()
        self.close()
        return self.batches > 0 and self.failure is None and not self.abandoned

    def close(self) -> None:
        """Let the worker end (it ends at the end of its input), or stop it; its log goes if it is empty."""
        worker, self.worker = self.worker, None
        if worker is None:
            return
        with contextlib.suppress(OSError):
            assert worker.stdin is not None
            worker.stdin.close()
        try:
            worker.wait(timeout=WORKER_WAIT)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        if worker.stdout is not None:
            worker.stdout.close()
        _worker_log_kept(self.store)

    def _fold_here(self, held: dict[str, dict[str, bytes]], *, rebuild: bool) -> None:
        from continuity.readside.writers import refresh
        from projections.registry import REGISTRY

        try:
            outcome = refresh(self.store, tuple(REGISTRY), rebuild=rebuild, held=held)
        except Exception as error:  # the rebuild after the restore meets it again, and reports it
            self._fail(f"{type(error).__name__}: {error}")
            return
        self._count(outcome.warnings, outcome.rebuilt, outcome.met, outcome.first_met)

    def _answer(self) -> None:
        if not self.waiting or self.worker is None:
            return
        self.waiting = False
        assert self.worker.stdout is not None
        try:
            answer = read_frame(self.worker.stdout)
        except OSError:
            answer = None
        if not isinstance(answer, dict) or not isinstance(answer.get("folded"), int):
            failed = answer.get("failed") if isinstance(answer, dict) else None
            self._fail(str(failed) if failed else "the fold worker stopped")
            return
        warnings = answer.get("warnings")
        skipped, first = answer.get("skipped"), answer.get("first_skipped")
        self._count([str(line) for line in warnings] if isinstance(warnings, list) else [],
                    answer.get("rebuilt") is True, skipped if isinstance(skipped, int) else 0,
                    first if isinstance(first, str) else None)

    def _count(self, warnings: list[str], rebuilt: bool, skipped: int, first: str | None) -> None:
        if (rebuilt and self.batches > 1) or any(not _skipped_line(line) for line in warnings):
            self.abandoned = True
            self.close()
            return
        self.count_skipped(skipped, first)

    def count_skipped(self, skipped: int, first: str | None) -> None:
        """Add a fold's unreadable events (the first one met is the first of all: batches come in order)."""
        self.skipped += skipped
        if self.first_skipped is None:
            self.first_skipped = first

    def _fail(self, why: str) -> None:
        self.failure = why
        self.close()
        if _worker_log_kept(self.store):
            self.failure = f"{why}; see local/{WORKER_LOG}"


def _worker_log_kept(store: Store) -> bool:
    """True when the worker printed something (kept in local/fold-worker.log); the empty log is removed."""
    path = os.path.join(store.local_dir, WORKER_LOG)
    try:
        found = os.lstat(path)
        if not stat.S_ISREG(found.st_mode):  # not the log: left alone
            return False
        if found.st_size:
            return True
        os.unlink(path)
    except OSError:
        pass
    return False


def _skipped_line(line: str) -> bool:
    """A catch-up's line about unreadable events: met now, or read past before and still unreadable."""
    return (line.startswith("skipped ") and " unreadable event(s); first: " in line) or \
        " unreadable event(s) are still left out " in line


def _start_worker(store: Store) -> subprocess.Popen[bytes]:
    """`python -P -m continuity.sync.foldworker ROOT`, importing this very continuity (`core.child`)."""
    from continuity.core.child import python_command

    command, env = python_command("continuity.sync.foldworker", store.root)
    log = _open_log(store)
    try:
        return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
                                cwd=store.root)
    finally:
        if log != subprocess.DEVNULL:
            os.close(log)


def _open_log(store: Store) -> int:
    """Where the worker's output goes (a traceback, if it ever fails that way): local/fold-worker.log, a
    regular file of the owner's, never the terminal; nowhere if something else stands at that name."""
    try:
        fd = os.open(os.path.join(store.local_dir, WORKER_LOG), osfs.CREATE | osfs.NONBLOCK, 0o600)
    except OSError:  # a link (refused, not followed), a FIFO with no reader, no local/ folder
        return subprocess.DEVNULL
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return subprocess.DEVNULL
    return fd


def _holds_events(store: Store) -> bool:
    """Whether any event landed in the store (a clone that failed part-way keeps what it brought)."""
    try:
        return store.open_reader().head_name() is not None
    except (OSError, ContinuityError):  # cannot tell: the store stays
        return True


def _newest_project(repo: Repo, commits: list[str]) -> str | None:
    """The `project` of the newest readable event on these commits that counts as now (None when they hold none).

    An event stamped days ahead (a forged clock, or one forged to name another project: the read models leave such
    an event out until its day comes) or one that is not what its name says, or no JSON object with a project,
    names no project: the next one down does (NEWEST_TRIED at most)."""
    from continuity.core.store import now_us
    from continuity.sync.files import unfit_event
    from events import names

    reader = ObjectReader(repo)
    limit = names.last_day(now_us())
    try:
        candidates: dict[str, str] = {}  # name -> blob, of each commit's newest days that count as now
        for head in commits:
            try:  # under `delta` a commit's tree holds what it adds (a merge's nothing): the newest few commits
                recent = [line[0] for line in repo.rev_list([head], limit=NEWEST_COMMITS)]
                snapshots = [read_snapshot(reader, commit) for commit in recent]
            except WriteFailed:  # a node ref sync cannot read: the sync that follows skips it with a warning
                continue
            for snapshot in snapshots:
                for day in sorted((day for day in snapshot.days if day <= limit), reverse=True):
                    entries = [e for e in day_entries(reader, snapshot.days[day]).values() if is_event(day, e)]
                    candidates.update((entry.name, entry.sha) for entry in entries)
                    if entries:
                        break
        for name in sorted(candidates, reverse=True)[:NEWEST_TRIED]:
            _, raw = reader.read_bounded(candidates[name], READ_LIMIT)
            if raw is None or unfit_event(name, raw) is not None:  # the sync that follows refuses it, naming it
                continue
            with contextlib.suppress(orjson.JSONDecodeError):
                event = orjson.loads(raw)
                project = event.get("project") if isinstance(event, dict) else None
                if isinstance(project, str) and project:
                    return project
        return None
    finally:
        reader.close()


#: How many of the newest events `_newest_project` reads at most for one that names a project.
NEWEST_TRIED = 50


def _remember(store: Store, branch: str, remote: str) -> Store:
    """Record a non-default branch or remote in config.json, so a plain `continuity sync` uses them."""
    config = dict(store.config)
    wanted = {"sync_branch": branch if branch != DEFAULT_BRANCH else None,
              "sync_remote": remote if remote != DEFAULT_REMOTE else None}
    changed = False
    for key, value in wanted.items():
        if value is not None and config.get(key) != value:
            config[key] = value
            changed = True
    if not changed:
        return store
    try:
        write_atomic(store.config_path, config_json(config))
    except OSError as error:
        raise WriteFailed(f"config not written: {error.strerror or error}") from None
    return Store(store.root)
