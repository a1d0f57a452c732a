"""From a draft to stored bytes: the secret guard over every field, then the seal.

The seal fills what only the log knows under its lock (HLC time, event id, `prev`)
and encodes the canonical bytes; the name of the file follows from them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import msgspec

from events import clock, names
from events.base import MAX_EVENT_BYTES, Event
from events.codec import Codec
from events.errors import EventInvalid, SecretRefused
from events.guard import find_secret, might_hold_secret, redact_text

try:  # the built-in SHA-256 loads far faster than OpenSSL's (hashlib), and this is the hook path
    from _sha256 import sha256 as _sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import sha256 as _sha256

#: Fields the log fills or that describe the event itself: never scanned.
_UNSCANNED = frozenset({"kind", "v", "event_id", "created_at", "prev", "redacted"})


class StoredEvent(NamedTuple):
    """An event as stored: its file name, its exact bytes and the decoded event."""

    name: str
    raw: bytes
    event: Event

    @property
    def event_id(self) -> str:
        """The event's id."""
        return self.event.event_id


def _child(path: str, key: str) -> str:
    """The path of a dict entry; a key that looks like a secret is named redacted, never echoed."""
    shown = redact_text(key)[0]
    return f"{path}.{shown}" if path else shown


def _strings(node: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, text) of every string in a tree, dict keys included (a key can hold a secret too)."""
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            if path or key not in _UNSCANNED:
                child = _child(path, str(key))
                if path:
                    yield f"{child} (a key)", str(key)
                yield from _strings(value, child)
    elif isinstance(node, list | tuple):
        for index, value in enumerate(node):
            yield from _strings(value, f"{path}[{index}]")


def _redact_tree(node: Any, path: str, applied: list[str]) -> Any:
    if isinstance(node, str):
        text, rules = redact_text(node)
        applied.extend(f"{path}:{rule}" for rule in rules)
        return text
    if isinstance(node, dict):
        cleaned: dict[str, Any] = {}
        for key, value in node.items():
            if not path and key in _UNSCANNED:
                cleaned[key] = value
                continue
            child = _child(path, str(key))
            new_key = str(key)
            if path:
                new_key, rules = redact_text(str(key))
                applied.extend(f"{child} (a key):{rule}" for rule in rules)
            cleaned[new_key] = _redact_tree(value, child, applied)
        return cleaned
    if isinstance(node, list | tuple):
        return [_redact_tree(value, f"{path}[{index}]", applied) for index, value in enumerate(node)]
    return node


def guard(draft: Event, *, redact: bool) -> Event:
    """The draft itself, or a redacted copy; SecretRefused names the field and the rule."""
    tree = msgspec.to_builtins(draft)
    for path, text in _strings(tree, ""):
        rule = find_secret(text)
        if rule is None:
            continue
        if not redact:
            raise SecretRefused(path, rule)
        applied: list[str] = []
        cleaned = _redact_tree(tree, "", applied)
        cleaned["redacted"] = [*draft.redacted, *applied]
        try:
            redacted: Event = msgspec.convert(cleaned, type(draft))
        except msgspec.ValidationError:  # the marker fits no id field: refuse, never store the secret
            field, rule = _unredactable(tree, draft)
            raise SecretRefused(field, rule, redactable=False) from None
        return redacted
    return draft


def _unredactable(tree: dict[str, Any], draft: Event) -> tuple[str, str]:
    """The first field holding a secret whose redacted form its type refuses (an id), and the rule."""
    kind = type(draft)
    for path, text in _strings(tree, ""):
        rule = find_secret(text)
        if rule is None:
            continue
        field = path.split(".")[0].split("[")[0]
        trial = {**tree, field: redact_text(tree[field])[0]} if isinstance(tree.get(field), str) else None
        if trial is None:
            continue
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
    raw = codec.encode(draft)
    if might_hold_secret(raw.decode("utf-8")):
        guarded = guard(draft, redact=redact)
        if guarded is not draft:
            draft, raw = guarded, codec.encode(guarded)
    if len(raw) > MAX_EVENT_BYTES - 512:
        raise EventInvalid(f"event too large: {len(raw)} bytes (limit {MAX_EVENT_BYTES - 512})")
    codec.validate(raw)
    return draft


def seal(draft: Event, *, at_us: int, node: str, prev: str | None, codec: Codec) -> StoredEvent:
    """The stored form of a checked draft, written at HLC time `at_us` after `prev`."""
    stamp = clock.stamp(at_us)
    event = msgspec.structs.replace(
        draft,
        event_id=names.event_id(stamp, node),
        created_at=clock.iso(at_us),
        prev=prev,
    )
    raw = codec.encode(event)
    digest = sha256_hex(raw)
    return StoredEvent(names.file_name(stamp, node, digest), raw, event)


def sha256_hex(raw: bytes) -> str:
    """The SHA-256 of stored bytes, the value a successor's `prev` holds."""
    digest: str = _sha256(raw).hexdigest()
    return digest
