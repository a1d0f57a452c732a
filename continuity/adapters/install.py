"""Install continuity's hooks into Claude Code, Codex, Cursor or Gemini CLI, and take them out again.

The functional core takes parsed JSON (or Markdown text) and returns the new value; it
never touches the disk. `plan_install` / `plan_uninstall` read the files and return
`FileChange`s; `apply_change` backs up and writes them (temp file + rename); `Backups`
keeps the copies in the store's `local/backups/`, out of the user's folders and out of git.

Every installed command is a POSIX sh line ending in `exit 0`: a missing project folder, a
missing binary or a failing hook never becomes the harness's blocking exit 2. Files a team
commits run `continuity` from PATH; this machine's absolute path goes only to files that
stay on it (user scope, `.claude/settings.local.json`). Our entries are recognized by an
exact match with a command install writes (or wrote before), never by a pattern, so a
user's own hook that mentions continuity is left alone. Claude Code, Codex and Gemini CLI
group hooks under a matcher (`{"matcher", "hooks": [...]}`); Cursor lists them flat
(`{"command", "timeout"}`) in a file that also carries `"version": 1`: both forms are read
everywhere, so one set of merge functions serves the four.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import math
import os
import re
import shlex
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from continuity.core.errors import UsageError
from continuity.core.fsio import write_atomic
from events.errors import ContinuityError, WriteFailed

HARNESSES = ("claude-code", "codex", "cursor", "gemini")
SCOPES = ("project", "user")
HOOK_TIMEOUT = 10
#: Claude Code gives SessionEnd about 1.5 s; the hook must not outlive the session.
SESSION_END_TIMEOUT = 2
#: Gemini CLI counts hook timeouts in milliseconds; the others in seconds.
TIMEOUT_UNIT = {"claude-code": 1, "codex": 1, "cursor": 1, "gemini": 1000}
#: Reads (Read, Grep, Glob, WebFetch) are the most frequent calls and change no state;
#: a process per read would slow every turn. Failed calls use the same matcher.
CLAUDE_TOOL_MATCHER = "Edit|MultiEdit|Write|NotebookEdit|Bash"

#: event -> matcher (None: no matcher, the group fires for every source, tool or reason).
EVENTS: dict[str, dict[str, str | None]] = {
    "claude-code": {
        "SessionStart": None, "UserPromptSubmit": None, "PostToolUse": CLAUDE_TOOL_MATCHER,
        "PostToolUseFailure": CLAUDE_TOOL_MATCHER, "PreCompact": None, "PostCompact": None, "Stop": None,
        "SubagentStop": None, "SessionEnd": None,
    },
    # Codex's tool names (apply_patch, Bash, exec_command, MCP tools) are not a stable
    # contract, so PostToolUse matches every tool rather than record nothing by accident.
    "codex": {
        "SessionStart": None, "UserPromptSubmit": None, "PostToolUse": None,
        "PreCompact": None, "PostCompact": None, "SubagentStop": None, "Stop": None,
    },
    # Cursor's hooks.json has no matchers for these events (docs/adapters.md).
    "cursor": {
        "sessionStart": None, "beforeSubmitPrompt": None, "afterFileEdit": None, "afterShellExecution": None,
        "preCompact": None, "stop": None, "sessionEnd": None,
    },
    # AfterTool matchers are regular expressions over Gemini CLI's tool names; reads are left out.
    "gemini": {
        "SessionStart": None, "BeforeAgent": None, "AfterTool": "write_file|replace|run_shell_command",
        "AfterAgent": None, "PreCompress": None, "SessionEnd": None,
    },
}
#: The turn markers: a record per prompt and per answer (`work.logged` turn_start / turn_end). Installed
#: only with `install --turns` (or `record_prompts` on): the brief ranks them last and recall does not
#: index them; without them a session's activity (active sessions, team presence) is its tool calls.
#: Each is one more process on every turn.
TURN_EVENTS: dict[str, tuple[str, ...]] = {
    "claude-code": ("UserPromptSubmit", "Stop"), "codex": ("UserPromptSubmit", "Stop"),
    "cursor": ("beforeSubmitPrompt", "stop"), "gemini": ("BeforeAgent", "AfterAgent"),
}
#: Files install touches: (folder, hook settings file, instructions file in the project, in the home folder).
FILES = {
    "claude-code": (".claude", "settings.json", "CLAUDE.md", "CLAUDE.md"),
    "codex": (".codex", "hooks.json", "AGENTS.md", "AGENTS.md"),
    # Cursor reads AGENTS.md in the project; its user-level rules live in its settings, not in a file.
    "cursor": (".cursor", "hooks.json", "AGENTS.md", None),
    "gemini": (".gemini", "settings.json", "GEMINI.md", "GEMINI.md"),
}

BEGIN = "<!-- continuity:begin -->"
END = "<!-- continuity:end -->"

#: Claude Code runs hooks from wherever the session is; the store is found from the project root.
PROJECT_DIR = 'cd "${CLAUDE_PROJECT_DIR:-.}" >/dev/null 2>&1 && '
ON_PATH = "command -v continuity >/dev/null 2>&1"
#: The end of every command install writes or wrote: `<exe, as shlex.quote spells it> hook <harness>`. The exe
#: starts the command or follows a space: tried from every position, it would take time quadratic in the length.
TAIL = re.compile(r"(?:\A|(?<= ))(?P<exe>[\w@%+=:,./-]+|'(?:[^']|'\"'\"')*') hook "
                  r"(?P<harness>claude-code|codex|cursor|gemini)(?:; exit 0)?\Z")


def executable() -> str | None:
    """The `continuity` script beside this interpreter (absolute), if there is one."""
    script = Path(sys.executable).with_name("continuity")
    return str(script) if script.is_file() else None


def hook_command(harness: str, exe: str | None = None, *, unless_on_path: bool = False) -> str:
    """The sh line a hook runs; it exits 0 whatever happens, and passes stdin and stdout through.

    Without `exe` it runs `continuity` from PATH (the portable form, for files a team commits);
    with it, this machine's absolute path, skipped when missing, and with `unless_on_path` also
    when `continuity` is on PATH, so a fallback never runs beside the portable hook.
    """
    if exe is None:
        guard, run = ON_PATH, f"continuity hook {harness}"
    else:
        quoted = shlex.quote(exe)
        guard = f"! {ON_PATH} && [ -x {quoted} ]" if unless_on_path else f"[ -x {quoted} ]"
        run = f"{quoted} hook {harness}"
    return f"{PROJECT_DIR if harness == 'claude-code' else ''}{guard} && {run}; exit 0"


def _known_commands(harness: str, exe: str) -> set[str]:
    """Every command install writes, or wrote before, that runs `exe`."""
    known = {hook_command(harness)}
    if harness in ("claude-code", "codex"):  # the forms versions before the portable command wrote
        legacy = f"{shlex.quote(exe)} hook {harness}"
        known.add(f'cd "${{CLAUDE_PROJECT_DIR:-.}}" && {legacy}' if harness == "claude-code" else legacy)
    if exe != "continuity":
        known |= {hook_command(harness, exe), hook_command(harness, exe, unless_on_path=True)}
    return known


def hook_groups(harness: str, exe: str | None = None, *, unless_on_path: bool = False,
                turns: bool = False) -> dict[str, dict[str, Any]]:
    """Event -> the entry install adds for it: a matcher group, or for Cursor one flat hook (the turn markers
    only with `turns`)."""
    command = hook_command(harness, exe, unless_on_path=unless_on_path)
    groups: dict[str, dict[str, Any]] = {}
    for event, matcher in EVENTS[harness].items():
        if event in TURN_EVENTS[harness] and not turns:
            continue
        seconds = SESSION_END_TIMEOUT if event in ("SessionEnd", "sessionEnd") else HOOK_TIMEOUT
        timeout = seconds * TIMEOUT_UNIT[harness]
        if harness == "cursor":
            groups[event] = {"command": command, "timeout": timeout}
            continue
        hook: dict[str, Any] = {"type": "command", "command": command, "timeout": timeout}
        if harness == "gemini":  # its /hooks panel and hooksConfig.disabled name hooks
            hook = {"name": "continuity", **hook}
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [hook]
        groups[event] = group
    return groups


def install_edit(harness: str, groups: dict[str, dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The change install makes to a settings file's JSON (Cursor's also names its format version)."""
    def edit(config: dict[str, Any]) -> dict[str, Any]:
        if harness == "cursor" and "version" not in config:
            config = {"version": 1, **config}
        return add_hooks(config, groups)
    return edit


def uninstall_edit(harness: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The change uninstall makes: our hooks out; a Cursor file left with only its version counts as empty."""
    def edit(config: dict[str, Any]) -> dict[str, Any]:
        new = remove_hooks(config)
        return {} if harness == "cursor" and new != config and new == {"version": 1} else new
    return edit


def is_ours(hook: Any) -> bool:
    """True for a hook entry whose command is exactly one install writes (or wrote before)."""
    command = hook.get("command") if isinstance(hook, dict) else None
    match = TAIL.search(command) if isinstance(command, str) else None
    if command is None or match is None:
        return False
    try:
        [exe] = shlex.split(match["exe"])
    except ValueError:
        return False
    named_continuity = exe == "continuity" or exe.endswith("/continuity")
    if not named_continuity or "\0" in exe:  # no path install writes holds a NUL (nor can one name a file)
        return False
    return command in _known_commands(match["harness"], exe)


def hooks_in(entry: Any) -> list[Any]:
    """The hooks of one entry of an event's list: a matcher group's `hooks`, or a flat hook itself (Cursor)."""
    hooks = entry.get("hooks") if isinstance(entry, dict) else None
    return hooks if isinstance(hooks, list) else [entry]


def _count_ours(groups: list[Any]) -> int:
    return sum(is_ours(h) for g in groups for h in hooks_in(g))


def _strip(groups: list[Any]) -> list[Any]:
    """The entries without our hooks; a group left with no hooks is dropped, and so is a flat hook of ours."""
    kept: list[Any] = []
    for group in groups:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(hooks, list):
            if not is_ours(group):
                kept.append(group)
            continue
        if not any(is_ours(h) for h in hooks):
            kept.append(group)
            continue
        others = [h for h in hooks if not is_ours(h)]
        if others:
            kept.append({**group, "hooks": others})
    return kept


def hooks_of(config: dict[str, Any]) -> dict[str, list[Any]]:
    """The settings' hook groups by event. A switch under "hooks" (`enabled`: guides for Gemini CLI tell users to
    add `"hooks": {"enabled": true}`) is no event: it is left out here and kept in the file as it is."""
    hooks = config.get("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError("its \"hooks\" is not a JSON object")
    for event, groups in hooks.items():
        if not isinstance(groups, list) and not _setting(event, groups):
            raise UsageError(f"its \"hooks\".{event} is not a JSON array")
    return {event: groups for event, groups in hooks.items() if isinstance(groups, list)}


#: Keys under "hooks" that are switches, not events (`"hooks": {"enabled": true}`, as guides for Gemini CLI say).
HOOK_SETTINGS = frozenset({"enabled", "disabled"})


def _setting(key: str, value: Any) -> bool:
    return key in HOOK_SETTINGS and (value is None or isinstance(value, bool | int | float | str))


def _settings_of(config: dict[str, Any]) -> dict[str, Any]:
    """The switches under "hooks" (`enabled`), in their order."""
    hooks = config.get("hooks")
    return {key: value for key, value in hooks.items() if _setting(key, value)} if isinstance(hooks, dict) else {}


def remove_hooks(config: dict[str, Any]) -> dict[str, Any]:
    """The config without our hooks, dropping groups, events and "hooks" that held only ours."""
    hooks = hooks_of(config)
    if "hooks" not in config or not any(_count_ours(groups) for groups in hooks.values()):
        return config
    new_hooks: dict[str, Any] = dict(_settings_of(config))  # settings stay, hooks that held only ours go
    for event, groups in hooks.items():
        stripped = _strip(groups)
        if stripped or not _count_ours(groups):
            new_hooks[event] = stripped
    new = dict(config)
    if new_hooks:
        new["hooks"] = new_hooks
    else:
        del new["hooks"]
    return new


def add_hooks(config: dict[str, Any], groups: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The config with exactly our `groups`: kept in place if already there, else appended."""
    hooks = hooks_of(config)
    new_hooks: dict[str, Any] = dict(_settings_of(config))  # switches stay as they are
    for event, existing in hooks.items():
        wanted = groups.get(event)
        if wanted is not None and wanted in existing and _count_ours(existing) == _count_ours([wanted]):
            new_hooks[event] = existing
            continue
        stripped = _strip(existing)
        if wanted is not None:
            new_hooks[event] = [*stripped, wanted]
        elif stripped or not _count_ours(existing):
            new_hooks[event] = stripped
    for event, wanted in groups.items():
        new_hooks.setdefault(event, [wanted])
    return {**config, "hooks": new_hooks}


def render_block(command: str) -> str:
    """The Markdown block that tells the agent when and how to checkpoint."""
    return "\n".join([
        BEGIN,
        "## Continuity: keep your working state across sessions",
        "",
        "Managed by `continuity install` (rerun it to update this block; `continuity uninstall` removes it).",
        "Where the project has `.agent/runtime-continuity/`, continuity keeps the working state "
        "(goal, done, in progress, next, blockers) in an append log:",
        "",
        "- At session start the resume bundle is injected automatically: read it and continue from its next step.",
        f'- After each finished step, and before any risky operation (large refactor, migration, history '
        f'rewrite, deleting files), checkpoint: `{command} checkpoint -m "<what changed>" --next "<next step>"`.',
        f"- At the end of a long session, take an archive: `{command} archive --gate agent`.",
        END,
    ])


def _marker_lines(text: str, begin: str, end: str) -> Iterator[tuple[str, int, int]]:
    """Each marker that opens a line (after at most three spaces, or a byte order mark) outside a code block, with
    where it starts and ends: a marker quoted in the user's prose (`... the <!-- continuity:begin --> block ...`) or
    shown in an example (between ``` fences, or indented as code) is the user's text, never our block's edge. Only
    a fence that closes hides what it holds (one left open to the end of the file hides nothing: the block appended
    after it must be found again, never appended once more at every install)."""
    lines: list[tuple[int, str]] = []
    offset = 0
    for line in text.split("\n"):  # "\n" alone: a form feed or U+2028 inside a line does not end it here
        lines.append((offset, line))
        offset += len(line) + 1
    hidden = _fenced(lines)
    for number, (offset, line) in enumerate(lines):
        if number in hidden:
            continue
        body = line.removeprefix("\ufeff")
        bare = body.lstrip(" ")
        if len(body) - len(bare) > 3:  # four spaces (or a tab, left on `bare`) make an indented code block: an
            continue  # example of the user's, as between fences (install replaced it, uninstall deleted it)
        for marker in (begin, end):
            if bare.startswith(marker):
                start = offset + len(line) - len(bare)
                yield marker, start, start + len(marker)


_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")


def _fenced(lines: list[tuple[int, str]]) -> set[int]:
    """The numbers of the lines inside fenced code blocks that close (CommonMark's fences: three or more backticks
    or tildes after at most three spaces, a backtick fence's info string holding no backtick, closed by a line of
    at least as many of the same character)."""
    hidden: set[int] = set()
    opened: tuple[int, str] | None = None  # (its line number, its fence)
    for number, (_, line) in enumerate(lines):
        found = _FENCE.fullmatch(line.rstrip("\r"))
        if opened is None:
            if found and not (found.group(1)[0] == "`" and "`" in found.group(2)):
                opened = (number, found.group(1))
        elif found and found.group(1)[0] == opened[1][0] and len(found.group(1)) >= len(opened[1]) \
                and not found.group(2).strip():
            hidden.update(range(opened[0], number + 1))
            opened = None
    return hidden


def _blocks(text: str, begin: str = BEGIN, end: str = END) -> list[tuple[int, int]]:
    """Each begin marker line with the first end marker line after it (`_marker_lines`), one pass."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    unpaired = False
    for marker, at, stop in _marker_lines(text, begin, end):
        if marker == begin and start is None:
            start = at
        elif marker == end and start is not None:
            spans.append((start, stop))
            start = None
        else:
            unpaired = True
    if unpaired or start is not None:
        raise UsageError(f"its {begin} / {end} markers do not pair up; fix them by hand")
    return spans


def add_block(text: str, block: str, begin: str = BEGIN, end: str = END) -> str:
    """The text with `block` replacing the first block between the markers (others dropped), else appended."""
    spans = _blocks(text, begin, end)
    if not spans:
        if not text:
            return block + "\n"
        return text + ("\n" if text.endswith("\n") else "\n\n") + block + "\n"
    start, stop = spans[0]
    return remove_block(text[:start] + block + text[stop:], keep_first=True, begin=begin, end=end)


#: How much of its AGENTS.md files Codex reads, by default (`project_doc_max_bytes`): a block past it is never seen.
CODEX_DOC_BYTES = 32 * 1024


def block_past_cap(harness: str, scope: str, root: Path, home: Path) -> str | None:
    """Why Codex would not see our instructions block (it ends past the bytes of the project's AGENTS.md Codex
    reads by default), or None. The cap is on the project's docs; the home folder's AGENTS.md is read apart."""
    if harness != "codex" or scope != "project":
        return None
    _, markdown = target_paths(harness, scope, root, home)
    try:
        text = read_text(markdown) if markdown is not None else None
    except ContinuityError:  # a file that cannot be read is not this check's to report
        return None
    try:
        spans = _blocks(text or "")
    except UsageError:  # markers that do not pair up: install says so itself
        return None
    if not spans:
        return None
    ends = len((text or "")[:spans[0][1]].encode())
    if ends <= CODEX_DOC_BYTES:
        return None
    return (f"{markdown}: continuity's block ends at byte {ends}, past the first {CODEX_DOC_BYTES // 1024} KiB of "
            "AGENTS.md that Codex reads by default (project_doc_max_bytes): Codex never sees it; move the block "
            "nearer the top or shorten the file")


def remove_block(text: str, *, keep_first: bool = False, begin: str = BEGIN, end: str = END) -> str:
    """The text without the marked blocks, each with the line break and blank line install added."""
    spans = _blocks(text, begin, end)
    for start, stop in reversed(spans[1:] if keep_first else spans):
        if text.startswith("\n", stop):
            stop += 1
        before, after = text[:start], text[stop:]
        if before.endswith("\n\n"):
            before = before[:-1]
        text = before + after
    return text


def parse_config(text: str) -> dict[str, Any]:
    """A settings file's JSON object; an empty file counts as `{}`."""
    if not text.strip():
        return {}
    if text.startswith("\ufeff"):
        raise UsageError("it starts with a byte order mark (U+FEFF), which JSON does not allow: save it as "
                         "UTF-8 without one")
    try:
        value = json.loads(text, parse_constant=_not_json, parse_float=_finite, object_pairs_hook=_once_each)
    except ValueError as error:
        if "integer string conversion" in str(error):  # Python's guard against huge numbers; its advice is not ours
            raise UsageError("it is not valid JSON for install (a number with more than 4300 digits)") from None
        if _has_comments(text):
            raise UsageError("it holds comments (JSON with comments, which Gemini CLI and editors accept): "
                             "install cannot merge into it and keep them; remove the comments, or add the "
                             "hooks by hand as docs/adapters.md shows") from None
        raise UsageError(f"it is not valid JSON ({error})") from None
    except RecursionError:
        raise UsageError("it is not valid JSON (nested too deeply)") from None
    if not isinstance(value, dict):
        raise UsageError("it does not hold a JSON object")
    from events.plain import nested_deeper_than

    if nested_deeper_than(value, JSON_DEPTH):
        raise UsageError(f"it is not valid JSON for install (nested too deeply: more than {JSON_DEPTH} levels)")
    return value


#: The deepest settings install takes. Python's reader stops only at the interpreter's recursion limit, less the
#: frames below it, and the writes and uninstall's comparison with the backups encode deeper in the stack: a file
#: just within what the reader took was left without its bytes back, or crashed uninstall. Far below, every step
#: takes what the first did.
JSON_DEPTH = 256


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are each given once: of two equal keys a reader keeps one (Python the last), so
    writing the file back would drop the other without a word."""
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            from events.problems import quoted

            raise UsageError(f"it gives the key {quoted(key)} twice in one object (readers keep only one of them); "
                             "keep one")
        seen.add(key)
    return dict(pairs)


def _as_a_reader_reads(digits: str) -> int | float:
    """An integer as a JSON reader reads it: past Python's 4,300-digit guard, the double JavaScript makes of it."""
    return int(digits) if len(digits) <= 4300 else float(digits)


def _not_json(word: str) -> float:
    """`NaN`, `Infinity`, `-Infinity`: Python reads them, JSON (and every harness's reader) does not."""
    raise ValueError(f"{word} is not a JSON value")


def _finite(text: str) -> float:
    """A number as Python reads it, unless it is too large for a double (`1e999` would be written back as
    `Infinity`, which a JSON reader refuses)."""
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text[:40]} is too large to be written back as JSON")
    return number


#: The most characters `read_config` reads again as JSON with comments.
LOOSE_JSON_CHARS = 8 << 20


def read_config(text: str) -> dict[str, Any]:
    """A settings file's JSON object as its harness reads it, for what only reads it (`doctor`, whether our hooks are
    installed): a byte order mark, comments, trailing commas and a key given twice (the last kept) are taken, as
    Gemini CLI and Claude Code take them; install, which writes the file back, refuses them (`parse_config`)."""
    text = text.removeprefix("\ufeff")
    try:
        return parse_config(text)
    except UsageError:
        pass
    if len(text) > LOOSE_JSON_CHARS:  # no settings file is this big: not worth a second reading
        raise UsageError("it is not valid JSON")
    try:  # NaN and Infinity are Python's, not JSON's: a harness reads no hook of such a file; a huge number, its double
        value = json.loads(_loose_json(text), parse_constant=_not_json, parse_int=_as_a_reader_reads)
    except (ValueError, RecursionError):
        raise UsageError("it is not valid JSON, even with comments") from None
    if not isinstance(value, dict):
        raise UsageError("it does not hold a JSON object")
    return value


#: A JSON string (kept as it is), or a comment; then a string, or a comma before `}` or `]`: what JSON with
#: comments adds, each read as a space. A string left open runs to the end of the text: tried again from each
#: quote inside it, the search took time in the square of its length (minutes for a settings file of 100 KB).
_STRING = r'("(?:[^"\\]|\\.)*(?:"|\\?\Z))'
_COMMENT = re.compile(_STRING + r'|//[^\n]*|/\*.*?(?:\*/|\Z)', re.S)
_TRAILING_COMMA = re.compile(_STRING + r'|,(?=\s*[}\]])', re.S)


def _loose_json(text: str) -> str:
    """JSON with comments as JSON: `//` and `/* */` comments outside strings taken out, then a comma before `}` or
    `]`."""
    uncommented = _COMMENT.sub(lambda found: found[1] or " ", text)
    return _TRAILING_COMMA.sub(lambda found: found[1] or " ", uncommented)


def _has_comments(text: str) -> bool:
    """Whether JSON text holds a `//` or `/*` comment outside its strings."""
    from continuity.core.text import outside_json_strings

    return any(char == "/" and text[here + 1:here + 2] in ("/", "*") for here, char in outside_json_strings(text))


def render_config(config: dict[str, Any], original: str | None) -> str:
    """JSON text for `config`, in the original file's indentation (two spaces by default)."""
    indent = re.match(r"\{[ \t]*\r?\n([ \t]+)\S", original or "")
    text = json.dumps(config, indent=indent.group(1) if indent else 2, ensure_ascii=False, allow_nan=False)
    # a lone surrogate (the file's own `\ud800` escape, valid JSON) has no UTF-8 form: it stays an escape
    text = _SURROGATE.sub(lambda match: f"\\u{ord(match[0]):04x}", text)
    text = text if original and not original.endswith("\n") else text + "\n"
    return text.replace("\n", "\r\n") if _crlf(original or "") else text  # JSON's strings hold no line break


def _crlf(text: str) -> bool:
    """Whether every line break of a file is CRLF (and it has one): its writer's, kept when install rewrites it."""
    return "\r\n" in text and text.count("\n") == text.count("\r\n")


#: Only inside strings in `json.dumps` output, where `\uXXXX` spells the same character.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_original(text: str, stripped: dict[str, Any], harness: str) -> bool:
    """True when `text` holds none of ours and install-then-uninstall on it gives `stripped`."""
    try:
        config = parse_config(text)
        if any(_count_ours(groups) for groups in hooks_of(config).values()):
            return False
        # key order counts: a reordered file is a changed one; installed with or without --turns
        return any(json.dumps(uninstall_edit(harness)(install_edit(harness, hook_groups(harness, turns=turns))(
            config))) == json.dumps(stripped) for turns in (False, True))
    except UsageError:
        return False


def _in_its_line_breaks(text: str, edit: Callable[[str], str]) -> str:
    """`edit` of a Markdown file's text, in its line breaks: a file whose lines all end in CRLF (Windows, git's
    autocrlf) keeps them, our block's lines too."""
    if not _crlf(text):
        return edit(text)
    return edit(text.replace("\r\n", "\n")).replace("\n", "\r\n")


def _md_original(text: str, stripped: str) -> bool:
    """True when `text` holds no block and adding then removing one gives `stripped`."""
    try:
        return not _blocks(text) and _in_its_line_breaks(
            text, lambda plain: remove_block(add_block(plain, f"{BEGIN}\n{END}"))) == stripped
    except UsageError:
        return False


@dataclass(frozen=True)
class FileChange:
    """One file's text before and after; `None` means the file is (or ends up) absent.

    `shared` marks a file meant to be committed (project scope, not `*.local.*`).
    """

    path: Path
    before: str | None
    after: str | None
    shared: bool = False

    @property
    def changed(self) -> bool:
        """True when the file's content would change."""
        return self.before != self.after

    @property
    def status(self) -> str:
        """created, updated, removed or unchanged."""
        if not self.changed:
            return "unchanged"
        return "created" if self.before is None else "removed" if self.after is None else "updated"

    def diff(self) -> str:
        """A unified diff of the change ('' when unchanged)."""
        def lines(text: str | None) -> list[str]:
            return [line if line.endswith("\n") else line + "\n" for line in (text or "").splitlines(True)]
        return "".join(difflib.unified_diff(
            lines(self.before), lines(self.after),
            fromfile="/dev/null" if self.before is None else str(self.path),
            tofile="/dev/null" if self.after is None else str(self.path),
        ))


def target_paths(harness: str, scope: str, root: Path, home: Path) -> tuple[Path, Path | None]:
    """(hook settings file, instructions Markdown file or None) for a harness and scope."""
    folder, settings, markdown, user_markdown = FILES[harness]
    if scope == "user":
        return home / folder / settings, None if user_markdown is None else home / folder / user_markdown
    return root / folder / settings, root / markdown


def local_settings_path(harness: str, scope: str, root: Path) -> Path | None:
    """The project settings file that stays on this machine (Claude Code's settings.local.json)."""
    return root / ".claude" / "settings.local.json" if harness == "claude-code" and scope == "project" else None


def read_text(path: Path) -> str | None:
    """A file's UTF-8 text, None when absent; refused (nothing changed) when unreadable, not UTF-8, or not a
    regular file (a FIFO would wait forever for a writer, a device never end)."""
    try:  # O_NONBLOCK: opening a FIFO returns at once; what it is is then asked of the open file
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise WriteFailed(f"{path}: cannot read ({error.strerror}); nothing changed") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(f"{path}: not a regular file; nothing changed")
        with os.fdopen(fd, "rb", closefd=False) as file:
            return file.read().decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not valid UTF-8; nothing changed") from None
    except OSError as error:
        raise WriteFailed(f"{path}: cannot read ({error.strerror}); nothing changed") from None
    finally:
        os.close(fd)


#: path -> what the file held before earlier changes, newest first (see `Backups.earlier`).
Earlier = Callable[[Path], Iterable[str]]


def _no_earlier(path: Path) -> Iterable[str]:
    return ()


def _json_change(path: Path, edit: Callable[[dict[str, Any]], dict[str, Any]], *, shared: bool,
                 restore: tuple[str, Earlier] | None = None) -> FileChange:
    """The change `edit` makes; with `restore` (harness, earlier), a file back to its old form
    gets its old bytes."""
    before = read_text(path)
    try:
        config = parse_config(before or "")
        new = edit(config)
    except UsageError as error:
        raise UsageError(f"{path}: {error}; nothing changed") from None
    if new == config:
        return FileChange(path, before, before, shared)
    if restore is not None:
        harness, earlier = restore
        for text in earlier(path):
            if _json_original(text, new, harness):
                return FileChange(path, before, text, shared)
    after = None if not new and before is not None and config else render_config(new, before)
    return FileChange(path, before, after, shared)


def md_change(path: Path, edit: Callable[[str], str], *, shared: bool, earlier: Earlier | None = None) -> FileChange:
    """The change `edit` makes to a Markdown file; with `earlier`, a file back to its old form gets its old bytes."""
    before = read_text(path)
    try:
        after = _in_its_line_breaks(before or "", edit)
    except UsageError as error:
        raise UsageError(f"{path}: {error}; nothing changed") from None
    if after == (before or ""):
        return FileChange(path, before, before, shared)
    for text in earlier(path) if earlier is not None else ():
        if _md_original(text, after):
            return FileChange(path, before, text, shared)
    return FileChange(path, before, after if after.strip() else None, shared)


def plan_install(harness: str, scope: str, root: Path, home: Path, exe: str | None, *, on_path: bool,
                 turns: bool = False, earlier: Earlier = _no_earlier) -> list[FileChange]:
    """The changes `install` makes: our hooks merged in, our Markdown block in place.

    `exe` is this machine's `continuity` (absolute, or None when unknown); `on_path` says
    whether `continuity` is found on PATH here. Project files get the portable command;
    when it would not run here, `.claude/settings.local.json` gets the absolute one. The
    turn markers (TURN_EVENTS) only with `turns`; without it, ones installed before go.
    """
    settings, markdown = target_paths(harness, scope, root, home)
    shared = scope == "project"
    groups = hook_groups(harness, None if shared else exe, turns=turns)
    changes = [_json_change(settings, install_edit(harness, groups), shared=shared)]
    local = local_settings_path(harness, scope, root)
    if local is not None and exe is not None and not on_path:
        fallback = hook_groups(harness, exe, unless_on_path=True, turns=turns)
        changes.append(_json_change(local, lambda config: add_hooks(config, fallback), shared=False))
    elif local is not None:
        changes.append(_json_change(local, remove_hooks, shared=False, restore=(harness, earlier)))
    command = "continuity" if shared or on_path or exe is None else shlex.quote(exe)
    block = render_block(command)
    if markdown is not None:
        changes.append(md_change(markdown, lambda text: add_block(text, block), shared=shared))
    refuse_dangling_links(changes)
    return changes


def refuse_dangling_links(changes: list[FileChange]) -> None:
    """`refuse_dangling_link` for each file the changes create."""
    for change in changes:
        if change.before is None and change.after is not None:
            refuse_dangling_link(change.path)


def refuse_dangling_link(path: Path) -> None:
    """Refuse to create `path` through a symlink (the file or a folder above it) that names nothing.

    A symlink to an existing file or folder is followed (a dotfiles setup); one to nothing would
    have install make that file, and its folders, wherever the link points: outside the project,
    from a link anyone who commits could have put there.
    """
    for part in (path, *path.parents):
        if not os.path.lexists(part):
            continue  # a folder install makes, under one that exists
        if os.path.islink(part) and not os.path.exists(part):
            where = "" if part == path else f"{path}: "
            raise UsageError(f"{where}{part} is a symlink to {os.readlink(part)}, which does not exist; nothing "
                             "changed (create what it names, or remove the link)")
        return


def refuse_store_targets(changes: list[FileChange], root: Path) -> None:
    """Refuse (StoreUnsafe) before any write a file that resolves inside a continuity store: a symlink (the file's,
    or a folder's above it) into `.agent/runtime-continuity/`. Written through, an event file would no longer match
    the hash in its name, and the append-only log would be broken."""
    from continuity.core.store import STORE_PARTS
    from events.errors import StoreUnsafe

    for change in changes:
        real = os.path.realpath(change.path)
        parts = Path(real).parts
        if any(parts[at:at + 2] == STORE_PARTS for at in range(len(parts))):  # this project's store or another's
            raise StoreUnsafe(f"unsafe store: {change.path} resolves to {real}, inside the store; install and "
                              "uninstall never write the store's files (remove the link); nothing changed")


def outside_target(path: Path, base: Path) -> str | None:
    """Where `path` really is, when symlinks take it out of `base` (the project, or the home folder for --scope
    user); None inside it. The output names it, so a link a repository holds cannot send a write elsewhere unseen."""
    from continuity.core.fsio import project_file

    return os.path.realpath(path) if project_file(str(base), str(path)) is None else None


def plan_uninstall(harness: str, scope: str, root: Path, home: Path, *,
                   earlier: Earlier = _no_earlier) -> list[FileChange]:
    """The changes `uninstall` makes: our hooks and block taken out, old bytes back where nothing else changed."""
    settings, markdown = target_paths(harness, scope, root, home)
    shared = scope == "project"
    local = local_settings_path(harness, scope, root)
    changes = [_json_change(settings, uninstall_edit(harness), shared=shared, restore=(harness, earlier))]
    if local is not None:
        changes.append(_json_change(local, remove_hooks, shared=False, restore=(harness, earlier)))
    if markdown is not None and not _installed_beside(harness, markdown, scope, root, home):
        changes.append(md_change(markdown, remove_block, shared=shared, earlier=earlier))
    return changes


def _installed_beside(harness: str, markdown: Path, scope: str, root: Path, home: Path) -> bool:
    """Whether another harness sharing this instructions file (Codex and Cursor: AGENTS.md; any two when one file
    is a symlink to the other, say AGENTS.md to CLAUDE.md) still has our hooks."""
    def same(other: Path | None) -> bool:
        return other is not None and os.path.realpath(other) == os.path.realpath(markdown)

    return any(installed(other, scope, root, home) for other in HARNESSES
               if other != harness and same(target_paths(other, scope, root, home)[1]))


#: How each harness is named to a person.
NAMES = {"claude-code": "Claude Code", "codex": "Codex", "cursor": "Cursor", "gemini": "Gemini CLI"}


def installed(harness: str, scope: str, root: Path, home: Path) -> bool:
    """Whether a harness's settings in one scope hold our hooks (Claude Code's project scope: either file);
    a file that cannot be read holds none."""
    paths = [target_paths(harness, scope, root, home)[0], local_settings_path(harness, scope, root)]
    for path in (path for path in paths if path is not None):
        try:
            config = read_config(read_text(path) or "")
            if any(_count_ours(groups) for groups in hooks_of(config).values()):
                return True
        except (UsageError, WriteFailed):
            continue
    return False


def installed_twice(harness: str, root: Path, home: Path) -> bool:
    """Whether a harness has our hooks in both scopes (two different files), so it runs each of them twice."""
    project, user = (target_paths(harness, scope, root, home)[0] for scope in SCOPES)
    if os.path.realpath(project) == os.path.realpath(user):  # the project is the home folder
        return False
    return all(installed(harness, scope, root, home) for scope in SCOPES)


def twice_line(harness: str) -> str:
    """What doctor and install say of a harness hooked in both scopes."""
    return (f"installed in the project and in the home folder, and {NAMES[harness]} runs both: each event is "
            f"recorded twice (`continuity uninstall {harness} --scope user` takes out the home folder's)")


# -- the runtime-continuity launcher (contract §18) ---------------------------------------------
LAUNCHER_REL = Path(".agent", "skills", "runtime-continuity", "scripts", "index.js")
LAUNCHER_MARK = "// runtime-continuity launcher, written by `continuity install runtime-continuity`."


def launcher_entry() -> list[str]:
    """The re-implementation's command line: the console script beside this interpreter, else `python -m`."""
    script = Path(sys.executable).with_name("runtime-continuity")
    if script.is_file():
        return [str(script.absolute())]
    # -P: run in a project, `python -m` would import the project's own `events` or `continuity` first
    return [str(Path(sys.executable).absolute()), "-P", "-m", "continuity.adapters.compat.runtime_continuity"]


def launcher_text(entry: list[str]) -> str:
    """`index.js`: runs `entry` with the same arguments, directory, environment and streams; exits with its code."""
    return f"""#!/usr/bin/env node
{LAUNCHER_MARK}
// It runs continuity's runtime-continuity with the same arguments, working directory,
// environment and streams, and exits with its exit code. `continuity uninstall
// runtime-continuity` removes it.
"use strict";
const {{ spawnSync }} = require("child_process");
const ENTRY = {json.dumps(entry)};
const result = spawnSync(ENTRY[0], ENTRY.slice(1).concat(process.argv.slice(2)), {{ stdio: "inherit" }});
if (result.error) {{
  process.stderr.write(`runtime-continuity launcher: cannot run ${{ENTRY[0]}}: ${{result.error.message}}\n`);
  process.exit(1);
}}
if (result.signal) process.kill(process.pid, result.signal);
process.exit(result.status === null ? 1 : result.status);
"""


def is_launcher(text: str | None) -> bool:
    """Whether a file is a launcher install wrote (any entry path)."""
    return text is not None and LAUNCHER_MARK in text.split("\n", 3)[:3]


def plan_launcher_install(root: Path, entry: list[str], *, force: bool) -> FileChange:
    """Write the launcher; a different file that is not ours needs `force` (and is backed up when applied)."""
    path = root / LAUNCHER_REL
    before = read_text(path)
    after = launcher_text(entry)
    if before is not None and before != after and not is_launcher(before) and not force:
        raise UsageError(f"{path} exists and is not continuity's launcher; nothing changed "
                         "(use --force to replace it; the old file is backed up)")
    return FileChange(path, before, after, shared=False)


def plan_launcher_uninstall(root: Path, *, earlier: Earlier = _no_earlier) -> FileChange:
    """Remove our launcher, or give back the file a forced install replaced; a foreign file stays."""
    path = root / LAUNCHER_REL
    before = read_text(path)
    if not is_launcher(before):
        return FileChange(path, before, before, shared=False)
    for text in earlier(path):
        if not is_launcher(text):
            return FileChange(path, before, text, shared=False)
        break  # the newest copy is our own launcher: install found no foreign file last time
    return FileChange(path, before, None, shared=False)


def remove_empty_launcher_folders(root: Path) -> None:
    """After uninstall: the launcher's folders, when empty (never `.agent/` itself)."""
    folder = (root / LAUNCHER_REL).parent
    while folder != root / ".agent":
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


# -- backups -----------------------------------------------------------------------------------
LEGACY_BACKUP = ".continuity-backup-"
_STAMP = re.compile(r"(\d{8}T\d{6}Z)(?:-(\d+))?")


def _stamp_key(name: str) -> tuple[str, int] | None:
    match = _STAMP.fullmatch(name)
    return None if match is None else (match[1], int(match[2] or 0))


def _legacy_backups(path: Path) -> list[tuple[tuple[str, int], Path]]:
    """Copies earlier versions left beside `path` as `<name>.continuity-backup-<stamp>`."""
    prefix = path.name + LEGACY_BACKUP
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return []
    found = []
    for entry in entries:
        key = _stamp_key(entry.name[len(prefix):]) if entry.name.startswith(prefix) else None
        if key is not None and entry.is_file() and not entry.is_symlink():
            found.append((key, entry))
    return found


@dataclass(frozen=True)
class Backups:
    """Copies of the files install changes, as `<folder>/<UTC stamp>/<path relative to base>`.

    `store_root` is set when the folder is inside a store (checked before each write);
    `note` says why the copies are elsewhere.
    """

    folder: Path
    base: Path
    store_root: Path | None = None
    note: str | None = None
    #: Other folders copies may be in (read, never written): the project's under the state home, where an
    #: install made before `continuity init` kept them.
    also: tuple[Path, ...] = ()

    def _relative(self, path: Path) -> Path:
        try:
            return path.relative_to(self.base)
        except ValueError:
            return Path("outside", *path.parts[1:])

    def check(self) -> None:
        """Refuse (StoreUnsafe) when copies cannot be kept safely: the store's folders are symlinks or not folders.

        Asked before any file changes, so a refusal never leaves some files changed and others not.
        """
        if self.store_root is not None:
            from continuity.core.store import Store

            Store(self.store_root).check_safe()

    def save(self, path: Path, data: bytes, mode: int, stamp: str) -> Path:
        """Write `data` (what `path` holds) under a free `<stamp>[-n]` folder; never overwrites a copy."""
        self.check()
        relative = self._relative(path)
        for attempt in range(1000):
            target = self.folder / (f"{stamp}-{attempt}" if attempt else stamp) / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                copy = open(target, "xb")  # noqa: SIM115 - closed below, and removed when not written whole
            except FileExistsError:
                continue
            try:
                with copy:
                    copy.write(data)
            except BaseException:  # a partial copy is no backup (uninstall would skip it; a person might not)
                with contextlib.suppress(OSError):
                    os.unlink(target)
                raise
            os.chmod(target, mode)
            return target
        raise WriteFailed(f"{path}: no free backup name in {self.folder}")

    def discard(self, copies: list[Path]) -> None:
        """Remove copies of files a failed install left as they were, and the folders that leaves empty (up to
        the backups folder): on a full disk each retry kept another whole copy of what it did not change."""
        for copy in copies:
            with contextlib.suppress(OSError):
                copy.unlink()
            folder = copy.parent
            while folder != self.folder and self.folder in folder.parents:
                try:
                    folder.rmdir()
                except OSError:  # not empty: another copy, or the user's
                    break
                folder = folder.parent

    def earlier(self, path: Path) -> Iterator[str]:
        """What `path` held before earlier changes, newest first: copies here and old ones beside it."""
        found = _legacy_backups(path)
        relative = self._relative(path)
        folders: list[Path] = []
        for place in (self.folder, *self.also):
            with contextlib.suppress(OSError):
                folders.extend(place.iterdir())
        for folder in folders:
            key = _stamp_key(folder.name)
            if key is not None and (folder / relative).is_file():
                found.append((key, folder / relative))
        for _, copy in sorted(found, reverse=True):
            try:
                yield copy.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue

    def adopt(self, path: Path) -> list[Path]:
        """Move old `<file>.continuity-backup-<stamp>` copies from beside `path` into the folder."""
        moved = []
        for (stamp, _), legacy in sorted(_legacy_backups(path)):
            try:
                saved = self.save(path, legacy.read_bytes(), stat.S_IMODE(legacy.stat().st_mode), stamp)
                legacy.unlink()
            except OSError:
                continue  # housekeeping: a copy that cannot move stays where it was
            moved.append(saved)
        return moved


def backups_for(scope: str, root: Path, home: Path, state_home: Path) -> Backups:
    """Where copies go: the store's `local/backups/`; user scope, or a project without a store,
    under `<state_home>/continuity/backups/` (one folder per project)."""
    from continuity.core.store import Store, project_name_for

    if scope == "user":
        return Backups(state_home / "continuity" / "backups" / "user", home)
    store = Store(root)
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:8]
    folder = state_home / "continuity" / "backups" / f"{project_name_for(str(root))}-{digest}"
    if os.path.lexists(store.path):  # copies an install made before the store are still read
        return Backups(Path(store.local_dir) / "backups", root, store_root=root, also=(folder,))
    return Backups(folder, root, note=f"{root} has no continuity store, so backups are kept in {folder}")


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on `folder` (the project root, or the home folder for --scope user) from reading
    the files to writing them, so installs and uninstalls running at once do not undo each other (Codex and
    Cursor share AGENTS.md). A folder that cannot be opened is not locked."""
    from events import osfs

    with contextlib.ExitStack() as stack:
        with contextlib.suppress(OSError):
            stack.enter_context(osfs.folder_lock(str(folder)))
        yield


def write_text_atomic(path: Path, text: str) -> None:
    """Replace the file (a symlink's target) whole via a temp file, keeping its mode."""
    write_atomic(path, text.encode("utf-8"), keep_mode=True, follow_symlink=True, make_parents=True, sweep=True)


def put_back(applied: list[FileChange]) -> list[Path]:
    """Undo changes already written (newest first) when a later one fails; the files that could not be put back."""
    stuck = []
    for change in reversed(applied):
        try:
            if change.before is None:
                change.path.unlink(missing_ok=True)
                _drop_empty_harness_folder(change.path.parent)
            else:
                write_text_atomic(change.path, change.before)
        except OSError:
            stuck.append(change.path)
    return stuck


def apply_change(change: FileChange, stamp: str, backups: Backups) -> Path | None:
    """Write one change after copying the old file into `backups`; returns the copy's path, if any."""
    if not change.changed:
        return None
    saved = None
    if change.before is not None and read_only(change.path):
        raise WriteFailed(f"{change.path}: cannot write (read-only: no write permission)")
    if change.before is not None:
        try:
            mode, data = stat.S_IMODE(change.path.stat().st_mode), change.path.read_bytes()
        except OSError as error:
            raise WriteFailed(f"{change.path}: cannot read ({error.strerror or error})") from None
        try:  # the copy first: a failure to keep it names the backups folder, not the file it was for
            saved = backups.save(change.path, data, mode, stamp)
        except OSError as error:
            raise WriteFailed(f"{change.path}: not changed: its backup copy cannot be kept in {backups.folder} "
                              f"({error.strerror or error})") from None
    try:
        if change.after is not None:
            write_text_atomic(change.path, change.after)
        elif change.path.is_symlink():
            write_text_atomic(change.path, "{}\n" if change.path.suffix == ".json" else "")
        else:
            change.path.unlink()
            _drop_empty_harness_folder(change.path.parent)
    except OSError as error:
        if saved is not None:  # the file is as it was (written whole or not at all): its copy is no backup of a change
            backups.discard([saved])
        raise WriteFailed(f"{change.path}: cannot write ({error.strerror or error})") from None
    return saved


def refuse_read_only(changes: list[FileChange]) -> None:
    """WriteFailed for the first file to change that is read-only, before any is written: found half way, the files
    changed before it were put back, a removed one (and its folder) made again with new modes."""
    for change in changes:
        if change.changed and change.before is not None and read_only(change.path):
            raise WriteFailed(f"{change.path}: cannot write (read-only: no write permission); nothing changed")


def read_only(path: Path) -> bool:
    """Whether a file is not to be written: no write bit for anyone (`chmod 444`), or one this user may not write.

    The rename that replaces a file whole asks only the folder's permission, and root may write any file
    (`os.access` says yes), so a file made read-only would be replaced as if it were not: the mode bits say
    what its owner meant, for root too.
    """
    try:
        mode = path.stat().st_mode
    except OSError:  # gone, or a link to nothing: the write says what is wrong
        return False
    return not mode & 0o222 or not os.access(path, os.W_OK)


#: The folders install makes for a harness's settings (`.codex/hooks.json`, ...): removed with their last file.
HARNESS_FOLDERS = frozenset({".claude", ".codex", ".cursor", ".gemini"})


def _drop_empty_harness_folder(folder: Path) -> None:
    """Remove a harness's settings folder that removing its file left empty (install made it, as a rule)."""
    if folder.name in HARNESS_FOLDERS and not folder.is_symlink():
        with contextlib.suppress(OSError):  # not empty (the user's own files), or gone
            folder.rmdir()
