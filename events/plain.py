"""Events as plain data (dicts, lists, strings), on the standard library alone: the plain append path.

`continuity log` and the record-only hooks run as a new process every time; importing
msgspec alone costs more than the rest of their work. This module lets them append
without it, and without giving up validation on write:

- `complete` fills an event's defaults and `valid` checks every field against the
  constraints of its Struct, both read from events/plain_table.py, which
  scripts/gen_docs.py generates from the Structs (a test fails when they disagree);
- `canonical` spells the same bytes as the msgspec encoder (sorted keys, compact);
- `seal` gives the same event id, time, `prev` and file name as events/sealing.py;
- the write itself is events/durable.py, the one home of the file-log protocol.

The plain path is a shortcut, never a second opinion: whenever it cannot be sure
(a secret-like string, a constraint broken, a float, a value msgspec would spell or
read otherwise), it raises `Unsure` before anything is written, and the caller runs
the msgspec path, which gives the answer (and the error message) of record. Hypothesis
properties hold both paths to the same bytes and file names.
"""

from __future__ import annotations

import json
import re

from events import clock, names
from events.durable import DurableFolder, append_sealed, sha256_hex
from events.guard import find_secret, might_hold_secret, strings_in
from events.plain_table import KINDS, MAX_EVENT_BYTES, REQUIRED, STRUCTS, UNSET

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The largest integer either encoder spells the same way (msgspec's int64/uint64 range).
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1
#: The deepest value an event holds (the event at 0, its note at 1): the typed path refuses
#: deeper notes too (events/sealing.py), so both paths answer alike.
MAX_DEPTH = 64
_patterns: dict[str, re.Pattern[str]] = {}


class Unsure(Exception):
    """The plain path cannot vouch for this input: run the msgspec path instead (nothing was written)."""


class Sealed:
    """A sealed plain event: its file name and exact bytes (what events/durable.py writes)."""

    __slots__ = ("name", "raw", "tree")

    def __init__(self, name: str, raw: bytes, tree: dict[str, Any]) -> None:
        self.name = name
        self.raw = raw
        self.tree = tree


# -- checking -------------------------------------------------------------------------------------
def complete(kind: str, given: dict[str, Any]) -> dict[str, Any]:
    """The event `kind` with the fields `given` and every other field at its default (Unsure for a missing one)."""
    struct = KINDS.get(kind)
    if struct is None:
        raise Unsure(f"unknown kind {kind!r}")
    tree = {"kind": kind, **_complete_struct(struct, given)}
    return tree


def _complete_struct(struct: str, given: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, spec, default in STRUCTS[struct]:
        if name in given:
            out[name] = _fill(spec, given[name])
        elif default == REQUIRED:
            raise Unsure(f"{struct}.{name} is required")
        elif default == UNSET:  # left out, as msgspec leaves an unset field out
            continue
        elif spec[0] == "struct":
            out[name] = _complete_struct(spec[1], {})
        elif isinstance(default, dict):
            out[name] = {}
        elif isinstance(default, list):
            out[name] = list(default)
        else:
            out[name] = default
    unknown = set(given) - set(out)
    if unknown:
        raise Unsure(f"{struct} has no field {sorted(unknown)[0]!r}")
    return out


def _fill(spec: tuple[Any, ...], value: Any) -> Any:
    """`value` with the defaults of any Struct inside it filled in (a partial dict stands for a Struct)."""
    if type(value) is dict:
        if spec[0] == "struct":
            return _complete_struct(spec[1], value)
        if spec[0] == "union":
            structs = [member for member in spec[1] if member[0] == "struct"]
            if len(structs) == 1:
                return _complete_struct(structs[0][1], value)
    elif type(value) in (list, tuple) and spec[0] == "tuple" and spec[1][0] == "struct":
        return [_fill(spec[1], item) for item in value]
    return value


def valid(tree: dict[str, Any]) -> bool:
    """Whether a whole event (with `kind`) passes every constraint of its Struct, as msgspec decodes it."""
    if type(tree) is not dict:
        return False
    struct = KINDS.get(tree.get("kind"))  # type: ignore[arg-type]
    if struct is None:
        return False
    fields = {key: value for key, value in tree.items() if key != "kind"}
    return _valid_struct(struct, fields, 0)


def valid_field(struct: str, field: str, value: Any) -> bool:
    """Whether `value` passes the constraints of one field of a Struct (e.g. a name as `WorkLogged.host`)."""
    spec = next(spec for name, spec, _ in STRUCTS[struct] if name == field)
    return _valid(spec, value, 0)


def _valid_struct(struct: str, value: Any, depth: int) -> bool:
    if type(value) is not dict:
        return False
    present = 0  # every field there (an UNSET one may be left out), as its type says, and no other
    for name, spec, default in STRUCTS[struct]:
        if name in value:
            if not _valid(spec, value[name], depth + 1):
                return False
            present += 1
        elif default != UNSET:
            return False
    return present == len(value)


def _valid(spec: tuple[Any, ...], value: Any, depth: int) -> bool:
    if depth > MAX_DEPTH:
        return False
    kind = spec[0]
    if kind == "str":
        return type(value) is str and _valid_str(spec, value)
    if kind == "int":
        return (type(value) is int and _INT_MIN <= value <= _INT_MAX
                and (spec[1] is None or value >= spec[1]) and (spec[2] is None or value <= spec[2]))
    if kind == "none":
        return value is None
    if kind == "bool":
        return type(value) is bool
    if kind == "union":
        return any(_valid(member, value, depth) for member in spec[1])
    if kind == "tuple":
        return (type(value) in (list, tuple) and _within(len(value), spec[2], spec[3])
                and all(_valid(spec[1], item, depth + 1) for item in value))
    if kind == "struct":
        return _valid_struct(spec[1], value, depth)
    if kind == "dict":
        return (type(value) is dict and _within(len(value), spec[3], spec[4])
                and all(_valid(spec[1], key, depth + 1) and _valid(spec[2], item, depth + 1)
                        for key, item in value.items()))
    if kind == "any":
        return _plain_json(value, depth)
    if kind == "literal":
        return type(value) is str and value in spec[1]
    return False


def _within(length: int, low: int | None, high: int | None) -> bool:
    return (low is None or length >= low) and (high is None or length <= high)


def _valid_str(spec: tuple[Any, ...], value: str) -> bool:
    if not _within(len(value), spec[1], spec[2]):
        return False
    pattern = spec[3]
    if pattern is None:
        return True
    compiled = _patterns.get(pattern)
    if compiled is None:
        compiled = _patterns[pattern] = re.compile(pattern)
    return compiled.search(value) is not None  # msgspec checks patterns with search, too


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether anything in `value` (JSON-like; itself at level 1, each item one below) sits below `limit`.

    Iterative: it answers for values too deep for a recursive walk (or for the encoders).
    """
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            pending.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, (list, tuple)):
            pending.extend((child, depth + 1) for child in item)
    return False


def _plain_json(value: Any, depth: int) -> bool:
    """A value both encoders spell alike: no floats (their spellings differ), no huge ints, no deep nesting."""
    if depth > MAX_DEPTH:
        return False
    if value is None or type(value) in (str, bool):
        return True
    if type(value) is int:
        return _INT_MIN <= value <= _INT_MAX
    if type(value) in (list, tuple):
        return all(_plain_json(item, depth + 1) for item in value)
    if type(value) is dict:
        return all(type(key) is str and _plain_json(item, depth + 1) for key, item in value.items())
    return False


# -- bytes ----------------------------------------------------------------------------------------
def canonical(tree: dict[str, Any]) -> bytes:
    """The canonical bytes of an event: compact JSON, keys sorted at every level, UTF-8 (as events/codec.py)."""
    try:
        return json.dumps(tree, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, ValueError, TypeError, RecursionError) as error:  # lone surrogates, odd values
        raise Unsure(f"cannot encode: {error}") from None


def prepare(tree: dict[str, Any]) -> dict[str, Any]:
    """The draft as it may be appended (as events/sealing.prepare with the guard finding nothing); else Unsure.

    A secret-like string is never handled here: refusing it (or redacting it) is the
    msgspec path's business, with its exact message.
    """
    raw = canonical(tree)
    if might_hold_secret(raw.decode("utf-8")) and any(
            find_secret(text) is not None for _, text in strings_in(tree, "")):
        raise Unsure("a field looks like a secret")
    if len(raw) > MAX_EVENT_BYTES - 512:
        raise Unsure("event too large")
    if not valid(tree):
        raise Unsure("a field breaks its constraint")
    return tree


def seal(tree: dict[str, Any], at_us: int, node: str, prev: str | None, written_us: int | None = None) -> Sealed:
    """The stored form of a prepared draft, written at HLC time `at_us` after `prev` (as events/sealing.seal)."""
    stamp = clock.stamp(at_us)
    event = {**tree, "event_id": names.event_id(stamp, node), "created_at": clock.iso(at_us), "prev": prev}
    event.pop("written_at", None)  # the log's to say, as msgspec leaves an unset field out
    if written_us is not None:
        event["written_at"] = clock.iso(written_us)
    raw = canonical(event)
    return Sealed(names.file_name(stamp, node, sha256_hex(raw)), raw, event)


def append(folder: DurableFolder, node: str, clock_us: Any, trees: list[dict[str, Any]]) -> list[Sealed]:
    """Append prepared drafts durably through the one file-log protocol; WriteFailed and friends as the log raises."""

    def seal_one(tree: dict[str, Any], at_us: int, prev: str | None, written_us: int | None) -> Sealed:
        return seal(tree, at_us, node, prev, written_us)

    return append_sealed(folder, trees, seal_one, clock_us, node=node)


# -- reading JSON the way msgspec does --------------------------------------------------------------
def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("number out of range")
    return value


def loads(raw: bytes, max_depth: int | None = MAX_DEPTH) -> Any:
    """A JSON document's value, accepting what msgspec.json.decode accepts (else ValueError).

    Stricter than `json.loads`: UTF-8 only (no BOM, no UTF-16), no NaN or Infinity, no
    number out of a double's range, no lone surrogate escapes; at most `max_depth` levels
    (both decoders stop near Python's recursion limit, not at the same depth).
    """
    text = raw.decode("utf-8")
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
        _check_loaded(value, 0, max_depth, "\\u" in text)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    return value


def _check_loaded(value: Any, depth: int, max_depth: int | None, escapes: bool) -> None:
    if max_depth is not None and depth > max_depth:
        raise ValueError("nested too deeply")
    if isinstance(value, str):
        if escapes:
            value.encode("utf-8")  # a lone surrogate (only an escape can make one) raises UnicodeEncodeError
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_loaded(key, depth + 1, max_depth, escapes)
            _check_loaded(item, depth + 1, max_depth, escapes)
    elif isinstance(value, list):
        for item in value:
            _check_loaded(item, depth + 1, max_depth, escapes)
