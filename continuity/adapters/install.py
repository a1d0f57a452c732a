"""Install continuity's hooks into Claude Code or Codex, and take them out again.

The functional core takes parsed JSON (or Markdown text) and returns the new value; it
never touches the disk. `plan_install` / `plan_uninstall` read the files and return
`FileChange`s; `apply_changes` backs up and writes them (temp file + rename).
Our hook entries are recognized by a command that runs `continuity hook`.
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from continuity.core.errors import UsageError
from continuity.core.fsio import write_atomic
from events.errors import WriteFailed

HARNESSES = ("claude-code", "codex")
SCOPES = ("project", "user")
HOOK_TIMEOUT = 10
#: Claude Code gives SessionEnd about 1.5 s; the hook must not outlive the session.
SESSION_END_TIMEOUT = 2
#: Reads (Read, Grep, Glob, WebFetch) are the most frequent calls and change no state;
#: a process per read would slow every turn.
CLAUDE_TOOL_MATCHER = "Edit|MultiEdit|Write|NotebookEdit|Bash"

#: event -> matcher (None: no matcher, the group fires for every source, tool or reason).
EVENTS: dict[str, dict[str, str | None]] = {
    "claude-code": {
        "SessionStart": None, "UserPromptSubmit": None, "PostToolUse": CLAUDE_TOOL_MATCHER,
        "PreCompact": None, "PostCompact": None, "Stop": None, "SubagentStop": None, "SessionEnd": None,
    },
    # Codex's tool names (apply_patch, Bash, exec_command, MCP tools) are not a stable
    # contract, so PostToolUse matches every tool rather than record nothing by accident.
    "codex": {
        "SessionStart": None, "UserPromptSubmit": None, "PostToolUse": None,
        "PreCompact": None, "PostCompact": None, "SubagentStop": None, "Stop": None,
    },
}

BEGIN = "<!-- continuity:begin -->"
END = "<!-- continuity:end -->"
_BLOCK = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
_OUR_COMMAND = re.compile(r"continuity['\"]?\s+hook(\s|$)")


def executable() -> str:
    """The `continuity` script beside this interpreter (absolute), else the bare name."""
    script = Path(sys.executable).with_name("continuity")
    return str(script) if script.is_file() else "continuity"


def hook_command(harness: str, exe: str) -> str:
    """The shell command a hook runs; Claude Code's runs from the project root."""
    run = f"{shlex.quote(exe)} hook {harness}"
    if harness == "claude-code":
        return f'cd "${{CLAUDE_PROJECT_DIR:-.}}" && {run}'
    return run  # Codex names no project-dir variable: the hook finds its store from its cwd


def hook_groups(harness: str, exe: str) -> dict[str, dict[str, Any]]:
    """Event -> the matcher group install adds for it."""
    command = hook_command(harness, exe)
    groups: dict[str, dict[str, Any]] = {}
    for event, matcher in EVENTS[harness].items():
        timeout = SESSION_END_TIMEOUT if event == "SessionEnd" else HOOK_TIMEOUT
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [{"type": "command", "command": command, "timeout": timeout}]
        groups[event] = group
    return groups


def is_ours(hook: Any) -> bool:
    """True for a hook entry whose command runs `continuity hook`."""
    return isinstance(hook, dict) and isinstance(hook.get("command"), str) \
        and _OUR_COMMAND.search(hook["command"]) is not None


def _count_ours(groups: list[Any]) -> int:
    return sum(is_ours(h) for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
               for h in g["hooks"])


def _strip(groups: list[Any]) -> list[Any]:
    """The groups without our hooks; a group left with no hooks is dropped."""
    kept: list[Any] = []
    for group in groups:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(hooks, list) or not any(is_ours(h) for h in hooks):
            kept.append(group)
            continue
        others = [h for h in hooks if not is_ours(h)]
        if others:
            kept.append({**group, "hooks": others})
    return kept


def _hooks_of(config: dict[str, Any]) -> dict[str, Any]:
    hooks = config.get("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError("its \"hooks\" is not a JSON object")
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise UsageError(f"its \"hooks\".{event} is not a JSON array")
    return hooks


def remove_hooks(config: dict[str, Any]) -> dict[str, Any]:
    """The config without our hooks, dropping groups, events and "hooks" that held only ours."""
    hooks = _hooks_of(config)
    if "hooks" not in config or not any(_count_ours(groups) for groups in hooks.values()):
        return config
    new_hooks = {}
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
    hooks = _hooks_of(config)
    new_hooks: dict[str, Any] = {}
    for event, existing in hooks.items():
        wanted = groups.get(event)
        if wanted is not None and wanted in existing and _count_ours(existing) == len(wanted["hooks"]):
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


def _blocks(text: str) -> list[tuple[int, int]]:
    spans = [match.span() for match in _BLOCK.finditer(text)]
    if text.count(BEGIN) != len(spans) or text.count(END) != len(spans):
        raise UsageError(f"its {BEGIN} / {END} markers do not pair up; fix them by hand")
    return spans


def add_block(text: str, block: str) -> str:
    """The text with `block` replacing the first continuity block (others dropped), else appended."""
    spans = _blocks(text)
    if not spans:
        if not text:
            return block + "\n"
        return text + ("\n" if text.endswith("\n") else "\n\n") + block + "\n"
    start, end = spans[0]
    return remove_block(text[:start] + block + text[end:], keep_first=True)


def remove_block(text: str, *, keep_first: bool = False) -> str:
    """The text without continuity blocks, each with the line break and blank line install added."""
    spans = _blocks(text)
    for start, end in reversed(spans[1:] if keep_first else spans):
        if text.startswith("\n", end):
            end += 1
        before, after = text[:start], text[end:]
        if before.endswith("\n\n"):
            before = before[:-1]
        text = before + after
    return text


def parse_config(text: str) -> dict[str, Any]:
    """A settings file's JSON object; an empty file counts as `{}`."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as error:
        raise UsageError(f"it is not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise UsageError("it does not hold a JSON object")
    return value


def render_config(config: dict[str, Any], original: str | None) -> str:
    """JSON text for `config`, in the original file's indentation (two spaces by default)."""
    indent = re.match(r"\{[ \t]*\r?\n([ \t]+)\S", original or "")
    text = json.dumps(config, indent=indent.group(1) if indent else 2, ensure_ascii=False)
    return text if original and not original.endswith("\n") else text + "\n"


@dataclass(frozen=True)
class FileChange:
    """One file's text before and after; `None` means the file is (or ends up) absent."""

    path: Path
    before: str | None
    after: str | None

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


def target_paths(harness: str, scope: str, root: Path, home: Path) -> tuple[Path, Path]:
    """(hook settings file, instructions Markdown file) for a harness and scope."""
    folder, settings, markdown = (".claude", "settings.json", "CLAUDE.md") if harness == "claude-code" \
        else (".codex", "hooks.json", "AGENTS.md")
    if scope == "user":
        return home / folder / settings, home / folder / markdown
    return root / folder / settings, root / markdown


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not valid UTF-8; nothing changed") from None
    except OSError as error:
        raise WriteFailed(f"{path}: cannot read ({error.strerror}); nothing changed") from None


def _json_change(path: Path, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> FileChange:
    before = _read(path)
    try:
        config = parse_config(before or "")
        new = edit(config)
    except UsageError as error:
        raise UsageError(f"{path}: {error}; nothing changed") from None
    if new == config:
        return FileChange(path, before, before)
    after = None if not new and before is not None and config else render_config(new, before)
    return FileChange(path, before, after)


def _md_change(path: Path, edit: Callable[[str], str]) -> FileChange:
    before = _read(path)
    try:
        after = edit(before or "")
    except UsageError as error:
        raise UsageError(f"{path}: {error}; nothing changed") from None
    if after == (before or ""):
        return FileChange(path, before, before)
    return FileChange(path, before, after if after.strip() else None)


def agent_command(exe: str) -> str:
    """How the instructions spell the command: the bare name when it is on PATH."""
    return "continuity" if shutil.which("continuity") else shlex.quote(exe)


def plan_install(harness: str, scope: str, root: Path, home: Path, exe: str) -> list[FileChange]:
    """The changes `install` makes: our hooks merged in, our Markdown block in place."""
    settings, markdown = target_paths(harness, scope, root, home)
    groups = hook_groups(harness, exe)
    block = render_block(agent_command(exe))
    return [_json_change(settings, lambda config: add_hooks(config, groups)),
            _md_change(markdown, lambda text: add_block(text, block))]


def plan_uninstall(harness: str, scope: str, root: Path, home: Path) -> list[FileChange]:
    """The changes `uninstall` makes: our hooks and our Markdown block taken out."""
    settings, markdown = target_paths(harness, scope, root, home)
    return [_json_change(settings, remove_hooks), _md_change(markdown, remove_block)]


def backup(path: Path, stamp: str) -> Path:
    """Copy `path` to `<name>.continuity-backup-<stamp>` beside it (never overwriting one)."""
    for attempt in range(1000):
        candidate = path.with_name(f"{path.name}.continuity-backup-{stamp}{f'-{attempt}' if attempt else ''}")
        try:
            with open(candidate, "xb") as copy:
                copy.write(path.read_bytes())
        except FileExistsError:
            continue
        shutil.copymode(path, candidate)
        return candidate
    raise WriteFailed(f"{path}: no free backup name")


def write_text_atomic(path: Path, text: str) -> None:
    """Replace the file (a symlink's target) whole via a temp file, keeping its mode."""
    write_atomic(path, text.encode("utf-8"), keep_mode=True, follow_symlink=True, make_parents=True)


def apply_change(change: FileChange, stamp: str) -> Path | None:
    """Write one change after backing up the old file; returns the backup's path, if any."""
    if not change.changed:
        return None
    try:
        saved = backup(change.path, stamp) if change.before is not None else None
        if change.after is not None:
            write_text_atomic(change.path, change.after)
        elif change.path.is_symlink():
            write_text_atomic(change.path, "{}\n" if change.path.suffix == ".json" else "")
        else:
            change.path.unlink()
    except OSError as error:
        raise WriteFailed(f"{change.path}: cannot write ({error.strerror or error})") from None
    return saved
