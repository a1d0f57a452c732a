"""Event file names, event ids and shard folders.

A file is named ``<stamp>-<node>-<hash12>.json``: the HLC stamp makes names sort in
replay order, the node id keeps two clones from ever choosing the same name, and the
first 12 hex digits of the file's SHA-256 let `verify` catch an edited byte in any
event, the newest included. Files live in one ``<YYYYMMDD>/`` folder per UTC day.
"""

from __future__ import annotations

import re

from events.records import NamedTuple

#: A stamp (UTC microseconds) and a node id, as regular-expression text (archive and Markdown names use them too).
STAMP = r"[0-9]{8}_[0-9]{6}_[0-9]{6}"
#: An event's time as the log spells it (`clock.iso`), as regular-expression text.
ISO_TIME = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z"
NODE = r"[a-z0-9]{8}"
NODE_PATTERN = re.compile(rf"^{NODE}\Z")  # \Z: `$` would also take a name ending in a newline
_NAME = re.compile(rf"^({STAMP})-({NODE})-([0-9a-f]{{12}})\.json\Z")
_EVENT_ID = re.compile(rf"^RCE-({STAMP})-({NODE})\Z")
HASH_CHARS = 12
#: Every event file name has this length: stamp, node, hash and ".json".
NAME_LENGTH = 22 + 1 + 8 + 1 + HASH_CHARS + 5


class ParsedName(NamedTuple):
    """The parts of an event file name."""

    stamp: str
    node: str
    hash12: str


def file_name(stamp: str, node: str, sha256_hex: str) -> str:
    """The file name of an event."""
    return f"{stamp}-{node}-{sha256_hex[:HASH_CHARS]}.json"


def event_id(stamp: str, node: str) -> str:
    """The event id: seed 004's `RCE-<stamp>` plus the node that wrote it."""
    return f"RCE-{stamp}-{node}"


def parse_name(name: str) -> ParsedName | None:
    """The parts of an event file name, or None when `name` is not one (temp files, junk)."""
    match = _NAME.match(name)
    if match is None:
        return None
    return ParsedName(match[1], match[2], match[3])


def parse_event_id(text: str) -> tuple[str, str] | None:
    """`(stamp, node)` of an event id, or None."""
    match = _EVENT_ID.match(text)
    return None if match is None else (match[1], match[2])


def shard_of(stamp: str) -> str:
    """The day folder a stamp's (or a file name's) event lives in."""
    return stamp[:8]


def id_of_name(name: str) -> str:
    """The event id a well-formed file name stands for."""
    parsed = parse_name(name)
    if parsed is None:
        raise ValueError(f"not an event file name: {name!r}")
    return event_id(parsed.stamp, parsed.node)
