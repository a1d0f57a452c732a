"""Recall's ranking is exactly FTS5's: one straight `ORDER BY bm25(fts), rowid DESC` over every match.

search() ranks first and makes snippets after, in two queries (plain.py's RANK_SQL and HIT_SQL);
whatever shortcut those take, the hits, their order and their scores must be the ones a single
query over every match gives. The corpus has many matches per word, many equal scores (ties go
to the newest row) and words repeated within a row, and is indexed in several batches.
"""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from continuity.recall import index
from continuity.recall.plain import SNIPPET_TOKENS, fts_query, marked
from continuity.recall.search import Filters, search

WORDS = ("push", "race", "merge", "index", "wal", "retry", "cache", "docs", "sync", "hook", "lock", "queue")
KINDS = ("work.logged", "checkpoint.recorded")

#: Every match, ranked in one statement, with the snippet and score a hit shows.
STRAIGHT = ("SELECT d.event_id, d.created_at, d.kind, d.agent, d.host, d.session,"
            f" snippet(fts, 0, char(2), char(3), '…', {SNIPPET_TOKENS}), bm25(fts)"
            " FROM fts JOIN docs d ON d.id = fts.rowid WHERE fts MATCH ? {where}"
            " ORDER BY bm25(fts), fts.rowid DESC LIMIT ?")


@pytest.fixture(scope="module")
def connection() -> Any:
    """An index of 1,200 short events in three batches; a word matches up to most of them."""
    rng = random.Random(15)
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]
    connection = index.connect(":memory:")
    number = 0
    for batch in (500, 400, 300):
        rows = []
        for _ in range(batch):
            text = " ".join(rng.choices(WORDS, weights, k=rng.choice((1, 2, 3, 4, 6, 8, 12, 20))))
            at = f"2026-01-01T{number // 3600:02d}:{number // 60 % 60:02d}:{number % 60:02d}Z"
            rows.append((f"name-{number:06d}", f"E{number}", at, KINDS[number % 3 == 0], "demo",
                         f"agent{number % 4}", None, None, text))
            number += 1
        index._flush(connection, rows, f"name-{number - 1:06d}", {}, set())
    yield connection
    connection.close()


def straight(connection: Any, query: str, limit: int, kind: str | None = None) -> list[dict[str, Any]]:
    where, params = ("AND d.kind = ?", [kind]) if kind else ("", [])
    found = connection.execute(STRAIGHT.format(where=where), [query, *params, limit]).fetchall()
    return [{"event_id": row[0], "created_at": row[1], "kind": row[2], "agent_id": row[3], "host": row[4],
             "session_id": row[5], "snippet": marked(row[6]), "score": round(-row[7], 6)} for row in found]


@pytest.mark.parametrize("text, any_word", [
    ("push", False), ("race", False), ("queue", False), ("push race", False), ("merge index wal", False),
    ("push race", True), ("lock queue hook", True)])
@pytest.mark.parametrize("limit", [1, 10, 50, 1000])
def test_hits_are_a_straight_bm25_ranking(connection: Any, text: str, any_word: bool, limit: int) -> None:
    """Same hits, same order (newest first on a tie), same scores and snippets as one query over every match."""
    query = fts_query(text, any_word=any_word)
    expected = straight(connection, query, limit)
    assert connection.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", [query]).fetchone()[0] > 100
    hits = search(connection, query, Filters(project="demo"), limit)
    assert [msgspec.structs.asdict(hit) for hit in hits] == expected
    kind = KINDS[1]  # a filter: the ranking query joins the rows' columns
    hits = search(connection, query, Filters(project="demo", kinds=(kind,)), limit)
    assert [msgspec.structs.asdict(hit) for hit in hits] == straight(connection, query, limit, kind)


def test_ties_go_to_the_newest_row(connection: Any) -> None:
    """The corpus holds equal scores among the best: the order among them is the rows' newest first."""
    query = fts_query("push")
    scores = [row[1] for row in connection.execute(
        "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts), rowid DESC LIMIT 10", [query])]
    assert len(set(scores)) < len(scores)
