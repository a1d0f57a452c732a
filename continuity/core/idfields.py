"""Who writes, as plain fields: the one resolver behind `resolve_identity`, on the standard library alone.

Precedence, field by field: flags (or tool arguments) > the harness payload > the
CONTINUITY_* environment > the store's config (the project name). `core/identity.py`
wraps the result in the `Identity` Struct; the plain append path uses the dict as it is.
"""

from __future__ import annotations

import math
import os
import re

from events import lazyre

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
#: A valid id, as events/base.py's `Name`: letters, digits and `._:@+=-`, no `..`, at most 128 characters.
_NAME = re.compile(r"(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,127}")


def is_name(value: object) -> bool:
    """Whether `value` is a valid id as events/base.py's `Name` (a team, an agent, continuity's own projects)."""
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


#: A project name any event can carry, as events/base.py's `ProjectName` (a Name, or a seed-004 project's name; never
#: a lone surrogate, the trace of bytes that were not UTF-8, which no event file can hold).
_PROJECT_NAME = lazyre.pattern(r"(?!\.\Z)(?!.*\.\.)[^/\\\[\]\x00-\x1f\x7f\ud800-\udfff]{1,128}", re.DOTALL)


#: An id any event can carry, as events/base.py's `Ident` (a Name, or a seed-004 writer's one-line id of up to 192
#: characters that is safe as one folder name).
_IDENT = lazyre.pattern(r"(?!\.\Z)(?!.*\.\.)[^/\\\[\]\x00-\x1f\x7f\ud800-\udfff]{1,192}", re.DOTALL)
#: What an id no event can carry is told.
IDENT_RULE = "no /, \\, [, ], control characters or '..', 1 to 192 characters"


def is_ident(value: object) -> bool:
    """Whether an event may carry `value` as an id (`Ident`): what is not, no task, run or memory can be named by."""
    return isinstance(value, str) and _IDENT().fullmatch(value) is not None


def is_project_name(value: object) -> bool:
    """Whether an event may carry `value` as its project (`runtime-continuity` writes any such name, contract I4)."""
    return isinstance(value, str) and _PROJECT_NAME().fullmatch(value) is not None


def hashed_id(value: str) -> str:
    """`id-<first 12 hex of the SHA-256 of value>`: stable for the same value, and it reveals nothing."""
    from events.durable import sha256_hex

    return f"id-{sha256_hex(value.encode('utf-8', 'surrogatepass'))[:12]}"


def clean_name(value: Any) -> str | None:
    """An id usable as an event name field, from an id a harness (or the environment) gave.

    A valid id is kept as it is. Any other (a control or bidi character, a path, a space,
    too long) becomes `hashed_id(value)`: never the id it would read as once characters
    were dropped (`../amy` or `amy` + U+202E is not `amy`, whose roles a hook would park),
    and distinct ids stay distinct. An id that looks like a secret (a token pasted where a
    session id goes) is hashed too, valid or not.
    """
    if value is None or value == "":
        return None
    value = _number_text(value)  # a harness that sends a number: its text
    if not isinstance(value, str):  # a list, an object, true: an id of its own, never the next source's
        import json

        return hashed_id(json.dumps(value, sort_keys=True, default=str))
    from events.guard import find_secret, might_hold_secret

    if might_hold_secret(value) and find_secret(value) is not None:
        return hashed_id(value)
    return value if _NAME.fullmatch(value) else hashed_id(value)


def _number_text(value: Any) -> Any:
    """A finite number as its text (`5`, `1.5`); any other value as it is."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return str(value)
    return value


def clean_label(value: Any) -> str | None:
    """A display label (a model, a session source, an MCP client's name) made into an id by dropping characters.

    Unlike `clean_name`, different values may give the same label: never use it for an id
    that names who acts (an agent, a session, a run). A secret-like value is hashed.
    """
    if not isinstance(value, str) or not value:
        return None
    from events.guard import find_secret, might_hold_secret

    if might_hold_secret(value) and find_secret(value) is not None:
        return hashed_id(value)
    cleaned = re.sub(r"\.{2,}", ".", _BAD_LABEL.sub("-", value)).lstrip("-.:_")[:LABEL_LENGTH].rstrip("-")
    return cleaned or None


#: What a label keeps: the characters both an id (events' Name) and a label (events' Label: a session's
#: source and model) take, at most Label's 64. A model named `claude-3-5-sonnet@20240620` (`@` is no
#: Label character) was refused when the session was recorded.
_BAD_LABEL = re.compile(r"[^A-Za-z0-9._:-]+")
LABEL_LENGTH = 64


def resolve_fields(
    config_project: str,
    flags: Mapping[str, str | None] | None = None,
    harness: Mapping[str, str | None] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    clean: Callable[[Any], str | None] | None = None,
    changed: list[tuple[str, str, str]] | None = None,
    names_only: bool = True,
) -> dict[str, str | None]:
    """The identity fields from flags, else the harness payload, else the environment, else config.

    `clean` (hooks pass `clean_name`) rewrites each value into a valid id instead of
    letting an invalid one be refused when the event is validated; each value it rewrote
    is added to `changed` as (field, where it came from, the id used instead). Every id is a
    Name (events/base.py), the ids team features address, unless `names_only` is False: seed
    004's `runtime-continuity` records any host or agent it is given (the envelope's `Ident`).
    """
    flags = flags or {}
    harness = harness or {}
    env = os.environ if environ is None else environ

    def pick(name: str, variable: str | None) -> str | None:
        for where, value in (("flags", flags.get(name)), ("the harness", harness.get(name)),
                             (f"${variable}", env.get(variable) if variable else None)):
            if clean is not None and value is not None and value != "":  # 0, false, [] are ids given, not absent
                cleaned = clean(value)
                if cleaned and cleaned != _number_text(value) and changed is not None:  # a number's text: no change
                    changed.append((name, where, cleaned))
                value = cleaned
            if value:
                if names_only and not is_name(value):
                    from continuity.core.errors import UsageError
                    from events.problems import NAME_RULE, quoted

                    raise UsageError(f"{name} {quoted(str(value))} {NAME_RULE}")
                return value
        return None

    values = {name: pick(name, variable) for name, variable in IDENTITY_ENV.items()}
    return {"project": flags.get("project") or config_project, **values, "mission_id": pick("mission_id", None)}
