"""`continuity clone-store`: a fresh clone of the code resumes from the remote's continuity branch and node refs.

A remote URL that embeds credentials is refused before anything is fetched or written, so
no secret reaches config.json; a configured git remote is remembered by its name.

The read models are built as the events land: sync's restore brings them in a batch at a
time (whole days), and each batch is folded from the bytes just written instead of reading
a million files back. (Folding on a thread while the next batch is staged was measured and
gained nothing: both halves hold the interpreter's lock, the file creation included.)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import orjson

from continuity.core.errors import UsageError
from continuity.core.fsio import write_atomic
from continuity.core.store import Store
from continuity.sync.credentials import guard_remote, mask_url
from continuity.sync.engine import Progress, fetch_remote, nodes_folder, sync, tracking_ref
from continuity.sync.git import Repo
from continuity.sync.objects import ObjectReader
from continuity.sync.settings import DEFAULT_BRANCH, DEFAULT_REMOTE, branch_of, remote_of
from continuity.sync.tree import day_entries, is_event, read_snapshot
from events.durable import READ_LIMIT
from events.errors import WriteFailed

if TYPE_CHECKING:
    from continuity.readside.catchup import Outcome

NEWEST_COMMITS = 16  # commits read for the newest event's project name
HELD_BYTES = 32 << 20  # bytes of a restored batch kept in memory for its fold (the rest are read back)


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
    remote_name = remote_of(store, remote)
    warnings = guard_remote(repo, remote_name)
    found: list[str] = []  # sync warns of broken node refs again, with the rest
    tip, tips = fetch_remote(repo, remote_name, branch_name, tracking_ref(repo, remote_name, branch_name),
                             nodes_folder(repo, remote_name, branch_name), found)
    heads = [commit for _, commit in sorted(tips.items())]
    if tip is None and not heads:
        raise UsageError(f"{mask_url(remote_name)!r} has no branch {branch_name!r}: nothing to clone (start one with "
                         "`continuity init` and `continuity sync`)")
    initialized = not os.path.exists(store.config_path)
    if initialized:
        project = _newest_project(repo, [tip] if tip is not None else heads)
        try:
            store, _ = init_store(root, project=project, language=None)
        except UsageError:  # a project name this version refuses: fall back to the folder's name
            store, _ = init_store(root, project=None, language=None)
    store = _remember(store, branch_name, remote_name)
    folding = Folding(store)
    report = sync(store, remote=remote_name, push=False, branch=branch_name, progress=progress, catch_up=False,
                  restore=True, landing=folding)
    from continuity.sync.engine import counting
    from projections.registry import REGISTRY

    rebuilt = counting(progress, "rebuilt") if progress is not None else None
    if folding.outcome is None:  # nothing folded as it landed (or a fold failed): every model from the files
        outcome = refresh(store, tuple(REGISTRY), rebuild=True, progress=rebuilt)
    else:
        outcome = refresh(store, tuple(REGISTRY), finish_rebuild=True, progress=rebuilt)
        outcome.folded += folding.folded
        outcome.warnings[:0] = folding.warnings
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

    The first batch rebuilds every model (as `rebuild` would); each later one catches them
    up. A fold that fails leaves `outcome` None, and clone-store then rebuilds from the files.
    """

    keep = HELD_BYTES

    def __init__(self, store: Store) -> None:
        self.store = store
        self.outcome: Outcome | None = None  # the last batch's; None until one folded, or after a failure
        self.folded = 0
        self.failed = False
        self.warnings: list[str] = []

    def landed(self, held: dict[str, dict[str, bytes]]) -> None:
        if self.failed:
            return
        from continuity.readside.writers import refresh
        from projections.registry import REGISTRY

        try:
            outcome = refresh(self.store, tuple(REGISTRY), rebuild=self.outcome is None, held=held)
        except Exception:  # the rebuild after the restore meets it again, and reports it
            self.failed = True
            self.outcome = None
            return
        self.outcome = outcome
        self.folded += outcome.folded
        self.warnings.extend(line for line in outcome.warnings
                             if line not in self.warnings and "arrived in the past" not in line)


def _newest_project(repo: Repo, commits: list[str]) -> str | None:
    """The `project` of the newest event on these commits (None when they hold none)."""
    reader = ObjectReader(repo)
    try:
        newest: tuple[str, str] | None = None  # (name, blob)
        for head in commits:
            try:  # under `delta` a commit's tree holds what it adds (a merge's nothing): the newest few commits
                recent = [line[0] for line in repo.rev_list([head], limit=NEWEST_COMMITS)]
                snapshots = [read_snapshot(reader, commit) for commit in recent]
            except WriteFailed:  # a node ref sync cannot read: the sync that follows skips it with a warning
                continue
            for snapshot in snapshots:
                for day in sorted(snapshot.days, reverse=True):
                    entries = [e for e in day_entries(reader, snapshot.days[day]).values() if is_event(day, e)]
                    if entries:
                        entry = max(entries, key=lambda item: item.name)
                        newest = max(newest or (entry.name, entry.sha), (entry.name, entry.sha))
                        break
        if newest is None:
            return None
        _, raw = reader.read_bounded(newest[1], READ_LIMIT)
        if raw is None:  # bigger than an event can be: the sync that follows refuses it
            return None
        project = orjson.loads(raw).get("project")
        return project if isinstance(project, str) and project else None
    except (orjson.JSONDecodeError, AttributeError):
        return None
    finally:
        reader.close()


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
        write_atomic(store.config_path, orjson.dumps(config, option=orjson.OPT_INDENT_2) + b"\n")
    except OSError as error:
        raise WriteFailed(f"config not written: {error.strerror or error}") from None
    return Store(store.root)
