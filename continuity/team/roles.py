"""Role views: the role document (`team/<team>/roles/<role>.md`) and `role show`, with lease state now.

The document is a projection (front matter: holder, lease expiry, `checkpoint_ref`); the
lease state (fresh, expired, free) depends on the clock, so only views show it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from continuity.core.text import block, one_line
from continuity.team.resume import format_age
from events import clock
from projections.roles import Role, fresh_at

ROLE_SCHEMA = "coord.teams.role.v1"


def role_relpath(team: str, role: str) -> str:
    """Where a role's document lives, relative to the store."""
    return f"team/{team}/roles/{role}.md"


def _scalar(value: Any) -> str:
    # JSON scalars are YAML scalars: a reference holding `: ` or `#` stays one value. C1 controls (NEL among them),
    # bidi marks and separators are escaped (`\uXXXX` reads the same in both), and so are the non-characters
    # U+FFFE and U+FFFF, which a YAML reader refuses raw.
    import orjson  # here: the brief imports this module, and orjson brings `dataclasses` and `inspect`

    from continuity.core.text import escape_json

    return escape_json(orjson.dumps(value).decode()).replace("\ufffe", "\\ufffe").replace("\uffff", "\\uffff")


def role_document(role: Role) -> bytes:
    """The role's Markdown document: front matter, description, lease history (no clock in it)."""
    front = {
        "schema": ROLE_SCHEMA, "team": role.team, "role": role.role, "holder": role.holder,
        "claimed_at": role.claimed_at, "lease_expires_at": role.lease_expires_at,
        "checkpoint_ref": role.checkpoint_ref, "checkpoint_at": role.checkpoint_at,
        "created_at": role.created_at,
    }
    lines = ["---", *(f"{key}: {_scalar(value)}" for key, value in front.items()), "---", "",
             f"# Role {role.role}", ""]
    if role.description:  # its own lines, none able to open a section or forge a history line
        lines += [block(role.description.rstrip("\n"), indent=""), ""]
    if role.history:
        lines += ["## Lease history", ""]
        lines += [f"- {note.at} {note.agent} {note.action}" + (f": {one_line(note.detail)}" if note.detail else "")
                  for note in role.history]
        lines.append("")
    return "\n".join(lines).encode()


def lease_state(role: Role, now_us: int) -> str:
    """`fresh`, `expired` (still shown as held: claimable) or `free`."""
    if role.holder is None:
        return "free"
    return "fresh" if fresh_at(role, now_us) else "expired"


def seconds_left(role: Role, now_us: int) -> Decimal | None:
    """Seconds until the lease expires (negative once expired; None when free)."""
    if role.lease_expires_at is None:
        return None
    return Decimal(clock.parse_iso(role.lease_expires_at) - now_us) / Decimal(1_000_000)


def role_json(role: Role, now_us: int) -> dict[str, Any]:
    """`role show --json`: the document's fields plus the lease state now."""
    left = seconds_left(role, now_us)
    return {
        "team": role.team, "role": role.role, "description": role.description, "holder": role.holder,
        "claimed_at": role.claimed_at, "lease_expires_at": role.lease_expires_at,
        "lease_state": lease_state(role, now_us),
        "lease_seconds_left": None if left is None else float(round(left, 3)),
        "checkpoint_ref": role.checkpoint_ref, "checkpoint_at": role.checkpoint_at,
        "checkpoint_by": role.checkpoint_by, "created_at": role.created_at, "path": role_relpath(role.team, role.role),
        "history": [{"at": note.at, "agent": note.agent, "action": note.action, "detail": note.detail}
                    for note in role.history],
    }


def role_text(role: Role, now_us: int) -> str:
    """`role show`: holder and lease state, the resume point, the history (lost claims included)."""
    state = lease_state(role, now_us)
    left = seconds_left(role, now_us)
    if state == "free":
        holder = "nobody (free to claim)"
    elif state == "fresh":
        holder = f"{one_line(role.holder or '')} (lease fresh until {role.lease_expires_at}, {format_age(left)} left)"
    else:
        ago = format_age(-left) if left is not None else "unknown"
        holder = (f"{one_line(role.holder or '')} (lease EXPIRED at {role.lease_expires_at}, {ago} ago; claimable: "
                  f"continuity role claim {role.team} {role.role} --agent <you>)")
    lines = [f"role {role.role} (team/{role.team})", f"  holder: {holder}",
             f"  checkpoint_ref: {one_line(role.checkpoint_ref) if role.checkpoint_ref else '(none)'}"]
    if role.description:
        lines.append(f"  description: {one_line(role.description)}")
    if role.history:
        lines.append("  history:")
        lines += [f"    - {note.at} {one_line(note.agent)} {note.action}"
                  + (f": {one_line(note.detail)}" if note.detail else "") for note in role.history]
    return "\n".join(lines) + "\n"
