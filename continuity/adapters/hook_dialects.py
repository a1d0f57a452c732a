"""Each harness's hook payloads, said the one way the handlers read them: plain data, standard library only.

Claude Code and Codex already speak the shape the handlers read (`hook_event_name`
SessionStart, PostToolUse, ...; `session_id`, `cwd`, `tool_name`, `tool_input`,
`tool_response`). Cursor and Gemini CLI name their events and fields otherwise;
`normalize` maps one of their payloads onto that shape (and keeps every field it does
not map), so the plain path and the typed handlers record the same entries for all
four. `brief_output` and `ack` give back what each harness expects on stdout.
Vendor documentation checked, and the mapping, are in docs/adapters.md.
"""

from __future__ import annotations

import re

from events import lazyre

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

HARNESSES = ("claude-code", "codex", "cursor", "gemini")

#: Cursor's camelCase events -> the handlers' names.
CURSOR_EVENTS = {
    "sessionStart": "SessionStart", "beforeSubmitPrompt": "UserPromptSubmit", "afterFileEdit": "PostToolUse",
    "afterShellExecution": "PostToolUse", "preCompact": "PreCompact", "stop": "Stop", "sessionEnd": "SessionEnd",
}
#: Gemini CLI's events -> the handlers' names (AfterTool becomes PostToolUseFailure when the tool failed).
GEMINI_EVENTS = {
    "SessionStart": "SessionStart", "BeforeAgent": "UserPromptSubmit", "AfterTool": "PostToolUse",
    "AfterAgent": "Stop", "PreCompress": "PreCompact", "SessionEnd": "SessionEnd",
}
#: The lines Gemini CLI's shell tool appends to the command's output in `llmContent`, last first.
_GEMINI_TRAILER = ("Process Group PGID: ", "Background PIDs: ", "Signal: ", "Exit Code: ", "Error: ")
#: Cursor reads `continue` from beforeSubmitPrompt's answer; say it outright rather than rely on a default.
#: How far on each side of the cut an event name straddling it is looked for (the key, spaces, 200 escaped
#: characters).
_SEAM = 4096
_EVENT_NAME = lazyre.pattern(rb'"hook_event_name"\s*:\s*"((?:[^"\\]|\\.){1,200}?)"')


def normalize(harness: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The payload in the handlers' shape (a new dict; Claude Code's and Codex's come back as they are)."""
    if harness == "cursor":
        return _cursor(payload)
    if harness == "gemini":
        return _gemini(payload)
    return payload


def store_start(harness: str, payload: dict[str, Any]) -> str | None:
    """Where a hook looks for the store from (None: its own working folder).

    Claude Code's installed command runs in the project root (`cd "$CLAUDE_PROJECT_DIR"`): the session's store,
    whatever folder the session has moved to (its `cwd` may be a nested project with its own store, or a folder
    added with --add-dir that has none). The others start from the payload's `cwd` (Cursor's first workspace
    root, made the `cwd` by `normalize`).
    """
    import os

    if harness == "claude-code":
        return None
    cwd = payload.get("cwd")
    return cwd if isinstance(cwd, str) and cwd and os.path.isdir(cwd) else None


def brief_output(harness: str, brief: str) -> dict[str, Any]:
    """What SessionStart prints to hand the brief to the model, in the harness's documented shape."""
    if harness == "cursor":
        return {"additional_context": brief}
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": brief}}


def ack(harness: str, raw: bytes, tail: bytes = b"", *, whole: bool = False) -> str | None:
    """A line a harness needs on stdout whatever happened (Cursor's beforeSubmitPrompt: go on), else None.

    Read from the payload's bytes, whether or not they make a payload that could be read: `raw` as kept (an
    oversized one cut at its limit) and `tail`, the end of what was read past it, where the event's name may be
    when a huge prompt comes first; when `tail` is `whole` (all that came after `raw`), the name may also straddle
    the cut. The name may be spelled with JSON escapes."""
    if harness != "cursor":
        return None
    import json

    seam = raw[-_SEAM:] + tail[:_SEAM] if tail and whole else b""
    for found in (*_EVENT_NAME().finditer(raw), *_EVENT_NAME().finditer(tail), *_EVENT_NAME().finditer(seam)):
        try:
            name = json.loads(b'"' + found.group(1) + b'"')
        except ValueError:
            continue
        if name == "beforeSubmitPrompt":
            return '{"continue": true}'
    return None


def _cursor(payload: dict[str, Any]) -> dict[str, Any]:
    event = payload.get("hook_event_name")
    out = dict(payload)
    out["hook_event_name"] = CURSOR_EVENTS.get(event, f"cursor:{event}") if isinstance(event, str) else event
    # conversation_id is on every event; session_id only on some (and the same value where both are given)
    out["session_id"] = payload.get("conversation_id") or payload.get("session_id")
    out["turn_id"] = payload.get("generation_id")
    roots = payload.get("workspace_roots")
    root = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else None
    out["cwd"] = root or payload.get("cwd")
    if event == "afterFileEdit":
        out["tool_name"], out["tool_input"] = "Edit", {"file_path": payload.get("file_path")}
    elif event == "afterShellExecution":
        response = {"output": payload.get("output")}
        for key in ("exit_code", "exitCode"):  # not in the documented payload; kept should a version send it
            if key in payload:
                response[key] = payload[key]
        out["tool_name"], out["tool_input"], out["tool_response"] = "Shell", {"command": payload.get("command")}, \
            response
    elif event == "stop":
        out["stop_status"] = payload.get("status")
    return out


def _gemini(payload: dict[str, Any]) -> dict[str, Any]:
    event = payload.get("hook_event_name")
    out = dict(payload)
    out["hook_event_name"] = GEMINI_EVENTS.get(event, f"gemini:{event}") if isinstance(event, str) else event
    if event == "AfterTool":
        response = payload.get("tool_response")
        response = response if isinstance(response, dict) else {}
        error = response.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else error
            out["hook_event_name"] = "PostToolUseFailure"
            if not isinstance(message, str) and message is not None:  # its JSON text, never Python's repr
                from continuity.adapters.hook_entries import MAX_STDIN, text_of

                message = text_of(message, MAX_STDIN)
            out["error"] = message
        out["tool_response"] = _gemini_response(payload.get("tool_name"), response, failed=bool(error))
    elif event == "AfterAgent":
        out["last_assistant_message"] = payload.get("prompt_response")
    return out


#: How Gemini CLI (0.61) wraps a tool's text for the model, and the closing tag as escaped inside it.
_UNTRUSTED = ("<untrusted_context>\n", "\n</untrusted_context>", "&lt;/untrusted_context&gt;")


def _unwrapped(content: Any) -> Any:
    """A tool's text without the `<untrusted_context>` wrapper Gemini CLI puts around it (as it was, if absent)."""
    opening, closing, escaped = _UNTRUSTED
    if isinstance(content, str) and content.startswith(opening) and content.endswith(closing):
        return content[len(opening):-len(closing)].replace(escaped, "</untrusted_context>")
    return content


def _gemini_response(tool: Any, response: dict[str, Any], *, failed: bool = False) -> dict[str, Any]:
    """A shell call's output and exit code, read from the text Gemini CLI hands the model.

    The shell tool writes `Output: ...` and, only for a non-zero code, an `Exit Code: N` line;
    a finished command with neither that line, an `Error:` nor a `Signal:` line exited 0, unless
    the response says it failed (a timeout, a cancel): then its code is unknown.
    """
    content = _unwrapped(response.get("llmContent"))
    if tool != "run_shell_command" or not isinstance(content, str) or not content.startswith("Output: "):
        return {"output": content} if isinstance(content, str) else {}
    lines = content.splitlines()
    trailer: dict[str, str] = {}
    own_error = False  # the command's own last line reads `Error: ...` (node, npm, tsc): output, code unknown
    for prefix in _GEMINI_TRAILER:
        if len(lines) > 1 and lines[-1].startswith(prefix):
            if prefix == "Error: " and lines[-1] != "Error: (none)" and lines[:-1] != ["Output: (empty)"]:
                # Gemini's own Error line is for a process that could not run, after no output (then with an
                # `Exit Code: 1`); after some output it is the command's own last line: kept in its output
                own_error = True
                break
            trailer[prefix] = lines.pop()[len(prefix):]
    output = "\n".join(lines)[len("Output: "):]
    code = trailer.get("Exit Code: ", "")
    exit_code: int | None = None
    if re.fullmatch(r"-?\d{1,10}", code):
        exit_code = int(code)
    elif not failed and not own_error and not {"Exit Code: ", "Error: ", "Signal: "} & trailer.keys():
        exit_code = 0  # (an unreadable code, an error or a signal: unknown, not 0)
    return {"output": "" if output == "(empty)" else output, "exit_code": exit_code}
