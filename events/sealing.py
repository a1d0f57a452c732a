"""From a draft to stored bytes: the secret guard over every field, then the seal.

The seal fills what only the log knows under its lock (HLC time, event id, `prev`)
and encodes the canonical bytes; the name of the file follows from them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec

from events import clock, names
from events.base import MAX_EVENT_BYTES, Event
from events.codec import Codec
from events.durable import sha256_hex
from events.errors import EventInvalid, SecretRefused
from events.guard import find_secret, might_hold_secret, redact_tree, strings_in
from events.plain import MAX_DEPTH, nested_deeper_than

__all__ = ["StoredEvent", "guard", "odd_number", "prepare", "seal", "sha256_hex"]


class StoredEvent(NamedTuple):
    """An event as stored: its file name, its exact bytes and the decoded event."""

    name: str
    raw: bytes
    event: Event

    @property
    def event_id(self) -> str:
        """The event's id."""
        return self.event.event_id


def guard(draft: Event, *, redact: bool) -> Event:
    """The draft itself, or a redacted copy; SecretRefused names the field and the rule."""
    tree = msgspec.to_builtins(draft)
    for path, text in strings_in(tree, ""):
        rule = find_secret(text)
        if rule is None:
            continue
        applied: list[str] = []
        cleaned = redact_tree(tree, "", applied)
        cleaned["redacted"] = [*draft.redacted, *applied]
        try:
            redacted: Event = msgspec.convert(cleaned, type(draft))
        except msgspec.ValidationError:  # the marker fits no id field: refuse, never store the secret (nor offer
            field, rule = _unredactable(tree, draft)  # --redact, which the id would refuse in turn)
            raise SecretRefused(field, rule, redactable=False) from None
        if not redact:
            raise SecretRefused(_given_field(tree, path, text), rule)
        return redacted
    return draft


def _given_field(tree: dict[str, Any], path: str, text: str) -> str:
    """The field a refusal names: `message` is made from another field (a task's title, a team's names) when
    that field holds the same secret; then that field is the one the user gave."""
    if path != "message":
        return path
    for other, value in strings_in(tree, ""):
        if other != "message" and value and value in text and find_secret(value) is not None:
            return other
    return path


def _unredactable(tree: dict[str, Any], draft: Event) -> tuple[str, str]:
    """The first field holding a secret whose redacted form its type refuses (an id), and the rule."""
    kind = type(draft)
    for path, text in strings_in(tree, ""):
        rule = find_secret(text)
        if rule is None:
            continue
        field = path.split(".")[0].split("[")[0]
        if field not in tree:
            continue
        trial = {**tree, field: redact_tree(tree[field], field, [])}  # a list or object of ids too (`labels`)
        try:
            msgspec.convert(trial, kind)
        except msgspec.ValidationError:
            return path, rule
    return "an id field", "secret"


def prepare(draft: Event, codec: Codec, *, redact: bool) -> Event:
    """The draft as it may be appended: secret-guarded, within its constraints and size.

    The guard walks the fields only when the encoded event holds a word some rule needs
    (JSON escapes none of those words), so most events cost one encode and one decode.
    """
    if draft.note is not None:
        # as deep as the plain path takes (the event at 0, its note at 1): deeper, the typed path would
        # store what msgspec decodes (about 1,000 levels) and orjson, which prints --json, refuses past 255
        if nested_deeper_than(draft.note, MAX_DEPTH):
            raise EventInvalid(f"invalid event: note nested more than {MAX_DEPTH - 1} levels deep")
        problem = odd_number(draft.note)
        if problem is not None:
            raise EventInvalid(f"invalid event: note{problem}")
    raw = codec.encode(draft)
    if might_hold_secret(raw.decode("utf-8")):
        guarded = guard(draft, redact=redact)
        if guarded is not draft:
            draft, raw = guarded, codec.encode(guarded)
    if len(raw) > MAX_EVENT_BYTES - 512:
        raise EventInvalid(f"event too large: {len(raw)} bytes (limit {MAX_EVENT_BYTES - 512})")
    codec.validate(raw)
    return draft


#: The integers every reader of the log spells and reads back alike (orjson, msgpack and msgspec: 64 bits).
INT_MIN, INT_MAX = -(2**63), 2**64 - 1


def odd_number(value: Any) -> str | None:
    """Where a free-form value (a note) holds a number not every reader can carry, and which; None when none does.

    msgspec writes infinity and NaN as `null` (the value would change silently) and an integer
    beyond 64 bits as digits that orjson and msgpack refuse (the reads would end in an internal error).
    """
    pending: list[tuple[str, Any]] = [("", value)]
    while pending:
        path, item = pending.pop()
        path = path if len(path) <= 80 else path[:77] + "..."
        if isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        if isinstance(item, int):
            if not INT_MIN <= item <= INT_MAX:
                return f"{path}: integer out of range (64 bits at most)"
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                return f"{path}: {item} is not a JSON number"
        elif isinstance(item, dict):
            pending.extend((f"{path}.{key}", child) for key, child in item.items())
        elif isinstance(item, list | tuple):
            pending.extend((f"{path}[{index}]", child) for index, child in enumerate(item))
    return None


def seal(draft: Event, *, at_us: int, node: str, prev: str | None, codec: Codec,
         written_us: int | None = None) -> StoredEvent:
    """The stored form of a checked draft, written at HLC time `at_us` after `prev` (and, when the log's time ran
    ahead of the writer's clock, at `written_us` by that clock)."""
    stamp = clock.stamp(at_us)
    event = msgspec.structs.replace(
        draft,
        event_id=names.event_id(stamp, node),
        created_at=clock.iso(at_us),
        written_at=clock.iso(written_us) if written_us is not None else msgspec.UNSET,
        prev=prev,
    )
    raw = codec.encode(event)
    digest = sha256_hex(raw)
    return StoredEvent(names.file_name(stamp, node, digest), raw, event)
