"""What a hook payload says, as the fields of a work-log entry: plain data, on the standard library alone.

Shared by the hook handlers (continuity/adapters/hooks.py, which make Structs of it)
and the plain append path (continuity/adapters/hook_fast.py), so both record the same
entry for the same payload.
"""

from __future__ import annotations

import re

from events import lazyre

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

MAX_STDIN = 4 * 1024 * 1024
MESSAGE_CHARS = 2000
EDIT_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path",
              "apply_patch": None, "ApplyPatch": None, "write_file": "file_path", "replace": "file_path"}
SHELL_TOOLS = ("Bash", "shell", "Shell", "exec_command", "local_shell", "container.exec", "run_shell_command")
_PATCH_FILE = lazyre.pattern(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)
_EXIT_IN_TEXT = lazyre.pattern(r"\bexit(?:ed with)?(?: code|status)?[ :=]*(-?\d{1,4})\b", re.I)


#: A terminal's escape sequences (CSI, as ESC [ or the 8-bit 0x9B; OSC, to BEL or ST; two-character escapes), and
#: any other control character but tab and newline (C0, DEL, C1).
_CONTROLS = None


def _spaced_controls(text: str) -> str:
    """`text` with each escape sequence and control character (but tab and newline) made one space: dropped, a
    colour code's remainder (`[1m`) or the word before glued itself to a token that follows (`echo\x1bghp_...`),
    and no secret rule matched a token glued to a letter."""
    global _CONTROLS
    if _CONTROLS is None:  # compiled on first use: most hook calls meet no control character
        _CONTROLS = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])?"
                               r"|\x9b[0-?]*[ -/]*[@-~]?|[\x00-\x08\x0b-\x1f\x7f-\x9f]")
    return _CONTROLS.sub(" ", text)


def text_of(value: Any, limit: int = MESSAGE_CHARS) -> str | None:
    """A payload value as one stored text: escape sequences and control characters but tab and newline made a space
    each, cut at `limit`.

    Another JSON type where a text belongs (a list, an object, `true`) is written as JSON, never as Python's repr.
    """
    if value is None:
        return None
    if isinstance(value, str):
        text = value
    else:
        import json

        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return None
    if not text.isprintable():  # most texts hold no control character: no pattern for them
        text = _spaced_controls(text)
    if len(text) > limit:  # cut before a secret the limit would split: its first characters match no rule
        from events.guard import cut

        text = cut(text, limit)
    return text or None


def input_problem(raw: bytes) -> str | None:
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


def lenient_payload(raw: bytes) -> dict[str, Any] | None:
    """A payload msgspec refuses but JSON allows, made storable; None when it is not a JSON object.

    Node writes a lone surrogate as an escape (`\\ud83d`, an emoji cut in half by a truncated tool
    output): it becomes U+FFFD. A number past what an event carries (a 5000-digit integer,
    `1e400`) becomes null, as `NaN` and `Infinity` do (which JSON.stringify never writes).
    """
    import json

    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=lambda _: None, parse_int=_int_or_none)
        cleaned = _storable(value)
    except (ValueError, RecursionError):
        return None
    return cleaned if isinstance(cleaned, dict) else None


def _int_or_none(text: str) -> int | None:
    if len(text.lstrip("-")) > 19:  # past 64 bits whatever the digits (and Python's 4300-digit guard)
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**64 else None


def _storable(value: Any) -> Any:
    if isinstance(value, str):
        return re.sub("[\ud800-\udfff]", "\ufffd", value)
    if isinstance(value, float):
        return value if value - value == 0 else None  # inf and nan are not finite
    if isinstance(value, dict):
        return {_storable(key): _storable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_storable(item) for item in value]
    return value


def tool_entry(payload: dict[str, Any], *, failed: bool, root: str | None = None) -> dict[str, Any] | None:
    """The work-log fields for one tool call (an edit or a command), or None for other tools.

    `refs` holds plain dicts: `files` and `commands` (each `{command, exit_code, summary}`). A file inside the
    project `root` is named from it (`project_paths`).
    """
    # One line without control characters (an MCP server may name its tools anything; `\x1b[31m` left the
    # failed call unrecorded: a message may not hold it).
    tool = " ".join((text_of(payload.get("tool_name"), 200) or "").split())
    raw_input = payload.get("tool_input")
    tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
    response = payload.get("tool_response")
    error = _error_line(payload) if failed else None
    note = {"tool": tool, "tool_use_id": text_of(payload.get("tool_use_id"), 200),
            "turn_id": text_of(payload.get("turn_id"), 200), "error": error,
            "interrupted": True if failed and payload.get("is_interrupt") is True else None}
    note = {key: value for key, value in note.items() if value}
    command = _command_text(tool_input)
    patched = _patch_files(tool_input)
    outcome = " (failed)" if failed else ""
    if tool in EDIT_TOOLS or (tool in SHELL_TOOLS and patched):
        files = _edited_files(tool, tool_input) if tool in EDIT_TOOLS else patched
        if not files:
            return None
        if root is not None:
            cwd = payload.get("cwd")
            files = list(dict.fromkeys(project_paths(files, root, cwd if isinstance(cwd, str) else None)))
        return {"type": "edit_failed" if failed else "edit", "refs": {"files": files}, "note": note,
                "message": text_of(f"{tool}{outcome} {', '.join(files)}")}  # cut before a secret, as text_of cuts
    if tool in SHELL_TOOLS:
        if not command:
            return None
        exit_code = _exit_code(response)
        if failed and exit_code is None:
            full = payload.get("error")
            exit_code = _exit_code_in(full if isinstance(full, str) else error)
        summary = error if failed else text_of(_summary(response), 300)
        ref = {"command": command, "exit_code": exit_code, "summary": summary}
        return {"type": "command_failed" if failed else "command", "refs": {"commands": [ref]}, "note": note,
                "message": f"ran{outcome} {text_of(command.splitlines()[0], 200) or ''}"}
    if failed and tool:
        message = f"{tool} failed: {error or 'no detail'}"
        return {"type": "tool_failed", "note": note, "message": message}  # a name of 200 and an error line of 300
    return None


def simple_entry(kind: str, payload: dict[str, Any], *, record_prompts: bool) -> dict[str, Any]:
    """The work-log fields of a turn, compaction or subagent hook (`kind`: turn_start, turn_end, ...)."""
    note: dict[str, Any] = {}
    if kind == "compaction":
        note = {"trigger": text_of(payload.get("trigger"), 40),
                "compact_summary": text_of(payload.get("compact_summary"), 8000)}
        message = "context compacted"
    elif kind == "turn_start":
        message = "turn started"
        if record_prompts:
            note = {"prompt": text_of(payload.get("prompt"), 8000)}
    elif kind == "subagent_end":
        note = {"agent_type": text_of(payload.get("agent_type"), 100),
                "last_assistant_message": text_of(payload.get("last_assistant_message"))}
        message = f"subagent {note.get('agent_type') or ''} finished".replace("  ", " ")
    else:
        note = {"last_assistant_message": text_of(payload.get("last_assistant_message")),
                "status": text_of(payload.get("stop_status"), 40)}
        message = "turn ended"
    note["turn_id"] = text_of(payload.get("turn_id"), 200)
    note = {key: value for key, value in note.items() if value}
    return {"type": kind, "message": message, "note": note or None}


def _command_text(tool_input: dict[str, Any]) -> str | None:
    """The command a shell call ran, as a shell would read it back. Codex gives an argv list: a shell's `-c`
    script (`["bash", "-lc", "cd build && rm -rf *"]`) is the script itself, any other list its words quoted as a
    shell needs them (joined with spaces, `bash -lc cd build && rm -rf *` read as another command)."""
    command = tool_input.get("command")
    if isinstance(command, list):  # past what is kept (4,000, and what a cut looks at beyond it) nothing is read
        script = command[2] if len(command) == 3 and command[1] in SCRIPT_FLAGS and isinstance(command[2], str) and \
            command[2].strip() and isinstance(command[0], str) and command[0].rsplit("/", 1)[-1] in SHELLS else None
        command = script if script is not None else _joined(command, " ", 4000 + 4096, quote=True)
    return text_of(command, 4000)


#: The shells whose `-c` script is what an argv list ran, and the flags that give one.
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish"})
SCRIPT_FLAGS = frozenset({"-c", "-lc", "-ic", "-cl"})
#: What a shell reads as part of a word (shlex.quote's set): any other character makes a word quoted.
_SHELL_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-")


def _shell_word(text: str) -> str:
    """`text` as one shell word (`shlex.quote`, without importing it on the hook path)."""
    if text and all(char in _SHELL_SAFE for char in text):
        return text
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _joined(parts: list[Any], separator: str, enough: int, *, quote: bool = False) -> str:
    """An argv list's parts as one text (each a shell word when `quote`), read only until it holds `enough`
    characters (or 100,000 parts): a list of millions of small values took longer than a harness waits for its
    hook."""
    texts: list[str] = []
    size = 0
    for part in parts[:100_000]:
        text = _shell_word(_part(part)) if quote else _part(part)
        texts.append(text)
        size += len(text) + len(separator)
        if size > enough:
            break
    return separator.join(texts)


def _part(value: Any) -> str:
    """One part of an argv list as text: a string as it is, another JSON value as its JSON (never Python's repr)."""
    return value if isinstance(value, str) else (text_of(value, 4000) or "")


def _patch_files(tool_input: dict[str, Any]) -> list[str]:
    """Files a patch names, wherever the harness put it (Codex sends `apply_patch` in `command`)."""
    for value in (tool_input.get("input"), tool_input.get("patch"), tool_input.get("command")):
        if isinstance(value, list):
            value = _joined(value, "\n", 1 << 20)
        if isinstance(value, str) and "*** " in value:
            found = [match.strip() for match in _PATCH_FILE().findall(value)]
            if found:
                return [path for path in (text_of(item, 1024) for item in found[:100]) if path]
    return []


def _edited_files(tool: str, tool_input: dict[str, Any]) -> list[str]:
    key = EDIT_TOOLS.get(tool)
    if key is not None:
        value = tool_input.get(key)
        path = text_of(value, 1024) if isinstance(value, str) else None  # a path, or none: never a list's text
        return [path] if path else []
    return _patch_files(tool_input)


def project_paths(paths: Iterable[str], root: str, cwd: str | None = None) -> tuple[str, ...]:
    """Each file inside the project as a path from its root (`src/app.py`): harnesses name the files they edit by
    absolute paths (a patch's, by paths from their working folder), `log --file` takes them from where it runs,
    so one file was two in a run's files, and a path of this machine went to every clone. An absolute path loses
    the root's leading part, the root looked for as the store was found, as its real path, and as the working
    folder (`cwd`, maybe reached through a link) names it when that resolves to it; a relative one given in a
    folder below the root gains that folder's path (`x.py` in `src/` is `src/x.py`). Only a plain path (no `..`,
    `.` or empty part: `//x` or `../y` named another file) is changed, and only by that prefix: the rest is kept
    as written, as the secret guard reads it. Anything else stays as given. The root is resolved once, the
    working folder only when a path needs it."""
    import os

    real = os.path.realpath(root)
    tops = tuple(dict.fromkeys((root, real)))
    looked: list[tuple[str | None, str | None]] = []

    def from_cwd() -> tuple[str | None, str | None]:
        if not looked:
            looked.append(_cwd_parts(cwd, real, tops))
        return looked[0]

    def named(path: str) -> str:
        if not path.startswith("/"):
            prefix = from_cwd()[0] if _plain(path) else None
            return f"{prefix}/{path}" if prefix else path
        for top in tops:
            inside = _below(path, top)
            if inside is not None:
                return inside
        lead = from_cwd()[1]
        inside = _below(path, lead) if lead is not None else None
        return path if inside is None else inside

    return tuple(named(path) for path in paths)


def shell_folder() -> str | None:
    """The working folder as the shell that started us names it (`pwd -L`: `$PWD`, a path through a link kept as
    typed) when that is this process's folder, else its real path; None when it no longer exists. `log --file x.rs`
    run in a linked folder of the project (`vendor/` -> `../lib`) is `vendor/x.rs` (project_paths), as the shell
    shows where it is."""
    import os

    try:
        here = os.getcwd()
    except OSError:  # removed under the shell: a relative path is kept as given
        return None
    logical = os.environ.get("PWD", "")
    if logical.startswith("/") and logical != here and len(logical) <= PATH_MAX:
        try:
            if os.path.samestat(os.stat(logical), os.stat(here)):
                return logical
        except (OSError, ValueError):
            pass
    return here


def _cwd_parts(cwd: str | None, real: str, tops: tuple[str, ...] = ()) -> tuple[str | None, str | None]:
    """For a working folder `cwd` below the project's real root: its path from the root (None at the root) and the
    root as `cwd` names it (None when that does not resolve to the root: the folder holding a link to a subfolder);
    for one below a root in `tops` as named that leads out of it through a link (`vendor/` -> `../lib`), its path
    from that root as named (a file there is recorded as by its absolute path through the link: `vendor/x.rs`, not
    `x.rs`, the project's own); (None, None) outside it, or for a folder name too long to look at."""
    import os

    if not cwd or not cwd.startswith("/") or len(cwd) > PATH_MAX:  # realpath walks every part: never a huge one
        return None, None
    named = cwd.rstrip("/") or "/"
    if ".." not in named.split("/"):  # `//` and `/./` name the same folder (a `..` after a link names another)
        named = "/" + os.path.normpath(named).lstrip("/")
    part = os.path.relpath(os.path.realpath(named), real).replace(os.sep, "/")
    if part == os.pardir or part.startswith(os.pardir + "/"):
        for top in tops:
            inside = _below(named, top)
            if inside is not None:
                return inside, top
        return None, None
    if part == os.curdir:
        return None, named
    lead = named[:-len(part) - 1] if named.endswith("/" + part) else None
    return part, lead if lead and os.path.realpath(lead) == real else None


#: The longest working folder a harness's payload may name for `project_paths` to look at (Linux's PATH_MAX).
PATH_MAX = 4096


def _below(path: str, top: str) -> str | None:
    """`path` from `top` when it is a plain path below it, else None."""
    lead = top.rstrip("/") + "/"
    if not path.startswith(lead) or len(path) == len(lead):
        return None
    inside = path[len(lead):]
    return inside if _plain(inside) else None


def _plain(path: str) -> bool:
    """A relative path whose parts are neither empty, `.` nor `..`."""
    return bool(path) and not path.startswith("/") and all(part not in ("", ".", "..") for part in path.split("/"))


def _error_line(payload: dict[str, Any]) -> str | None:
    """The last non-empty line of a failure's error text (what a successor most needs)."""
    error = payload.get("error")
    if not isinstance(error, str):
        response = payload.get("tool_response")
        error = _summary(response) if isinstance(response, dict) else None
    if not isinstance(error, str):
        return None
    return text_of(_last_line(error).strip(), 300) if error.strip() else None


def _exit_code_in(text: str | None) -> int | None:
    """An exit code stated in an error text ("Exit code 2", "exited with status 1")."""
    if not text:
        return None
    found = _EXIT_IN_TEXT().search(text)
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
    """The last output line: from stderr, stdout or output, or the response itself when it is text
    (Codex's PostToolUse gives a shell call's output as a plain string)."""
    if isinstance(response, str) and response.strip():
        return _last_line(response)
    if isinstance(response, dict):
        for key in ("stderr", "stdout", "output"):
            value = response.get(key)
            if isinstance(value, str) and value.strip():
                return _last_line(value)
    return None


def _last_line(text: str) -> str:
    """The last non-empty line of `text`; a line inside a private key whose header is on a line above (a command
    that printed a key's first lines) is the key's redaction marker: the guard reads the stored line alone."""
    text = text.strip()
    last = text.splitlines()[-1]
    if "PRIVATE KEY" in text[-16_384:]:
        from events.guard import redact_text, unsplit

        start = len(text) - len(last)
        begins = unsplit(text, start)
        if begins < start:
            return redact_text(text[begins:])[0].strip().splitlines()[-1]
    return last
