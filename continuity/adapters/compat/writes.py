"""The write modes: `log`, `checkpoint`, `warm --auto`, `archive`, `host-switch`.

Each parses its flags, calls continuity's API, mirrors a run event, and returns the
result object; continuity errors propagate and the entry point maps them to failures.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from continuity.adapters.compat.args import Args
from continuity.adapters.compat.common import PROGRAM, identity, note_of, warn, writable_store
from continuity.adapters.compat.harness import mirror_run_event, write_session_file
from continuity.core.errors import UsageError
from continuity.core.paths import event_relpath
from events.errors import WriteFailed


def warm_prompt(project: str | None) -> str:
    """The text a host pastes at session start: the 5-hour window and the commands to use."""
    p = project or "<project>"
    return (
        "runtime-continuity 已启用（由 continuity 提供）。本会话按 5 小时计时窗口工作：\n"
        f"1. 开始时运行 `{PROGRAM} resume-bundle --project {p}`，先读 read_first 和 next_action。\n"
        f"2. 每完成一个阶段、且至少每 4 小时运行一次 `{PROGRAM} checkpoint --project {p} --gate agent "
        '--message "<做了什么>" --next "<下一步>"`。\n'
        f"3. 窗口将尽或切换工具前运行 `{PROGRAM} archive --project {p} --gate user --reason \"<原因>\"`"
        f"（换工具用 `{PROGRAM} host-switch`）。\n"
        "Work in 5-hour windows: checkpoint at least every 4 hours, archive before the window ends or any switch."
    )


def warm(args: Args, project: str | None) -> dict[str, Any]:
    """The working rhythm; with --auto also a recorded session start."""
    result: dict[str, Any] = {"ok": True, "action": "warm", "duration_hours": 5, "checkpoint_reminder_hours": 4,
                              "prompt_for_host_paste": warm_prompt(project)}
    if not args.switch("auto") or project is None:
        return result
    from continuity.sessions.decide import decide_session_start

    drafts = decide_session_start(identity(args, project), source=args.given("source") or "startup",
                                  cwd=os.getcwd(), message="session started (runtime-continuity warm --auto)")
    store = writable_store(project)
    stored = store.open_log().append_many(drafts, redact=args.switch("redact"))[0]
    mirror_run_event(store.root, "session_started", via="warm_auto_init", project=project,
                     event_id=stored.event_id)
    return result | {"project": project, "auto_init": True, "event_id": stored.event_id}


def _exit_code(args: Args) -> int | None:
    """--exit-code as an integer an event accepts: a number out of range is `invalid_arguments`."""
    from continuity.adapters.compat.common import Failure
    from continuity.cli.common import EXIT_CODE_MAX, EXIT_CODE_MIN, out_of_range

    text = args.given("exit-code")
    if text is None:
        return None
    reason = out_of_range(text, EXIT_CODE_MIN, EXIT_CODE_MAX)
    if reason is None:
        return int(text)
    if text.strip().lstrip("+-").isdecimal():  # a number, just not one an exit code can be
        raise Failure("invalid_arguments", f"--exit-code {reason}")
    raise UsageError(f"--exit-code must be an integer, not {text!r}")  # a bad field, refused like others


def work(args: Args, project: str | None, *, checkpoint: bool) -> dict[str, Any]:
    """`log` / `checkpoint`: one work-log event in seed 004's fields."""
    from continuity.worklog.decide import WorkRequest, decide_checkpoint, decide_log

    assert project is not None
    request = WorkRequest(
        message=args.text("message") or "",
        type=None if checkpoint else args.given("type"),  # checkpoint events are always type "checkpoint"
        phase=args.given("phase"),
        done=args.items("done", split=False),
        in_progress=args.given("in-progress"),
        next=args.items("next", split=False),
        blockers=args.items("blockers", split=False),
        files=args.items("files", split=True),
        artifacts=args.items("artifacts", split=True),
        handoffs=args.items("handoffs", split=True),
        command=args.given("command"),
        exit_code=_exit_code(args),
        command_summary=args.given("command-summary"),
        note=note_of(args),
    )
    decide = decide_checkpoint if checkpoint else decide_log
    drafts = decide(identity(args, project), request)
    store = writable_store(project)
    stored = store.open_log().append_many(drafts, redact=args.switch("redact"))[0]
    event_path = event_relpath(stored.name)
    mirror_run_event(store.root, "runtime_checkpoint" if checkpoint else "runtime_log", project=project,
                     event_id=stored.event_id, event_path=event_path, phase=stored.event.phase,
                     message=stored.event.message)
    return {"ok": True, "action": "checkpoint" if checkpoint else "log", "project": project,
            "event_path": event_path, "event": msgspec.to_builtins(stored.event)}


def _take_archive(args: Args, project: str, *, from_host: str | None, to_host: str | None,
                  switch: bool) -> tuple[Any, list[Any], dict[str, Any]]:
    """Archive through the service; the store, the stored events and where the archive went."""
    from continuity.readside.query import current_view
    from continuity.sessions.decide import ArchiveRequest
    from continuity.sessions.service import archive, archive_paths

    request = ArchiveRequest(gate=args.given("gate"), full=args.switch("full"), reason=args.given("reason"),
                             from_host=from_host, to_host=to_host, note=note_of(args), switch=switch)
    store = writable_store(project)
    stored, warnings = archive(store, identity(args, project), request, redact=args.switch("redact"))
    warn(warnings)
    paths = archive_paths(store, current_view(store, ("archives",), write=False), project)
    if not paths:
        raise WriteFailed("the archive event was written but its projection is missing")
    return store, stored, paths


def archive(args: Args, project: str | None) -> dict[str, Any]:
    """`archive`: JSON under archives/, the ctx_ Markdown and latest.md; a session_archived run event."""
    assert project is not None
    from_host = args.given("from-host") or args.given("host")
    store, _, paths = _take_archive(args, project, from_host=from_host, to_host=args.given("to-host"),
                                    switch=False)
    mirror_run_event(store.root, "session_archived", project=project, archive_path=paths["archivePath"],
                     archive_json_path=paths["archiveJsonPath"], archive_id=paths["archive_id"])
    return {"ok": True, "action": "archive", "project": project, **paths}


def next_steps(project: str, host: str) -> list[str]:
    """The four things the host work moves to should do first."""
    return [
        f"Open the project in {host} and run `{PROGRAM} warm --auto --project {project} --host {host}`.",
        f"Run `{PROGRAM} resume-bundle --project {project}` and read it whole.",
        "Read the read_first files it lists, then compare `git status` with its git section.",
        f"Continue from its next_action; record progress with `{PROGRAM} checkpoint --project {project} "
        "--gate agent`.",
    ]


def host_switch(args: Args, project: str | None) -> dict[str, Any]:
    """`host-switch`: archive, record the switch, write the session file, say what the new host does."""
    assert project is not None
    from_host = args.given("from-host") or args.given("host")
    to_host = args.given("to-host")
    if not from_host or not to_host:
        raise UsageError("host-switch needs --from-host and --to-host")
    store, stored, paths = _take_archive(args, project, from_host=from_host, to_host=to_host, switch=True)
    try:
        session = write_session_file(store.root, project, paths["stamp"], {
            "last_host": to_host, "last_switch_at": stored[-1].event.created_at, "previous_host": from_host,
            # the stored (guarded, maybe redacted) reason, never the raw flag: no secret reaches this file
            "reason": stored[-1].event.reason, "archive_id": paths["archive_id"],
            "archive_path": paths["archivePath"], "archive_json_path": paths["archiveJsonPath"],
        })
    except OSError as error:
        raise WriteFailed(f"archive {paths['archive_id']} was taken, but the session file was not written: "
                          f"{error.strerror or error}") from None
    mirror_run_event(store.root, "host_switch_initiated", from_host=from_host, to_host=to_host, project=project,
                     archive_path=paths["archivePath"], session_path=session["path"])
    return {"ok": True, "action": "host-switch", "project": project, "from_host": from_host, "to_host": to_host,
            "archive": paths, "session": session, "next_steps_for_new_host": next_steps(project, to_host)}
