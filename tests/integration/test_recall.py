"""`continuity recall`: BM25 over every event's text, its filters, snippets, `--as-of` and its index."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from continuity.core.store import find_store
from continuity.recall import index
from events import names
from events.codec import default_codec
from events.sealing import seal, sha256_hex
from events.worklog import WorkLogged
from tests.helpers import cli_process

STORE = Path(".agent") / "runtime-continuity"


def recall(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    """Run `recall ... --json` in-process; its JSON answer (exit 0 required)."""
    capsys.readouterr()
    code = main(["recall", *argv, "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    found: dict[str, Any] = json.loads(out)
    return found


def ids(answer: dict[str, Any]) -> list[str]:
    return [hit["event_id"] for hit in answer["hits"]]


def log(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Append one event through the CLI; its id."""
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return str(json.loads(capsys.readouterr().out)["event_id"])


@pytest.fixture
def corpus(project: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """A fixed corpus of seven events from three agents; name -> event id."""
    return {
        "wal_blocked": log(capsys, "log", "-m", "sqlite WAL mode blocked readers during checkpoint",
                           "--agent", "alice"),
        "wal_rejected": log(capsys, "log", "-m", "rejected WAL: readers starve; chose rollback journal",
                            "--type", "decision", "--agent", "bob"),
        "merge": log(capsys, "checkpoint", "-m", "index rebuild after merge", "--next",
                     "test merge detection in the recall index", "--blocker",
                     "merge detection misses same-day events", "--agent", "alice"),
        "flaky": log(capsys, "log", "-m", "flaky test: sync push race", "--agent", "carol"),
        "fixed": log(capsys, "log", "-m", "fixed flaky sync test by retrying push", "--agent", "carol"),
        "wal_wal": log(capsys, "log", "-m", "WAL WAL", "--agent", "bob"),
        "unrelated": log(capsys, "log", "-m", "renamed the docs folder", "--agent", "alice"),
    }


def test_fixed_corpus_ranks_in_the_expected_order(corpus: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """BM25: more occurrences and shorter texts rank first; every word must match by default."""
    assert ids(recall(capsys, "WAL")) == [corpus["wal_wal"], corpus["wal_rejected"], corpus["wal_blocked"]]
    assert ids(recall(capsys, "flaky")) == [corpus["flaky"], corpus["fixed"]]
    assert ids(recall(capsys, "merge detection")) == [corpus["merge"]]
    assert ids(recall(capsys, "WAL readers")) == [corpus["wal_rejected"], corpus["wal_blocked"]]
    assert ids(recall(capsys, "reader")) == [corpus["wal_rejected"], corpus["wal_blocked"]]  # stemmed
    assert ids(recall(capsys, "nothing like this")) == []
    scores = [hit["score"] for hit in recall(capsys, "WAL")["hits"]]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]


def test_operator_mode_takes_fts5_syntax(corpus: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """--match: NOT, OR, prefix* and phrases work as FTS5 defines them."""
    assert ids(recall(capsys, "--match", "WAL NOT readers")) == [corpus["wal_wal"]]
    assert ids(recall(capsys, "--match", "retr*")) == [corpus["fixed"]]
    assert set(ids(recall(capsys, "--match", "flaky OR journal"))) == {corpus["flaky"], corpus["fixed"],
                                                                      corpus["wal_rejected"]}
    assert ids(recall(capsys, "--match", '"rollback journal"')) == [corpus["wal_rejected"]]
    assert ids(recall(capsys, "--match", '"journal rollback"')) == []


def test_filters_kind_agent_time_limit(corpus: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """--kind (exact or family), --agent, --since/--until and --limit each narrow the hits."""
    assert ids(recall(capsys, "merge", "--kind", "checkpoint.recorded")) == [corpus["merge"]]
    assert ids(recall(capsys, "merge", "--kind", "checkpoint")) == [corpus["merge"]]
    assert ids(recall(capsys, "merge", "--kind", "work.logged")) == []
    assert ids(recall(capsys, "merge", "--kind", "work", "--kind", "checkpoint")) == [corpus["merge"]]
    assert ids(recall(capsys, "WAL", "--agent", "bob")) == [corpus["wal_wal"], corpus["wal_rejected"]]
    answer = recall(capsys, "flaky")
    fixed_at = next(hit["created_at"] for hit in answer["hits"] if hit["event_id"] == corpus["fixed"])
    flaky_at = next(hit["created_at"] for hit in answer["hits"] if hit["event_id"] == corpus["flaky"])
    assert ids(recall(capsys, "flaky", "--since", fixed_at)) == [corpus["fixed"]]
    assert ids(recall(capsys, "flaky", "--until", flaky_at)) == [corpus["flaky"]]
    assert ids(recall(capsys, "flaky", "--since", "1h")) == [corpus["flaky"], corpus["fixed"]]
    assert ids(recall(capsys, "flaky", "--until", "1h")) == []
    assert ids(recall(capsys, "WAL", "--limit", "1")) == [corpus["wal_wal"]]
    # a filter that keeps everything ranks the same way (the rows are read; without filters they need not be)
    assert recall(capsys, "WAL", "--since", "2000-01-01")["hits"] == recall(capsys, "WAL")["hits"]
    # a year before 1000 is spelled with four digits, so it bounds the window like any other time
    assert recall(capsys, "WAL", "--since", "0999-01-01")["hits"] == recall(capsys, "WAL")["hits"]
    assert ids(recall(capsys, "WAL", "--until", "0999-01-01")) == []
    hit = recall(capsys, "flaky", "--agent", "carol")["hits"][0]
    assert (hit["kind"], hit["agent_id"]) == ("work.logged", "carol")


def test_each_project_is_searched_alone(corpus: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """Events of another project in the same store never show; --project searches that one."""
    other = log(capsys, "log", "-m", "WAL in the other project", "--project", "other")
    assert other not in ids(recall(capsys, "WAL"))
    assert ids(recall(capsys, "WAL")) == [corpus["wal_wal"], corpus["wal_rejected"], corpus["wal_blocked"]]
    assert ids(recall(capsys, "WAL", "--project", "other")) == [other]


@pytest.mark.parametrize("argv", [
    ["--kind", "no.such"], ["--since", "yesterday"], ["--until", "-3d"], ["--until", "10000-01-01"], ["--limit", "0"],
    ["--as-of", "soon"],
])
def test_bad_filters_are_usage_errors(corpus: dict[str, str], capsys: pytest.CaptureFixture[str],
                                      argv: list[str]) -> None:
    """An unknown kind, an unreadable time or limit, a bad point: exit 2, one line."""
    capsys.readouterr()
    assert main(["recall", "WAL", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("continuity: error: ") and err.count("\n") == 1


@pytest.mark.parametrize("flag", ["--kind", "--since", "--until", "--as-of"])
def test_a_refused_filter_never_echoes_a_secret_or_a_long_value(corpus: dict[str, str], flag: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    token = "ghp_" + "a1B2c3D4e5" * 4  # made up
    for value, shown in ((token, "(a value that looks like a secret, not shown)"), ("x" * 5000, "x" * 64 + "…'")):
        capsys.readouterr()
        assert main(["recall", "WAL", flag, value]) == 2
        err = capsys.readouterr().err
        assert shown in err and "ghp_" not in err and len(err) < 400, err


HOSTILE = ['"unclosed', "AND", "*", "a" * 10240, "NEAR(", "body:", "(", "\x1b[2J\u202e", "' OR 1=1 --", "^"]


@pytest.mark.parametrize("mode", [[], ["--match"]])
def test_hostile_queries_get_an_answer_or_one_error_line(corpus: dict[str, str], mode: list[str]) -> None:
    """Malformed queries, as a real process: exit 0 or 2, at most one stderr line, never a traceback."""
    root = Path.cwd()
    for query in HOSTILE:
        done = cli_process("recall", query, *mode, cwd=root)
        assert done.returncode in (0, 2), (query[:20], done.stderr)
        assert "Traceback" not in done.stderr + done.stdout
        if done.returncode == 2:
            assert done.stderr.startswith("continuity: error: ") and done.stderr.count("\n") == 1
            assert "\x1b" not in done.stderr and "\u202e" not in done.stderr


@pytest.mark.parametrize("query", ["*id", "*reads", "* id", "*ID", "*"])
def test_a_match_query_starting_with_a_star_is_refused_and_the_index_kept(
        corpus: dict[str, str], capsys: pytest.CaptureFixture[str], query: str) -> None:
    """FTS5 reads `--match '*id'` or `'*reads'` as one of its diagnostics, not a search, and answers rows the index
    does not hold: it was an internal error (exit 70) after the index was thrown away and rebuilt as damaged. Now a
    usage error (exit 2); the index is the same file, untouched."""
    assert ids(recall(capsys, "WAL")) == [corpus["wal_wal"], corpus["wal_rejected"], corpus["wal_blocked"]]
    connection = sqlite3.connect(index.index_path(find_store()))
    with connection:
        connection.execute("INSERT OR REPLACE INTO meta VALUES ('marker', 'kept')")
    connection.close()
    for mode in (["--match"], ["--match", "--as-of", corpus["fixed"]], ["--match", "--kind", "work.logged"]):
        assert main(["recall", query, *mode]) == 2, mode
        out = capsys.readouterr()
        assert out.err.startswith("continuity: error: invalid search syntax: ") and out.err.count("\n") == 1
    connection = sqlite3.connect(index.index_path(find_store()))
    assert connection.execute("SELECT value FROM meta WHERE key = 'marker'").fetchall() == [("kept",)]
    connection.close()


def test_the_issue_malformed_queries_each_answer_as_documented(corpus: dict[str, str],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Words mode searches `"unclosed` and `AND` as words; `*` and 10 KB are errors; --match refuses all four."""
    for query, code in (('"unclosed', 0), ("AND", 0), ("*", 2), ("x" * 10240, 2)):
        assert main(["recall", query]) == code, query[:20]
        assert main(["recall", query, "--match"]) == 2, query[:20]
    out = capsys.readouterr()
    assert "invalid search syntax: unterminated string" in out.err
    assert 'syntax error near "AND"' in out.err
    assert "has no words to search for" in out.err
    assert "10240 characters long" in out.err


def test_snippets_mark_matches_and_are_neutralized(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A snippet brackets the match; bidi overrides, C1 controls and line breaks cannot reach the terminal."""
    event = log(capsys, "log", "-m", "deploy \u202eevil\u202c then \x9b31m red\nFAKE RCE-2026 forged line")
    capsys.readouterr()
    assert main(["recall", "deploy"]) == 0
    out = capsys.readouterr().out
    assert event in out and "[deploy]" in out
    assert "\u202e" not in out and "\x9b" not in out
    assert len(out.splitlines()) == 2 and not out.splitlines()[1].startswith("FAKE")
    hit = recall(capsys, "forged")["hits"][0]
    assert "[forged]" in hit["snippet"] and "\n" not in hit["snippet"]


def test_text_holding_the_snippet_marks_never_forges_a_match(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A goal holding \\x02 and \\x03 (the bytes FTS5 marks a match with; `note` is not checked for controls)
    showed `[FAKE]` as a match; they show as their control pictures, in text and JSON, and an index built
    before (its rows holding the raw bytes) is rebuilt."""
    from continuity.recall import plain

    log(capsys, "log", "-m", "goalnote zzgoal", "--note-json", '{"goal": "\\u0002FAKE\\u0003 zzgoal"}')
    capsys.readouterr()
    assert main(["recall", "zzgoal"]) == 0
    out = capsys.readouterr().out
    assert "[zzgoal]" in out and "[FAKE]" not in out and "\u2402FAKE\u2403" in out
    assert "[FAKE]" not in recall(capsys, "zzgoal")["hits"][0]["snippet"]
    connection = sqlite3.connect(index.index_path(find_store()))
    with connection:  # as rows format 2 (the release before) left it: the raw bytes indexed
        connection.execute("UPDATE fts SET body = replace(replace(body, char(9218), char(2)), char(9219), char(3))")
        connection.execute("UPDATE meta SET value = ? WHERE key = 'format'", (plain.SCHEMA_FORMAT * 100 + 2,))
    connection.close()
    answer = recall(capsys, "zzgoal")
    assert answer["rebuilt"] and "[FAKE]" not in answer["hits"][0]["snippet"]


def test_accents_match_composed_or_decomposed(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A word typed with decomposed accents (e + U+0301, as macOS file names and some editors give them) finds
    the same events as the composed one, whichever form the log holds; with the fast path and --match too."""
    import unicodedata

    nfc = log(capsys, "log", "-m", "café résumé naïve")
    nfd = log(capsys, "log", "-m", unicodedata.normalize("NFD", "crème brûlée"))
    for word, wanted in (("résumé", nfc), ("brûlée", nfd), ("naïve", nfc), ("crème", nfd)):
        for form in ("NFC", "NFD"):
            typed = unicodedata.normalize(form, word)
            assert ids(recall(capsys, typed)) == [wanted], (word, form)
            assert ids(recall(capsys, typed, "--limit", "11")) == [wanted], (word, form)
        assert ids(recall(capsys, "resume")) == [nfc]  # accents ignored, as before


def copy_until(source: Path, target: Path, last: str) -> None:
    """A fresh store holding the events of `source` up to `last` (a file name)."""
    shutil.copytree(source / STORE, target / STORE, ignore=shutil.ignore_patterns("local", "events"))
    for path in sorted((source / STORE / "events").rglob("*.json")):
        if path.name <= last:
            (target / STORE / "events" / path.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / STORE / "events" / path.parent.name / path.name)


def test_as_of_answers_as_the_log_stood_then(corpus: dict[str, str], capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    """--as-of an event gives exactly what a store holding only the log up to it gives, scores included."""
    then = recall(capsys, "WAL", "--as-of", corpus["wal_rejected"])
    assert ids(then) == [corpus["wal_rejected"], corpus["wal_blocked"]]
    store = find_store()
    last = store.open_reader().find(corpus["wal_rejected"]).name
    old = tmp_path / "old"
    copy_until(Path.cwd(), old, last)
    expected = recall(capsys, "WAL", "--root", str(old))
    assert then["hits"] == expected["hits"]
    assert then["hits"] != recall(capsys, "WAL")["hits"][1:]  # today's scores differ: more events, other IDF
    assert ids(recall(capsys, "flaky", "--as-of", corpus["merge"])) == []


def index_rows(root: Path) -> list[tuple[Any, ...]]:
    connection = sqlite3.connect(root / STORE / "local" / index.INDEX_NAME)
    try:
        return list(index.rows(connection))
    finally:
        connection.close()


def rebuilt_rows(root: Path) -> list[tuple[Any, ...]]:
    """The rows a full build from the log gives, in memory."""
    connection = index.connect(":memory:")
    index.catch_up(connection, find_store(root=str(root)).open_reader(), rebuild=True)
    return list(index.rows(connection))


def test_incremental_catch_up_equals_a_rebuild(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Recall after each of several rounds of writes: the index holds exactly what a rebuild holds."""
    for round_ in range(4):
        for i in range(round_ * 3 + 1):
            log(capsys, "log", "-m", f"round {round_} entry {i} about caching", "--agent", f"a{i % 2}")
        answer = recall(capsys, "caching", "--limit", "1000")
        assert answer["rebuilt"] is (round_ == 0)
        assert answer["indexed"] == round_ * 3 + 1
        assert index_rows(project) == rebuilt_rows(project)
    assert len(recall(capsys, "caching", "--limit", "1000")["hits"]) == 1 + 4 + 7 + 10


def test_an_event_merged_into_the_past_rebuilds_the_index(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file landing in an older day folder (a git merge): rebuilt with a warning, equal to a rebuild."""
    log(capsys, "log", "-m", "today about lanterns")
    recall(capsys, "lanterns")
    store = find_store()
    past = seal(WorkLogged(project="demo", message="yesterday about lanterns too"),
                at_us=1_700_000_000_000_000, node="othernod", prev=None, codec=default_codec())
    day = store.events_dir + "/" + names.shard_of(past.name)
    os.makedirs(day, exist_ok=True)
    Path(day, past.name).write_bytes(past.raw)
    capsys.readouterr()
    assert main(["recall", "lanterns", "--json"]) == 0
    out = capsys.readouterr()
    answer = json.loads(out.out)
    assert answer["rebuilt"] is True and len(answer["hits"]) == 2
    assert "rebuilt" in out.err
    assert index_rows(project) == rebuilt_rows(project)


def test_a_rebuild_in_place_leaves_the_text_index_as_a_fresh_build(project: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A rebuild over an existing index: FTS5's own tables as a build from nothing gives (no delete markers)."""
    for i in range(30):
        log(capsys, "log", "-m", f"entry {i} about lanterns and caching")
    recall(capsys, "lanterns")

    def text_index(connection: sqlite3.Connection) -> list[tuple[Any, ...]]:
        return connection.execute("SELECT id, block FROM fts_data ORDER BY id").fetchall()

    connection = index.connect(str(project / STORE / "local" / index.INDEX_NAME))
    index.catch_up(connection, find_store().open_reader(), rebuild=True)
    fresh = index.connect(":memory:")
    index.catch_up(fresh, find_store().open_reader(), rebuild=True)
    assert text_index(connection) == text_index(fresh)
    connection.close()


@pytest.mark.parametrize("schema", ["CREATE TABLE meta(x)", "CREATE VIEW meta AS SELECT 1 AS key, 2 AS value",
                                    "CREATE TABLE meta(key, value); INSERT INTO meta VALUES ('format', 99); "
                                    "CREATE TABLE docs(x)",
                                    "CREATE TABLE docs(id, other)"])
def test_an_index_file_of_other_tables_is_replaced(project: Path, capsys: pytest.CaptureFixture[str],
                                                   schema: str) -> None:
    """A SQLite file of other tables where the index belongs (planted, another program's): the answer stands,
    the file is replaced by the index (the next recall says nothing), not re-indexed in memory every time."""
    event = log(capsys, "log", "-m", "about turbines")
    path = project / STORE / "local" / index.INDEX_NAME
    index._remove(str(path))
    planted = sqlite3.connect(path)
    planted.executescript(schema)
    planted.close()
    capsys.readouterr()
    assert main(["recall", "turbines"]) == 0
    captured = capsys.readouterr()
    assert event in captured.out and "built in memory" not in captured.err
    assert main(["recall", "turbines"]) == 0
    again = capsys.readouterr()
    assert event in again.out and again.err == ""
    assert main(["rebuild"]) == 0
    assert "memory" not in capsys.readouterr().err


def test_a_corrupt_index_file_is_rebuilt(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Garbage in local/recall.sqlite3: the answer stands, a warning says the index was rebuilt."""
    event = log(capsys, "log", "-m", "about turbines")
    path = project / STORE / "local" / index.INDEX_NAME
    path.write_bytes(b"not a database at all" * 100)
    capsys.readouterr()
    assert main(["recall", "turbines"]) == 0
    out = capsys.readouterr()
    assert event in out.out and "unreadable" in out.err
    assert index_rows(project) == rebuilt_rows(project)


def test_an_index_with_a_damaged_page_only_a_search_reads_is_rebuilt(project: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The text's root page of a valid index overwritten: catching up reads only meta and passes, the search met
    "database disk image is malformed" and every recall ended in exit 70 until `rebuild`. Now the search rebuilds
    the index (a cache) with a warning and answers; the next recall finds a sound index."""
    first = log(capsys, "log", "-m", "push race queue retry")
    for number in range(60):
        log(capsys, "log", "-m", f"entry {number} backoff number {number}")
    assert ids(recall(capsys, "queue")) == [first]
    path = project / STORE / "local" / index.INDEX_NAME
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    root = connection.execute("SELECT rootpage FROM sqlite_master WHERE name = 'fts_data'").fetchone()[0]
    size = connection.execute("PRAGMA page_size").fetchone()[0]
    connection.close()
    with path.open("r+b") as file:
        file.seek((root - 1) * size)
        file.write(b"\xff" * size)
    capsys.readouterr()
    assert main(["recall", "queue"]) == 0
    out = capsys.readouterr()
    assert first in out.out and "malformed" in out.err and "rebuilt it" in out.err
    assert main(["recall", "queue"]) == 0
    again = capsys.readouterr()
    assert first in again.out and again.err == ""
    assert index_rows(project) == rebuilt_rows(project)


def test_text_data_that_sqlite_cannot_decode_is_rebuilt_too(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A leaf of the text index's data overwritten: FTS5 decoding it answers SQLITE_NOMEM, which Python raises as
    MemoryError, and every recall ended in exit 70 ("internal error: MemoryError") until `rebuild`. It is a
    damaged cache like any other: rebuilt with a warning, answered; the next recall finds a sound index."""
    import random

    chance = random.Random(7)
    common, rare = ["deploy", "build", "test", "flaky", "cache"], ["alpha", "bravo", "charlie", "delta", "golf"]
    store = find_store(root=str(project))
    codec, prev = default_codec(), None
    for number in range(3000):
        words = [chance.choice(common) for _ in range(chance.randint(1, 4))] + [
            chance.choice(rare) for _ in range(chance.randint(0, 20))]
        stored = seal(WorkLogged(project="demo", message=" ".join(words) + f" n{number}"),
                      at_us=1_780_000_000_000_000 + number * 1_000_000, node="fixture1", prev=prev, codec=codec)
        prev = sha256_hex(stored.raw)
        folder = Path(store.events_dir, names.shard_of(stored.name))
        folder.mkdir(exist_ok=True)
        (folder / stored.name).write_bytes(stored.raw)
    expected = ids(recall(capsys, "alpha"))
    path = project / STORE / "local" / index.INDEX_NAME
    connection = sqlite3.connect(path)
    block_id, block = connection.execute("SELECT id, block FROM fts_data WHERE id > 10 ORDER BY id LIMIT 1 OFFSET 1"
                                         ).fetchone()
    connection.execute("UPDATE fts_data SET block = ? WHERE id = ?", (block[:4] + b"\xff" * 1996 + block[2000:],
                                                                        block_id))
    connection.commit()
    connection.close()
    capsys.readouterr()
    assert main(["recall", "alpha", "--json"]) == 0
    out = capsys.readouterr()
    assert ids(json.loads(out.out)) == expected and "rebuilt it" in out.err, out.err
    assert ids(recall(capsys, "alpha")) == expected and capsys.readouterr().err == ""
    assert cli_process("recall", "alpha", cwd=project).returncode == 0


def test_a_real_memory_shortage_keeps_the_index(project: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """MemoryError is also a real shortage (a container's limit; `ulimit -v` shows it), where the first version
    deleted a sound index and failed in its rebuild, leaving a part of one. The index is built in memory first: a
    shortage fails that too and the file on disk stays as it was. (The shortage is raised here by the search and
    by every build: a test cannot limit its own memory reliably.)"""
    from continuity.recall import plain, search

    event = log(capsys, "log", "-m", "about turbines")
    assert ids(recall(capsys, "turbines")) == [event]
    path = project / STORE / "local" / index.INDEX_NAME
    before = index_rows(project)

    def short(*args: Any, **kwargs: Any) -> Any:
        raise MemoryError

    real_catch_up = index.catch_up
    with monkeypatch.context() as shortage:
        shortage.setattr(plain, "ranked_rows", short)  # the fast path's
        shortage.setattr(search, "ranked_rows", short)  # the command's
        shortage.setattr(index, "catch_up", lambda connection, *args, **kwargs: short() if kwargs.get("rebuild")
                         else real_catch_up(connection, *args, **kwargs))
        capsys.readouterr()
        assert main(["recall", "turbines"]) == 5  # the machine's limit, not a bug (docs/cli.md's exit 5)
        assert "out of memory" in capsys.readouterr().err
    assert path.exists() and index_rows(project) == before
    assert ids(recall(capsys, "turbines")) == [event] and capsys.readouterr().err == ""


def test_a_ranked_row_the_table_no_longer_holds_is_damage_and_rebuilt(project: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A damaged page of the rows' table (SQLite reads past it) lost rows the ranking names: `recall` answered 995
    of 1000 hits, exit 0, no warning. Fewer rows than ranked is damage: rebuilt with a warning, answered whole."""
    events = [log(capsys, "log", "-m", f"turbine blade {number}") for number in range(12)]
    expected = ids(recall(capsys, "turbine", "--limit", "50"))
    assert sorted(expected) == sorted(events)
    connection = sqlite3.connect(project / STORE / "local" / index.INDEX_NAME)
    connection.execute("DELETE FROM docs WHERE id = (SELECT max(id) FROM docs)")  # as a page SQLite reads past
    connection.commit()
    connection.close()
    capsys.readouterr()
    assert main(["recall", "turbine", "--limit", "50", "--json"]) == 0
    out = capsys.readouterr()
    assert ids(json.loads(out.out)) == expected and "ranked 12 rows and holds 11" in out.err, out.err


def test_a_symlinked_index_is_not_followed(project: Path, capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    """local/recall.sqlite3 as a link out of the store: answered from memory, the target untouched."""
    event = log(capsys, "log", "-m", "about turbines")
    target = tmp_path / "elsewhere.db"
    target.write_bytes(b"")
    (project / STORE / "local" / index.INDEX_NAME).symlink_to(target)
    capsys.readouterr()
    assert main(["recall", "turbines"]) == 0
    out = capsys.readouterr()
    assert event in out.out and "in memory" in out.err
    assert target.read_bytes() == b""


@pytest.mark.parametrize("planted", ["local is a link", "models is a file"])
def test_a_local_folder_that_cannot_be_trusted_is_answered_from_memory(project: Path, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str],
                                                                       planted: str) -> None:
    """A `local/` planted as a link (or a `local/models` that is no folder): `recall` failed (exit 6) where every
    other read answers from the log with a warning. It answers from an index built in memory; nothing is written
    through the link."""
    event = log(capsys, "log", "-m", "about turbines")
    local = project / STORE / "local"
    if planted == "local is a link":
        elsewhere = tmp_path / "elsewhere"
        shutil.move(str(local), elsewhere)
        local.symlink_to(elsewhere)
        before = sorted(str(path) for path in elsewhere.rglob("*"))
    else:
        shutil.rmtree(local / "models", ignore_errors=True)
        (local / "models").write_text("not a folder")
    capsys.readouterr()
    for as_of in ([], ["--as-of", event], ["--as-of", event, "--since", "1h"]):
        assert main(["recall", "turbines", *as_of]) == 0, as_of
        out = capsys.readouterr()
        assert event in out.out and "answered from an index built in memory" in out.err, (as_of, out.err)
    if planted == "local is a link":
        assert sorted(str(path) for path in elsewhere.rglob("*")) == before


def write_events(root: Path, count: int) -> None:
    """`count` events sealed straight into the store (a fixture, not the write path)."""
    store = find_store(root=str(root))
    codec, prev = default_codec(), None
    start = 1_780_000_000_000_000
    for i in range(count):
        stored = seal(WorkLogged(project="demo", message=f"event {i} about topic{i % 50} and more words"),
                      at_us=start + i * 1_000_000, node="fixture1", prev=prev, codec=codec)
        prev = sha256_hex(stored.raw)
        folder = Path(store.events_dir, names.shard_of(stored.name))
        folder.mkdir(exist_ok=True)
        (folder / stored.name).write_bytes(stored.raw)


def test_kill9_mid_build_leaves_a_usable_index(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A build killed after a committed batch: the next recall goes on from there; equal to a rebuild."""
    write_events(project, 5 * index.BATCH)
    path = project / STORE / "local" / index.INDEX_NAME
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    position = None
    for _attempt in range(5):
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        child = subprocess.Popen([sys.executable, "-m", "continuity", "recall", "topic7"], cwd=project, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and child.poll() is None:
            try:
                connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
                position = connection.execute("SELECT value FROM meta WHERE key='last_read'").fetchone()
                connection.close()
            except sqlite3.Error:
                position = None
            if position is not None:
                break
            time.sleep(0.002)
        alive = child.poll() is None
        child.send_signal(signal.SIGKILL)
        child.wait()
        if alive and position is not None:
            break
    else:
        pytest.fail("the build never got killed mid-way")
    connection = sqlite3.connect(path)
    killed_at = index.position_of(connection)
    kept = connection.execute("SELECT COUNT(*) FROM docs").fetchone()[0]
    connection.close()
    assert killed_at is not None and 0 < kept < 5 * index.BATCH
    answer = recall(capsys, "topic7", "--limit", "1000")
    assert answer["rebuilt"] is False and answer["indexed"] == 5 * index.BATCH - kept
    assert len(answer["hits"]) == 5 * index.BATCH // 50
    assert index_rows(project) == rebuilt_rows(project)


def test_an_interrupted_index_build_closes_its_connection(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C mid-build: the connection is closed on the way out (SQLite folds its write-ahead log back and
    removes it), not left for an interpreter shutdown the command skips; the next answer builds on."""
    write_events(project, 3)
    real, opened = index.catch_up, []

    def interrupted(connection: sqlite3.Connection, *args: Any, **kwargs: Any) -> index.CatchUp:
        opened.append(connection)
        connection.execute("INSERT INTO meta(key, value) VALUES ('probe', 1)")  # a write: the -wal file exists
        raise KeyboardInterrupt

    monkeypatch.setattr(index, "catch_up", interrupted)
    with pytest.raises(KeyboardInterrupt):
        index.open_current(find_store(root=str(project)), find_store(root=str(project)).open_reader())
    with pytest.raises(sqlite3.ProgrammingError):
        opened[0].execute("SELECT 1")  # closed
    path = project / STORE / "local" / index.INDEX_NAME
    assert path.exists() and not Path(f"{path}-wal").exists()
    monkeypatch.setattr(index, "catch_up", real)
    connection, outcome = index.open_current(find_store(root=str(project)), find_store(root=str(project)).open_reader())
    connection.close()
    assert outcome.indexed == 3

LOADED = ("import sys, runpy; sys.argv = ['continuity', *sys.argv[1:]]\n"
          "try:\n    runpy.run_module('continuity', run_name='__main__')\nexcept SystemExit:\n    pass\n"
          "sys.stderr.write(repr(sorted(m for m in sys.modules if m.startswith(('continuity.recall', 'sqlite3', "
          "'_sqlite3', 'tqdm', 'projections.recall')))))\n")


@pytest.mark.parametrize("argv, stdin", [
    (["log", "-m", "about caching"], None),
    (["hook", "claude-code"], "claude_post_tool_use_edit"),
])
def test_the_hook_path_loads_nothing_of_recall(project: Path, argv: list[str], stdin: str | None) -> None:
    """`continuity log` and a record-only hook, as real processes: no recall module, no sqlite3, no tqdm."""
    from tests.integration.test_hooks import payload

    data = payload(stdin, project) if stdin else None
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    done = subprocess.run([sys.executable, "-c", LOADED, *argv], cwd=project, env=env, input=data,
                          capture_output=True, text=True, timeout=60)
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr
    assert len(list((project / STORE / "events").rglob("*.json"))) == 1


# -- the fast path (continuity/recall/plain.py) ---------------------------------------------------
def test_the_fast_path_rows_format_is_the_projection_s() -> None:
    """plain.py repeats projections/recall.py's FORMAT (to stay off msgspec): the two never drift."""
    from continuity.recall import plain
    from projections import recall as texts

    assert plain.ROWS_FORMAT == texts.FORMAT and index.FORMAT == plain.FORMAT


def both_ways(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
              argv: list[str]) -> tuple[bool, tuple[int, str, str]]:
    """Run argv with the fast path, then with it turned off; whether it answered, and the common answer."""
    from continuity.recall import plain

    real, answered = plain.run, []

    def watched(args: list[str]) -> int | None:
        code = real(args)
        answered.append(code is not None)
        return code

    monkeypatch.setattr(plain, "run", watched)
    capsys.readouterr()
    fast = (main(argv), *capsys.readouterr())
    monkeypatch.setattr(plain, "run", lambda args: None)
    slow = (main(argv), *capsys.readouterr())
    monkeypatch.setattr(plain, "run", real)
    assert fast == slow, argv
    return bool(answered and answered[0]), fast


FAST = [["recall", "WAL"], ["recall", "WAL", "--json"], ["--json", "recall", "readers", "--limit", "1"],
        ["recall", "WAL NOT readers", "--match"], ["recall", "--limit=2", "flaky", "--match"],
        ["recall", "nothing like this"], ["recall", "recall"]]
SLOW = [["recall", "WAL", "--kind", "work"], ["recall", "WAL", "--agent", "bob"], ["recall", "WAL", "--lim", "2"],
        ["recall", "*"], ["recall", '"unclosed', "--match"], ["recall", "x" * 2000], ["recall", "WAL", "--limit", "0"],
        ["recall", "WAL", "--as-of", "2000-01-01"], ["recall", "-x"], ["recall", "WAL", "--debug"]]


def test_the_fast_path_answers_exactly_as_the_command(corpus: dict[str, str], capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """With a current index, plain queries take the fast path; every argv answers the same bytes both ways."""
    recall(capsys, "warm")  # the index is current from here
    for argv in FAST:
        taken, (code, _out, _err) = both_ways(capsys, monkeypatch, argv)
        assert taken and code == 0, argv
    assert corpus["wal_wal"] in both_ways(capsys, monkeypatch, FAST[0])[1][1]
    for argv in SLOW:
        taken, _ = both_ways(capsys, monkeypatch, argv)
        assert not taken, argv


def test_common_words_answer_the_same_through_their_contenders(corpus: dict[str, str],
                                                              capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """An index keeping common words' contenders (thresholds made tiny), rows after them too: the same bytes."""
    from continuity.recall import plain

    for name, value in {"COMMON": 2, "TAIL": 3, "PROMOTE": 1}.items():
        monkeypatch.setattr(index, name, value)
    recall(capsys, "warm")
    log(capsys, "log", "-m", "WAL again, newest", "--agent", "bob")
    recall(capsys, "warm")
    connection = sqlite3.connect(index.index_path(find_store()))
    common = {row[0] for row in connection.execute("SELECT DISTINCT term FROM contenders")}
    upto, last = connection.execute("SELECT (SELECT value FROM meta WHERE key = 'contenders_upto'),"
                                    " (SELECT max(id) FROM docs)").fetchone()
    connection.close()
    assert {"wal", "flaki", "reader"} <= common and 0 < upto < last
    for argv in (["recall", "WAL"], ["recall", "flaky", "--json"], ["recall", "readers", "--limit", "1"],
                 ["recall", "WAL", "--limit", str(plain.CONTENDERS + 1)]):
        taken, (code, _out, _err) = both_ways(capsys, monkeypatch, argv)
        assert taken and code == 0, argv
    ranked = ids(recall(capsys, "WAL"))
    assert ranked[0] == corpus["wal_wal"] and len(ranked) == 4  # the straight ranking (checked above)


def fast_answers(capsys: pytest.CaptureFixture[str], argv: list[str]) -> bool:
    """Whether the fast path answers argv now (it prints only when it does)."""
    from continuity.recall import plain

    capsys.readouterr()
    taken = plain.run(argv) is not None
    assert bool(capsys.readouterr().out) is taken
    return taken


def test_the_fast_path_steps_aside_unless_the_index_is_current(corpus: dict[str, str], project: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """No index, an event since, an event merged into the past, another project: the command answers."""
    argv = ["recall", "WAL", "--json"]
    assert not fast_answers(capsys, argv)  # no index yet
    recall(capsys, "warm")
    assert fast_answers(capsys, argv)
    log(capsys, "log", "-m", "one more WAL note")
    assert not fast_answers(capsys, argv)
    recall(capsys, "warm")
    assert fast_answers(capsys, argv)
    store = find_store()
    past = seal(WorkLogged(project="demo", message="an old WAL note"), at_us=1_700_000_000_000_000,
                node="othernod", prev=None, codec=default_codec())
    day = Path(store.events_dir, names.shard_of(past.name))
    day.mkdir(exist_ok=True)
    (day / past.name).write_bytes(past.raw)
    assert not fast_answers(capsys, argv)
    recall(capsys, "warm")
    assert fast_answers(capsys, argv)
    import time

    Path(store.events_dir, names.last_day(time.time_ns() // 1000)).mkdir()  # an empty day folder the index has not seen
    assert not fast_answers(capsys, argv)
    recall(capsys, "warm")
    assert fast_answers(capsys, argv)
    Path(store.events_dir, "20991231").mkdir()  # a day of events stamped early: the typed path answers, and warns
    assert not fast_answers(capsys, argv)
    Path(store.events_dir, "20991231").rmdir()
    log(capsys, "log", "-m", "WAL elsewhere", "--project", "other")
    recall(capsys, "warm")
    assert not fast_answers(capsys, argv)  # two projects: the rows must be read to filter


def test_the_fast_path_loads_neither_msgspec_nor_argparse(corpus: dict[str, str], project: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`recall QUERY` on a current index, as a real process: the answer, without msgspec, argparse or typing."""
    recall(capsys, "warm")
    probe = LOADED.replace("'continuity.recall', 'sqlite3', '_sqlite3', 'tqdm', 'projections.recall'",
                           "'msgspec', 'argparse', 'typing'")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    done = subprocess.run([sys.executable, "-c", probe, "recall", "WAL"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=60)
    assert corpus["wal_wal"] in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr


def test_two_recalls_at_once_index_each_event_once(project: Path) -> None:
    """Two processes building the index at the same moment: both answer; the index equals a rebuild."""
    write_events(project, 3 * index.BATCH)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    children = [subprocess.Popen([sys.executable, "-m", "continuity", "recall", "topic3", "--json"], cwd=project,
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(2)]
    answers = [child.communicate(timeout=120) for child in children]
    assert [child.returncode for child in children] == [0, 0], answers
    # Each event lands in the file once: one built it and the other found it current, or they
    # took turns between batches; one that waited past the lock's bound answers from memory.
    on_disk = [json.loads(out)["indexed"] for out, err in answers if "built in memory" not in err]
    assert on_disk and sum(on_disk) == 3 * index.BATCH, answers
    assert json.loads(answers[0][0])["hits"] == json.loads(answers[1][0])["hits"]
    assert index_rows(project) == rebuilt_rows(project)


def test_a_read_only_store_is_answered_from_memory(corpus: dict[str, str], project: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A store that cannot be written: recall still answers, from an index built in memory, with a warning."""
    from tests.helpers import make_read_only

    mounted = make_read_only(project / STORE)
    try:
        done = cli_process("recall", "WAL", "--json", cwd=project)
    finally:
        for path in mounted:
            subprocess.run(["umount", str(path)], check=True)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert [hit["event_id"] for hit in answer["hits"]] == [corpus["wal_wal"], corpus["wal_rejected"],
                                                          corpus["wal_blocked"]]
    assert "in memory" in done.stderr and "Traceback" not in done.stderr


def test_a_locked_index_is_kept_and_the_answer_comes_from_memory(corpus: dict[str, str], project: Path,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process holding the index's write lock past the wait: answered from memory, the file untouched."""
    recall(capsys, "warm")
    path = project / STORE / "local" / index.INDEX_NAME
    monkeypatch.setattr(index, "BUSY_MS", 50)
    inode = path.stat().st_ino
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        log(capsys, "log", "-m", "a WAL note while the index is locked")
        capsys.readouterr()
        assert main(["recall", "WAL", "--json"]) == 0
        out = capsys.readouterr()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "database is locked" in out.err and "in memory" in out.err
    assert len(json.loads(out.out)["hits"]) == 4
    assert "unreadable" not in out.err and path.stat().st_ino == inode  # the file was not thrown away


@pytest.mark.parametrize("only_project", [True, False])
def test_a_search_reads_its_ranking_and_rows_in_one_snapshot(corpus: dict[str, str],
                                                              capsys: pytest.CaptureFixture[str],
                                                              only_project: bool) -> None:
    """Another process rewriting the index between the ranking and the rows it names (a rebuild renumbers
    rows) is not seen halfway: a second real connection commits a change just before the rows are read."""
    from continuity.recall.search import Filters, search

    recall(capsys, "WAL")  # builds the index
    path = index.index_path(find_store())
    reader = index.open_existing(path)
    assert reader is not None
    writer = sqlite3.connect(path, isolation_level=None)

    def meanwhile(statement: str) -> None:
        if statement.startswith("SELECT d.id, d.event_id"):  # the rows of the ranking: rewrite them first
            writer.execute("UPDATE docs SET event_id = 'RCE-rewritten'")

    reader.set_trace_callback(meanwhile)
    filters = Filters(project="demo") if only_project else Filters(project="demo", agent="alice")
    hits = search(reader, '"WAL"', filters)
    reader.set_trace_callback(None)
    expected = {corpus["wal_blocked"], corpus["wal_rejected"]} if only_project else {corpus["wal_blocked"]}
    assert {hit.event_id for hit in hits} >= expected and "RCE-rewritten" not in {hit.event_id for hit in hits}
    assert not reader.in_transaction
    assert search(reader, '"WAL"', filters)[0].event_id == "RCE-rewritten"  # the next search sees the change
    reader.close()
    writer.close()


def test_a_search_past_its_time_budget_is_stopped_with_one_line(project: Path, capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Many prefix terms with a large limit (snippets per row and per term: minutes at a few hundred terms) stop at
    the budget: one usage line, on the argparse command, the fast path and MCP alike."""
    import random

    from continuity.adapters.mcp.registry import call
    from continuity.recall import plain

    rng = random.Random(7)
    vocabulary = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))
                  for _ in range(3000)]
    find_store(root=str(project)).open_log().append_many(
        [WorkLogged(project="demo", message=" ".join(rng.choice(vocabulary) for _ in range(20))) for _ in range(2000)])
    query = " OR ".join(f"{letter}*" for letter in "abcdefghijklmnop")
    monkeypatch.setattr(plain, "SEARCH_SECONDS", 0.05)
    for _ in range(2):  # the first builds the index (the argparse command), the second takes the fast path
        capsys.readouterr()
        assert main(["recall", "--match", query, "--limit", "1000"]) == 2
        err = capsys.readouterr().err
        assert "the search ran past 0.05 s and was stopped" in err and err.count("\n") == 1, err
    import importlib

    importlib.import_module("continuity.adapters.mcp.recall_tools")
    with pytest.raises(plain.SearchTooLong):
        call("recall", {"query": query, "match": True, "limit": 1000}, root=str(project))
    assert main(["recall", "--match", "a*", "--limit", "3"]) == 0  # a search within the budget answers


def test_words_wrapped_in_bidi_isolates_are_found(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Text copied from right-to-left sources: `\u2066fooword\u2069` was one term for the index (unicode61 reads
    Unicode 6.1, where the isolates were unassigned) and `recall fooword` never found it; the Arabic letter mark
    likewise. An index of the earlier format is rebuilt."""
    wrapped = log(capsys, "log", "-m", "see \u2066fooword\u2069 now, and bar\u061cbaz")
    plain = log(capsys, "log", "-m", "plain fooword here")
    for query, wanted in (("fooword", {wrapped, plain}), ("baz", {wrapped}), ("bar", {wrapped})):
        assert {hit["event_id"] for hit in recall(capsys, query)["hits"]} == wanted, query
    assert {hit["event_id"] for hit in recall(capsys, "fooword*", "--match")["hits"]} == {wrapped, plain}


def test_an_event_caught_mid_copy_is_indexed_once_it_is_whole(project: Path, capsys: pytest.CaptureFixture[str]
                                                              ) -> None:
    """A file read half-written (a copy, a sync mid-way) was skipped and never searched again until `rebuild`;
    the index keeps it to try again, and indexes it (in order, by a rebuild) once it reads."""
    log(capsys, "log", "-m", "alpha baseline")
    quokka = log(capsys, "log", "-m", "quokka sighting recorded")
    log(capsys, "log", "-m", "gamma third")
    path = next(p for p in (project / STORE / "events").rglob("*.json") if b"quokka" in p.read_bytes())
    whole = path.read_bytes()
    path.write_bytes(whole[:40])
    answer = recall(capsys, "gamma")
    assert len(answer["hits"]) == 1 and "skipped 1 unreadable" in " ".join(answer["warnings"])
    assert recall(capsys, "quokka")["hits"] == []
    path.write_bytes(whole)
    found = recall(capsys, "quokka")
    assert ids(found) == [quokka] and "is whole now" in " ".join(found["warnings"])
    assert ids(recall(capsys, "quokka")) == [quokka] and recall(capsys, "quokka")["warnings"] == []


def test_events_of_a_kind_an_older_release_read_past_are_searched_after_the_upgrade(
        project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The recall index names the kinds it read past as unknown, as the read models do; the release that knows
    one rebuilds the index, so those events are found without a `rebuild`."""
    from tests.helpers import release_without

    zebra = log(capsys, "log", "-m", "zebrafish migration done")
    with release_without(monkeypatch, "work.logged"):
        assert recall(capsys, "zebrafish")["hits"] == []
        again = recall(capsys, "zebrafish")  # no rebuild loop on the old release
        assert again["hits"] == [] and "rebuilt" not in " ".join(again["warnings"])
    found = recall(capsys, "zebrafish")
    assert ids(found) == [zebra] and "a kind this release reads" in " ".join(found["warnings"])


@pytest.mark.parametrize(("unread", "taken"), [(b"[]", True), ("[]", True), (b'["x"]', False), ("junk", False)])
def test_the_fast_path_leaves_an_index_with_events_to_try_again_to_the_command(
        corpus: dict[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        unread: bytes | str, taken: bool) -> None:
    """Events read past (`unread`, `unknown` in meta) are tried again by the command's catch-up, not by the fast
    path: it answers only when both lists are empty, whether SQLite holds `[]` as a blob or as text."""
    recall(capsys, "warm")
    connection = sqlite3.connect(index.index_path(find_store()))
    connection.execute("UPDATE meta SET value = ? WHERE key = 'unread'", (unread,))
    connection.commit()
    connection.close()
    assert both_ways(capsys, monkeypatch, ["recall", "WAL"])[0] is taken


def test_a_query_that_looks_like_a_secret_is_echoed_redacted(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The answer repeats its query (printed, logged, sent to clients): a token in it shows as [REDACTED:<rule>],
    whether the index is built first (the argparse path), current (the fast path) or asked through the tools."""
    from continuity.api import Continuity

    token = "ghp_16C7e42F292c6912E7710c838347Ae178B4aXY"
    log(capsys, "log", "-m", "pushed the branch")
    for _ in range(2):  # the first builds the index; the second answers on the fast path
        found = recall(capsys, token)
        assert token not in json.dumps(found) and "[REDACTED:github-token]" in found["query"]
    through_tools = Continuity(str(project)).call("recall", query=token)
    assert token not in json.dumps(through_tools) and "[REDACTED:github-token]" in through_tools["query"]


@pytest.mark.parametrize(("query", "hidden"), [
    ("xox" + "b-123456789012-abcdefghijklmnop", ["123456789012", "abcdefghijklmnop"]),
    ("postgres://admin:" + "S3cr3tPassw0rd@db.example.com/x", ["S3cr3tPassw0rd"]),
    ("Authorization: Bearer " + "abcdef0123456789abcdef0123456789", ["abcdef0123456789abcdef0123456789"]),
    ("deploy with glpat-" + "abcdefghij0123456789 now", ["abcdefghij0123456789"]),
])
def test_a_secret_of_several_words_in_a_query_is_not_echoed(project: Path, capsys: pytest.CaptureFixture[str],
                                                            query: str, hidden: list[str]) -> None:
    """A secret the guard finds in the query as typed, but whose pieces (the query split into quoted words) no rule
    matches, was echoed piece by piece (`"xoxb" "123456789012" ...`), on both paths, with `--match` and through the
    tools: the answer shows the redacted query now."""
    from continuity.api import Continuity

    log(capsys, "log", "-m", "pushed the branch")
    answers = [recall(capsys, query) for _ in range(2)]  # the argparse path, then the fast path
    answers.append(Continuity(str(project)).call("recall", query=query))
    quoted = '"' + query.replace('"', "") + '"'
    main(["recall", "--match", quoted, "--json"])
    answers.append(json.loads(capsys.readouterr().out))
    for answer in answers:
        shown = json.dumps(answer)
        assert "REDACTED" in answer["query"] and not [piece for piece in hidden if piece in shown], answer


def test_a_syntax_error_of_a_query_holding_a_secret_quotes_no_piece_of_it(project: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """FTS5's error quotes a piece of the query (`no such column: 123456789012`): with `--match`, a Slack token was
    refused with a piece of itself in the line (CLI and tools). Such a query's error says where to look instead;
    another query's error is FTS5's own, as before."""
    from continuity.api import Continuity
    from continuity.core.errors import EXIT_USAGE

    log(capsys, "log", "-m", "pushed the branch")
    token = "xox" + "b-123456789012-abcdefghijklmnop"
    assert main(["recall", "--match", token]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "looks like a secret" in err and "123456789012" not in err and "abcdefghijklmnop" not in err
    from events.errors import ContinuityError

    with pytest.raises(ContinuityError) as raised:
        Continuity(str(project)).call("recall", query=token, match=True)
    assert "looks like a secret" in str(raised.value) and "123456789012" not in str(raised.value)
    assert main(["recall", "--match", "foo-bar"]) == EXIT_USAGE
    assert "no such column: bar" in capsys.readouterr().err


@pytest.mark.parametrize("query", ["fixed🥺", "🥺fixed", "fixed🥺 parser", "the FIXED🥺"])
def test_a_word_with_a_character_newer_than_the_tokenizers_tables_is_found_as_typed(
        project: Path, capsys: pytest.CaptureFixture[str], query: str) -> None:
    """The index keeps an emoji newer than Unicode 6.1 inside a term (`fixed🥺` is one); the query split its words
    with `\\w` and searched `fixed` alone, so the event was never found by what it says (docs/recall.md)."""
    wanted = log(capsys, "log", "-m", "the parser: emoji 🥺fixed and fixed🥺")
    log(capsys, "log", "-m", "fixed the parser")
    found = recall(capsys, query)
    assert ids(found) == [wanted], found


def test_an_unreadable_event_left_out_is_said_at_every_search(project: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The first search said "skipped 1 unreadable event(s)"; every later one answered `"warnings": []` although
    its hits still left that event out (the read models say so at every catch-up)."""
    log(capsys, "log", "-m", "foo one")
    day = next((project / ".agent" / "runtime-continuity" / "events").iterdir())
    bad = day / f"{day.name}_100000_000000-abcdefgh-0123456789ab.json"
    bad.write_bytes(b"\x00garbage")
    said = [" ".join(recall(capsys, "foo")["warnings"]) for _ in range(3)]
    assert "skipped 1 unreadable event(s) in the recall index" in said[0] and bad.name in said[0]
    for later in said[1:]:
        assert "1 unreadable event(s) are still left out of the recall index" in later and bad.name in later
    bad.unlink()
    recall(capsys, "foo")  # the index is rebuilt (an event it had listed is gone), and says so
    assert recall(capsys, "foo")["warnings"] == []


def test_since_counts_by_the_writers_clock_after_a_teammates_fast_clock(project: Path,
                                                                        capsys: pytest.CaptureFixture[str],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """An event stamped two hours ahead (a teammate's fast clock, synced in) pushes every later stamp with it: a
    note written here two and a half hours ago carried a stamp half an hour old, and `recall --since 1h` found
    it. The window counts by the writer's clock (`written_at`) now."""
    import continuity.core.store as store_module
    from continuity.recall import service

    real = store_module.now_us
    with monkeypatch.context() as fast:
        fast.setattr(store_module, "now_us", lambda: real() + 2 * 3600 * 1_000_000)
        log(capsys, "log", "-m", "from the fast machine", "--host", "fast")
    old = log(capsys, "log", "-m", "zebra crossing repainted")
    assert recall(capsys, "zebra", "--since", "1h")["hits"], "found while it is recent"
    for module in (store_module, service):  # two and a half hours on, by this machine's clock
        monkeypatch.setattr(module, "now_us", lambda: real() + 150 * 60 * 1_000_000)
    assert old not in ids(recall(capsys, "zebra", "--since", "1h"))
    assert old in ids(recall(capsys, "zebra", "--since", "3h"))
