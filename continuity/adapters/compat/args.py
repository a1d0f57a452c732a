"""The `runtime-continuity` argument reader: `<mode> --flag value ...`, read leniently.

Seed 004's CLI read `--flag value` and `--flag=value` pairs and ignored what it did not
know; callers rely on that, so unknown flags are reported as warnings, never refused.
"""

from __future__ import annotations

from typing import NamedTuple

#: Flags that never take a value, so `--auto --project p` reads as two flags.
BOOLEAN_FLAGS = frozenset({"auto", "list", "full", "help", "redact"})

#: Every flag some mode reads; anything else draws a warning on stderr.
KNOWN_FLAGS = BOOLEAN_FLAGS | {
    "project", "gate", "host", "agent-id", "run-id", "session-id", "task-id", "mission-id", "type",
    "phase", "message", "done", "in-progress", "next", "blockers", "files", "artifacts", "handoffs",
    "command", "exit-code", "command-summary", "note-json", "from-host", "to-host", "reason", "load",
    "format", "since", "task-description", "source",
}

_FALSE = frozenset({"false", "0", "no", "off"})


class Args(NamedTuple):
    """The mode, each flag's values in the order given, and whatever was not understood."""

    mode: str | None
    flags: dict[str, list[str | bool]]
    unknown: list[str]

    def text(self, name: str) -> str | None:
        """The last value of a flag; a flag given without a value reads as empty text."""
        values = self.flags.get(name)
        if not values:
            return None
        value = values[-1]
        return "" if isinstance(value, bool) else value

    def given(self, name: str) -> str | None:
        """The last value of a flag, or None when it is missing or empty."""
        return self.text(name) or None

    def switch(self, name: str) -> bool:
        """Whether a boolean flag is on (`--auto`, `--auto=true`; not `--auto=false`)."""
        values = self.flags.get(name)
        if not values:
            return False
        value = values[-1]
        return value if isinstance(value, bool) else value.strip().lower() not in _FALSE

    def items(self, name: str, *, split: bool) -> tuple[str, ...]:
        """Every value of a flag as a list: split on commas, or one item per non-empty value."""
        result: list[str] = []
        for value in self.flags.get(name, []):
            if isinstance(value, bool):
                continue
            parts = value.split(",") if split else [value]
            result.extend(part.strip() for part in parts if part.strip())
        return tuple(result)


def parse(argv: list[str]) -> Args:
    """Read `argv`: the first bare word is the mode; `--name value` and `--name=value` are flags."""
    mode: str | None = None
    flags: dict[str, list[str | bool]] = {}
    unknown: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if not token.startswith("--") or token == "--":
            if mode is None and token != "--":
                mode = token
            else:
                unknown.append(token)
            continue
        name, has_value, inline = token[2:].partition("=")
        name = name.replace("_", "-")
        value: str | bool
        if has_value:
            value = inline
        elif name not in BOOLEAN_FLAGS and index < len(argv) and not argv[index].startswith("--"):
            value = argv[index]
            index += 1
        else:
            value = True
        if name not in KNOWN_FLAGS:
            unknown.append(f"--{name}")
        flags.setdefault(name, []).append(value)
    return Args(mode=mode, flags=flags, unknown=unknown)
