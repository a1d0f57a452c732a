"""Recall without msgspec or argparse: the query language, snippets, output lines, and the fast path.

`run(argv)` answers `continuity recall QUERY [--limit N] [--match] [--json] [--root DIR]`
when the index is current and holds only the store's project, reading nothing but the
day folders' mtimes, the newest day's listing and the index: the common case of an agent
asking "did we already try this?". Anything else (another flag, an abbreviation, an index
that is missing, behind, from another format or shared by projects, a refused query)
returns None before printing anything, and the argparse command gives the answer of
record: catching the index up, warnings and error lines included. A test holds the two
paths' output equal, byte for byte, and the import graph free of msgspec and argparse.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import re
import sqlite3
import time
import unicodedata

from continuity.core.errors import QueryError
from continuity.core.paths import RECALL_INDEX_NAME
from continuity.core.text import one_line
from events.errors import ContinuityError

TYPE_CHECKING = False
if TYPE_CHECKING:  # the fast path: `typing` costs a recall's start a few ms
    from collections.abc import Iterator
    from typing import Any

INDEX_NAME = RECALL_INDEX_NAME
#: The index's schema and meta layout (index.py); the index's FORMAT adds the rows' format.
SCHEMA_FORMAT = 7
#: projections/recall.py's FORMAT, repeated here (a test holds them equal) to keep msgspec off this path.
ROWS_FORMAT = 4
FORMAT = SCHEMA_FORMAT * 100 + ROWS_FORMAT

MAX_QUERY_CHARS = 1000
MAX_TERMS = 64
DEFAULT_LIMIT = 10
LIMIT_MAX = 1000
SNIPPET_TOKENS = 16
#: unicode61 reads letters by Unicode 6.1, where the Arabic letter mark and the bidi isolates (6.3) were unassigned,
#: so it kept them inside words: `\u2066fooword\u2069` was one term, never found by `fooword`. They separate.
TOKENIZER = "porter unicode61 remove_diacritics 2 separators '\u061c\u2066\u2067\u2068\u2069'"
#: The tokenize option as SQL writes it in a CREATE VIRTUAL TABLE.
TOKENIZE = "tokenize='" + TOKENIZER.replace("'", "''") + "'"
#: How a match is marked in a snippet (the text around it is neutralized for the terminal).
MARK_OPEN, MARK_CLOSE = "[", "]"
#: What a word is made of: letters and digits with the combining marks that follow them (`\w` takes no mark, so a
#: decomposed `résumé`, e + U+0301, was two words), as FTS5's unicode61 tokenizer keeps them in one token.
_WORD_CHARS = r"\w\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_NOT_WORD_CHAR = re.compile(rf"[^{_WORD_CHARS}\s]")
#: The hit fields, in the order the JSON answer lists them.
HIT_FIELDS = ("event_id", "created_at", "kind", "agent_id", "host", "session_id", "snippet", "score")
#: The columns of a ranked row (then the snippet and the body); `d` is docs, `fts` the text. No bm25()
#: here: SQLite runs one FTS5 lookup per listed row, and each bm25() lookup would count the query's
#: matches in the whole index again (its IDF), milliseconds for a common word. The ranking query's
#: scores are the ones kept (ranked_rows).
HIT_SQL = ("SELECT d.id, d.event_id, d.created_at, d.kind, d.agent, d.host, d.session, d.written,"
           f" snippet(fts, 0, char(2), char(3), '…', {SNIPPET_TOKENS}), fts.body"
           " FROM fts JOIN docs d ON d.id = fts.rowid WHERE fts MATCH ? AND fts.rowid IN ")
#: The best rows and their scores (bm25(), lower is better), newest first on a tie.
RANK_SQL = "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts), rowid DESC LIMIT ?"
#: How many best rows of a common word its contenders cover (index.py keeps them): a longer
#: `--limit` ranks every match.
CONTENDERS = DEFAULT_LIMIT
#: RANK_SQL for a one-word query (?1), its indexed term (?2): when the index keeps the term's
#: contenders, only they and the rows indexed since are scored, else every match (index.py
#: says why that is the same answer). One statement, so one snapshot of rows and contenders.
CONTENDERS_RANK_SQL = (
    "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ?1"
    " AND rowid >= coalesce((SELECT min(id) FROM contenders WHERE term = ?2), 0)"
    " AND (rowid > coalesce((SELECT value FROM meta WHERE key = 'contenders_upto'), 0)"
    " OR NOT EXISTS (SELECT 1 FROM contenders WHERE term = ?2)"
    " OR +rowid IN (SELECT id FROM contenders WHERE term = ?2))"
    " ORDER BY bm25(fts), rowid DESC LIMIT ?3")


def words(text: str) -> list[str]:
    """The words of a text, as the default query mode searches them (composed first: NFC, as most text is).

    A word is never split where the index does not split a term: unicode61 reads characters by Unicode 6.1, and
    keeps some that `\\w` does not in a word (`fixed🥺`, whose emoji came later, is one term there), so a search
    for `fixed🥺` searched `fixed` and never found it. Such characters of the text are asked of FTS5 itself.
    (A word split less finely than the index splits it is searched as the phrase of its terms: `push_race`.)
    """
    text = unicodedata.normalize("NFC", text)
    kept = "".join(char for char in sorted(set(_NOT_WORD_CHAR.findall(text))) if _in_a_term(char))
    if not kept:
        return re.findall(rf"\w[{_WORD_CHARS}]*", text)
    kept = re.escape(kept)
    return re.findall(rf"[\w{kept}][{_WORD_CHARS}{kept}]*", text)


_IN_A_TERM: dict[str, bool] = {}


def _in_a_term(char: str) -> bool:
    """Whether the index's tokenizer keeps `char` inside a term (asked once a process for each character)."""
    found = _IN_A_TERM.get(char)
    if found is None:
        if len(_IN_A_TERM) >= 4096:
            _IN_A_TERM.clear()
        found = _IN_A_TERM[char] = len(indexed_terms(f"a{char}b")) == 1
    return found


#: How long one search may run (ranking and snippets): prefix terms (`a* OR b* ...`) with a large
#: --limit cost snippets per row and per term, minutes for a few hundred terms, and the MCP server
#: answers one call at a time. Ordinary queries take milliseconds.
SEARCH_SECONDS = 10.0
#: The progress handler's period, in SQLite virtual-machine steps (about a millisecond of work).
_STEPS = 10_000


class SearchTooLong(QueryError):
    """A search stopped at its time budget."""


@contextlib.contextmanager
def deadline(connection: sqlite3.Connection, seconds: float | None = None) -> Iterator[None]:
    """Run the statements of the block within `seconds` (SEARCH_SECONDS): past it SQLite interrupts them
    (SearchTooLong)."""
    seconds = SEARCH_SECONDS if seconds is None else seconds
    end = time.monotonic() + seconds
    connection.set_progress_handler(lambda: time.monotonic() > end, _STEPS)
    try:
        yield
    except sqlite3.OperationalError as error:
        if time.monotonic() <= end or "interrupt" not in str(error):
            raise
        raise SearchTooLong(f"the search ran past {seconds:g} s and was stopped; use fewer prefix terms "
                            "(word*) or a smaller --limit") from None
    finally:
        connection.set_progress_handler(None, 0)


def fts_query(text: str, *, operators: bool = False, any_word: bool = False) -> str:
    """The FTS5 query for what a user typed: its words quoted (all must match unless `any_word`), or as written."""
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is {len(text)} characters long; at most {MAX_QUERY_CHARS} are searched")
    if re.search("[\x00\ud800-\udfff]", text):  # SQLite would cut at a NUL; a lone surrogate is no UTF-8
        raise QueryError("the query holds a NUL character or an unpaired surrogate")
    if operators:
        if not text.strip():
            raise QueryError("the query is empty")
        if text.startswith("*"):  # FTS5 reads such a query as one of its own diagnostics (`*reads`, `*id`), not a
            # search: it answers rows the index does not hold, as a damaged index would
            raise QueryError("invalid search syntax: a query cannot start with `*` (a prefix search puts it after "
                             "the word: pars*)")
        _check_syntax(text)
        return text
    found = words(text)
    if not found:
        from events.problems import quoted  # redacts before it cuts

        raise QueryError(f"the query {quoted(text, 40, redact=True)} has no words to search for "
                         "(use --match for FTS5 operators such as prefix*)")
    if len(found) > MAX_TERMS:
        raise QueryError(f"the query has {len(found)} words; at most {MAX_TERMS}")
    return (" OR " if any_word else " ").join(f'"{word}"' for word in dict.fromkeys(found))


_PROBE: list[sqlite3.Connection] = []


def _check_syntax(query: str) -> None:
    """QueryError unless FTS5 parses `query` (tried on an empty table of the index's shape, in memory)."""
    if not _PROBE:
        probe = sqlite3.connect(":memory:", check_same_thread=False)
        probe.execute(f"CREATE VIRTUAL TABLE fts USING fts5(body, {TOKENIZE})")
        _PROBE.append(probe)
    try:
        _PROBE[0].execute("SELECT rowid FROM fts WHERE fts MATCH ?", (query,)).fetchall()
    except sqlite3.Error as error:
        from events.guard import find_secret

        # FTS5 quotes a piece of the query (`no such column: 123456789012`): of a query that holds a secret, a
        # piece of the secret that no rule matches alone; such a query's error says only where to look
        said = "the query holds text that looks like a secret" if find_secret(query) else one_line(str(error))
        raise QueryError(f"invalid search syntax: {said} (without --match the words are searched as "
                         "written)") from None


_TOKENIZERS: dict[int, sqlite3.Connection] = {}


def indexed_terms(text: str) -> list[str]:
    """The terms the index holds for `text`, in order (FTS5's own tokenizer, on a scratch table in memory)."""
    from _thread import get_ident  # one scratch table a thread: a term is written, read and rolled back

    probe = _TOKENIZERS.get(get_ident())
    if probe is None:
        probe = sqlite3.connect(":memory:", isolation_level=None)
        probe.execute(f"CREATE VIRTUAL TABLE words USING fts5(body, {TOKENIZE})")
        probe.execute("CREATE VIRTUAL TABLE words_instances USING fts5vocab(words, instance)")
        _TOKENIZERS[get_ident()] = probe
    probe.execute("BEGIN")
    try:
        probe.execute("INSERT INTO words(rowid, body) VALUES (1, ?)", (text,))
        return [row[0] for row in probe.execute("SELECT term FROM words_instances ORDER BY offset")]
    finally:
        probe.execute("ROLLBACK")


def rank(connection: sqlite3.Connection, query: str, limit: int, *, contenders: bool = True) -> list[Any]:
    """The best `limit` rows of an FTS5 query, (rowid, bm25) best first: RANK_SQL's answer.

    A query of one word that is one indexed term is ranked among the term's contenders when
    the index keeps them (CONTENDERS_RANK_SQL); the answer is the same. `contenders=False`
    (an index too small to keep any) skips reading the word's term.
    """
    if (contenders and limit <= CONTENDERS and len(query) > 2 and query[0] == query[-1] == '"'
            and '"' not in query[1:-1]):
        terms = indexed_terms(query[1:-1])
        if len(terms) == 1:
            return connection.execute(CONTENDERS_RANK_SQL, (query, terms[0], limit)).fetchall()
    return connection.execute(RANK_SQL, (query, limit)).fetchall()


#: The longest run of characters with no space a snippet shows whole: FTS5 cuts a snippet to SNIPPET_TOKENS words,
#: however long each word (or the punctuation between two) is, and a 16,000-character word made a 16 KB snippet.
SNIPPET_RUN = 80


def marked(snippet: str) -> str:
    """An FTS5 snippet with its match markers as brackets, line breaks and runs of spaces as one space, each run of
    more than SNIPPET_RUN characters with no space cut to them (an ellipsis marking the cut), the rest made safe to
    print. (The index holds text with what looks like a secret redacted already: a cut splits none.)"""
    parts = re.split("([\x02\x03])", snippet)
    return "".join(MARK_OPEN if part == "\x02" else MARK_CLOSE if part == "\x03"
                   else _short_runs(one_line(re.sub(r"\s+", " ", part))) for part in parts).strip()


def _short_runs(text: str) -> str:
    if len(text) <= SNIPPET_RUN:
        return text
    return re.sub(rf"\S{{{SNIPPET_RUN + 1},}}", lambda run: run.group()[:SNIPPET_RUN - 1] + "…", text)


def ranked_rows(connection: sqlite3.Connection, query: str, ranked: list[Any]) -> list[Any]:
    """The ranked rows' columns, snippets and scores, in the order of `ranked` ((rowid, bm25) pairs, best first).

    A row: id, event id, time, kind, agent, host, session, the writer's time (`written`, or None), snippet, bm25
    (the ranking's), body.
    """
    order = {rowid: (place, score) for place, (rowid, score) in enumerate(ranked)}
    found = connection.execute(HIT_SQL + f"({', '.join('?' * len(ranked))})",
                               [query, *(rowid for rowid, _ in ranked)]).fetchall()
    if len(found) != len(ranked):  # a row the ranking names and the table does not: a damaged page SQLite read past
        raise sqlite3.DatabaseError(f"the index ranked {len(ranked)} rows and holds {len(found)} of them")
    found.sort(key=lambda row: order[row[0]][0])
    return [(*row[:9], order[row[0]][1], row[9]) for row in found]


def hit_values(row: Any) -> tuple[Any, ...]:
    """A ranked row as the hit's field values (HIT_FIELDS order)."""
    return (*row[1:7], marked(row[8]), round(-row[9], 6))


def lines_of(hits: list[dict[str, Any]]) -> str:
    """The human answer: two lines a hit (where and who, then the snippet), or `no matches`."""
    lines = []
    for hit in hits:
        who = " ".join(one_line(part) for part in (hit["agent_id"], hit["host"]) if part)
        lines.append(one_line(f"{hit['created_at']}  {hit['event_id']}  {hit['kind']}" + (f"  {who}" if who else "")
                              + f"  score {hit['score']:.3f}"))
        lines.append(f"    {hit['snippet']}")
    return "\n".join(lines) if lines else "no matches"


def answer(project: str, query: str, as_of: str | None, hits: list[dict[str, Any]], *, given: str, indexed: int = 0,
           rebuilt: bool = False, warnings: list[str] | None = None) -> dict[str, Any]:
    """The JSON answer of `recall` for the text `given` (searched as `query`). A query that looks like it holds a
    secret is echoed redacted: answers are printed, logged and sent to clients; the events it searched hold none.
    The secret is looked for in the text as given: split into quoted words (`"xoxb" "1234..."`), no rule matched."""
    from events.guard import find_secret, redact_text

    if find_secret(given) is not None:  # words quoted as searched, each secret as its [REDACTED:<rule>]
        shown = redact_text(given)[0]
        query = shown if query == given else " ".join(  # --match searches the text as given
            part if part.startswith("[REDACTED:") else " ".join(f'"{word}"' for word in words(part))
            for part in re.split(r"(\[REDACTED:[^\]]*\])", shown) if part.strip())
    return {"ok": True, "action": "recall", "project": project, "query": redact_text(query)[0], "as_of": as_of,
            "count": len(hits), "hits": hits, "indexed": indexed, "rebuilt": rebuilt, "warnings": warnings or []}


# -- the fast path ---------------------------------------------------------------------------
def run(argv: list[str]) -> int | None:
    """Answer a plain `recall` from a current index; None when the argparse command must answer."""
    options = _parse(argv)
    if options is None:
        return None
    try:
        found = _search(options)
    except SearchTooLong as error:  # the argparse command would only run it again for as long
        from continuity.cli.output import Output

        Output(as_json=options["json"]).error(str(error), error.exit_code)
        return error.exit_code
    except (OSError, sqlite3.Error, QueryError, ValueError, KeyError, TypeError, UnicodeError, RecursionError,
            MemoryError, ContinuityError):  # a store it cannot vouch for (a planted link, no store), a damaged
        return None  # index (SQLite says NOMEM for some damaged FTS5 data): the command answers, or rebuilds
    if found is None:
        return None
    from continuity.cli.output import Output

    project, query, hits = found
    Output(as_json=options["json"]).emit(answer(project, query, None, hits, given=options["query"]), lines_of(hits))
    return 0


def _parse(argv: list[str]) -> dict[str, Any] | None:
    """`[--json] [--root DIR] recall QUERY [--limit N] [--match] [--json] [--root DIR]`, spelled out; else None."""
    options: dict[str, Any] = {"json": False, "match": False, "root": None, "limit": DEFAULT_LIMIT, "query": None}
    seen_command = False
    index = 0
    while index < len(argv):
        arg = argv[index]
        index += 1
        flag, equals, value = arg.partition("=")
        if arg == "--json" or (arg == "--match" and seen_command):
            options[arg[2:]] = True
        elif flag in ("--root", "--limit") and (seen_command or flag == "--root"):
            if not equals:
                if index >= len(argv) or argv[index].startswith("-"):
                    return None
                value = argv[index]
                index += 1
            if not value:
                return None
            if flag == "--limit":
                if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= LIMIT_MAX:
                    return None
                options["limit"] = int(value)
            else:
                options["root"] = value
        elif arg.startswith("-"):
            return None
        elif not seen_command:
            if arg != "recall":
                return None
            seen_command = True
        elif options["query"] is None:
            options["query"] = arg
        else:
            return None
    return options if seen_command and options["query"] is not None else None


def _search(options: dict[str, Any]) -> tuple[str, str, list[dict[str, Any]]] | None:
    from continuity.core.store import find_store

    store = find_store(root=options["root"])
    store.check_safe()
    if store.config_problem is not None:
        return None
    project = store.config["project"]
    path = os.path.join(store.local_dir, INDEX_NAME)
    if os.path.islink(path) or not os.path.isfile(path):
        return None
    query = fts_query(options["query"], operators=options["match"])
    connection = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=1.0, isolation_level=None)
    try:
        connection.execute("BEGIN")  # one snapshot: the meta checked is the index searched
        meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
        if (meta.get("format") != FORMAT or json.loads(meta["projects"]) != [project]
                or _listed(meta.get("unread")) or _listed(meta.get("unknown"))  # the typed path tries them again
                or not _current(store.events_dir, meta.get("last_read"), json.loads(meta["days"]))):
            return None
        with deadline(connection):
            ranked = rank(connection, query, options["limit"], contenders=bool(meta.get("contenders_upto")))
            rows = ranked_rows(connection, query, ranked) if ranked else []
    finally:
        connection.close()
    return project, query, [dict(zip(HIT_FIELDS, hit_values(row), strict=True)) for row in rows]


def _listed(value: Any) -> bool:
    """Whether a meta list (`unread`, `unknown`) names anything; a value that is no JSON list does too."""
    try:
        return value is not None and json.loads(value) != []
    except ValueError:
        return True


def _current(events_dir: str, position: str | None, marks: dict[str, list[int]]) -> bool:
    """Whether the log holds exactly what the index read: the catch-up would find nothing to do."""
    from continuity.core import store
    from events import names
    from events.durable import counts_as_now, list_days, own_node

    try:
        days = list_days(events_dir)
    except OSError:  # events/ cannot be listed: the typed path answers, and says why
        return False
    limit = counts_as_now(events_dir, store.now_us(), own_node(os.path.join(os.path.dirname(events_dir), "local")),
                          days)
    if days and days[-1] > limit:  # days of events stamped early: the index leaves them out, and the answer says so
        return False
    if set(marks) - set(days):
        return False
    last_day = position[:8] if position else ""
    for day in days:
        mark = marks.get(day)
        if mark is None:
            return False
        if day != last_day:
            if os.stat(os.path.join(events_dir, day)).st_mtime_ns != mark[0]:
                return False
            continue
        listed = sorted(name for name in os.listdir(os.path.join(events_dir, day))
                        if len(name) == names.NAME_LENGTH and name.endswith(".json"))
        if position is None or bisect.bisect_right(listed, position) != len(listed) or len(listed) != mark[1]:
            return False
        if len(mark) > 2 and mark[2] and names.digest(listed) != mark[2]:  # as many, but others (index.py)
            return False
    return True
