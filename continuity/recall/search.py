"""Searching the recall index: filters, ranking (BM25) and snippets, as typed results.

The query language (words quoted by default, FTS5 syntax with `recall --match`, every
malformed query a one-line `QueryError`) and the SQL of the ranked rows live in plain.py,
shared with the fast path that answers plain queries without msgspec.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import msgspec

from continuity.recall import plain
from continuity.recall.index import projects_of
from continuity.recall.plain import HIT_FIELDS, fts_query, hit_values, rank, ranked_rows, words

__all__ = ["DEFAULT_LIMIT", "Filters", "Hit", "fts_query", "search", "words"]

DEFAULT_LIMIT = plain.DEFAULT_LIMIT


class Filters(msgspec.Struct, frozen=True, kw_only=True):
    """What to search in: the project, event kinds, an agent, a time window, a point of the log."""

    project: str
    kinds: tuple[str, ...] = ()
    agent: str | None = None
    since: str | None = None
    until: str | None = None
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
    #: Its writer's clock, where the log's time had run ahead of it (the brief's age counts from it).
    written_at: str | msgspec.UnsetType = msgspec.UNSET


def hits_json(hits: list[Hit]) -> list[dict[str, Any]]:
    """Hits as `recall` answers them (the fast path's fields: a writer's time only gives the brief its ages)."""
    found: list[dict[str, Any]] = msgspec.to_builtins(hits)
    for hit in found:
        hit.pop("written_at", None)
    return found


def search(connection: sqlite3.Connection, query: str, filters: Filters, limit: int = DEFAULT_LIMIT, *,
           seconds: float | None = None) -> list[Hit]:
    """The best `limit` events matching an FTS5 query under the filters, best first (newest first on a tie).

    Rows are numbered in log order (a rebuild reinserts in order; catch-up only appends
    newer names), so the row number breaks ties by time without reading the name. The
    ranking and the rows it names are read in one snapshot: a rebuild by another process
    between the two (after a sync merged older events, it renumbers rows) is not seen halfway.
    """
    began = not connection.in_transaction
    if began:
        connection.execute("BEGIN")
    try:
        with plain.deadline(connection, seconds):  # SearchTooLong past it
            return _search(connection, query, filters, limit)
    finally:
        if began and connection.in_transaction:  # SQLite rolls back by itself after some errors (NOMEM)
            connection.execute("COMMIT")


def _search(connection: sqlite3.Connection, query: str, filters: Filters, limit: int) -> list[Hit]:
    where = ["fts MATCH ?", "d.project = ?"]
    params: list[Any] = [query, filters.project]
    if filters.kinds:
        where.append(f"d.kind IN ({', '.join('?' * len(filters.kinds))})")
        params.extend(filters.kinds)
    # the window counts by the writer's clock (an event's `written_at` where the log's time ran ahead of it)
    for clause, value in (("d.agent = ?", filters.agent), ("COALESCE(d.written, d.created_at) >= ?", filters.since),
                          ("COALESCE(d.written, d.created_at) <= ?", filters.until)):
        if value is not None:
            where.append(clause)
            params.append(value)
    # Rank first, snippets after: SQLite computes every selected column of every match
    # before it sorts, and a snippet costs far more than a score. When the project is the
    # only filter and the index holds no other, rank without reading the rows' columns.
    if where == ["fts MATCH ?", "d.project = ?"] and projects_of(connection) == [filters.project]:
        ranked = rank(connection, query, limit + len(filters.exclude))
    else:
        ranked = connection.execute(
            "SELECT d.id, bm25(fts) FROM fts JOIN docs d ON d.id = fts.rowid WHERE " + " AND ".join(where)
            + " ORDER BY bm25(fts), fts.rowid DESC LIMIT ?", [*params, limit + len(filters.exclude)]).fetchall()
    if not ranked:
        return []
    found = ranked_rows(connection, query, ranked)
    found = [row for row in found if row[1] not in filters.exclude
             and not any(text in row[10] for text in filters.omit_containing)][:limit]
    return [Hit(**dict(zip(HIT_FIELDS, hit_values(row), strict=True)), written_at=row[7] or msgspec.UNSET)
            for row in found]
