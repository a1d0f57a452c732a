"""The seed-002 checkpoint document: its exact shape as Structs, and reading one from a file.

camelCase names, the exact enums and id pattern, no unknown keys (msgspec refuses them),
then what a schema cannot say: unique list entries, unique item and ledger ids, and a
workstream exactly when the mode is `tracked`. Version 1 has no `continuity` block.
"""

from __future__ import annotations

import codecs
import errno
import os
from typing import Annotated, Any, Literal

import msgspec

from continuity.core.errors import UsageError
from events import osfs
from events.base import Label, Text
from events.workstream import (
    MAX_ITEMS,
    CheckpointStatus,
    Entries,
    Ids,
    ItemStatus,
    NextAction,
    Priority,
    Short,
    Title,
    ValidationResult,
    WorkId,
    WorkstreamStatus,
)

#: The largest checkpoint document read (a 500-item workstream is well under 1 MiB).
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
DEFAULT_PATH = ".ai-bridge/context-checkpoint.json"


class _Doc(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """Shared options: camelCase keys, unknown keys refused."""


class DocItem(_Doc, frozen=True, kw_only=True):
    """A work item (the lists may be left out: empty)."""

    id: WorkId
    title: Title
    status: ItemStatus
    priority: Priority
    scope: Entries = ()
    acceptance_criteria: Entries = ()
    depends_on: Ids = ()
    blocked_by: Ids = ()
    validation_requirements: Entries = ()
    notes: Entries = ()


class DocRepository(_Doc, frozen=True, kw_only=True):
    """A repository of the workstream and its role."""

    repository: WorkId
    role: Label


class DocCursor(_Doc, frozen=True, kw_only=True):
    """The execution cursor."""

    current_item_id: WorkId | None  # each of the four given, null or not (seed 002): left out, the cursor would
    last_completed_item_id: WorkId | None  # be cleared without a word
    phase: Short | None
    last_completed_action: Short | None
    next_action: NextAction


class DocWorkstream(_Doc, frozen=True, kw_only=True):
    """The tracked workstream."""

    id: WorkId
    title: Title
    status: WorkstreamStatus
    objective: Text
    repositories: Annotated[tuple[DocRepository, ...], msgspec.Meta(min_length=1, max_length=64)]
    cursor: DocCursor
    items: Annotated[tuple[DocItem, ...], msgspec.Meta(max_length=MAX_ITEMS)]


class DocValidation(_Doc, frozen=True, kw_only=True):
    """A validation ledger entry."""

    id: WorkId
    kind: Label
    result: ValidationResult
    repository: WorkId
    scope: Short
    summary: Text
    timestamp: Short
    command: Text | None
    evidence_refs: Entries


class DocContinuity(_Doc, frozen=True, kw_only=True):
    """Version 2's continuity block."""

    mode: Literal["snapshot", "tracked"]
    workstream: DocWorkstream | None
    validation_ledger: Annotated[tuple[DocValidation, ...], msgspec.Meta(max_length=256)]


class _Checkpoint(_Doc, frozen=True, kw_only=True):
    repository: WorkId
    scope: Text
    status: CheckpointStatus
    objective: Text
    confirmed_findings: Entries
    decisions: Entries
    rejected_approaches: Entries
    validation: Entries
    open_questions: Entries
    next_action: NextAction


class CheckpointV1(_Checkpoint, frozen=True, kw_only=True, tag_field="schemaVersion", tag=1):
    """A legacy (schemaVersion 1) checkpoint: read for compatibility, never erasing tracked work."""


class CheckpointV2(_Checkpoint, frozen=True, kw_only=True, tag_field="schemaVersion", tag=2):
    """A Continuity v2 checkpoint."""

    continuity: DocContinuity


Checkpoint = CheckpointV1 | CheckpointV2
_DECODER = msgspec.json.Decoder(Checkpoint)


#: An item's string lists: each holds unique entries (the contract), on every path that writes one.
ITEM_LISTS = ("scope", "acceptance_criteria", "depends_on", "blocked_by", "validation_requirements", "notes")


def unique(values: tuple[str, ...] | None, where: str, what: str = "checkpoint document") -> None:
    """UsageError (exit 2) when `values` names an entry twice."""
    seen: set[str] = set()
    for value in values or ():
        if value in seen:
            from events.problems import quoted

            raise UsageError(f"invalid {what}: {where} lists {quoted(value, 80, redact=True)} twice")
        seen.add(value)


def check(doc: Checkpoint) -> Checkpoint:
    """What the Structs cannot say: unique entries and ids, a workstream exactly in tracked mode."""
    for field in ("confirmed_findings", "decisions", "rejected_approaches", "validation", "open_questions"):
        unique(getattr(doc, field), field)
    if isinstance(doc, CheckpointV1):
        return doc
    block = doc.continuity
    if block.mode == "tracked" and block.workstream is None:
        raise UsageError("invalid checkpoint document: tracked mode needs continuity.workstream")
    if block.mode == "snapshot" and block.workstream is not None:
        raise UsageError("invalid checkpoint document: snapshot mode carries no workstream (use tracked)")
    unique(tuple(entry.id for entry in block.validation_ledger), "continuity.validationLedger ids")
    for entry in block.validation_ledger:
        unique(entry.evidence_refs, f"validation ledger entry {entry.id} evidenceRefs")
    ws = block.workstream
    if ws is not None:
        unique(tuple(repo.repository for repo in ws.repositories), "workstream.repositories")
        unique(tuple(item.id for item in ws.items), "workstream.items ids")
        for item in ws.items:
            for field in ITEM_LISTS:
                unique(getattr(item, field), f"item {item.id} {field}")
    return doc


def parse(raw: bytes, where: str = "checkpoint document") -> Checkpoint:
    """A checked document from JSON bytes; UsageError (exit 2) naming what is wrong."""
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise UsageError(f"invalid {where}: {len(raw)} bytes, more than the {MAX_DOCUMENT_BYTES} allowed")
    raw = _utf8(raw, where)
    try:
        doc: Checkpoint = _DECODER.decode(raw)
    except msgspec.ValidationError as error:
        from events.problems import readable

        try:
            plain = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            plain = None
        raise UsageError(f"invalid {where}: {_short(readable(str(error), plain))}") from None
    except msgspec.DecodeError as error:
        raise UsageError(f"invalid {where}: not valid JSON ({_short(str(error))})") from None
    except RecursionError:
        raise UsageError(f"invalid {where}: nested too deeply") from None
    _as_written(raw, where)
    return check(doc)


#: The document's one-line texts (False) and its next actions (True: tab and line breaks allowed), as the events
#: they become take them: a control character there was refused by the event, naming the event's field.
DOCUMENT_TEXTS = {"title": False, "nextAction": True}


def _as_written(raw: bytes, where: str) -> None:
    """What the Structs cannot see of a document: a key given twice in one object (the reader keeps the last, so
    the first, an item list say, went without a word) and a control character in a title or next action."""
    import json

    from events.problems import one_line_problem, quoted

    def once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise UsageError(f"invalid {where}: an object gives the key {quoted(key, 80)} twice (keep one)")
            seen.add(key)
        return dict(pairs)

    try:
        plain = json.loads(raw, object_pairs_hook=once_each)
    except (ValueError, RecursionError):  # what msgspec read and Python's reader does not: the Structs' verdict
        return
    if b"\\u00" in raw or b"\\b" in raw or b"\\f" in raw or b"\x7f" in raw:  # a control character, escaped
        problem = one_line_problem(plain, fields=DOCUMENT_TEXTS)
        if problem is not None:
            raise UsageError(f"invalid {where}: {_short(problem)}")


#: Byte order marks a document may start with, and the encoding each says (JSON allows a reader to ignore one).
_MARKS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def _utf8(raw: bytes, where: str) -> bytes:
    """The document as UTF-8 without a byte order mark. Windows PowerShell 5 writes one by default (`Set-Content
    -Encoding UTF8` a UTF-8 mark; `>` and `Out-File` UTF-16 with its mark), and seed 002's members run the
    `context.ps1` launcher `install ai-context` writes: such a document was refused as malformed JSON."""
    for mark, encoding in _MARKS:
        if raw.startswith(mark):
            if encoding == "utf-8":
                return raw[len(mark):]
            try:
                return raw[len(mark):].decode(encoding).encode()
            except UnicodeDecodeError as error:
                raise UsageError(f"invalid {where}: not valid {encoding.upper()} text after its byte order mark "
                                 f"({error.reason} at byte {error.start + len(mark)})") from None
    return raw


def _short(text: str) -> str:
    return text if len(text) <= 300 else text[:297] + "..."


def read(path: str, *, follow: bool = True) -> Checkpoint:
    """The document in a file: it must exist, be a regular file and at most MAX_DOCUMENT_BYTES.

    `follow` False (the default document, which is removed once recorded) refuses a link planted at its
    name as an unsafe store (exit 6), as a link in place of its folder is.
    """
    return parse(read_bytes(path, follow=follow), f"checkpoint document {path}")


def read_bytes(path: str, *, follow: bool = True) -> bytes:
    """The bytes `read` parses, refused as it refuses them."""
    try:  # one open: a FIFO or a device is refused at once, never waited on
        raw = osfs.read_regular(path, follow=follow, limit=MAX_DOCUMENT_BYTES)
    except FileNotFoundError:
        raise UsageError(f"checkpoint document not found: {path} (write it first, or name it with --file)") from None
    except OSError as error:
        if not follow and os.path.islink(path):
            from events.errors import StoreUnsafe

            raise StoreUnsafe(f"unsafe store: {path} is a symlink (nothing written)") from None
        if error.errno in (errno.EINVAL, errno.EISDIR):
            raise UsageError(f"checkpoint document is not a regular file: {path}") from None
        if error.errno == errno.EFBIG:
            raise UsageError(f"invalid checkpoint document {path}: it holds more than the {MAX_DOCUMENT_BYTES} "
                             "allowed bytes") from None
        raise UsageError(f"checkpoint document unreadable: {path} ({error.strerror or error})") from None
    return raw


def json_schema() -> dict[str, Any]:
    """The document's JSON Schema (for MCP tools and docs), from the same Structs."""
    schema: dict[str, Any] = msgspec.json.schema(Checkpoint)
    return schema
