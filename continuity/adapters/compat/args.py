"""The `runtime-continuity` argument reader (contract §2, with I1-I3).

A flag is found by its exact token anywhere and its value is the next token; the first
occurrence wins, even when empty; an empty value or a flag in last position is absent.
`--flag=value` works (I1); the mode is the first token that is neither a flag nor a
flag's value (I2); a value flag followed by a `--` token is refused (I3).
"""

from __future__ import annotations

from typing import NamedTuple

#: Flags that take no value.
PRESENCE_FLAGS = frozenset({"auto", "list", "full"})

#: Value flags whose value may not be a `--` token (I3).
VALUE_FLAGS = frozenset({
    "project", "gate", "host", "agent-id", "run-id", "session-id", "task-id", "mission-id", "type",
    "phase", "message", "done", "in-progress", "next", "blockers", "files", "artifacts", "handoffs",
    "command", "exit-code", "command-summary", "note-json", "from-host", "to-host", "reason", "load",
    "format", "since", "task-description",
})


class ArgumentError(Exception):
    """I3: a value flag followed by another flag."""


class Args(NamedTuple):
    """The mode, the first value of each flag, and which presence flags were given."""

    mode: str
    values: dict[str, str | None]
    present: frozenset[str]

    def get(self, name: str) -> str | None:
        """The flag's value; None when absent or empty."""
        return self.values.get(name) or None

    def has(self, name: str) -> bool:
        """Whether a presence flag (`--auto`, `--list`, `--full`) was given."""
        return name in self.present


def parse(argv: list[str]) -> Args:
    """Read `argv` as seed 004 did, with I1-I3; ArgumentError for I3."""
    values: dict[str, str | None] = {}
    present: set[str] = set()
    mode: str | None = None
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if token.startswith("--") and len(token) > 2:
            name, has_inline, inline = token[2:].partition("=")
            if name in PRESENCE_FLAGS and not has_inline:
                present.add(name)
                continue
            if has_inline:
                value: str | None = inline
            elif index < len(argv) and not (argv[index].startswith("--") and name not in VALUE_FLAGS):
                value = argv[index]
                index += 1
                if value.startswith("--"):
                    raise ArgumentError(f"--{name} needs a value")
            else:
                value = None
            values.setdefault(name, value)
            continue
        if mode is None:
            mode = token
    return Args(mode=mode or "", values=values, present=frozenset(present))
