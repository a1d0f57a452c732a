"""Harness hook handlers: Claude Code and Codex call `continuity hook <harness>` with JSON on stdin.

Each handler records what happened as events and, for SessionStart, prints the resume
brief as `additionalContext`. A hook must never block or break an agent: every path
ends with exit 0; problems go to `local/hooks.log` in the store and one stderr line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from continuity.core.identity import Identity, clean_name, resolve_identity
from continuity.core.store import Store, find_store
from events.base import CommandRef, Event, Refs
from events.errors import ContinuityError

HARNESSES = ("claude-code", "codex")
MAX_STDIN = 4 * 1024 * 1024
MESSAGE_CHARS = 2000
EDIT_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path",
              "apply_patch": None, "ApplyPatch": None}
SHELL_TOOLS = ("Bash", "shell", "Shell", "exec_command", "local_shell", "container.exec")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)


class HookResult:
    """What a handler produced: stdout text (may be empty) and the ids it recorded."""

    def __init__(self, stdout: str = "", recorded: list[str] | None = None) -> None:
        self.stdout = stdout
        self.recorded = recorded or []


def _text(value: Any, limit: int = MESSAGE_CHARS) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    text = "".join(ch for ch in text if ch in "\t\n" or (ch >= " " and ch != "\x7f"))
    return text[:limit] if text else None


def identity(harness: str, payload: dict[str, Any], store: Store) -> Identity:
    """Who the events of one hook call are from: the harness's payload, else the environment."""
    given = {"host": harness, "session_id": payload.get("session_id"), "agent_id": payload.get("agent_id")}
    return resolve_identity(store.project, harness=given, clean=clean_name)


def envelope(harness: str, payload: dict[str, Any], store: Store) -> dict[str, Any]:
    """The identity fields the events of one hook call carry."""
    return identity(harness, payload, store).fields()


def _append(store: Store, events: list[Event]) -> list[str]:
    stored = store.open_log().append_many(events, redact=True)
    return [item.event_id for item in stored]


# -- handlers --------------------------------------------------------------------------------
def session_start(harness: str, payload: dict[str, Any], store: Store) -> HookResult:
    """Record the session, then answer with the resume brief (recorded as context.served)."""
    from continuity.sessions.decide import decide_session_start
    from continuity.sessions.service import resume_bundle

    who = identity(harness, payload, store)
    source = clean_name(payload.get("source")) or "startup"
    started = decide_session_start(
        who, source=source, model=clean_name(payload.get("model")),
        transcript_path=_text(payload.get("transcript_path"), 1024), cwd=_text(payload.get("cwd"), 1024),
        message=f"session {source} on {harness}",
    )
    try:
        recorded = _append(store, started)
    except ContinuityError as error:  # the brief is served whatever happens to the recording
        report(store, harness, "SessionStart", f"session not recorded ({error}); the brief is served anyway")
        recorded = []
    max_chars = int(store.config.get("hook_max_chars") or 8000)
    brief = resume_bundle(store, who, fmt="md", max_chars=max_chars, record=True)
    for warning in brief.warnings:
        report(store, harness, "SessionStart", f"warning: {warning}", quiet=True)
    if brief.served is not None:
        recorded.append(brief.served.event_id)
    import orjson

    output = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": brief.text}}
    return HookResult(orjson.dumps(output).decode(), recorded)


def post_tool_use(harness: str, payload: dict[str, Any], store: Store) -> HookResult:
    """Record a file edit or a shell command (secret-like text redacted); ignore other tools."""
    from events.worklog import WorkLogged

    tool = str(payload.get("tool_name") or "")
    raw_input = payload.get("tool_input")
    tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
    response = payload.get("tool_response")
    env = envelope(harness, payload, store)
    note = {"tool": tool, "tool_use_id": _text(payload.get("tool_use_id"), 200),
            "turn_id": _text(payload.get("turn_id"), 200)}
    note = {key: value for key, value in note.items() if value}
    if tool in EDIT_TOOLS:
        files = _edited_files(tool, tool_input)
        if not files:
            return HookResult()
        event: Event = WorkLogged(**env, type="edit", message=f"{tool} {', '.join(files)}"[:MESSAGE_CHARS],
                                  refs=Refs(files=tuple(files)), note=note)
    elif tool in SHELL_TOOLS:
        command = tool_input.get("command") if isinstance(tool_input, dict) else None
        if isinstance(command, list):
            command = " ".join(str(part) for part in command)
        text = _text(command, 4000)
        if not text:
            return HookResult()
        ref = CommandRef(command=text, exit_code=_exit_code(response), summary=_text(_summary(response), 300))
        event = WorkLogged(**env, type="command", message=f"ran {text.splitlines()[0][:200]}",
                           refs=Refs(commands=(ref,)), note=note)
    else:
        return HookResult()
    return HookResult(recorded=_append(store, [event]))


def _edited_files(tool: str, tool_input: dict[str, Any]) -> list[str]:
    key = EDIT_TOOLS.get(tool)
    if key is not None:
        path = _text(tool_input.get(key), 1024)
        return [path] if path else []
    patch = tool_input.get("input") or tool_input.get("patch") or ""
    return [match.strip() for match in _PATCH_FILE.findall(str(patch))][:100]


def _exit_code(response: Any) -> int | None:
    if isinstance(response, dict):
        for key in ("exit_code", "exitCode", "returncode", "return_code"):
            value = response.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        if response.get("interrupted") is True:
            return None
    return None


def _summary(response: Any) -> str | None:
    if isinstance(response, dict):
        for key in ("stderr", "stdout", "output"):
            value = response.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip().splitlines()[-1]
    return None


def pre_compact(harness: str, payload: dict[str, Any], store: Store) -> HookResult:
    """Checkpoint the session's state before the context is compacted."""
    from continuity.readside.query import current_view
    from continuity.sessions.decide import decide_pre_compact

    who = identity(harness, payload, store)
    work = current_view(store, ("worklog",)).project(who.project).work
    note = {key: value for key, value in {
        "trigger": _text(payload.get("trigger"), 40),
        "custom_instructions": _text(payload.get("custom_instructions")),
        "last_assistant_message": _text(payload.get("last_assistant_message")),
    }.items() if value}
    return HookResult(recorded=_append(store, decide_pre_compact(work, who, note)))


def simple_event(kind: str) -> Callable[[str, dict[str, Any], Store], HookResult]:
    """Handlers that record one work-log entry (turns, compactions, subagents)."""

    def handle(harness: str, payload: dict[str, Any], store: Store) -> HookResult:
        from events.worklog import WorkLogged

        env = envelope(harness, payload, store)
        note: dict[str, Any] = {}
        if kind == "compaction":
            note = {"trigger": _text(payload.get("trigger"), 40),
                    "compact_summary": _text(payload.get("compact_summary"), 8000)}
            message = "context compacted"
        elif kind == "turn_start":
            message = "turn started"
            if store.config.get("record_prompts"):
                note = {"prompt": _text(payload.get("prompt"), 8000)}
        elif kind == "subagent_end":
            note = {"agent_type": _text(payload.get("agent_type"), 100),
                    "last_assistant_message": _text(payload.get("last_assistant_message"))}
            message = f"subagent {note.get('agent_type') or ''} finished".replace("  ", " ")
        else:
            note = {"last_assistant_message": _text(payload.get("last_assistant_message"))}
            message = "turn ended"
        note["turn_id"] = _text(payload.get("turn_id"), 200)
        note = {key: value for key, value in note.items() if value}
        event = WorkLogged(**env, type=kind, message=message, note=note or None)
        return HookResult(recorded=_append(store, [event]))

    return handle


def session_end(harness: str, payload: dict[str, Any], store: Store) -> HookResult:
    """Record the end of the session; archive too when `archive_on_session_end` is set."""
    from continuity.sessions.decide import ArchiveRequest, decide_session_end

    who = identity(harness, payload, store)
    recorded = _append(store, decide_session_end(who, reason=_text(payload.get("reason"), 200)))
    if store.config.get("archive_on_session_end"):
        from continuity.sessions.service import archive

        request = ArchiveRequest(gate="agent", reason="session ended", from_host=harness)
        stored, _ = archive(store, who, request, redact=True)
        recorded.extend(item.event_id for item in stored)
    from continuity.sync import auto as autosync

    warning = autosync.start(store, "session_end")
    if warning:
        report(store, harness, "SessionEnd", warning)
    return HookResult(recorded=recorded)


HANDLERS: dict[str, Callable[[str, dict[str, Any], Store], HookResult]] = {
    "SessionStart": session_start,
    "PostToolUse": post_tool_use,
    "PreCompact": pre_compact,
    "PostCompact": simple_event("compaction"),
    "Stop": simple_event("turn_end"),
    "SubagentStop": simple_event("subagent_end"),
    "UserPromptSubmit": simple_event("turn_start"),
    "SessionEnd": session_end,
}


def report(store: Store | None, harness: str, hook: str, message: str, *, quiet: bool = False) -> None:
    """Record a hook problem in local/hooks.log (and, unless quiet, one stderr line)."""
    import sys

    from continuity.core.logs import append_error_line

    line = " ".join(message.split())[:500]
    from continuity.core.logs import log

    log("warning", "hook problem", harness=harness, hook=hook, message=line)
    if store is not None:
        append_error_line(os.path.join(store.local_dir, "hooks.log"), harness=harness, hook=hook, message=line)
    if not quiet:
        sys.stderr.write(f"continuity hook: {line}\n")


def run_hook(harness: str, raw: bytes, root: str | None = None) -> HookResult:
    """Handle one hook call. Never raises: every problem becomes a report and an empty result."""
    import orjson

    from events.errors import ContinuityError

    store: Store | None = None
    hook = "?"
    try:
        if len(raw) > MAX_STDIN:
            report(None, harness, hook, f"hook input over {MAX_STDIN} bytes ignored")
            return HookResult()
        try:
            payload = orjson.loads(raw) if raw.strip() else None
        except orjson.JSONDecodeError:
            payload = None
        if not isinstance(payload, dict):
            report(None, harness, hook, "hook input is not a JSON object; nothing recorded")
            return HookResult()
        hook = str(payload.get("hook_event_name") or "?")
        handler = HANDLERS.get(hook)
        if handler is None:
            return HookResult()
        from continuity.core.logs import log

        log("debug", "hook called", harness=harness, hook=hook)
        cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        try:
            store = find_store(start=cwd if cwd and os.path.isdir(cwd) else None, root=root)
        except ContinuityError as error:
            report(None, harness, hook, f"{error}; nothing recorded")
            return HookResult()
        return handler(harness, payload, store)
    except ContinuityError as error:
        report(store, harness, hook, str(error))
    except Exception as error:  # a hook must never break the agent
        report(store, harness, hook, f"internal error: {type(error).__name__}: {error}")
    return HookResult()


def handle(harness: str, root: str | None) -> int:
    """Read the hook's stdin, handle it, print what the harness should see; always 0."""
    import sys

    try:
        raw = sys.stdin.buffer.read()
    except (OSError, ValueError):
        raw = b""
    result = run_hook(harness, raw, root=root)
    if result.stdout:
        sys.stdout.write(result.stdout + "\n")
        sys.stdout.flush()
    return 0
