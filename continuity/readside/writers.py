"""Derived files: what a catch-up writes from the read models (fail open: warnings, not errors).

One writer per read model that has files of its own (archives: JSON and Markdown per
archive), plus `state.json` (seed 004's shape, seedstate.py), `projects.json` (each
project's work state) and `archives/latest.json`, written when the session models are loaded.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

from continuity.core.fsio import (
    DOCUMENT_LOCK_SECONDS,
    JSON_LIMIT,
    ensure_folder,
    folder_locked,
    missing_folders,
    pretty_json,
    reason_of,
    remove_empty_folders,
    write_if_changed,
    write_if_differs,
)
from continuity.core.logs import log as log_event
from continuity.core.paths import LATEST_LINK, contexts_dir, default_contexts, user_home
from continuity.core.store import Store
from continuity.readside.catchup import (
    Held,
    Outcome,
    Progress,
    catch_up,
    in_turn,
    load,
    mark_unfinished,
    models_dir,
    save,
)
from continuity.readside.seedstate import seed_state, write_seed_state
from continuity.readside.views import SESSION_MODELS, Models
from continuity.sessions.archives import ArchiveRecord, archive_schema, record_of
from continuity.sessions.templates import render_archive_markdown, render_seed_markdown
from events import lazyre, osfs
from events.base import Event
from events.errors import ContinuityError, EventsUnlisted
from events.names import NODE, STAMP
from projections.archives import ArchivesState
from projections.readmodel import Projects
from projections.registry import REGISTRY


def archives_dir(store: Store) -> str:
    """The project-level archives folder."""
    return os.path.join(store.path, "archives")


def markdown_path(store: Store, record: ArchiveRecord, contexts: str | None = None) -> str:
    """`~/.agent/contexts/<project>/ctx_<stamp>.md` of an archive."""
    stamp = record.archive_id.removeprefix("RC-")
    return os.path.join(contexts or contexts_dir(store), record.project, f"ctx_{stamp}.md")


STATE_RECENT = 20
#: The `format` written in projects.json (the document's shape, not a read model's).
STATE_DOCUMENT_FORMAT = 3
PROJECTS_NAME = "projects.json"


def state_document(models: Models) -> dict[str, Any]:
    """`projects.json`: each project's work state, counts, and its most recent sessions, runs and archives.

    The full read models (every session kept, whole archive entries) stay in the
    machine-local saved models; archives have their own files.
    """
    from projections.sessions import fields

    projects: dict[str, Any] = {}
    for name in models.state("overview").projects:
        project = models.project(name)
        projects[name] = {
            "events": project.events,
            "first_at": project.first_at,
            "last_at": project.last_at,
            "last_event_id": project.last_event_id,
            "last_host": project.sessions.last_host,
            "work": project.work,
            "sessions": [fields(info) for info in list(project.sessions.sessions.values())[-STATE_RECENT:]],
            "runs": [fields(run) for run in list(project.sessions.runs.values())[-STATE_RECENT:]],
            "handoffs": list(project.refs.handoffs.values())[-STATE_RECENT:],
            "artifacts": list(project.refs.artifacts.values())[-STATE_RECENT:],
            "archives": [entry.archive_id for entry in project.archive_state.archives[-STATE_RECENT:]],
            "archives_total": project.archives_total,
            "contexts_served": project.served,
        }
    return {
        "format": STATE_DOCUMENT_FORMAT,
        "last_event": models.last_name,
        "events_folded": models.events_folded,
        "projects": projects,
    }


class ArchiveWriter:
    """The archives model's writer: each archive's JSON and Markdown as the fold produces it."""

    def __init__(self, store: Store, archives: str | None = None, contexts: str | None = None) -> None:
        self.store = store
        self.archives = archives or archives_dir(store)
        #: Archive JSON is written only through real folders below this one (the store, or a replay's folder).
        self.within = os.path.dirname(self.archives)
        self.contexts = contexts or contexts_dir(store)
        #: The home folder the default contexts folder is under (None when one is configured or given): a home
        #: that does not exist (HOME=/nonexistent in a container or a service) is not made for it.
        self.home = user_home() if contexts is None and self.contexts == default_contexts() else None
        self.language = str(store.config.get("language") or "en")
        self.warnings: list[str] = []
        #: Those of the warnings about the user-level Markdown copies (outside the store: a read-only home).
        self.outside: list[str] = []

    def __call__(self, state: Projects[ArchivesState], name: str, event: Event) -> None:
        if event.kind != "archive.created":
            return
        entry = state.projects[event.project].archives[-1]
        self.write_record(record_of(event.project, entry), None if entry.cited is None else entry.cited.recent_commits)

    def write_record(self, record: ArchiveRecord, seed_commits: str | None = None) -> None:
        """Write one archive's JSON, its Markdown and the `latest.md` link (warnings on failure).

        `seed_commits` (the recent commits it cites) marks an archive taken through
        `runtime-continuity`: its Markdown is seed 004's template and latest.md links absolutely.
        """
        try:
            write_if_changed(os.path.join(self.archives, f"{record.archive_id}.json"), pretty_json(record),
                             within=self.within)
        except (OSError, ContinuityError) as error:
            self._warn(f"archive JSON not written: {reason_of(error)}")
        if self.home is not None and not os.path.isdir(self.home):
            self._warn(f"Markdown archive not written: the home folder {self.home} does not exist (set contexts_dir "
                       "in config.json, or CONTINUITY_CONTEXTS_DIR)", outside=True)
            return
        if _within(self.contexts, self.store.path):  # its latest.md link would be a symlink in the store
            self._warn(f"Markdown archive not written: the contexts folder {self.contexts} is inside the store (set "
                       "contexts_dir in config.json, or CONTINUITY_CONTEXTS_DIR, outside it)", outside=True)
            return
        try:
            path = markdown_path(self.store, record, self.contexts)
            if seed_commits is None:
                write_if_changed(path, render_archive_markdown(record, self.language).encode())
            else:
                write_if_changed(path, render_seed_markdown(record, seed_commits).encode())
            link_latest(os.path.join(os.path.dirname(path), LATEST_LINK), path, absolute=seed_commits is not None)
        except OSError as error:
            self._warn(f"Markdown archive not written: {reason_of(error)}", outside=True)

    def _warn(self, message: str, *, outside: bool = False) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
            if outside:
                self.outside.append(message)


def _within(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or below it, links followed as far as they exist."""
    real, top = os.path.realpath(path), os.path.realpath(folder)
    return real == top or real.startswith(top + os.sep)


def link_latest(link: str, target: str, *, absolute: bool = False) -> None:
    """Point `latest.md` at the newest archive: a relative (or absolute) symlink, a copy where links fail.

    Never back: two catch-ups running at once each link the newest archive they folded, and the
    one that folded less may finish last. Under a lock on the folder, a link already naming a
    newer archive (a later `ctx_<stamp>.md`) is kept.
    """
    relative = os.path.abspath(target) if absolute else os.path.basename(target)
    with folder_locked(os.path.dirname(link), DOCUMENT_LOCK_SECONDS):
        _link_latest(link, target, relative)


def _link_latest(link: str, target: str, relative: str) -> None:
    try:
        if os.path.islink(link):
            current = os.readlink(link)
            if current == relative or _newer_markdown(os.path.basename(current), os.path.basename(target)):
                return
        folder, name = os.path.split(link)
        temp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")  # the atomic writer's name: `rebuild` sweeps it
        if os.path.lexists(temp):
            os.unlink(temp)
        os.symlink(relative, temp)
        try:
            os.replace(temp, link)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
    except OSError:  # no links here (a file system without them): a copy, never one of an older archive
        if not _newer_copy(link, os.path.basename(target)):
            write_if_changed(link, osfs.read_regular(target))


#: The archive a Markdown archive is of, near its top (`- Archive: \`RC-<stamp>\``, in either language).
_ARCHIVE_IN_TEXT = lazyre.pattern(rf"`RC-({STAMP})`")


def _newer_copy(link: str, mine: str) -> bool:
    """Whether `latest.md`, a copy where links fail, is of an archive taken after the one named `mine`."""
    ours = _MARKDOWN_NAME().match(mine)
    try:
        head = osfs.read_regular(link, follow=False)[:4096].decode("utf-8", "replace")
    except OSError:  # none yet, a link, or not a file: written as before
        return False
    theirs = _ARCHIVE_IN_TEXT().search(head)
    return ours is not None and theirs is not None and theirs[1] > ours[1]


#: A Markdown archive's name: its stamp sorts as its archive's time does.
_MARKDOWN_NAME = lazyre.pattern(rf"ctx_({STAMP})(?:-{NODE})?\.md\Z")


def _newer_markdown(current: str, mine: str) -> bool:
    """Whether the archive `latest.md` names now was taken after `mine` (both our names; else no)."""
    theirs, ours = _MARKDOWN_NAME().match(current), _MARKDOWN_NAME().match(mine)
    return theirs is not None and ours is not None and theirs[1] > ours[1]


#: How many events a catch-up folds again, at most, to retry documents it could not write.
RETRY_FOLDS = 1000


def refresh(
    store: Store, names: tuple[str, ...] = SESSION_MODELS, *, rebuild: bool = False, write: bool = True,
    views: dict[str, Any] | None = None,
    progress: Progress | None = None, held: Held | None = None, finish_rebuild: bool = False,
    deadline: float | None = None, sparse: dict[str, str] | None = None,
) -> Outcome:
    """Catch the named read models up with the log, save them and write what changed.

    `views`: what the caller reads of a model's state (catchup.py); every view of `tasks`
    holds the memories, which the memory files are written from. `progress` is told how
    many events were read after each day folder. `held`: bytes of event files the caller
    just wrote (catch_up). `finish_rebuild`: the models were rebuilt by earlier calls, a
    part of the log at a time; write the documents and sweep the memories as after a
    rebuild. Never raises OSError for derived files: a file that cannot be written is a
    warning. Catch-ups that write take turns (catchup.writing_turn). `deadline`, `sparse`: see catch_up.
    """
    kwargs: dict[str, Any] = {"rebuild": rebuild, "views": views, "progress": progress, "held": held,
                              "finish_rebuild": finish_rebuild, "deadline": deadline, "sparse": sparse}
    if not write:
        return _refresh(store, names, write=False, **kwargs)
    return in_turn(store, lambda turn: _refresh(store, names, write=turn, **kwargs), deadline)


def _refresh(
    store: Store, names: tuple[str, ...], *, rebuild: bool, write: bool, views: dict[str, Any] | None,
    progress: Progress | None, held: Held | None, finish_rebuild: bool, deadline: float | None = None,
    sparse: dict[str, str] | None = None,
) -> Outcome:
    log = store.open_reader()
    writer = ArchiveWriter(store) if write else None
    writers: dict[str, Any] = {"archives": writer, **model_writers(store, names)} if writer is not None else {}
    if rebuild and writers:
        writers = _marking_first(store, writers)
    outcome, saved = catch_up(store, log, names, writers=writers, force_rebuild=rebuild, views=views,
                              progress=progress, held=held, deadline=deadline, sparse=sparse)
    log_event("debug", "projections caught up", folded=outcome.folded, rebuilt=outcome.rebuilt,
              last_event=outcome.models.last_name)
    if writer is None or outcome.as_saved:  # nothing read: no document or memory file is written from it
        return outcome
    flush(writers)
    for each in writers.values():
        outcome.warnings.extend(each.warnings)
    # A rebuild that stopped short (a deadline, a day folder that cannot be read) holds only the log up to there: its
    # documents are written newer-only and no memory file is pruned, until a later catch-up has read the rest.
    fresh = (rebuild or outcome.rebuilt or finish_rebuild) and outcome.stopped is None
    try:
        if set(SESSION_MODELS) <= set(names) and (
            outcome.folded or fresh or not os.path.isfile(os.path.join(store.path, "state.json"))
        ):
            _write_documents(store.path, outcome.models, schema=fresh, contexts=writer.contexts, newer_only=not fresh)
            if fresh:
                from continuity.core.initialize import write_generated

                write_generated(store.path)
        # A model whose writer could not write a document is not saved: the next catch-up folds
        # those events again and writes it (saved, it would be past them, and only a rebuild would).
        # Not without bound: a folder that stays unwritable (a read-only home in a sandbox) would have
        # every later command fold a growing tail again; past RETRY_FOLDS events the model is saved
        # and the warning says how to write what is missing.
        unwritten = {name for name, each in writers.items() if each.warnings}
        in_store = {name: [line for line in writers[name].warnings if line not in getattr(writers[name], "outside", ())]
                    for name in sorted(unwritten)}
        outcome.unwritten = [line for lines in in_store.values() for line in lines]
        inside = {name for name, lines in in_store.items() if lines}
        if unwritten and outcome.folded > RETRY_FOLDS:
            unwritten = set()
            outcome.warnings.append("documents that could not be written are not retried any more: "
                                    "`continuity rebuild` writes them once their folder is writable")
        if unwritten and rebuild:
            # `rebuild` folds from nothing, not from the saved copy, which may be past these events already: left
            # in place, the next catch-up would find nothing to fold and the documents in the store would stay as
            # the failed rebuild left them (a role or handoff rolled back to an earlier event). Without it, the
            # next catch-up rebuilds that model once and writes its documents again. (Files outside the store, a
            # read-only home's Markdown, are retried as a catch-up retries them.)
            for model, _, _ in saved:
                if model.name in inside:
                    mark_unfinished(store, model)
        # A rebuild's model whose only unwritten documents are outside the store (the project's .ai-bridge/, a home's
        # Markdown) is saved all the same: its saved copy was marked unfinished before the first document
        # (_MarkFirst), and left so, every later command would rebuild it again.
        changed = [(model, state) for model, state, dirty in saved
                   if dirty and (model.name not in unwritten or (rebuild and model.name not in inside))]
        if changed:
            ensure_folder(store.path, models_dir(store))
        for model, state in changed:
            save(store, model, state, folder_checked=True)
    except (OSError, ContinuityError) as error:
        outcome.saved = False
        # no file where a model belongs (catchup.save: a FIFO, a link, a folder): `rebuild` replaces it
        planted = isinstance(error, OSError) and error.errno in (errno.EINVAL, errno.ELOOP, errno.EISDIR)
        outcome.warnings.append(f"projections not saved: {reason_of(error)}"
                                + ("; `continuity rebuild` replaces it" if planted and not rebuild else ""))
    if "tasks" in writers:
        _sweep_memories(store, outcome, writers["tasks"], fresh)
    return outcome


def _sweep_memories(store: Store, outcome: Outcome, writer: Any, fresh: bool) -> None:
    """Write the memory files the tasks model keeps and the last sweep did not (memory_files.sweep).

    A tasks model handed over without its projects was not decoded: nothing was folded into it, so no memory is
    newer than the last sweep's, and it is read whole only when the files may lack some all the same (the folder
    removed, a sweep that could not write them all, or a rebuild); one holding no project keeps no memory.
    `writer`: the tasks model's writer (_Later, made here only when a sweep runs)."""
    held = outcome.models.partial.get("tasks")
    if held == 0:
        return
    from continuity.readside.memory_files import behind, sweep

    if held is None:
        state = outcome.models.state("tasks")
    elif fresh or behind(store):
        saved = load(store, REGISTRY["tasks"])
        if saved is None:  # not saved (a failed save, a lock held): the next catch-up sweeps
            return
        state = saved.state
    else:
        return
    swept = sweep(store, state, writer.writer, full=fresh)
    outcome.warnings.extend(line for line in swept if line not in outcome.warnings)


class _MarkFirst:
    """A writer of a `rebuild` that, before the rebuild's first document is written, marks every model it writes
    documents for unfinished (`catchup.mark_unfinished`). A rebuild folds from nothing and rewrites each document as
    it folds, so one killed part-way left the documents at an earlier point of the log (a role's checkpoint_ref, a
    snapshot's latest.json rolled back) under saved models already past it: no later catch-up folded those events
    again. Marked, the next catch-up rebuilds those models and writes their documents; the rebuild's own save
    replaces the marks. A rebuild that stops before it writes anything (events/ cannot be listed) marks nothing."""

    def __init__(self, inner: Any, mark: Any) -> None:
        self.inner, self.mark = inner, mark

    def __call__(self, state: Any, name: str, event: Event) -> None:
        self.mark()
        self.inner(state, name, event)

    def __getattr__(self, attribute: str) -> Any:  # warnings, outside, flush: the writer's own
        return getattr(self.inner, attribute)


def _marking_first(store: Store, writers: dict[str, Any]) -> dict[str, Any]:
    """`writers`, each marking the models of all of them unfinished once, before the first document (_MarkFirst)."""
    marked: list[bool] = []

    def mark() -> None:
        if not marked:
            marked.append(True)
            for name in writers:
                if name in REGISTRY:  # a store where no mark can be written takes no document either: it says so
                    with contextlib.suppress(OSError, ContinuityError):
                        mark_unfinished(store, REGISTRY[name])

    return {name: _MarkFirst(each, mark) for name, each in writers.items()}


class _Later:
    """A model's document writer, made (its module imported, the store's project read) at the first event it is
    handed: a catch-up that folds nothing into the model never loads it (a project that never used the feature)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._writer: Any = None

    @property
    def writer(self) -> Any:
        """The writer itself."""
        if self._writer is None:
            self._writer = self._make()
        return self._writer

    def __call__(self, state: Any, name: str, event: Event) -> None:
        self.writer(state, name, event)

    @property
    def warnings(self) -> list[str]:
        return [] if self._writer is None else list(self._writer.warnings)

    @property
    def outside(self) -> Sequence[str]:
        return () if self._writer is None else getattr(self._writer, "outside", ())

    def flush(self) -> None:
        done = getattr(self._writer, "flush", None)
        if done is not None:
            done()


def _later(module: str, name: str, *args: Any) -> _Later:
    """Writer class `name` of `module`, made with `args` (the module imported) at the first event it is handed."""
    return _Later(lambda: getattr(importlib.import_module(module), name)(*args))


def model_writers(store: Store, names: tuple[str, ...], folder: str | None = None) -> dict[str, Any]:
    """The writers of the other read models that have files of their own, for those loaded (each made when first
    handed an event)."""
    found: dict[str, Any] = {}
    if "team" in names:
        found["team"] = _later("continuity.team.files", "TeamWriter", store, folder)
    if "tasks" in names and folder is None:  # memories/<id>.md live in the store only
        found["tasks"] = _later("continuity.readside.memory_files", "MemoryWriter", store)
    if "roles" in names:
        found["roles"] = _later("continuity.team.files", "RoleWriter", store, folder)
    if "workstreams" in names:
        found["workstreams"] = _later("continuity.workstreams.files", "WorkstreamWriter", store, folder)
    if "handoffs" in names:
        found["handoffs"] = _later("continuity.handoffs.files", "HandoffWriter", store, folder)
    return found


def flush(writers: dict[str, Any]) -> None:
    """Let the writers that collect during a catch-up (`flush()`) write what they collected."""
    for each in writers.values():
        done = getattr(each, "flush", None)
        if done is not None:
            done()


def seed_state_document(models: Models, contexts: str, newest: ArchiveRecord | None) -> dict[str, Any]:
    """`state.json` (I14) from the read models: the newest event, the newest archive (`newest`: _newest_archive),
    its project's latest.md."""
    from events import names

    last = models.last_name
    project = created_at = None
    if last is not None:
        last_id = names.id_of_name(last)
        for name in models.state("overview").projects:
            view = models.project(name)
            if view.last_event_id == last_id:
                project, created_at = name, view.last_at
    has_archive = project is not None and models.project(project).archives_total > 0
    return seed_state(project=project, last_name=last, created_at=created_at,
                      newest_archive_id=newest.archive_id if newest else None,
                      markdown=os.path.join(contexts, project, LATEST_LINK) if has_archive and project else None)


def _write_documents(folder: str, models: Models, *, schema: bool = True, contexts: str = "",
                     newer_only: bool = False) -> None:
    """state.json, projects.json, archive.schema.json and archives/latest.json from the models.

    `newer_only` (a store's catch-up; not after a rebuild): under a lock on the folder, documents
    written from more events than `models` hold are kept. Two catch-ups running at once each
    write what they folded, and the one that folded less may finish last: without the check,
    latest.json named an older archive than the newest one.
    """
    with folder_locked(folder, DOCUMENT_LOCK_SECONDS) as held:
        projects = _read_projects(folder) if newer_only else None
        if newer_only and (_folded_in(projects) or 0) > models.events_folded:
            log_event("debug", "documents kept: written from more events", folded=models.events_folded)
            return
        _write_each(folder, models, schema=schema, contexts=contexts, newer_only=newer_only, swap=held and newer_only,
                    projects=projects)


#: `"events_folded": N` near the start of projects.json (its third field).
_FOLDED = re.compile(rb'"events_folded": ?([0-9]{1,18})[,\n]')


def _read_projects(folder: str) -> bytes | None:
    """projects.json's bytes in `folder` (None: no such file, not a regular file, or unreadable; a link is not
    followed, a FIFO never blocks)."""
    try:
        return osfs.read_regular(os.path.join(folder, PROJECTS_NAME), follow=False, limit=JSON_LIMIT)
    except OSError:
        return None


def _folded_in(projects: bytes | None) -> int | None:
    """How many events a projects.json was written from (None: none, or not one of ours)."""
    found = _FOLDED.search(projects[:512]) if projects is not None else None
    return int(found[1]) if found else None


def _write_each(folder: str, models: Models, *, schema: bool, contexts: str, newer_only: bool,
                swap: bool = False, projects: bytes | None = None) -> None:
    """The documents; `projects`: projects.json's bytes as read under the same lock (None: read none)."""
    newest = _newest_archive(models)
    write_seed_state(folder, seed_state_document(models, contexts, newest), newer_only=newer_only, swap=swap)
    write_if_differs(os.path.join(folder, PROJECTS_NAME), pretty_json(state_document(models)), projects,
                     within=folder, swap=swap)
    schema_path = os.path.join(folder, "archive.schema.json")
    if schema or not os.path.isfile(schema_path):  # generating it costs more than a whole catch-up
        write_if_changed(schema_path, archive_schema(), within=folder)
    if newest is not None:
        write_if_changed(os.path.join(folder, "archives", "latest.json"), pretty_json(newest), within=folder)


def _store_holding(path: str) -> str | None:
    """The store (`<root>/.agent/runtime-continuity`) that `path` (a real path) is in or is, if any."""
    from continuity.core.store import STORE_PARTS

    parts = os.path.normpath(path).split(os.sep)
    width = len(STORE_PARTS)
    for end in range(width, len(parts) + 1):
        if tuple(parts[end - width:end]) == STORE_PARTS:
            return os.sep.join(parts[:end]) or os.sep
    return None


def _check_out_folder(store: Store, out: str) -> None:
    """A replay writes the log as it stood then: never over the store, the live Markdown archives or a
    folder that holds anything but an earlier replay.

    Into the store it replaced the current state.json and archives with old ones (and left a
    `contexts/` folder there); into the folder holding the Markdown archives, their `latest.md`.
    """
    from continuity.core.errors import UsageError

    def inside(path: str, folder: str) -> bool:
        real, home = os.path.realpath(path), os.path.realpath(folder)
        return real == home or real.startswith(home.rstrip(os.sep) + os.sep)

    if os.path.islink(out):  # written through, then refused as an unsafe folder half way: "nothing written", 6
        raise UsageError(f"--out: {out} is a symbolic link; name the folder itself (nothing written)")
    if inside(out, store.path):
        raise UsageError(f"--out: {out} is inside the store ({store.path}); a replay writes only outside it")
    other = _store_holding(os.path.realpath(out))
    if other is not None:  # another project's store: its day folders, say, where its `verify` finds junk
        raise UsageError(f"--out: {out} is inside a store ({other}); a replay writes only outside every store")
    live = contexts_dir(store)
    if inside(os.path.join(out, "contexts"), live) or inside(live, os.path.join(out, "contexts")):
        raise UsageError(f"--out: {out}/contexts would be the live Markdown archives ({live}); choose another folder")
    # A replay writes state.json, archives/, workstreams/ and .ai-bridge/ into `out`: over a project's
    # own (`--out .`) that put an old resume contract where agents read the live one. Only a new or
    # empty folder, or one an earlier replay wrote (its mark), is taken.
    try:
        held = os.listdir(out)
    except FileNotFoundError:
        return
    except OSError as error:
        raise UsageError(f"--out: {out} cannot be listed ({error.strerror or error})") from None
    if held and REPLAY_MARK not in held:
        raise UsageError(f"--out: {out} is not empty and holds no earlier replay; choose a new or empty folder")


#: The file a replay leaves in its folder, so a later replay may write there again.
REPLAY_MARK = ".continuity-replay"
#: What a replay writes at the top of its folder (tests/integration/test_replay.py holds it to that). A replay
#: into an earlier one's folder removes these first: left, files of the later point stayed beside the earlier
#: point's state.json (an archive that did not exist yet, a handoff not yet made).
REPLAY_WRITES = ("state.json", "projects.json", "archive.schema.json", "archives", "contexts", "handoffs", "team",
                 "workstreams", ".ai-bridge")


def _sweep_earlier_replay(out: str) -> None:
    """Remove what an earlier replay wrote into `out` (a link is removed, never followed); other files stay.

    OSError names the path that could not be removed; what was removed before it stays removed (the replay then
    writes nothing, and says so: run it again once the path can go)."""
    import shutil
    import stat

    for name in REPLAY_WRITES:
        path = os.path.join(out, name)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def _remove_made(made: list[str], mark: str | None) -> None:
    """Take away the mark (when this replay made it) and the folders it made, deepest first (best effort)."""
    if mark:
        with contextlib.suppress(OSError):
            os.unlink(mark)
    remove_empty_folders(made)


def replay_into(store: Store, until: str, out: str) -> dict[str, Any]:
    """Write every projection as of `until` into `out` (state.json, archives/, contexts/)."""
    from continuity.readside.replay import known_at, models_until, resolve_point
    from events.errors import WriteFailed

    log = store.open_reader()
    last_name, point = resolve_point(log, until, "--until")
    _check_out_folder(store, out)
    # What this replay makes besides its files (the folders up to `out`, the mark), taken away when it fails:
    # "nothing of it is left" holds for a new folder too.
    made = missing_folders(os.path.abspath(out))
    mark_path = os.path.join(out, REPLAY_MARK)
    marked = os.path.lexists(mark_path)
    try:
        os.makedirs(out, exist_ok=True)
        mark = os.open(mark_path, osfs.UPDATE, 0o666)
    except OSError as error:
        _remove_made(made, None if marked else mark_path)
        raise WriteFailed(f"replay not written: {error.strerror or error} ({error.filename or out})") from None
    try:  # held on the mark: two replays into one folder run one after the other (one swept the other's files)
        osfs.lock(mark)
        try:
            if os.fstat(mark).st_size == 0:
                os.write(mark, b"written by `continuity replay`\n")
            _sweep_earlier_replay(out)
        except OSError as error:  # the path that failed, not the folder
            _remove_made(made, None if marked else mark_path)
            raise WriteFailed(f"replay not written: {error.strerror or error} ({error.filename or out})") from None
        writer = ArchiveWriter(store, os.path.join(out, "archives"), os.path.join(out, "contexts"))
        names = tuple(REGISTRY)
        writers: dict[str, Any] = {"archives": writer, **model_writers(store, names, out)}
        warnings: list[str] = []
        try:
            models = models_until(log, last_name, warnings, names, writers=writers, only=known_at(last_name, point),
                                  whole=True)
            flush(writers)
            _write_documents(out, models, contexts=os.path.join(out, "contexts"))
            # what a catch-up only warns of (a document not written) fails a replay: its files are all it makes
            failed = next((f"replay failed: {line}" for each in writers.values() for line in each.warnings), None)
        except OSError as error:
            failed = f"replay not written: {reason_of(error)}"
        except EventsUnlisted as error:  # a day it cannot list: what it wrote goes, and the refusal stands (exit 1)
            with contextlib.suppress(OSError):
                _sweep_earlier_replay(out)
            _remove_made(made, None if marked else mark_path)
            raise EventsUnlisted(f"replay not written: {error}") from None
        if failed is not None:
            try:
                _sweep_earlier_replay(out)
            except OSError as error:
                raise WriteFailed(f"{failed}; what it wrote stays in {out} (not removed: {error.strerror or error} "
                                  f"({error.filename or out}))") from None
            _remove_made(made, None if marked else mark_path)
            raise WriteFailed(f"{failed}; nothing of it is left in {out}")
    finally:
        osfs.release(mark)
    return {"out": out, "events": models.events_folded, "last_event": models.last_name, "warnings": warnings}


def _newest_archive(models: Models) -> ArchiveRecord | None:
    state: Projects[ArchivesState] = models.state("archives")
    newest = [(project, found.archives[-1]) for project, found in state.projects.items() if found.archives]
    if not newest:
        return None
    project, entry = max(newest, key=lambda pair: pair[1].event_id[4:])
    return record_of(project, entry)
