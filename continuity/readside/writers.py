"""Derived files: what a catch-up writes from the fold (fail open: warnings, not errors)."""

from __future__ import annotations

import os
from typing import Any

import msgspec

from continuity.core.logs import log as log_event
from continuity.core.store import Store
from continuity.readside.catchup import Outcome, catch_up, save_checkpoint, to_json, write_if_changed
from continuity.sessions.templates import render_archive_markdown
from projections.archives import ArchiveRecord
from projections.state import State


def contexts_dir(store: Store) -> str:
    """Where user-level Markdown archives go: config, CONTINUITY_CONTEXTS_DIR, or ~/.agent/contexts."""
    configured = os.environ.get("CONTINUITY_CONTEXTS_DIR") or store.config.get("contexts_dir")
    if isinstance(configured, str) and configured:
        return os.path.abspath(os.path.expanduser(configured))
    return os.path.join(os.path.expanduser("~"), ".agent", "contexts")


def archives_dir(store: Store) -> str:
    """The project-level archives folder."""
    return os.path.join(store.path, "archives")


def markdown_path(store: Store, record: ArchiveRecord, contexts: str | None = None) -> str:
    """`~/.agent/contexts/<project>/ctx_<stamp>.md` of an archive."""
    stamp = record.archive_id.removeprefix("RC-")
    return os.path.join(contexts or contexts_dir(store), record.project, f"ctx_{stamp}.md")


STATE_RECENT = 20


def state_document(state: State) -> dict[str, Any]:
    """`state.json`: each project's work state, counts, and its most recent sessions, runs and archives.

    The full fold (every session kept, whole archive records) stays in the machine-local
    saved projection; archives have their own files.
    """
    projects: dict[str, Any] = {}
    for name, project in state.projects.items():
        projects[name] = {
            "events": project.events,
            "first_at": project.first_at,
            "last_at": project.last_at,
            "last_event_id": project.last_event_id,
            "last_host": project.sessions.last_host,
            "work": project.work,
            "sessions": list(project.sessions.sessions.values())[-STATE_RECENT:],
            "runs": list(project.sessions.runs.values())[-STATE_RECENT:],
            "handoffs": list(project.refs.handoffs.values())[-STATE_RECENT:],
            "artifacts": list(project.refs.artifacts.values())[-STATE_RECENT:],
            "archives": [record.archive_id for record in project.archives[-STATE_RECENT:]],
            "archives_total": project.archives_total,
            "contexts_served": project.served,
        }
    return {
        "format": state.format,
        "last_event": state.last_name,
        "events_folded": state.events_folded,
        "projects": projects,
    }


class ArchiveWriter:
    """Writes each archive's JSON and Markdown as the fold produces it."""

    def __init__(self, store: Store, archives: str | None = None, contexts: str | None = None) -> None:
        self.store = store
        self.archives = archives or archives_dir(store)
        self.contexts = contexts or contexts_dir(store)
        self.language = str(store.config.get("language") or "en")
        self.warnings: list[str] = []
        self.latest: ArchiveRecord | None = None

    def __call__(self, record: ArchiveRecord) -> None:
        self.latest = record
        try:
            write_if_changed(os.path.join(self.archives, f"{record.archive_id}.json"), to_json(record))
        except OSError as error:
            self._warn(f"archive JSON not written: {error.strerror or error}")
        try:
            path = markdown_path(self.store, record, self.contexts)
            write_if_changed(path, render_archive_markdown(record, self.language).encode())
            link_latest(os.path.join(os.path.dirname(path), "latest.md"), path)
        except OSError as error:
            self._warn(f"Markdown archive not written: {error.strerror or error}")

    def _warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)


def link_latest(link: str, target: str) -> None:
    """Point `latest.md` at the newest archive: a relative symlink, a copy where links fail."""
    relative = os.path.basename(target)
    try:
        if os.path.islink(link) and os.readlink(link) == relative:
            return
        temp = f"{link}.{os.getpid()}.tmp"
        if os.path.lexists(temp):
            os.unlink(temp)
        os.symlink(relative, temp)
        os.replace(temp, link)
    except OSError:
        with open(target, "rb") as handle:
            write_if_changed(link, handle.read())


def refresh(store: Store, *, rebuild: bool = False, write: bool = True) -> Outcome:
    """Catch the projections up with the log and write what changed. Never raises OSError."""
    log = store.open_reader()
    writer = ArchiveWriter(store) if write else None
    outcome, checkpoint = catch_up(store, log, on_archive=writer, force_rebuild=rebuild)
    log_event("debug", "projections caught up", folded=outcome.folded, rebuilt=outcome.rebuilt,
              last_event=outcome.state.last_name)
    if not write:
        return outcome
    assert writer is not None
    outcome.warnings.extend(writer.warnings)
    if outcome.folded or outcome.rebuilt or not os.path.exists(os.path.join(store.path, "state.json")):
        try:
            _write_documents(store.path, outcome.state, schema=rebuild)
            save_checkpoint(store, checkpoint)
        except OSError as error:
            outcome.warnings.append(f"projections not saved: {error.strerror or error}")
    return outcome


def _write_documents(folder: str, state: State, *, schema: bool = True) -> None:
    write_if_changed(os.path.join(folder, "state.json"), to_json(state_document(state)))
    schema_path = os.path.join(folder, "archive.schema.json")
    if schema or not os.path.exists(schema_path):  # generating it costs more than a whole catch-up
        write_if_changed(schema_path, archive_schema())
    newest = _newest_archive(state)
    if newest is not None:
        write_if_changed(os.path.join(folder, "archives", "latest.json"), to_json(newest))


def replay_into(store: Store, until: str, out: str) -> dict[str, Any]:
    """Write every projection as of `until` into `out` (state.json, archives/, contexts/)."""
    from continuity.readside.catchup import _Folder
    from continuity.readside.replay import resolve_point

    log = store.open_reader()
    last_name, _ = resolve_point(log, until)
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as error:
        from events.errors import WriteFailed

        raise WriteFailed(f"replay not written: {error.strerror or error} ({out})") from None
    writer = ArchiveWriter(store, os.path.join(out, "archives"), os.path.join(out, "contexts"))
    folder = _Folder(log, State(), writer)
    folder.fold(record for record in _until(log, last_name))
    _write_documents(out, folder.state)
    return {"out": out, "events": folder.folded, "last_event": folder.state.last_name,
            "warnings": folder.warnings() + writer.warnings}


def _until(log: Any, last_name: str) -> Any:
    for name, raw in log.read_raw():
        if name > last_name:
            return
        yield name, raw


def _newest_archive(state: State) -> ArchiveRecord | None:
    records = [project.archives[-1] for project in state.projects.values() if project.archives]
    return max(records, key=lambda record: record.event_id[4:]) if records else None


def archive_schema() -> bytes:
    """archive.schema.json, generated from the archive record Struct."""
    import orjson

    schema = msgspec.json.schema(ArchiveRecord)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "continuity archive"
    return orjson.dumps(schema, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
