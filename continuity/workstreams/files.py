"""The workstreams model's writer: workstream documents and the runtime files (fail open: warnings).

During a catch-up it notes which workstreams the folded events touched; `flush()` then
writes each one's document once (a terminal one under `archive/`, its `active/` file
removed: it moves, it never vanishes; an active one under `active/`, any `archive/` file a
merge made stale removed) and the runtime files. An archived workstream the model forgets
(past ARCHIVE_LIMIT) during the catch-up is written as it stood when forgotten: its file stays,
and a rebuild writes it as the catch-up that saw it did. Only the store's own
project has files (one project root holds one `.ai-bridge/`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

from continuity.core.fsio import pretty_json, reason_of, write_if_changed
from continuity.core.paths import RUNTIME_JSON, RUNTIME_MD
from continuity.core.store import Store
from continuity.workstreams.documents import runtime_document, runtime_markdown, workstream_document
from events.base import Event
from events.errors import ContinuityError
from events.workstream import TERMINAL, WORKSTREAM_EVENTS
from projections.readmodel import Projects
from projections.workstreams import Workstream, WorkstreamsState

KINDS = frozenset(kind.__struct_config__.tag for kind in WORKSTREAM_EVENTS)


def write_runtime(root: str, state: WorkstreamsState, project: str) -> None:
    """Write `.ai-bridge/context-runtime.json` and `.md` under `root` from the state alone."""
    write_runtime_doc(root, runtime_document(state, project))


def write_runtime_doc(root: str, doc: dict[str, Any]) -> None:
    """Write a runtime document as `.ai-bridge/context-runtime.json` and `.md` (each only when its bytes changed).

    The project root may be reached through a link of the user's (`--root ~/link`); below it,
    a link planted in the project (`.ai-bridge -> elsewhere`) is refused.
    """
    root = os.path.realpath(root)
    changed = False
    for relative, data in ((RUNTIME_JSON, pretty_json(doc)), (RUNTIME_MD, runtime_markdown(doc).encode())):
        changed = write_if_changed(os.path.join(root, *relative.split("/")), data, within=root) or changed
    facts = sys.modules.get("continuity.facts")  # not loaded: no git status was started that this could outdate
    if changed and facts is not None:
        facts.tree_written()


def not_written(error: BaseException) -> str:
    """The warning for runtime files that could not be written (the project's .ai-bridge/: outside the store)."""
    return f"workstream runtime files (.ai-bridge/) not written: {reason_of(error)}"


def workstream_relpath(ws_id: str, archived: bool) -> str:
    """Where a workstream's document lives, relative to the store."""
    return f"workstreams/{'archive' if archived else 'active'}/{ws_id}.json"


class WorkstreamWriter:
    """Collects what the folded events touched; `flush()` writes it."""

    def __init__(self, store: Store, folder: str | None = None) -> None:
        self.store_folder = folder or store.path
        self.root_folder = folder or store.root
        try:
            self.project: str | None = store.reading_project()[0]
        except (OSError, ContinuityError):
            self.project = None
        self.state: Projects[WorkstreamsState] | None = None
        self.touched: set[str] = set()
        #: The touched workstreams that are archived, by id: the model may forget one before `flush()`.
        self.ended: dict[str, Workstream] = {}
        self.last_retired: str | None = None
        self.warnings: list[str] = []
        #: Those of the warnings about files outside the store (the project's `.ai-bridge/`).
        self.outside: list[str] = []

    def __call__(self, state: Projects[WorkstreamsState], name: str, event: Event) -> None:
        if event.project != self.project or event.kind not in KINDS:
            return
        self.state = state
        ws_id: Any = getattr(event, "workstream_id", None)
        if not isinstance(ws_id, str):
            return
        self.touched.add(ws_id)
        project = state.projects.get(event.project)
        if project is None:
            return
        ws = project.workstreams.get(ws_id)
        if ws is not None and ws.status in TERMINAL:
            self.ended[ws_id] = ws
        if project.retired and project.retired[-1] != self.last_retired:  # the model forgot one: write it now
            self.last_retired = project.retired[-1]
            for forgotten in [each for each in self.ended if each not in project.workstreams]:
                self._guarded(self._write_document, forgotten, self.ended.pop(forgotten))
                self.touched.discard(forgotten)

    def flush(self) -> None:
        """Write the touched workstreams' documents and the runtime files."""
        if self.state is None or self.project is None:
            return
        project = self.state.projects.get(self.project)
        if project is None:
            return
        self._guarded(self._write_all, project)
        self.touched.clear()
        self.ended.clear()

    def _write_all(self, project: WorkstreamsState) -> None:
        for ws_id in sorted(self.touched):
            ws = project.workstreams.get(ws_id)
            if ws is not None:
                self._write_document(ws_id, ws)
        try:
            write_runtime(self.root_folder, project, self.project or "")
        except (OSError, ContinuityError) as error:  # the project's .ai-bridge/: outside the store
            message = not_written(error)
            if message not in self.warnings:
                self.warnings.append(message)
                self.outside.append(message)

    def _write_document(self, ws_id: str, ws: Workstream) -> None:
        archived = ws.status in TERMINAL
        self._write(self.store_folder, workstream_relpath(ws_id, archived), pretty_json(workstream_document(ws)))
        # One document per workstream, where its status puts it. An active one can have an
        # archive file too: a clone that started the id as ended, before a sync brought the
        # other clone's earlier start (the first start wins, the folder must follow).
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.store_folder, *workstream_relpath(ws_id, not archived).split("/")))

    def _guarded(self, write: Any, *args: Any) -> None:
        """Run a write; a failure is a warning (the model is then not saved past these events)."""
        try:
            write(*args)
        except (OSError, ContinuityError) as error:
            message = f"workstream documents not written: {reason_of(error, self.store_folder)}"
            if message not in self.warnings:
                self.warnings.append(message)

    @staticmethod
    def _write(folder: str, relative: str, data: bytes) -> None:
        write_if_changed(os.path.join(folder, *relative.split("/")), data, within=folder)
