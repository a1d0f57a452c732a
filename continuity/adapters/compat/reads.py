"""The read modes over the projections: `status`, `restore`, `resume-bundle`.

Reads never create a store: with none, they answer as for a project with no events.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from continuity.adapters.compat.args import Args
from continuity.adapters.compat.common import PROGRAM, default_root, existing_store, no_archive, warn
from continuity.core.store import Store, now_us
from continuity.readside.writers import contexts_dir
from continuity.sessions.archives import ArchiveRecord
from events import clock

LATEST_MD = "latest.md"


def status(args: Args, project: str | None) -> dict[str, Any]:
    """The newest archive's age and whether to archive now (older than 2 h)."""
    from continuity.sessions.service import status as service_status

    assert project is not None
    store = existing_store()
    if store is None:
        return {"ok": True, "action": "status", "project": project, "exists": False}
    result = service_status(store, project)
    if result["exists"]:
        result["mtime"] = result["latest_at"]  # the archive's own time: file mtimes differ across clones
    return result


def _latest_record(store: Store | None, project: str) -> ArchiveRecord | None:
    if store is None:
        return None
    from continuity.readside.query import current_view

    view = current_view(store, ("archives",))
    warn(view.warnings)
    record: ArchiveRecord | None = view.project(project).latest_archive()
    return record


def _mtime_iso(path: str) -> str:
    return clock.iso(os.stat(path).st_mtime_ns // 1000)


def _context_files(folder: str) -> list[str]:
    """The `ctx_*.md` archives in a project's contexts folder, newest first."""
    try:
        entries = [entry.name for entry in os.scandir(folder)
                   if entry.name.startswith("ctx_") and entry.name.endswith(".md") and entry.is_file()]
    except OSError:
        return []
    return sorted(entries, reverse=True)


def _latest_name(folder: str, files: list[str]) -> str | None:
    """The archive latest.md stands for: its link target, or the file it is a copy of."""
    link = os.path.join(folder, LATEST_MD)
    try:
        if os.path.islink(link):
            return os.path.basename(os.readlink(link))
        with open(link, "rb") as handle:
            body = handle.read()
    except OSError:
        return None
    for name in files:
        try:
            with open(os.path.join(folder, name), "rb") as handle:
                if handle.read() == body:
                    return name
        except OSError:
            continue
    return None


def list_markdown(store: Store, project: str) -> list[dict[str, Any]]:
    """`restore --list`: the project's Markdown archives with their mtime and which is latest."""
    folder = os.path.join(contexts_dir(store), project)
    files = _context_files(folder)
    latest = _latest_name(folder, files)
    contexts = []
    for name in files:
        try:
            mtime = _mtime_iso(os.path.join(folder, name))
        except OSError:
            continue
        contexts.append({"name": name, "mtime": mtime, "isLatest": name == latest})
    return contexts


def _load_path(folder: str, wanted: str | None) -> str | None:
    """The Markdown `--load` names: latest (default), a file name, a stamp or an archive id."""
    if wanted in (None, "latest", LATEST_MD):
        return os.path.join(folder, LATEST_MD)
    assert wanted is not None
    if "/" in wanted or "\\" in wanted or wanted.startswith("."):
        return None
    for name in (wanted, f"{wanted}.md", f"ctx_{wanted.removeprefix('RC-')}.md"):
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    return None


def restore(args: Args, project: str | None) -> dict[str, Any]:
    """`restore --list`, `restore --auto`, or (by default) load the Markdown of latest.md."""
    assert project is not None
    store = existing_store()
    if args.switch("list"):
        contexts = list_markdown(store or Store(default_root()), project)
        return {"ok": True, "action": "restore", "mode": "list", "project": project, "contexts": contexts}
    record = _latest_record(store, project)
    if args.switch("auto"):
        if record is None or store is None:
            return no_archive(project)
        from continuity.readside.writers import markdown_path

        return {"ok": True, "action": "restore", "mode": "auto", "project": project,
                "archive_id": record.archive_id, "markdown_path": markdown_path(store, record),
                "archive_json_path": os.path.join(store.path, "archives", f"{record.archive_id}.json"),
                "archive": msgspec.to_builtins(record),
                "resume_bundle_command": f"{PROGRAM} resume-bundle --project {project}"}
    folder = os.path.join(contexts_dir(store or Store(default_root())), project)
    path = _load_path(folder, args.given("load"))
    if path is not None and not os.path.exists(path) and record is not None and store is not None:
        from continuity.readside.writers import ArchiveWriter

        ArchiveWriter(store).write_record(record)  # the user-level Markdown was deleted or never made on this machine
    if path is None or not os.path.isfile(path):
        return no_archive(project)
    with open(path, "rb") as handle:
        body = handle.read()
    return {"ok": True, "action": "restore", "mode": "load", "project": project, "path": path,
            "size": len(body), "mtime": _mtime_iso(path), "body": body.decode("utf-8", errors="replace")}


def _session_files(root: str, project: str) -> list[str]:
    folder = os.path.join(root, ".agent", "sessions")
    prefix = f"S-{project}-"
    try:
        found = [name for name in os.listdir(folder) if name.startswith(prefix) and name.endswith(".json")]
    except OSError:
        return []
    return [f".agent/sessions/{name}" for name in sorted(found, reverse=True)[:20]]


def resume_bundle(args: Args, project: str | None) -> dict[str, Any]:
    """Everything a new agent needs, in seed 004's resume-bundle shape."""
    assert project is not None
    store = existing_store()
    if store is None:
        from continuity import facts as live
        from continuity.readside.views import Models
        from continuity.sessions import brief as bundle

        root = default_root()
        inputs = live.view_inputs(root, now_us=now_us(), archived_git=None, archived_read_first=[], handoffs=[],
                                  artifacts=[], latest_markdown=None, warnings=[])
        data = bundle.build(Models.empty().project(project), inputs)
    else:
        from continuity.sessions.service import resume_bundle as service_bundle

        root = store.root
        from continuity.core.identity import Identity

        data = dict(service_bundle(store, Identity(project=project), fmt="json").data)
    runs = data["runs"]
    archive = data["archive"]
    data |= {
        "runs": runs["files"],
        "runs_seen": runs["seen"],
        "sessions": {**data["sessions"], "files": _session_files(root, project)},
        "git": data["git"] or {"root": None, "branch": None, "head": None, "status_short": ""},
        "recommended_commands": [
            f"{PROGRAM} resume-bundle --project {project}",
            f'{PROGRAM} checkpoint --project {project} --gate agent --message "<what changed>" --next "<next step>"',
            f'{PROGRAM} archive --project {project} --gate user --reason "<why>"',
        ],
    }
    if archive and archive["state"]["next"]:
        data["next_action"] = archive["state"]["next"][0]
    return data
