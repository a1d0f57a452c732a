"""Event kinds as a user names them: exactly (`work.logged`) or by family (`handoff` is every `handoff.*`)."""

from __future__ import annotations

from continuity.core.errors import UsageError
from events.base import kind_of
from events.catalog import EVENT_TYPES
from events.problems import quoted


def kinds_for(requested: list[str] | None) -> tuple[str, ...]:
    """Event kinds named exactly or by family (`handoff` is every `handoff.*`); UsageError on an unknown one."""
    known = sorted(kind_of(kind) for kind in EVENT_TYPES)
    chosen: dict[str, None] = {}
    for name in requested or ():
        matched = [kind for kind in known if kind == name or kind.split(".")[0] == name]
        if not matched:
            families = sorted({kind.split(".")[0] for kind in known})
            raise UsageError(f"--kind: unknown kind {quoted(name)}; use a kind such as work.logged or a family: "
                             + ", ".join(families))
        chosen.update(dict.fromkeys(matched))
    return tuple(chosen)
