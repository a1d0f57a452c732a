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
from hypothesis import given
from hypothesis import strategies as st

from continuity.recall import index
from continuity.recall.plain import CONTENDERS, RANK_SQL, SNIPPET_TOKENS, fts_query, marked, rank
from continuity.recall.search import Filters, search

WORDS = ("push", "race", "merge", "index", "wal", "retry", "cache", "docs", "sync", "hook", "lock", "queue")
KINDS = ("work.logged", "checkpoint.recorded")

#: Every match, ranked in one statement, with the snippet and score a hit shows.
STRAIGHT = ("SELECT d.event_id, d.created_at, d.kind, d.agent, d.host, d.session,"
            f" snippet(fts, 0, char(2), char(3), '…', {SNIPPET_TOKENS}), bm25(fts)"
            " FROM fts JOIN docs d ON d.id = fts.rowid WHERE fts MATCH ? {where}"
            " ORDER BY bm25(fts), fts.rowid DESC LIMIT ?")


def build(batches: list[int], seed: int = 15) -> Any:
    """An index of short events, flushed in `batches` (the way catch-ups add them); a word matches up to most."""
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]
    connection = index.connect(":memory:")
    number = 0
    for batch in batches:
        rows = []
        for _ in range(batch):
            text = " ".join(rng.choices(WORDS, weights, k=rng.choice((1, 2, 3, 4, 6, 8, 12, 20))))
            at = f"2026-01-01T{number // 3600:02d}:{number // 60 % 60:02d}:{number % 60:02d}Z"
            rows.append((f"name-{number:06d}", f"E{number}", at, KINDS[number % 3 == 0], "demo",
                         f"agent{number % 4}", None, None, None, text))
            number += 1
        index._flush(connection, rows, f"name-{number - 1:06d}", {}, set())
    return connection


#: Small thresholds, so 1,200 events make common words with contenders, and rows after them.
SMALL = {"COMMON": 40, "TAIL": 150, "PROMOTE": 3}


@pytest.fixture(scope="module", params=["every match", "contenders"])
def connection(request: pytest.FixtureRequest) -> Any:
    """1,200 events; with small thresholds, most words common and the newest rows after the contenders."""
    with pytest.MonkeyPatch.context() as patch:
        if request.param == "contenders":
            for name, value in SMALL.items():
                patch.setattr(index, name, value)
        connection = build([500, 400, 300] if request.param == "every match" else [7, 180, 1, 260, 333, 90, 200, 129])
    common = {row[0] for row in connection.execute("SELECT DISTINCT term FROM contenders")}
    upto = connection.execute("SELECT value FROM meta WHERE key = 'contenders_upto'").fetchone()[0]
    if request.param == "contenders":
        assert common >= {"push", "race", "merg", "index", "queue"} and 1000 < upto < 1200
    else:
        assert not common and upto == 0
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
    assert [msgspec.to_builtins(hit) for hit in hits] == expected
    kind = KINDS[1]  # a filter: the ranking query joins the rows' columns
    hits = search(connection, query, Filters(project="demo", kinds=(kind,)), limit)
    assert [msgspec.to_builtins(hit) for hit in hits] == straight(connection, query, limit, kind)


def test_ties_go_to_the_newest_row(connection: Any) -> None:
    """The corpus holds equal scores among the best: the order among them is the rows' newest first."""
    query = fts_query("push")
    scores = [row[1] for row in connection.execute(
        "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts), rowid DESC LIMIT 10", [query])]
    assert len(set(scores)) < len(scores)


@pytest.mark.parametrize("word", WORDS)
def test_one_word_is_ranked_as_every_match_would_be(connection: Any, word: str) -> None:
    """rank() (a common word: among its contenders and the rows after them) answers RANK_SQL's answer, every limit."""
    query = fts_query(word)
    for limit in range(1, CONTENDERS + 2):
        assert rank(connection, query, limit) == connection.execute(RANK_SQL, (query, limit)).fetchall()


def test_contenders_are_those_of_every_row(connection: Any) -> None:
    """Kept a flush at a time, each common word's contenders are the ones of all its rows up to `contenders_upto`."""
    upto = connection.execute("SELECT value FROM meta WHERE key = 'contenders_upto'").fetchone()[0]
    connection.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.all_instances USING fts5vocab(main, fts, instance)")
    for (term,) in connection.execute("SELECT DISTINCT term FROM contenders").fetchall():
        counts: dict[int, int] = {}
        for (doc,) in connection.execute("SELECT doc FROM temp.all_instances WHERE term = ? AND doc <= ?",
                                         (term, upto)):
            counts[doc] = counts.get(doc, 0) + 1
        lengths = dict(connection.execute("SELECT rowid, length(body) - length(replace(body, ' ', '')) + 1"
                                          " FROM fts WHERE rowid <= ?", (upto,)).fetchall())
        expected = index.contenders([(doc, f, lengths[doc]) for doc, f in counts.items()])
        kept = connection.execute("SELECT id, f, d FROM contenders WHERE term = ?", (term,)).fetchall()
        assert sorted(kept) == sorted(expected)


@given(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 9)), max_size=60), st.integers(1, 4))
def test_contenders_are_the_rows_fewer_than_depth_others_beat(pairs: list[tuple[int, int]], depth: int) -> None:
    """index.contenders against its definition: a row is kept unless `depth` newer rows have f as high and d as low."""
    rows = [(number, f, d) for number, (f, d) in enumerate(pairs)]
    expected = [row for row in rows
                if sum(1 for other in rows if other[0] > row[0] and other[1] >= row[1] and other[2] <= row[2]) < depth]
    assert sorted(index.contenders(rows, depth)) == expected
