"""Who writes: the `Identity` of the CLI, hooks, MCP and the compat CLI.

The resolving itself (flags > harness payload > CONTINUITY_* environment > config) is
`core/idfields.resolve_fields`, plain fields the plain append path uses as they are.
"""

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from continuity.core.idfields import IDENTITY_ENV, IDENTITY_FIELDS, clean_label, clean_name, resolve_fields

__all__ = ["IDENTITY_ENV", "IDENTITY_FIELDS", "Identity", "clean_label", "clean_name", "resolve_fields",
           "resolve_identity"]


class Identity(msgspec.Struct, frozen=True, kw_only=True):
    """Who writes: the project and the host, agent, session, run, task and mission ids."""

    project: str
    host: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    mission_id: str | None = None

    def fields(self) -> dict[str, Any]:
        """The envelope fields every event of this writer carries."""
        return msgspec.structs.asdict(self)


def resolve_identity(
    config_project: str,
    flags: Mapping[str, str | None] | None = None,
    harness: Mapping[str, str | None] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    clean: Callable[[Any], str | None] | None = None,
    changed: list[tuple[str, str, str]] | None = None,
    names_only: bool = True,
) -> Identity:
    """Identity from flags, else the harness payload, else the environment, else config (`resolve_fields`)."""
    fields: dict[str, Any] = resolve_fields(config_project, flags, harness, environ=environ, clean=clean,
                                                 changed=changed, names_only=names_only)
    return Identity(**fields)


def served_to(identity: Identity, record: bool) -> tuple[Identity, bool, list[str]]:
    """Whom a brief is served to (it shows whom it answers for: "Open tasks for <agent>", the bundle's ids): the
    identity less each id that looks like a secret, whether it is still recorded (never under such an id: a write
    refuses one when it seals the event), and the warning lines saying what was left out."""
    from events.guard import find_secret

    dropped: dict[str, None] = {}
    lines = []
    for field, value in identity.fields().items():
        rule = find_secret(value) if field != "project" and isinstance(value, str) else None
        if rule is not None:
            dropped[field] = None
            lines.append(f"{field} looks like a secret (rule {rule}); it is left out")
    if not dropped:
        return identity, record, []
    if record:
        lines = [f"the brief is served but not recorded: {'; '.join(lines)}"]
    return msgspec.structs.replace(identity, **dropped), False, lines
