"""The settings in config.json that a command reads as something else than what is written there.

Every setting of the wrong type or out of range is read as its default (or its nearest bound), so a
command never fails on one (docs/architecture.md); that also means a typo (`record_prompt`) or a
quoted value (`"true"`) silently does nothing. `doctor` says so, one line per setting, with what is
read instead.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from typing import Any

from continuity.core.text import one_line, shortened

#: Every key config.json may hold (`init` writes the first three; the rest are edited by hand).
KNOWN = (
    "project", "language", "format", "sync_remote", "sync_branch", "sync_timeout", "sync_retry_seconds", "sync_after",
    "sync_layout", "commit_events_with_code", "contexts_dir", "hook_max_chars", "brief_recall", "record_prompts",
    "archive_on_session_end", "work_registry", "work_repository",
)
_FLAGS = ("commit_events_with_code", "record_prompts", "archive_on_session_end")


def _shown(value: Any) -> str:
    """A JSON value as config.json spells it, on one short line, a secret-like part redacted."""
    from events.guard import redact_text

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # nested past what json writes
        return "a value nested too deeply"
    return shortened(one_line(redact_text(text[:400])[0]), 60)


#: What a check says of a value read as something else: why, and what is read instead.
Misread = tuple[str, str]


def _number(value: Any, low: float, high: float, default: float, *, whole: bool = False) -> Misread | None:
    """A number setting from `low` to `high`; a number out of range is read as `default` (or the nearest bound,
    `whole`: as hook_max_chars and brief_recall are)."""
    if isinstance(value, bool) or not isinstance(value, int if whole else int | float):
        return ("not a whole number" if whole else "not a number"), f"{default:g}"
    if low <= value <= high:
        return None
    return f"out of range ({low:g} to {high:g})", f"{min(max(value, low), high) if whole else default:g}"


def _checks() -> dict[str, Callable[[Any], Misread | None]]:
    """key -> what a command reads of its value, when that is not the value as written."""
    from continuity.sessions.brief import DEFAULT_MAX_CHARS, MIN_MAX_CHARS
    from continuity.sessions.service import BRIEF_RECALL_DEFAULT, BRIEF_RECALL_MAX
    from continuity.sessions.templates import TEMPLATES
    from continuity.sync.auto import TRIGGERS
    from continuity.sync.engine import MAX_TIMEOUT, RETRY_SECONDS
    from continuity.sync.git import NETWORK_TIMEOUT
    from continuity.sync.settings import LAYOUTS
    from continuity.workstreams.membership import _ID

    def text(default: str) -> Callable[[Any], Misread | None]:
        return lambda value: None if isinstance(value, str) and value and "\x00" not in value else (
            "not a non-empty text", default)

    def one_of(choices: Any, default: str) -> Callable[[Any], Misread | None]:
        return lambda value: None if isinstance(value, str) and value in choices else (
            f"not one of {', '.join(sorted(choices))}", default)

    def recall(value: Any) -> Misread | None:
        if isinstance(value, bool):
            return None
        return _number(value, 0, BRIEF_RECALL_MAX, BRIEF_RECALL_DEFAULT, whole=True)

    def after(value: Any) -> Misread | None:
        if not isinstance(value, list):
            return "not a list", "[] (no background sync)"
        unknown = [item for item in value if item not in TRIGGERS]
        if not unknown:
            return None
        return (f"{_shown(unknown[0])} is none of {', '.join(TRIGGERS)}",
                _shown([item for item in value if item in TRIGGERS]))

    def flag(value: Any) -> Misread | None:
        return None if isinstance(value, bool) else ("not JSON true or false", "false")

    return {
        "language": one_of(TEMPLATES, "en"),
        "sync_timeout": lambda value: _number(value, 1, MAX_TIMEOUT, NETWORK_TIMEOUT),
        "sync_retry_seconds": lambda value: _number(value, 0, 3600, RETRY_SECONDS),
        "sync_after": after,
        "sync_layout": one_of(LAYOUTS, LAYOUTS[0]),
        "contexts_dir": text("~/.agent/contexts"),
        "hook_max_chars": lambda value: _number(value, MIN_MAX_CHARS, 100_000, DEFAULT_MAX_CHARS, whole=True),
        "brief_recall": recall,
        "work_registry": text("repositories/repositories.yaml"),
        "work_repository": lambda value: None if isinstance(value, str) and _ID.fullmatch(value) else (
            "not a repository id", "none"),
        **dict.fromkeys(_FLAGS, flag),
    }


def settings_problems(config: dict[str, Any]) -> list[str]:
    """One line per setting of config.json a command reads as something else, and per key none reads."""
    checks = _checks()
    problems = []
    for key, value in config.items():
        if key not in KNOWN:
            near = difflib.get_close_matches(key, KNOWN, n=1)
            problems.append(f"config.json: {_shown(key)} is no setting, so nothing reads it"
                            + (f" (did you mean {near[0]}?)" if near else ""))
            continue
        check = checks.get(key)
        misread = None if value is None or check is None else check(value)  # null: the default
        if misread is not None:
            problems.append(f"config.json: {key} is {_shown(value)}, {misread[0]}: read as {misread[1]}")
    return problems
