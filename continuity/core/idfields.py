"""Who writes, as plain fields: the one resolver behind `resolve_identity`, on the standard library alone.

Precedence, field by field: flags (or tool arguments) > the harness payload > the
CONTINUITY_* environment > the store's config (the project name). `core/identity.py`
wraps the result in the `Identity` Struct; the plain append path uses the dict as it is.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

#: Identity fields and the environment variables that fill them when not given.
IDENTITY_ENV = {
    "host": "CONTINUITY_HOST",
    "agent_id": "CONTINUITY_AGENT",
    "session_id": "CONTINUITY_SESSION_ID",
    "run_id": "CONTINUITY_RUN_ID",
    "task_id": "CONTINUITY_TASK_ID",
}
#: Every identity field, in the order the envelope (and `Identity`) declares them.
IDENTITY_FIELDS = ("project", "host", "agent_id", "session_id", "run_id", "task_id", "mission_id")
_BAD_NAME = re.compile(r"[^A-Za-z0-9._:@+=-]+")


def clean_name(value: Any) -> str | None:
    """An id usable as an event name field (harness ids may hold other characters).

    An id that looks like a secret (a token pasted where a session id goes) becomes
    `id-<first 12 hex of its SHA-256>`: stable for the same value, and it reveals nothing.
    """
    if not isinstance(value, str) or not value:
        return None
    from events.guard import find_secret, might_hold_secret

    if might_hold_secret(value) and find_secret(value) is not None:
        from events.durable import sha256_hex

        return f"id-{sha256_hex(value.encode('utf-8', 'replace'))[:12]}"
    cleaned = _BAD_NAME.sub("-", value).strip("-.").replace("..", ".")[:128]
    return cleaned or None


def resolve_fields(
    config_project: str,
    flags: Mapping[str, str | None] | None = None,
    harness: Mapping[str, str | None] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    clean: Callable[[Any], str | None] | None = None,
) -> dict[str, str | None]:
    """The identity fields from flags, else the harness payload, else the environment, else config.

    `clean` (hooks pass `clean_name`) rewrites each value into a valid id instead of
    letting an invalid one be refused when the event is validated.
    """
    flags = flags or {}
    harness = harness or {}
    env = os.environ if environ is None else environ

    def pick(name: str, variable: str | None) -> str | None:
        for value in (flags.get(name), harness.get(name), env.get(variable) if variable else None):
            if value and clean is not None:
                value = clean(value)
            if value:
                return value
        return None

    values = {name: pick(name, variable) for name, variable in IDENTITY_ENV.items()}
    return {"project": flags.get("project") or config_project, **values, "mission_id": pick("mission_id", None)}
