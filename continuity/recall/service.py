"""`recall` as a Python API: search every event's text, now (index caught up) or as of a point.

The CLI and the MCP server call `recall`; the resume brief calls `earlier`, which reads
the index as it stands and never builds it (the session-start hook must stay fast).
"""

from __future__ import annotations

import re
import sqlite3

import msgspec

from continuity.core.errors import UsageError
from continuity.core.store import Store, now_us
from continuity.readside.catchup import Progress
from continuity.recall import index
from continuity.recall.search import DEFAULT_LIMIT, Filters, Hit, fts_query, search, words
from events import clock
from events.problems import quoted

_DURATION = re.compile(r"^([0-9]{1,9})([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
#: What the brief's queries leave out: words too common to say what a step is about.
STOP_WORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "do", "for", "from", "has", "have", "i", "if",
    "in", "into", "is", "it", "its", "of", "on", "or", "so", "that", "the", "then", "this", "to", "was",
    "we", "were", "will", "with", "not", "no", "yes", "can", "should", "would", "could", "all", "any", "our",
    "your", "one", "under", "over", "after", "before",
))
BRIEF_TERMS = 24


class Recalled(msgspec.Struct, kw_only=True):
    """The ranked hits, what the index did to be current, and warnings."""

    hits: list[Hit]
    query: str
    as_of: str | None = None
    indexed: int = 0
    rebuilt: bool = False
    warnings: list[str] = msgspec.field(default_factory=list)


def time_bound(flag: str, text: str | None, now: int) -> str | None:
    """An ISO time for --since/--until: an ISO time, or a duration back from now (`90m`, `12h`, `7d`, `2w`)."""
    if text is None:
        return None
    found = _DURATION.match(text.strip())
    try:
        at = now - int(found.group(1)) * _UNITS[found.group(2)] * 1_000_000 if found else clock.parse_iso(text)
        bound = clock.iso(at)
        if clock.parse_iso(bound) != at:  # the bound is compared as text: it must spell exactly this time
            raise ValueError(bound)
        return bound
    except (ValueError, OverflowError):
        if found:  # a duration, but longer than the calendar reaches back
            raise UsageError(f"{flag}: {quoted(text)} reaches back before the year 1") from None
        raise UsageError(f"{flag}: {quoted(text)} is neither an ISO time nor a duration such as 12h or 7d") from None


def time_window(since: str | None, until: str | None, now: int, flags: tuple[str, str] = ("--since", "--until")
                ) -> tuple[str | None, str | None]:
    """--since and --until as bounds (time_bound); a window that ends before it starts is a usage error (recall
    answered it with "no matches", the timeline refused it)."""
    low, high = time_bound(flags[0], since, now), time_bound(flags[1], until, now)
    if low is not None and high is not None and low > high:
        raise UsageError(f"{flags[0]} ({low}) is after {flags[1]} ({high}): the window is empty")
    return low, high


def recall(store: Store, text: str, filters: Filters, *, limit: int = DEFAULT_LIMIT, operators: bool = False,
           as_of: str | None = None, progress: Progress | None = None) -> Recalled:
    """The events best matching `text` under `filters`, best first: from the index caught up, or as of a point.

    As of a point the index is built in memory from the log up to that point, so the
    scores are the ones the log then gave, not today's.
    """
    query = fts_query(text, operators=operators)
    log, untrusted = store.open_events_reader()  # a `local/` that cannot be trusted: its index is not read either
    if as_of is not None or untrusted:
        through = None
        if as_of is not None:
            from continuity.readside.replay import resolve_point

            through, _ = resolve_point(log, as_of)
        connection = index.connect(":memory:")
        outcome = index.catch_up(connection, log, rebuild=True, until=through, progress=progress)
        outcome.rebuilt = False
        outcome.warnings[:0] = [f"{line}; answered from an index built in memory" for line in untrusted]
    else:
        connection, outcome = index.open_current(store, log, progress=progress)
    try:
        try:
            hits = search(connection, query, filters, limit)
        except (sqlite3.DatabaseError, MemoryError) as error:
            # a page only a search reads is damaged (malformed, not a database, or FTS5 data whose decoding SQLite
            # answers with NOMEM): the file is a cache, made again
            if isinstance(error, sqlite3.OperationalError) or as_of is not None or untrusted:  # locked, I/O: not
                # the file's; or no file at all (an index in memory)
                raise
            connection.close()
            connection, again = index.rebuilt_after(store, log, error, progress)
            outcome.warnings.extend(again.warnings)
            outcome.indexed, outcome.rebuilt = again.indexed, True
            hits = search(connection, query, filters, limit)
    finally:
        connection.close()
    return Recalled(hits=hits, query=query, as_of=as_of, indexed=outcome.indexed, rebuilt=outcome.rebuilt,
                    warnings=outcome.warnings)


def rebuild_index(store: Store, *, progress: Progress | None = None) -> index.CatchUp:
    """Rebuild the recall index from the whole log (`continuity rebuild`)."""
    connection, outcome = index.open_current(store, store.open_reader(), rebuild=True, progress=progress)
    connection.close()
    return outcome


def catch_up_index(store: Store, progress: Progress | None = None) -> list[str]:
    """Bring the recall index up to date if it exists (after `sync`); warnings, never errors."""
    import os

    if not os.path.exists(index.index_path(store)):
        return []
    try:
        connection, outcome = index.open_current(store, store.open_reader(), progress=progress)
    except (OSError, sqlite3.Error) as error:
        return [f"the recall index was not updated: {error}"]
    connection.close()
    return outcome.warnings


#: The brief's recall section waits at most this long (a session start is never held up by it).
BRIEF_SECONDS = 1.0


def earlier(store: Store, project: str, subjects: list[str], exclude: frozenset[str], *, limit: int) -> list[Hit]:
    """For the brief: the events best matching the subjects (any word), from the index as it stands.

    Never builds or catches the index up, and never warns: with no usable index there is
    simply no section. Events whose text holds a subject word for word are what the brief
    already shows (the checkpoint that set a blocker): they are left out, as are `exclude`.
    """
    terms = [word for word in dict.fromkeys(w.lower() for text in subjects for w in words(text))
             if word not in STOP_WORDS and len(word) > 2][:BRIEF_TERMS]
    if not terms or limit <= 0:
        return []
    connection = index.open_existing(index.index_path(store))
    if connection is None:
        return []
    shown = tuple(text for text in subjects if text.strip())
    try:
        query = fts_query(" ".join(terms), any_word=True)
        found = search(connection, query, Filters(project=project, exclude=exclude, omit_containing=shown), limit * 4,
                       seconds=BRIEF_SECONDS)
    except (sqlite3.Error, MemoryError, UsageError):  # MemoryError: FTS5 data SQLite could not decode (NOMEM)
        return []
    finally:
        connection.close()
    return found[:limit]


def now() -> int:
    """The wall clock for relative --since/--until (views read the clock here, never in projections)."""
    return now_us()


def now_at(store: Store, as_of: str | None) -> int:
    """What relative --since/--until count back from: now, or as of a point the time that view answers at (an
    event's writer's clock, `replay.point_written`), so an audit's "--since 10m" names the same events whenever it
    is asked."""
    if as_of is None:
        return now()
    from continuity.readside.replay import point_written, resolve_point

    _, point = resolve_point(store.open_events_reader()[0], as_of)  # (recall says why local/ was not read)
    return clock.parse_iso(point_written(as_of, point))
