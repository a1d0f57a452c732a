"""Searching the recall index: the query language, filters, ranking (BM25) and snippets.

By default the words of a query are quoted into FTS5 terms and all must match, as most
search boxes do: `"unclosed`, `AND`, `NEAR` and `*` are words (or nothing), never syntax.
`operators=True` (`recall --match`) hands the query to FTS5 as written (AND, OR, NOT,
NEAR, "phrases", prefix*); a query FTS5 cannot parse is a `QueryError` (exit 2), never a
traceback.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

import msgspec

from continuity.core.errors import QueryError
from continuity.core.text import one_line
from continuity.recall.index import projects_of

MAX_QUERY_CHARS = 1000
MAX_TERMS = 64
DEFAULT_LIMIT = 10
SNIPPET_TOKENS = 16
#: How a match is marked in a snippet (the text around it is neutralized for the terminal).
MARK_OPEN, MARK_CLOSE = "[", "]"
_WORD = r"\w+"


class Filters(msgspec.Struct, frozen=True, kw_only=True):
    """What to search in: the project, event kinds, an agent, a time window, a point of the log."""

    project: str
    kinds: tuple[str, ...] = ()
    agent: str | None = None
    since: str | None = None
    until: str | None = None
    #: Only events whose file name sorts at or before this one (an audit's point).
    through: str | None = None
    #: Event ids to leave out (what a brief already shows).
    exclude: frozenset[str] = frozenset()
    #: Leave out events whose text holds any of these word for word (checked on the ranked few only).
    omit_containing: tuple[str, ...] = ()


class Hit(msgspec.Struct, frozen=True, kw_only=True):
    """One ranked event: where it is, who wrote it, a snippet with the matches marked, its score."""

    event_id: str
    created_at: str
    kind: str
    agent_id: str | None
    host: str | None
    session_id: str | None
    snippet: str
    #: BM25, higher is better (FTS5's bm25() negated).
    score: float


def words(text: str) -> list[str]:
    """The words of a text, as the default query mode searches them."""
    return re.findall(_WORD, text)


def fts_query(text: str, *, operators: bool = False, any_word: bool = False) -> str:
    """The FTS5 query for what a user typed: its words quoted (all must match unless `any_word`), or as written."""
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is {len(text)} characters long; at most {MAX_QUERY_CHARS} are searched")
    if operators:
        if not text.strip():
            raise QueryError("the query is empty")
        _check_syntax(text)
        return text
    found = words(text)
    if not found:
        raise QueryError(f"the query {one_line(text[:40])!r} has no words to search for "
                         "(use --match for FTS5 operators such as prefix*)")
    if len(found) > MAX_TERMS:
        raise QueryError(f"the query has {len(found)} words; at most {MAX_TERMS}")
    return (" OR " if any_word else " ").join(f'"{word}"' for word in dict.fromkeys(found))


_PROBE: list[sqlite3.Connection] = []


def _check_syntax(query: str) -> None:
    """QueryError unless FTS5 parses `query` (tried on an empty table of the index's shape, in memory)."""
    if not _PROBE:
        probe = sqlite3.connect(":memory:", check_same_thread=False)
        probe.execute("CREATE VIRTUAL TABLE fts USING fts5(body, tokenize='porter unicode61 remove_diacritics 2')")
        _PROBE.append(probe)
    try:
        _PROBE[0].execute("SELECT rowid FROM fts WHERE fts MATCH ?", (query,)).fetchall()
    except sqlite3.Error as error:
        raise QueryError(f"invalid search syntax: {one_line(str(error))} "
                         "(without --match the words are searched as written)") from None


def search(connection: sqlite3.Connection, query: str, filters: Filters, limit: int = DEFAULT_LIMIT) -> list[Hit]:
    """The best `limit` events matching an FTS5 query under the filters, best first (newest first on a tie).

    Rows are numbered in log order (a rebuild reinserts in order; catch-up only appends
    newer names), so the row number breaks ties by time without reading the name.
    """
    where = ["fts MATCH ?", "d.project = ?"]
    params: list[Any] = [query, filters.project]
    if filters.kinds:
        where.append(f"d.kind IN ({', '.join('?' * len(filters.kinds))})")
        params.extend(filters.kinds)
    for clause, value in (("d.agent = ?", filters.agent), ("d.created_at >= ?", filters.since),
                          ("d.created_at <= ?", filters.until), ("d.name <= ?", filters.through)):
        if value is not None:
            where.append(clause)
            params.append(value)
    # Rank first, snippets after: SQLite computes every selected column of every match
    # before it sorts, and a snippet costs far more than a score. When the project is the
    # only filter and the index holds no other, rank without reading the rows' columns.
    if where == ["fts MATCH ?", "d.project = ?"] and projects_of(connection) == [filters.project]:
        ranked = connection.execute("SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts), rowid DESC LIMIT ?",
                                    [query, limit + len(filters.exclude)]).fetchall()
    else:
        ranked = connection.execute(
            "SELECT d.id FROM fts JOIN docs d ON d.id = fts.rowid WHERE " + " AND ".join(where)
            + " ORDER BY bm25(fts), fts.rowid DESC LIMIT ?", [*params, limit + len(filters.exclude)]).fetchall()
    if not ranked:
        return []
    order = {row[0]: place for place, row in enumerate(ranked)}
    found = connection.execute(
        "SELECT d.id, d.event_id, d.created_at, d.kind, d.agent, d.host, d.session,"
        f" snippet(fts, 0, char(2), char(3), '…', {SNIPPET_TOKENS}), bm25(fts), fts.body"
        " FROM fts JOIN docs d ON d.id = fts.rowid WHERE fts MATCH ? AND fts.rowid IN "
        f"({', '.join('?' * len(order))})", [query, *order]).fetchall()
    found.sort(key=lambda row: order[row[0]])
    found = [row for row in found if row[1] not in filters.exclude
             and not any(text in row[9] for text in filters.omit_containing)][:limit]
    return [Hit(event_id=row[1], created_at=row[2], kind=row[3], agent_id=row[4], host=row[5], session_id=row[6],
                snippet=_marked(row[7]), score=round(-row[8], 6)) for row in found]


def _marked(snippet: str) -> str:
    """An FTS5 snippet with its match markers as brackets, line breaks as spaces, the rest made safe to print."""
    parts = re.split("([\x02\x03])", snippet)
    return "".join(MARK_OPEN if part == "\x02" else MARK_CLOSE if part == "\x03"
                   else one_line(re.sub(r"\s", " ", part)) for part in parts).strip()
