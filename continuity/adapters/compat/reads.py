"""The read modes: `status` (§13), `restore` (§11), `resume-bundle` (§12).

They read the project's files the way seed 004 did (I7: only P's archives); `status` and
`restore` append their run events (§16). None of them writes to the store.
"""

from __future__ import annotations

import math
import os
from typing import Any

from continuity.adapters.compat import common as c
from continuity.adapters.compat import listings as listing
from continuity.adapters.compat.args import Args
from continuity.adapters.compat.harness import mirror_run_event
from continuity.core.paths import LATEST_LINK

STALE_HOURS = 2
NO_ARCHIVE_NEXT = "No structured archive found. Run /briefing and inspect git status before continuing."


def _ctx_files(folder: str) -> list[tuple[str, os.stat_result]]:
    """`ctx_*.md` of a contexts folder with their stats, newest mtime first (ties by name)."""
    try:
        names = [name for name in os.listdir(folder) if name.startswith("ctx_") and name.endswith(".md")]
    except OSError:
        return []
    found = []
    for name in names:
        try:
            found.append((name, os.stat(os.path.join(folder, name))))
        except OSError:
            continue
    found.sort(key=lambda item: (-c.mtime_ms(item[1]), item[0]))  # Node's mtimeMs: equal ones tie
    return found


def status(args: Args, project: str | None) -> dict[str, Any]:
    """The newest Markdown archive's age; `archive_now` when older than 2 hours."""
    assert project is not None
    folder = os.path.join(c.contexts_root(), project)
    run_event: dict[str, Any] = {"type": "session_status_queried", "project": project}
    if not os.path.isdir(folder):
        result: dict[str, Any] = {"ok": True, "action": "status", "project": project, "exists": False}
    else:
        files = _ctx_files(folder)
        if not files:
            result = {"ok": True, "action": "status", "project": project, "exists": True, "count": 0}
        else:
            name, stat = files[0]
            now = c.now_us()
            age = (now / 1000 - c.mtime_ms(stat)) / 3_600_000
            rounded = math.floor(age * 100 + 0.5) / 100
            result = {"ok": True, "action": "status", "project": project, "latest": name,
                      "mtime": c.iso_of_ms(c.mtime_ms(stat)), "age_hours": rounded,
                      "stale_recommendation": "archive_now" if age > STALE_HOURS else "ok", "count": len(files)}
            run_event["age_hours"] = rounded
    mirror_run_event(c.project_root(), c.iso_of_us(c.now_us()), run_event)
    return result


def _load_target(project: str, wanted: str | None) -> str | None:
    """I6: `latest` (default) is the Markdown of P; else one of P's `ctx_<stamp>.md` by name, stamp or id."""
    if wanted in (None, "latest", LATEST_LINK):
        return listing.markdown_of(project)
    assert wanted is not None
    if "/" in wanted or "\\" in wanted or wanted.startswith("."):
        return None
    stamp = _stamp_named(wanted)
    if not stamp:
        return None
    path = os.path.join(c.contexts_root(), project, f"ctx_{stamp}.md")
    return path if os.path.isfile(path) else None


def _stamp_named(wanted: str) -> str | None:
    """The stamp in one of I6's names: `ctx_<stamp>.md`, `ctx_<stamp>`, `RC-<stamp>` (`.json` too: the
    archive's JSON name), `<stamp>`; None for any other shape (`RC-<stamp>.md`, `RC-ctx_<stamp>`)."""
    for prefix, suffixes in (("ctx_", (".md", "")), ("RC-", (".json", ""))):
        if wanted.startswith(prefix):
            rest = wanted[len(prefix):]
            for suffix in suffixes:
                if rest.endswith(suffix):
                    stamp = rest[:len(rest) - len(suffix)] if suffix else rest
                    return stamp if _plain_stamp(stamp) else None
    return wanted if _plain_stamp(wanted) else None


def _plain_stamp(text: str) -> bool:
    """A stamp alone: no other name's prefix or suffix in it, nothing the file name cannot hold."""
    return (bool(text) and not text.startswith(("ctx_", "RC-")) and not text.endswith((".md", ".json"))
            and "\x00" not in text)


def restore(args: Args, project: str | None) -> dict[str, Any]:
    """`--list` the Markdown archives, `--auto` find the newest archives, or load one (§11)."""
    assert project is not None
    root = c.project_root()
    if args.has("list"):
        folder = os.path.join(c.contexts_root(), project)
        contexts = [{"name": name, "mtime": c.mtime_ms(stat), "isLatest": False}
                    for name, stat in _ctx_files(folder)]
        return {"ok": True, "action": "list", "project": project, "contexts": contexts}
    if args.has("auto"):
        markdown = listing.markdown_of(project)
        found = listing.archive_of(root, project)
        result: dict[str, Any] = {
            "ok": bool(markdown or found), "action": "restore", "mode": "auto", "project": project,
            "markdown_path": markdown, "archive_json_path": found[0] if found else None,
            "archive": found[1] if found else None,
            "resume_bundle_command": f"{c.N} resume-bundle --project {project}",
        }
        if not result["ok"]:
            result["error"] = "no_archive_for_project"
        mode = "auto"
    else:
        path = _load_target(project, args.get("load"))
        body = None
        if path is not None:
            from continuity.sessions.archives import read_archive_file

            try:  # a FIFO, a device, a link out of C/P or more than 4 MiB is no archive (stderr stays empty: §1)
                real, body = read_archive_file(os.path.dirname(path), os.path.basename(path))
                mtime = c.iso_of_ms(c.mtime_ms(os.stat(real)))
            except OSError:
                body = None
        if path is None or body is None:
            result = {"ok": False, "action": "restore", "project": project, "error": "no_archive_for_project"}
        else:
            result = {"ok": True, "action": "restore", "project": project, "path": path, "size": len(body),
                      "mtime": mtime, "body": body.decode("utf-8", errors="replace")}
        mode = "load"
    result["__after__"] = lambda: mirror_run_event(root, c.iso_of_us(c.now_us()), {
        "type": "session_restored", "project": project, "mode": mode})
    return result


def resume_bundle(args: Args, project: str | None) -> dict[str, Any]:
    """Everything a new agent reads first (§12); no gate, no writes, no run event."""
    from continuity.core.paths import SEED_READ_FIRST

    assert project is not None
    root = c.project_root()
    found = listing.archive_of(root, project)
    archive = found[1] if found else None
    restore_block = archive.get("restore") if isinstance(archive, dict) else None
    restore_block = restore_block if isinstance(restore_block, dict) else {}
    handoffs = listing.handoff_listing(root, 12)
    artifacts = listing.artifact_listing(root, 12)
    commands = [f"{c.N} status --project {project}"]
    if handoffs:
        commands.append(f"node .agent/handoffs/scripts/handoff-protocol.js resume-prompt --payload-file {handoffs[0]}")
    if artifacts:
        commands.append("node .agent/artifacts/scripts/artifact-bus.js validate --task-id <task-id>")
    return {
        "ok": True, "action": "resume-bundle", "project": project, "generated_at": c.iso_of_us(c.now_us()),
        "latest_archive": os.path.relpath(found[0], root).replace(os.sep, "/") if found else None,
        "latest_markdown_archive": listing.markdown_of(project), "archive": archive,
        "runtime_events": listing.event_listing(root, 12),
        "runs": listing.json_listing(root, os.path.join(root, ".agent", "runs"), 8),
        "sessions": listing.json_listing(root, os.path.join(root, ".agent", "sessions"), 8),
        "pending_handoffs": handoffs, "artifact_states": artifacts,
        "git": dict(zip(("branch", "head", "status_short"), c.git_all(root, c.GIT_BRANCH, c.GIT_HEAD, c.GIT_STATUS),
                        strict=True)),
        "read_first": c.first(restore_block.get("read_first"), list(SEED_READ_FIRST[:-1])),
        "next_action": c.first(restore_block.get("next_action"), NO_ARCHIVE_NEXT),
        "recommended_commands": commands,
    }
