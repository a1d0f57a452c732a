"""Canonical bytes and decoding with upcasting.

Canonical bytes are compact JSON with keys sorted at every level, UTF-8, every field
present: the same event always encodes to the same bytes, so its SHA-256 is stable.
Decoding takes a fast path for current events and a slow path (plain JSON, upcasters,
convert) for old or foreign ones. The fast path reads the `kind` first, then decodes with
that kind's own Decoder, made the first time the kind is met: a process that reads a few
kinds (a hook, a catch-up of a few events) never pays for building a decoder of the whole
union, which costs about 12 ms of CPU at start-up and grows with every event type. Reading
the kind first costs about 1 us per event, so a process that decodes many (a rebuild)
switches to the union's Decoder once it has decoded BULK events. The default codec knows the
kinds from events/kind_table.py (generated from events/catalog.py) and imports a family's
module (tasks, teams, workstreams...) when it first meets one of its events.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Union

import msgspec

from events.base import Event, kind_of
from events.errors import EventInvalid, EventUndecodable, UnknownEventType

#: An upcaster takes the plain-JSON form of an event at version `v` and returns it at `v + 1`.
Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
#: A legacy reader turns a plain-JSON object without `kind` into a tagged one, or returns None.
LegacyReader = Callable[[dict[str, Any]], dict[str, Any] | None]


class _Kind(msgspec.Struct):
    """Only the tag of a stored event (every other field is skipped unread)."""

    kind: str | None = None


_PEEK = msgspec.json.Decoder(_Kind)
#: What a document nested past the interpreter's recursion limit is called (msgspec raises RecursionError).
NESTED = "nested too deeply"
#: After this many decodes a process builds the union's Decoder and uses it from then on.
BULK = 10_000


class _Kinds(Mapping[str, "type[Event]"]):
    """Event types by kind from events/kind_table.py: a type's module is imported when its kind is first asked for."""

    def __init__(self, table: Mapping[str, tuple[str, str, int]]) -> None:
        self._table = table
        self._found: dict[str, type[Event]] = {}

    def __getitem__(self, kind: str) -> type[Event]:
        found = self._found.get(kind)
        if found is None:
            module, name, _ = self._table[kind]
            found = self._found[kind] = getattr(importlib.import_module(module), name)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)


class Codec:
    """Encodes events canonically and decodes any known version of them."""

    def __init__(
        self,
        types: Iterable[type[Event]] = (),
        upcasters: dict[tuple[str, int], Upcaster] | None = None,
        legacy: LegacyReader | None = None,
        *,
        table: Mapping[str, tuple[str, str, int]] | None = None,
    ) -> None:
        """`types`: the event types it reads; or `table` (events/kind_table.py's KINDS), whose types are imported
        when an event of their kind is met."""
        self.current: dict[str, int] = {}
        self.by_kind: Mapping[str, type[Event]]
        if table is not None:
            self.current = {kind: version for kind, (_, _, version) in table.items()}
            self.by_kind = _Kinds(table)
        else:
            by_kind: dict[str, type[Event]] = {}
            for event_type in types:
                self.current[kind_of(event_type)] = _default_version(event_type)
                by_kind[kind_of(event_type)] = event_type
            self.by_kind = by_kind
        self._union: Any = None
        self._decoders: dict[str, msgspec.json.Decoder[Any]] = {}
        self._union_decoder: msgspec.json.Decoder[Any] | None = None
        self._decoded = 0
        self._encoder = msgspec.json.Encoder(order="sorted")
        self.upcasters: dict[tuple[str, int], Upcaster] = dict(upcasters or {})
        self.legacy = legacy

    @property
    def types(self) -> tuple[type[Event], ...]:
        """Every event type it reads (each module imported)."""
        return tuple(self.by_kind.values())

    @property
    def union(self) -> Any:
        """The tagged union of every type, for decoding in bulk, conversion and the schema (made once)."""
        if self._union is None:
            self._union = Union[self.types]  # noqa: UP007 - a runtime union of a tuple
        return self._union

    def register(self, kind: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
        """Decorator: register the upcaster of `kind` from `from_version` to the next."""

        def add(function: Upcaster) -> Upcaster:
            self.upcasters[(kind, from_version)] = function
            return function

        return add

    def encode(self, event: Event) -> bytes:
        """The canonical bytes of an event."""
        try:
            return self._encoder.encode(event)
        except (msgspec.EncodeError, UnicodeEncodeError) as error:
            raise EventInvalid(f"event cannot be encoded: {_first_line(error)}") from None

    def decoder_of(self, kind: str) -> msgspec.json.Decoder[Any] | None:
        """The Decoder of one event kind (made on first use), or None for a kind not known here."""
        decoder = self._decoders.get(kind)
        if decoder is None:
            event_type = self.by_kind.get(kind)
            if event_type is None:
                return None
            decoder = self._decoders[kind] = msgspec.json.Decoder(event_type)
        return decoder

    def validate(self, raw: bytes) -> Event:
        """Decode bytes just encoded, so every constraint of the Struct is checked."""
        try:
            decoder = self.decoder_of(_PEEK.decode(raw).kind or "")
            if decoder is None:
                raise EventInvalid("invalid event: no known event kind")
            event: Event = decoder.decode(raw)
            if b"\\u00" in raw or b"\\b" in raw or b"\\f" in raw or b"\x7f" in raw:  # a control character
                from events.problems import one_line_problem

                problem = one_line_problem(msgspec.json.decode(raw))
                if problem is not None:
                    raise EventInvalid(f"invalid event: {problem}")
        except msgspec.ValidationError as error:
            from events.problems import readable

            document = msgspec.json.decode(raw)
            line = _first_line(error)
            words = self._beyond_message(document) if line.endswith("- at `$.message`") else None
            raise EventInvalid(f"invalid event: {words or readable(line, document)}") from None
        except RecursionError:
            raise EventInvalid(f"invalid event: {NESTED}") from None
        return event

    def _beyond_message(self, document: Any) -> str | None:
        """What else a draft whose message was refused breaks, or None: the message is made from what a user gave
        (`snapshot <team>/...`, `work item ... added: <title>`), and the refusal should name that field."""
        from events.problems import one_line_problem, readable

        if not isinstance(document, dict) or not isinstance(document.get("kind"), str):
            return None
        decoder = self.decoder_of(document["kind"])
        if decoder is None:
            return None
        stand_in = {**document, "message": "-"}
        try:
            decoder.decode(msgspec.json.encode(stand_in))
        except msgspec.ValidationError as error:
            return readable(_first_line(error), stand_in)
        return one_line_problem(stand_in)

    def decode(self, raw: bytes) -> Event:
        """An event from stored bytes of any known version; EventUndecodable otherwise."""
        try:
            return self._decode(raw)
        except RecursionError:  # msgspec and the upcasters recurse per level: bytes a writer of ours never made
            raise EventUndecodable(NESTED) from None

    def _decode(self, raw: bytes) -> Event:
        try:
            decoder = self._union_decoder
            if decoder is None:
                self._decoded += 1
                if self._decoded >= BULK:
                    decoder = self._union_decoder = msgspec.json.Decoder(self.union)
                else:
                    decoder = self.decoder_of(_PEEK.decode(raw).kind or "")
            if decoder is None:  # no kind (seed 004's files), a kind not a string, or unknown
                return self._decode_slow(raw)
            event: Event = decoder.decode(raw)
        except msgspec.ValidationError:
            return self._decode_slow(raw)
        except msgspec.DecodeError as error:
            raise EventUndecodable(f"not JSON: {_first_line(error)}") from None
        if event.v != self.current[kind_of(type(event))]:  # older: upcast; newer: not known to this release
            return self._decode_slow(raw)
        return event

    def _decode_slow(self, raw: bytes) -> Event:
        try:
            obj = msgspec.json.decode(raw)
        except msgspec.DecodeError as error:
            raise EventUndecodable(f"not JSON: {_first_line(error)}") from None
        if not isinstance(obj, dict):
            raise EventUndecodable("not a JSON object")
        if "kind" not in obj and self.legacy is not None:
            obj = self.legacy(obj) or obj
        kind = obj.get("kind")
        if not isinstance(kind, str):
            raise EventUndecodable("no event kind")
        if kind not in self.current:
            raise UnknownEventType(kind)
        obj = self.upcast(obj)
        try:
            event: Event = msgspec.convert(obj, self.union)
        except msgspec.ValidationError as error:
            repaired = _without_final_newline(obj)
            if repaired is not obj:  # written before names and ids were checked to their very end (base.END)
                try:
                    event = msgspec.convert(repaired, self.union)
                except msgspec.ValidationError:
                    pass
                else:
                    return event
            raise EventUndecodable(f"invalid {kind}: {_first_line(error)}") from None
        return event

    def upcast(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Apply upcasters until the object is at the current version of its kind."""
        kind = obj["kind"]
        version = obj.get("v", 0)
        if not isinstance(version, int) or isinstance(version, bool):
            raise EventUndecodable(f"invalid version {version!r}")
        if version > self.current[kind]:
            raise UnknownEventType(kind, version)
        while version < self.current[kind]:
            step = self.upcasters.get((kind, version))
            if step is None:
                raise EventUndecodable(f"no upcaster for {kind} v{version}")
            obj = step(dict(obj))
            version = obj.get("v", version + 1)
        return obj

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of every event type (written as `event.schema.json`)."""
        schema: dict[str, Any] = msgspec.json.schema(self.union)
        return schema


def _without_final_newline(value: Any) -> Any:
    """`value` with one final newline taken off each string in it; `value` itself when none ends with one."""
    if isinstance(value, str):
        return value[:-1] if value.endswith("\n") else value
    if isinstance(value, dict):
        items = {key: _without_final_newline(item) for key, item in value.items()}
        return items if any(items[key] is not value[key] for key in value) else value
    if isinstance(value, list):
        found = [_without_final_newline(item) for item in value]
        return found if any(new is not old for new, old in zip(found, value, strict=True)) else value
    return value


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def seed004_legacy(obj: dict[str, Any]) -> dict[str, Any] | None:
    """Read a seed-004 event (no `kind`, no `v`) as a work-log or checkpoint event at v1."""
    if "type" not in obj or "project" not in obj:
        return None
    upgraded = dict(obj)
    is_checkpoint = obj.get("type") == "checkpoint"
    upgraded["kind"] = "checkpoint.recorded" if is_checkpoint else "work.logged"
    upgraded.setdefault("v", 1)
    return upgraded


def _default_version(event_type: type[Event]) -> int:
    """The default of a type's `v` field, read without evaluating its annotations (slow)."""
    fields = event_type.__struct_fields__
    defaults = event_type.__struct_defaults__
    index = fields.index("v") - (len(fields) - len(defaults))
    return int(defaults[index])


_DEFAULT: list[Codec] = []


def default_codec() -> Codec:
    """The codec over every event type continuity knows (one per process: it is reused)."""
    if not _DEFAULT:
        from events.kind_table import KINDS

        _DEFAULT.append(Codec(table=KINDS, legacy=seed004_legacy))
    return _DEFAULT[0]
