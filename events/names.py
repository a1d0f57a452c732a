"""Event file names, event ids and shard folders.

A file is named ``<stamp>-<node>-<hash12>.json``: the HLC stamp makes names sort in
replay order, the node id keeps two clones from ever choosing the same name, and the
first 12 hex digits of the file's SHA-256 let `verify` catch an edited byte in any
event, the newest included. Files live in one ``<YYYYMMDD>/`` folder per UTC day.
"""

from __future__ import annotations

import re

from events import clock, lazyre
from events.records import NamedTuple

#: A stamp (UTC microseconds) and a node id, as regular-expression text (archive and Markdown names use them too).
STAMP = r"[0-9]{8}_[0-9]{6}_[0-9]{6}"
#: An event's time as the log spells it (`clock.iso`), as regular-expression text.
ISO_TIME = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z"
NODE = r"[a-z0-9]{8}"
NODE_PATTERN = re.compile(rf"^{NODE}\Z")  # \Z: `$` would also take a name ending in a newline
#: A stamp whose time of day is one: hours 00-23, minutes and seconds 00-59 (its day: `is_day`).
_REAL_STAMP = r"[0-9]{8}_(?:[01][0-9]|2[0-3])[0-5][0-9][0-5][0-9]_[0-9]{6}"
_NAME = re.compile(rf"^({_REAL_STAMP})-({NODE})-([0-9a-f]{{12}})\.json\Z")
_EVENT_ID = lazyre.pattern(rf"^RCE-({_REAL_STAMP})-({NODE})\Z")
_DAYS: dict[str, bool] = {}
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
    """The parts of an event file name, or None when `name` is not one (temp files, junk, a stamp that is no
    real time: hour 25, the 30th of February, the year 0, which no clock of the log ever wrote)."""
    match = _NAME.match(name)
    if match is None or not is_day(match[1][:8]):
        return None
    return ParsedName(match[1], match[2], match[3])


def is_day(text: str) -> bool:
    """Whether `text` is a day folder's name: `YYYYMMDD` of a real date from the year 1 to 9999."""
    known = _DAYS.get(text)
    if known is None:
        known = len(text) == 8 and text.isascii() and text.isdigit() and clock.is_date(
            int(text[:4]), int(text[4:6]), int(text[6:]))
        if len(_DAYS) < 100_000:  # a store holds a few thousand days; junk names never grow it past a bound
            _DAYS[text] = known
    return known


def parse_event_id(text: str) -> tuple[str, str] | None:
    """`(stamp, node)` of an event id, or None."""
    match = _EVENT_ID().match(text)
    return None if match is None or not is_day(match[1][:8]) else (match[1], match[2])


def shard_of(stamp: str) -> str:
    """The day folder a stamp's (or a file name's) event lives in."""
    return stamp[:8]


#: How far past this machine's clock an event may be stamped and still count as now: its day folder starts within
#: a day of the clock (events up to 24-48 hours ahead). A later day holds events stamped *early* (a broken or
#: hostile clock's, synced in): the read models leave them out and new events do not follow them, until this
#: clock reaches their day. Followed, one event stamped in 9999 stopped every write of every clone for good.
EARLY_AFTER_US = 86_400 * 1_000_000


def last_day(now_us: int) -> str:
    """The newest day folder that counts as now for a clock reading `now_us` (later ones hold early events)."""
    return clock.stamp(max(min(now_us + EARLY_AFTER_US, clock.LAST_US), clock.FIRST_US))[:8]


#: Why a reader leaves out an event whose content disagrees with its file name (verify's words for it).
FORGED = "renamed or forged: its event_id or created_at is not what its file name spells (see `continuity verify`)"
#: What a read says of the second of two files named for one event (the same stamp and node, other bytes): no writer
#: makes one (a node appends one event per stamp, under its lock); the first in name order is the event.
TWIN = "a second file of the event the file before it holds (same id, other bytes): left out (see `continuity verify`)"


def twin(name: str, before: str | None) -> bool:
    """Whether `name` is named for the same event as `before`, the file before it in name order."""
    return before is not None and name[:31] == before[:31]


def event_before(listed: list[str], index: int) -> str | None:
    """The last event file name in `listed` (a day's listing, in name order) before position `index`, or None: the
    file a read starting at `index` compares its first name with (`twin`). Walks back without copying the listing."""
    for at in range(min(index, len(listed)) - 1, -1, -1):
        if parse_name(listed[at]) is not None:
            return listed[at]
    return None


def content_matches(name: str, event_id: str, created_at: str) -> bool:
    """Whether an event's id and time are the ones its file name spells (a well-formed name; cheap: no parsing).

    A file whose content claims another id (another event's: an impersonation) or another time is
    what `verify` calls renamed or forged; the read models and the recall index leave it out.
    """
    return (event_id[4:] == name[:31] and event_id[:4] == "RCE-" and created_at == (
        f"{name[:4]}-{name[4:6]}-{name[6:8]}T{name[9:11]}:{name[11:13]}:{name[13:15]}.{name[16:22]}Z"))


def id_of_name(name: str) -> str:
    """The event id a well-formed file name stands for."""
    parsed = parse_name(name)
    if parsed is None:
        raise ValueError(f"not an event file name: {name!r}")
    return event_id(parsed.stamp, parsed.node)


def digest(listed: list[str]) -> int:
    """A digest of a day's event names, as a reader's day mark keeps it (never 0: a mark without one). A count alone
    missed an event removed while another arrived before the reader's position (a merge): the same count, other
    events."""
    return names_crc(listed) + 1


def names_crc(listed: list[str], crc: int = 0) -> int:
    """The CRC-32 of the names, each followed by a line break, going on from `crc` (the names before them): a digest
    of a longer run of names goes on from the shorter one's."""
    import zlib

    if not listed:
        return crc
    return zlib.crc32(("\n".join(listed) + "\n").encode("utf-8", "surrogateescape"), crc)
