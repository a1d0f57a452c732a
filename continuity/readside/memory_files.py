"""Memories as Markdown for people: ``memories/<id>.md`` in the store, derived from the `tasks` model.

Written while the model catches up (a writer per folded event) and swept after any
catch-up (the kept memories newer than the newest one written, recorded in
``local/memories-written``), atomically and only when the bytes change; a rebuild writes
the same bytes. Failures are warnings: memories are a shadow of the events.
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import Any

from continuity.core.fsio import reason_of, write_atomic, write_if_changed
from continuity.core.store import Store
from continuity.core.text import block, one_line
from continuity.readside.catchup import Outcome, catch_up, in_turn, save
from events import osfs
from events.base import Event
from events.errors import ContinuityError
from projections.readmodel import Projects

TYPE_CHECKING = False
if TYPE_CHECKING:
    from projections.memories import Memory

MEMORIES_DIR = "memories"
MARK = "memories-written"
#: Left in `local/` while a sweep could not write every memory it should have (removed by the next whole sweep).
UNWRITTEN = "memories-unwritten"


def behind(store: Store) -> bool:
    """Whether the memory files may lack memories the tasks model keeps even when nothing new was folded: the
    memories folder or the mark of what was written is missing (removed by hand, a fresh clone's store), or the
    last sweep left some unwritten."""
    return (not os.path.isdir(os.path.join(store.path, MEMORIES_DIR))
            or not os.path.isfile(os.path.join(store.local_dir, MARK))
            or os.path.lexists(os.path.join(store.local_dir, UNWRITTEN)))


def _filled_by_run() -> tuple[str, ...]:
    from projections.tasks import FILLED_BY_RUN

    return FILLED_BY_RUN


def render(memory: Memory) -> bytes:
    """One memory as Markdown: title, kind, task, run, summary, files, provenance.

    `memory show` prints these bytes, and the text comes from events (a synced teammate's
    included): each value is shown inert (core/text.py), so no control character reaches a
    terminal raw and no line of it can start a section or a list item of its own.
    """
    lines = [f"# {one_line(memory.title)}", "", f"- kind: {memory.kind}", f"- id: {memory.memory_id}",
             f"- task: {one_line(memory.task_id or '-')}", f"- run: {one_line(memory.run_id or '-')}",
             f"- at: {memory.created_at}", f"- event: {memory.event_id}", "", block(memory.summary, indent=""), ""]
    if memory.files_touched:
        lines += ["## Files touched", "", *(f"- `{one_line(path)}`" for path in memory.files_touched), ""]
    lines += ["## Provenance", ""]
    lines += [f"- {one_line(key)}: {block(_shown(value))}" for key, value in memory.provenance.items()]
    return ("\n".join(lines) + "\n").encode()


def _shown(value: Any) -> str:
    """A provenance value as people read it: `none`, a list as its items joined by commas."""
    if value is None:
        return "none"
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value) or "none"
    return str(value)


class MemoryWriter:
    """A catch-up writer: after each folded event, writes the memory that event synthesized."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.warnings: list[str] = []
        self.newest: str = ""
        #: Memories whose file could not be written (and was not written since).
        self.unwritten: set[str] = set()

    def __call__(self, state: Projects[Any], name: str, event: Event) -> None:
        """Write the memory `event` made, if it made one, or the ones its run's completion filled in."""
        project = state.projects.get(event.project)
        memories = project.book.memories if project is not None else []
        if memories and memories[-1].event_id == event.event_id and event.event_id:
            self.write(memories[-1])
        elif event.run_id and event.kind == "run.completed":
            for memory in memories:
                if memory.run_id == event.run_id and memory.kind in _filled_by_run():
                    self.write(memory)

    def write(self, memory: Memory) -> None:
        """Write one memory file (a warning when it cannot be written)."""
        path = os.path.join(self.store.path, MEMORIES_DIR, f"{memory.memory_id}.md")
        try:
            write_if_changed(path, render(memory), within=self.store.path)
        except (OSError, ContinuityError) as error:  # an unsafe folder too: a shadow file, never a failed read
            if not self.warnings:
                self.warnings.append(f"memory files not written: {reason_of(error, self.store.path)}")
            self.unwritten.add(memory.memory_id)
            return
        self.unwritten.discard(memory.memory_id)
        self.newest = max(self.newest, memory.memory_id)


def refresh_tasks(store: Store, *, write: bool = True, rebuild: bool = False, view: Any = None) -> Outcome:
    """Catch the `tasks` model up, save it, and write new memory files. Fails open with warnings.

    `view` (projections/tasks.py `TaskList`, `MemoryList`): what the caller reads of each
    project's state; when nothing was folded, only that much is decoded.
    """
    if not write:
        return _refresh_tasks(store, write=False, rebuild=rebuild, view=view)
    return in_turn(store, lambda turn: _refresh_tasks(store, write=turn, rebuild=rebuild, view=view))


def _refresh_tasks(store: Store, *, write: bool, rebuild: bool, view: Any) -> Outcome:
    log = store.open_reader()
    writer = MemoryWriter(store) if write else None
    outcome, saved = catch_up(store, log, ("tasks",), writers={"tasks": writer} if writer else None,
                              force_rebuild=rebuild, views={"tasks": view} if view is not None else None)
    if writer is None or outcome.as_saved:  # events/ could not be listed: nothing is written from what was saved
        return outcome
    try:
        for model, state, changed in saved:
            if changed:
                save(store, model, state)
    except OSError as error:
        outcome.saved = False
        outcome.warnings.append(f"projections not saved: {reason_of(error)}")
    if view is not None and "tasks" not in outcome.whole:
        return outcome  # nothing folded that makes a memory (and a view may not hold the memories)
    outcome.warnings.extend(sweep(store, outcome.models.state("tasks"), writer, full=rebuild or outcome.rebuilt))
    return outcome


def sweep(store: Store, state: Projects[Any], writer: MemoryWriter | None = None, *, full: bool = False) -> list[str]:
    """Write the kept memories newer than the newest written (all kept ones when `full`).

    `full` (after a rebuild) also removes the files of memories the log no longer makes:
    a synthesis that lost to an earlier one merged in by a sync.
    """
    writer = writer or MemoryWriter(store)
    if full:
        _prune(store, state, writer)
    mark_path = os.path.join(store.local_dir, MARK)
    marked = True
    try:
        written = osfs.read_regular(mark_path, limit=osfs.SMALL_LIMIT).decode().strip()
    except (OSError, UnicodeDecodeError):
        written, marked = "", False
    if full or not os.path.isdir(os.path.join(store.path, MEMORIES_DIR)):
        written = ""
    newest = written
    for project in state.projects.values():
        for memory in project.book.memories:
            if memory.memory_id > written:
                writer.write(memory)
            newest = max(newest, memory.memory_id)
    unwritten = os.path.join(store.local_dir, UNWRITTEN)
    if writer.unwritten:  # the mark stays below a memory whose file is missing: the next sweep writes it
        with contextlib.suppress(OSError):
            write_atomic(unwritten, b"", durable=False, within=store.path)
        return writer.warnings
    with contextlib.suppress(OSError):  # none there (the common case), or it cannot be removed: swept again
        os.unlink(unwritten)
    if newest != written or writer.newest > written or not marked:  # written even empty: behind() reads it
        with contextlib.suppress(OSError):
            write_atomic(mark_path, max(newest, writer.newest).encode(), durable=False, within=store.path)
    return writer.warnings


def _prune(store: Store, state: Projects[Any], writer: MemoryWriter) -> None:
    """Remove memory files no project keeps, except those its bounds may have aged out.

    A file older than the oldest memory a full book keeps may be a memory that aged out
    (kept on disk for people); any other file not kept is one the log no longer makes.
    """
    from projections.memories import MEMORIES_LIMIT

    kept: set[str] = set()
    threshold = ""
    for project in state.projects.values():
        memories = project.book.memories
        kept.update(memory.memory_id for memory in memories)
        if len(memories) >= MEMORIES_LIMIT:
            threshold = max(threshold, memories[0].memory_id)
    folder = os.path.join(store.path, MEMORIES_DIR)
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):  # a link planted there: never list or remove where it points
            return
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        memory_id = entry.removesuffix(".md")
        if entry.startswith("mem-") and entry.endswith(".md") and memory_id not in kept and memory_id >= threshold:
            try:
                os.unlink(os.path.join(folder, entry))
            except OSError as error:
                if not writer.warnings:
                    writer.warnings.append(f"memory files not updated ({error.strerror or error})")
