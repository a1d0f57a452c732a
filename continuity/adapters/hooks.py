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
    from continuity.tasks.current import with_current_run

    return with_current_run(resolve_identity(store.project, harness=given, clean=clean_name), store.local_dir)


def envelope(harness: str, payload: dict[str, Any], store: Store) -> dict[str, Any]:
    """The identity fields the events of one hook call carry."""
    return identity(harness, payload, store).fields()


def _append(store: Store, events: list[Event]) -> list[str]:
    stored = store.open_log().append_many(events, redact=True)
    return [item.event_id for item in stored]


# -- handlers --------------------------------------------------------------------------------
def session_start(harness: str, payload: dict[str, Any], store: Store) -> HookResult:
    """Record the session, then answer with the resume brief (recorded as context.served)."""
    from continuity.core.errors import ConfigBroken
    from continuity.sessions.decide import decide_session_start
    from continuity.sessions.service import resume_bundle

    recorded: list[str] = []
    try:
        who = identity(harness, payload, store)
    except ConfigBroken:  # never record under a guessed project; still serve what the log knows
        project, warnings = store.reading_project()
        report(store, harness, "SessionStart", f"{warnings[0]}; nothing recorded")
        who, record = Identity(project=project, host=harness), False
    else:
        source = clean_name(payload.get("source")) or "startup"
        started = decide_session_start(
            who, source=source, model=clean_name(payload.get("model")),
            transcript_path=_text(payload.get("transcript_path"), 1024), cwd=_text(payload.get("cwd"), 1024),
            message=f"session {source} on {harness}",
        )
        try:
            recorded, record = _append(store, started), True
        except ContinuityError as error:  # the brief is served whatever happens to the recording
            report(store, harness, "SessionStart", f"session not recorded ({error}); the brief is served anyway")
            record = False
    brief = resume_bundle(store, who, fmt="md", max_chars=_max_chars(store), record=record)
    for warning in brief.warnings:
        report(store, harness, "SessionStart", f"warning: {warning}", quiet=True)
    if brief.served is not None:
        recorded.append(brief.served.event_id)
    import msgspec  # already loaded by the log; orjson would cost the hook path a few ms more

    output = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": brief.text}}
    return HookResult(msgspec.json.encode(output).decode(), recorded)


def _max_chars(store: Store) -> int:
    """The brief's budget for hooks: `hook_max_chars` in config.json, within sane bounds."""
    from continuity.sessions.brief import DEFAULT_MAX_CHARS, MIN_MAX_CHARS

    value = store.config.get("hook_max_chars")
    if isinstance(value, int) and not isinstance(value, bool):
        return min(max(value, MIN_MAX_CHARS), 100_000)
    return DEFAULT_MAX_CHARS


def post_tool_use(harness: str, payload: dict[str, Any], store: Store) -> HookResult:
    """Record a file edit or a shell command (secret-like text redacted); ignore other tools."""
    event = _tool_event(harness, payload, store, failed=False)
    return HookResult() if event is None else HookResult(recorded=_append(store, [event]))


def post_tool_use_failure(harness: str, payload: dict[str, Any], store: Store) -> HookResult:
    """Record a failed tool call: what was tried, its exit code and the error line."""
    event = _tool_event(harness, payload, store, failed=True)
    return HookResult() if event is None else HookResult(recorded=_append(store, [event]))


def _tool_event(harness: str, payload: dict[str, Any], store: Store, *, failed: bool) -> Event | None:
    """The work-log entry for one tool call (an edit or a command), or None for other tools."""
    from events.worklog import WorkLogged

    tool = str(payload.get("tool_name") or "")
    raw_input = payload.get("tool_input")
    tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
    response = payload.get("tool_response")
    error = _error_line(payload) if failed else None
    env = envelope(harness, payload, store)
    note = {"tool": tool, "tool_use_id": _text(payload.get("tool_use_id"), 200),
            "turn_id": _text(payload.get("turn_id"), 200), "error": error,
            "interrupted": True if failed and payload.get("is_interrupt") is True else None}
    note = {key: value for key, value in note.items() if value}
    command = _command_text(tool_input)
    patched = _patch_files(tool_input)
    outcome = " (failed)" if failed else ""
    if tool in EDIT_TOOLS or (tool in SHELL_TOOLS and patched):
        files = _edited_files(tool, tool_input) if tool in EDIT_TOOLS else patched
        if not files:
            return None
        return WorkLogged(**env, type="edit_failed" if failed else "edit", refs=Refs(files=tuple(files)), note=note,
                          message=f"{tool}{outcome} {', '.join(files)}"[:MESSAGE_CHARS])
    if tool in SHELL_TOOLS:
        if not command:
            return None
        exit_code = _exit_code(response)
        if failed and exit_code is None:
            full = payload.get("error")
            exit_code = _exit_code_in(full if isinstance(full, str) else error)
        summary = error if failed else _text(_summary(response), 300)
        ref = CommandRef(command=command, exit_code=exit_code, summary=summary)
        return WorkLogged(**env, type="command_failed" if failed else "command", refs=Refs(commands=(ref,)),
                          note=note, message=f"ran{outcome} {command.splitlines()[0][:200]}")
    if failed and tool:
        message = f"{tool} failed: {error or 'no detail'}"
        return WorkLogged(**env, type="tool_failed", note=note, message=message[:MESSAGE_CHARS])
    return None


def _command_text(tool_input: dict[str, Any]) -> str | None:
    command = tool_input.get("command")
    if isinstance(command, list):
        command = " ".join(str(part) for part in command)
    return _text(command, 4000)


def _patch_files(tool_input: dict[str, Any]) -> list[str]:
    """Files a patch names, wherever the harness put it (Codex sends `apply_patch` in `command`)."""
    for value in (tool_input.get("input"), tool_input.get("patch"), tool_input.get("command")):
        if isinstance(value, list):
            value = "\n".join(str(part) for part in value)
        if isinstance(value, str) and "*** " in value:
            found = [match.strip() for match in _PATCH_FILE.findall(value)]
            if found:
                return [path for path in (_text(item, 1024) for item in found[:100]) if path]
    return []


def _edited_files(tool: str, tool_input: dict[str, Any]) -> list[str]:
    key = EDIT_TOOLS.get(tool)
    if key is not None:
        path = _text(tool_input.get(key), 1024)
        return [path] if path else []
    return _patch_files(tool_input)


def _error_line(payload: dict[str, Any]) -> str | None:
    """The last non-empty line of a failure's error text (what a successor most needs)."""
    error = payload.get("error")
    if not isinstance(error, str):
        response = payload.get("tool_response")
        error = _summary(response) if isinstance(response, dict) else None
    if not isinstance(error, str):
        return None
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    return _text(lines[-1], 300) if lines else None


_EXIT_IN_TEXT = re.compile(r"\bexit(?:ed with)?(?: code|status)?[ :=]*(-?\d{1,4})\b", re.I)


def _exit_code_in(text: str | None) -> int | None:
    """An exit code stated in an error text ("Exit code 2", "exited with status 1")."""
    if not text:
        return None
    found = _EXIT_IN_TEXT.search(text)
    return int(found.group(1)) if found else None


def _exit_code(response: Any) -> int | None:
    if isinstance(response, dict):
        for key in ("exit_code", "exitCode", "returncode", "return_code"):
            value = response.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**32:
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
    "PostToolUseFailure": post_tool_use_failure,
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
    import msgspec

    from events.errors import ContinuityError

    store: Store | None = None
    hook = "?"
    try:
        problem = _input_problem(raw)
        payload = None
        if problem is None:
            try:
                payload = msgspec.json.decode(raw)
            except msgspec.DecodeError as error:
                problem = f"hook input is not valid JSON ({error}); nothing recorded"
        if problem is None and not isinstance(payload, dict):
            problem = f"hook input is JSON but not an object ({type(payload).__name__}); nothing recorded"
        if problem is not None or not isinstance(payload, dict):
            report(_store_for_logging(root), harness, hook, problem or "hook input unusable; nothing recorded")
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


def _input_problem(raw: bytes) -> str | None:
    """Why a hook's stdin cannot be a payload (too large, empty, not UTF-8), or None."""
    if len(raw) > MAX_STDIN:
        return f"hook input over {MAX_STDIN} bytes ignored; nothing recorded"
    if not raw.strip():
        return "hook input is empty; nothing recorded"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"hook input is not valid UTF-8 (byte {error.start}); nothing recorded"
    return None


def _store_for_logging(root: str | None) -> Store | None:
    """The store to keep a hooks.log entry in when the payload (and its cwd) is unusable."""
    from events.errors import ContinuityError

    try:
        return find_store(root=root)
    except (ContinuityError, OSError):
        return None


def handle(harness: str, root: str | None) -> int:
    """Read the hook's stdin, handle it, print what the harness should see; always 0."""
    import sys

    try:
        raw = sys.stdin.buffer.read(MAX_STDIN + 1)  # never more than the limit in memory
    except (OSError, ValueError):
        raw = b""
    result = run_hook(harness, raw, root=root)
    if result.stdout:
        sys.stdout.write(result.stdout + "\n")
        sys.stdout.flush()
    return 0
