"""The recall index: every event's text in SQLite FTS5, a derived file under `local/`.

`local/recall.sqlite3` holds one row per event with text (projections/recall.py) and a
`meta` table: the index format, the newest event file read, and each day folder's mark
(mtime and event count) as the read models keep them (readside/catchup.py). Rows and
meta are committed in one transaction, every `BATCH` events: whatever moment a process
dies at (kill -9 included), the file holds a prefix of the log and says which, and the
next catch-up goes on from there. An event that arrived "in the past" (a merge), a
vanished day, another format or an unreadable file: the index is rebuilt from the start.

Catch-up runs under SQLite's write lock (`BEGIN IMMEDIATE`), so two processes never
index the same events twice: the second waits, then finds the index current. Between
batches the lock is let go (the commit that makes a batch durable); whoever takes it
next checks that the index still stands where it left it, and a catch-up that finds it
moved starts again from where the other one got to.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import sqlite3
from collections.abc import Iterator
from typing import Any

import msgspec

from continuity.core.fsio import ensure_folder
from continuity.core.store import Store
from continuity.readside.catchup import (
    UNKNOWN_READ_NOW,
    UNREAD_KEPT,
    Days,
    Marks,
    Progress,
    day_mark,
    keep_unknown,
    known_kinds,
    reads_now,
    validate_marks,
)
from continuity.recall import plain
from events import clock, names
from events.base import Event
from events.durable import unreadable_error
from events.errors import EventsUnlisted, EventUndecodable, UnknownEventType
from events.filelog import FileEventLog
from projections import recall as texts

#: Events per transaction: a crash loses at most this many events' work.
BATCH = 2000
#: The index's own format (plain.py: the schema and meta here, and the rows' format of projections/recall.py).
FORMAT = plain.FORMAT
INDEX_NAME = plain.INDEX_NAME
BUSY_MS = 10_000

FTS_TABLE = f"CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(body, {plain.TOKENIZE})"
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS docs(
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, event_id TEXT NOT NULL, created_at TEXT NOT NULL,
    kind TEXT NOT NULL, project TEXT NOT NULL, agent TEXT, host TEXT, session TEXT, written TEXT);
CREATE INDEX IF NOT EXISTS docs_project_time ON docs(project, created_at);
""" + FTS_TABLE + """;
CREATE TABLE IF NOT EXISTS contenders(
    term TEXT NOT NULL, id INTEGER NOT NULL, f INTEGER NOT NULL, d INTEGER NOT NULL, PRIMARY KEY(term, id))
    WITHOUT ROWID;
"""
# Meta values are JSON, so the fast path (plain.py) reads them without msgspec.
_MARKS = msgspec.json.Decoder(Marks)
_ENCODER = msgspec.json.Encoder()
_NAMES = msgspec.json.Decoder(list[str])
_PROJECTS = msgspec.json.Decoder(list[str])



class CatchUp(msgspec.Struct, kw_only=True):
    """What a catch-up of the index did."""

    indexed: int = 0
    read: int = 0
    rebuilt: bool = False
    reason: str | None = None
    warnings: list[str] = msgspec.field(default_factory=list)
    #: Event files read past as unreadable (tried again by every catch-up), and kinds read past as unknown
    #: (a newer release's): kept in meta, as a saved read model keeps them (readside/catchup.py).
    unread: list[str] = msgspec.field(default_factory=list)
    unknown: list[str] = msgspec.field(default_factory=list)
    kinds: int | None = None


def index_path(store: Store) -> str:
    """Where the recall index lives (machine-local, rebuildable)."""
    return os.path.join(store.local_dir, INDEX_NAME)


def connect(path: str) -> sqlite3.Connection:
    """A connection to an index file (made when missing) or ":memory:", with the schema in place."""
    if path != ":memory:":  # made as every file of the store is, by the umask (SQLite makes its files 0644 whatever
        # it is, and its -wal and -shm files as the database's): a teammate sharing the store by a group can write it
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666))
    connection = sqlite3.connect(path, timeout=BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
    try:
        if path != ":memory:":
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
        connection.executescript(SCHEMA)
    except BaseException:
        connection.close()
        raise
    return connection


def open_existing(path: str) -> sqlite3.Connection | None:
    """An existing index for reading as it stands, or None (missing, a link, unreadable, not an index)."""
    try:
        if not os.path.isfile(path) or os.path.islink(path):
            return None
        connection = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=0.5, isolation_level=None,
                                     check_same_thread=False)
    except (OSError, sqlite3.Error):
        return None
    try:
        if _meta(connection).get("format") != FORMAT:
            connection.close()
            return None
    except sqlite3.Error:
        connection.close()
        return None
    return connection


def _meta(connection: sqlite3.Connection) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in connection.execute("SELECT key, value FROM meta"):
        found[key] = value
    return found


def open_current(store: Store, log: FileEventLog, *, rebuild: bool = False,
                 progress: Progress | None = None) -> tuple[sqlite3.Connection, CatchUp]:
    """The index caught up with the log (made or rebuilt as needed). Fails open.

    An index file that cannot be used (a link, unwritable, corrupt beyond SQLite's own
    recovery) is replaced; when even that fails, the index is built in memory for this
    answer and a warning says so.
    """
    path = index_path(store)
    warnings: list[str] = []
    connection: sqlite3.Connection | None = None
    try:
        ensure_folder(store.path, store.local_dir)
        if os.path.islink(path):
            raise OSError(f"{path} is a symlink")
        connection = connect(path)
        outcome = _caught_up(connection, log, rebuild=rebuild, progress=progress)
    except sqlite3.OperationalError as error:
        if connection is not None:
            connection.close()
        connection = None
        if _foreign_schema(error):  # a database of other tables (planted, or another program's): a cache to redo
            connection, outcome = _rebuilt(path, log, warnings, error, progress)
        else:  # locked past the wait, read-only, I/O: keep the file, use memory
            warnings.append(f"the recall index is unavailable ({error})")
    except sqlite3.DatabaseError as error:  # not a database, malformed, a broken constraint: it is only a cache
        if connection is not None:
            connection.close()
        connection, outcome = _rebuilt(path, log, warnings, error, progress)
    except (OSError, sqlite3.Error) as error:
        if connection is not None:
            connection.close()
        connection = None
        warnings.append(f"the recall index is unavailable ({error})")
    if connection is None:
        connection, outcome = _in_memory(log, warnings, progress)
    outcome.warnings[:0] = warnings
    return connection, outcome


def rebuilt_after(store: Store, log: FileEventLog, error: sqlite3.Error | MemoryError,
                  progress: Progress | None = None) -> tuple[sqlite3.Connection, CatchUp]:
    """The index rebuilt after SQLite found it corrupt while searching it (a damaged page that catching up never
    reads): on disk, else in memory for this answer, with warnings saying which."""
    warnings: list[str] = []
    if isinstance(error, MemoryError):
        return _rebuilt_from_memory(index_path(store), log, progress)
    connection, outcome = _rebuilt(index_path(store), log, warnings, error, progress)
    if connection is None:
        connection, outcome = _in_memory(log, warnings, progress)
    outcome.warnings[:0] = warnings
    return connection, outcome


def _rebuilt_from_memory(path: str, log: FileEventLog,
                         progress: Progress | None) -> tuple[sqlite3.Connection, CatchUp]:
    """After a search met MemoryError: SQLite says NOMEM for FTS5 data it cannot decode (a damaged cache), and for a
    real shortage. The index is built in memory first: a shortage fails that too (MemoryError, raised, the file
    kept whole); a build that succeeds answers, and replaces the file on disk (a warning when it cannot)."""
    connection, outcome = _in_memory(log, [], progress)
    said = ["the recall index was unreadable (data SQLite could not decode); rebuilt it"]
    disk = None
    try:
        _remove(path)
        disk = connect(path)
        connection.backup(disk)
    except (OSError, sqlite3.Error) as again:
        said.append(f"the recall index could not be rebuilt on disk ({again})")
    finally:
        if disk is not None:
            disk.close()
    outcome.warnings[:0] = said
    return connection, outcome


def _in_memory(log: FileEventLog, warnings: list[str],
               progress: Progress | None) -> tuple[sqlite3.Connection, CatchUp]:
    warnings.append("answered from an index built in memory")
    connection = connect(":memory:")
    return connection, catch_up(connection, log, rebuild=True, progress=progress)


#: What SQLite says of a database whose tables are not the index's (OperationalError, like a lock).
_FOREIGN = ("no such column", "no such table", "has no column", "is a view", "may not be modified",
            "no such module", "vtable constructor failed")


def _foreign_schema(error: sqlite3.OperationalError) -> bool:
    return any(words in str(error).lower() for words in _FOREIGN)


def _rebuilt(path: str, log: FileEventLog, warnings: list[str], error: sqlite3.Error,
             progress: Progress | None) -> tuple[sqlite3.Connection | None, CatchUp]:
    """The index file replaced by a fresh build (after `error`), or (None, None) when that fails too."""
    warnings.append(f"the recall index was unreadable ({error}); rebuilt it")
    connection = None
    try:
        _remove(path)
        connection = connect(path)
        return connection, _caught_up(connection, log, rebuild=True, progress=progress)
    except (OSError, sqlite3.Error) as again:
        if connection is not None:
            connection.close()
        warnings.append(f"the recall index could not be rebuilt on disk ({again})")
        return None, CatchUp()


def _caught_up(connection: sqlite3.Connection, log: FileEventLog, *, rebuild: bool,
               progress: Progress | None) -> CatchUp:
    """`catch_up`, the connection closed when it is interrupted (Ctrl-C): SQLite folds its write-ahead log back
    into the file and removes it, as it does for every answer (the command leaves without a shutdown that would
    have closed it, `core/guard.py`)."""
    try:
        return catch_up(connection, log, rebuild=rebuild, progress=progress)
    except BaseException:
        connection.close()
        raise


def _remove(path: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)


class _Moved(Exception):
    """Another process indexed while the lock was let go between batches: start again from its position."""


RESTARTS = 20


def catch_up(connection: sqlite3.Connection, log: FileEventLog, *, rebuild: bool = False,
             until: str | None = None, progress: Progress | None = None) -> CatchUp:
    """Index the events the index lacks (all of them up to `until` when rebuilding or when it is unusable)."""
    indexed = 0
    for _ in range(RESTARTS):
        try:
            outcome = _catch_up(connection, log, rebuild=rebuild, until=until, progress=progress)
        except _Moved as moved:
            indexed += moved.args[0]
            rebuild = False  # what the other process wrote stands: go on from there
            continue
        outcome.indexed += indexed
        return outcome
    raise sqlite3.OperationalError("the recall index kept moving under this catch-up")


def _catch_up(connection: sqlite3.Connection, log: FileEventLog, *, rebuild: bool,
              until: str | None, progress: Progress | None) -> CatchUp:
    days = Days(log, log.clock_us())  # events stamped early wait, as for the read models
    if days.unlistable is not None:  # whether the log moved is unknown: the index answers as it stands, untouched
        if rebuild:  # an index built from no event (a rebuild, an --as-of search) would claim an empty log
            raise EventsUnlisted(f"events/ cannot be listed ({days.unlistable}): no event can be read")
        return CatchUp(warnings=[f"events/ cannot be listed ({days.unlistable}): the recall index is as last "
                                 "caught up; no new event is read"])
    connection.execute("BEGIN IMMEDIATE")
    try:
        meta = _meta(connection)
        position: str | None = meta.get("last_read")
        marks: Marks = {}
        reason: str | None = "forced" if rebuild else None
        if reason is None and meta.get("format") != FORMAT:
            reason = "the recall index was missing or from another version" if meta else "new index"
        if reason is None:
            try:
                marks = dict(_MARKS.decode(meta.get("days", b"")))
            except (msgspec.DecodeError, msgspec.ValidationError, TypeError, RecursionError):
                reason = "the recall index's day marks were unreadable"
        if reason is None:
            reason = validate_marks(marks, position, days)
        unread, unknown = _kept(meta.get("unread")), _kept(meta.get("unknown"))
        if reason is None and unknown and reads_now(unknown, meta.get("kinds"), log.codec.current):
            reason = UNKNOWN_READ_NOW
        left_out: list[str] = []  # each with why
        if reason is None and unread:
            unread, left_out, reason = _read_again(log, days, unread)
        outcome = CatchUp(rebuilt=reason is not None, reason=reason, kinds=known_kinds(log.codec.current))
        if reason is None:
            outcome.unread, outcome.unknown = unread, unknown
        if reason is None and left_out:  # said at every catch-up, as the read models say theirs
            outcome.warnings.append(f"{len(left_out)} unreadable event(s) are still left out of the recall index "
                                    f"(each catch-up tries them again); first: {left_out[0]}")
        if days.early:
            from continuity.readside.catchup import early_warning

            outcome.warnings.append(early_warning(days.early))
        projects: set[str] = set()
        if reason is None:
            projects = set(projects_of(connection))
        if reason is not None:
            connection.execute("DELETE FROM docs")
            # Dropped, not emptied: FTS5 deletes row by row, tokenizing each again, and the
            # delete markers it leaves slow every query until its segments merge (2-3x at 100k).
            connection.execute("DROP TABLE fts")
            connection.execute(FTS_TABLE)
            connection.execute("DELETE FROM contenders")
            connection.execute("DELETE FROM meta")
            position, marks = None, {}
        _index(connection, log, days, position, marks, projects, outcome, until, progress)
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    if outcome.rebuilt and outcome.reason not in ("forced", "new index") and outcome.read:
        outcome.warnings.append(f"{outcome.reason}: the recall index was rebuilt from {outcome.read} events")
    return outcome


def _index(connection: sqlite3.Connection, log: FileEventLog, days: Days, position: str | None, marks: Marks,
           projects: set[str], outcome: CatchUp, until: str | None, progress: Progress | None) -> None:
    """Read each day from `position` on; commit rows and meta together every BATCH events."""
    rows: list[tuple[Any, ...]] = []
    skipped: list[str] = []
    kept = list(outcome.unread)
    last_day = names.shard_of(position) if position else ""
    before = dict(marks)
    total = None
    if progress is not None:
        total = sum(days.count(day) for day in days.days if day >= last_day)
    for day in days.days[bisect.bisect_left(days.days, last_day):]:
        if until is not None and day > names.shard_of(until):
            break
        mark = marks.get(day)
        if position is not None and day != last_day and mark is not None and mark.mtime_ns == days.mtime(day):
            continue
        try:
            listed = days.listing(day)
        except OSError as error:  # held back with every later day, in order, until it can be listed
            outcome.warnings.append(f"events/{day}/ cannot be read ({error.strerror or error}): its events and every "
                                    "later one are not searched until it can")
            break
        start = bisect.bisect_right(listed, position) if position else 0
        wanted = [name for name in listed[start:] if names.parse_name(name) is not None
                  and (until is None or name <= until)]
        prior = names.event_before(listed, start)
        for name, raw in log.read_files(day, wanted, unreadable_as_empty=True):
            twin, prior = names.twin(name, prior), name
            event: Event | None = None
            try:
                if twin:  # never indexed: the first file of its event is (names.TWIN)
                    skipped.append(f"{name}: {names.TWIN}")
                else:
                    event = log.codec.decode(raw)
            except EventUndecodable as error:
                skipped.append(f"{name}: {unreadable_error(raw, error)}")
                if isinstance(error, UnknownEventType):  # the release that knows the kind rebuilds the index
                    keep_unknown(outcome.unknown, error.noted)
                elif name not in outcome.unread and len(outcome.unread) < UNREAD_KEPT:  # tried again next time
                    outcome.unread.append(name)
            if event is not None and not names.content_matches(name, event.event_id, event.created_at):
                skipped.append(f"{name}: {names.FORGED}")  # never found under another event's id or time
                event = None
            if event is not None:
                body = texts.text_of(event)
                if body:
                    written = clock.written(event)  # --since and --until count by the writer's clock
                    rows.append((name, event.event_id, event.created_at, event.kind, event.project,
                                 event.agent_id, event.host, event.session_id,
                                 None if written == event.created_at else written, body))
            position = name
            outcome.read += 1
            if outcome.read % BATCH == 0:
                marks[day] = day_mark(days.mtime(day), listed, day, position, whole=False)
                outcome.indexed += _flush(connection, rows, position, marks, projects, outcome)
                connection.execute("COMMIT")
                connection.execute("BEGIN IMMEDIATE")
                if _meta(connection).get("last_read") != position:
                    raise _Moved(outcome.indexed)
                if progress is not None:
                    progress(outcome.read, total)
        complete = until is None or not listed or listed[-1] <= until
        marks[day] = day_mark(days.mtime(day), listed, day, position, whole=complete)
        days.forget(day)
    if outcome.read or outcome.rebuilt or marks != before or outcome.unread != kept:  # found nothing: writes nothing
        outcome.indexed += _flush(connection, rows, position, marks, projects, outcome)
    if progress is not None and outcome.read:
        progress(outcome.read, total)
    if skipped:
        outcome.warnings.append(f"skipped {len(skipped)} unreadable event(s) in the recall index; first: {skipped[0]}")


def _flush(connection: sqlite3.Connection, rows: list[tuple[Any, ...]], position: str | None, marks: Marks,
           projects: set[str], outcome: CatchUp | None = None) -> int:
    """Write the pending rows and where the index stands, in the open transaction."""
    count = len(rows)
    outcome = outcome or CatchUp()
    if rows:
        projects.update(row[4] for row in rows)
        first = connection.execute("SELECT COALESCE(MAX(id), 0) FROM docs").fetchone()[0] + 1
        connection.executemany(
            "INSERT INTO docs(id, name, event_id, created_at, kind, project, agent, host, session, written)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ((first + i, *row[:9]) for i, row in enumerate(rows)))
        connection.executemany("INSERT INTO fts(rowid, body) VALUES (?, ?)",
                               ((first + i, row[9]) for i, row in enumerate(rows)))
        rows.clear()
    upto = keep_contenders(connection)
    values: list[tuple[str, Any]] = [("format", FORMAT), ("days", _ENCODER.encode(marks)),
                                     ("projects", _ENCODER.encode(sorted(projects))), ("contenders_upto", upto),
                                     ("unread", _ENCODER.encode(outcome.unread)),
                                     ("unknown", _ENCODER.encode(outcome.unknown))]
    if outcome.kinds is not None:
        values.append(("kinds", outcome.kinds))
    if position is not None:
        values.append(("last_read", position))
    connection.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", values)
    return count


def _kept(value: Any) -> list[str]:
    """A list of names kept in meta (`unread`, `unknown`); [] for anything else (a hand-edited or older index)."""
    try:
        found = _NAMES.decode(value) if isinstance(value, bytes | str) else []
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return []
    return found[:UNREAD_KEPT]


def _read_again(log: FileEventLog, days: Days, unread: list[str]) -> tuple[list[str], list[str], str | None]:
    """The events read past as unreadable, tried again: those still unreadable (their names, and each with why), and
    a reason to rebuild when one reads now (it is indexed in order by the rebuild). A vanished one is dropped."""
    real = set(days.days)
    still: list[str] = []
    why: list[str] = []
    wanted = sorted(name for name in unread if names.parse_name(name) is not None and names.shard_of(name) in real)
    for day in sorted({names.shard_of(name) for name in wanted}):
        for name, raw in log.read_files(day, [name for name in wanted if name.startswith(day)],
                                        unreadable_as_empty=True):
            try:
                log.codec.decode(raw)
            except UnknownEventType:
                return [], [], "an event file read past as unreadable is whole now"  # rebuilt: its kind kept then
            except EventUndecodable as error:
                still.append(name)
                why.append(f"{name}: {unreadable_error(raw, error)}")
            else:
                return [], [], "an event file read past as unreadable is whole now"
    return still, why, None


def projects_of(connection: sqlite3.Connection) -> list[str]:
    """The projects the index holds rows of (read from meta; [] when unknown)."""
    row = connection.execute("SELECT value FROM meta WHERE key = 'projects'").fetchone()
    try:
        return list(_PROJECTS.decode(row[0])) if row else []
    except (msgspec.DecodeError, msgspec.ValidationError, TypeError, RecursionError):
        return []


def position_of(connection: sqlite3.Connection) -> str | None:
    """The newest event file the index has read (None: none)."""
    row = connection.execute("SELECT value FROM meta WHERE key = 'last_read'").fetchone()
    return row[0] if row else None


def rows(connection: sqlite3.Connection) -> Iterator[tuple[Any, ...]]:
    """Every indexed row in log order (for tests and checks: equal indexes hold equal rows)."""
    yield from connection.execute(
        "SELECT d.name, d.event_id, d.created_at, d.kind, d.project, d.agent, d.host, d.session, f.body"
        " FROM docs d JOIN fts f ON f.rowid = d.id ORDER BY d.name")


# -- common words' contenders ------------------------------------------------------------------
# FTS5 scores every match with bm25() before it can keep the best few: for a word found in a
# quarter of 100,000 events, ~20 ms, most of it one docsize lookup a row. For a query of one
# term, a row's bm25() depends only on how often the term occurs in it (f) and its length in
# tokens (d): the term's IDF and the average length are the same for every row. It grows with
# f and shrinks with d (every floating-point step is monotonic, so the computed scores keep
# that order, ties included), and ties go to the newest row. So a row that at least
# CONTENDERS newer rows match with f as high and d as low can never be among the best
# CONTENDERS, whatever the corpus's statistics become: leaving it out changes no answer. Each
# common word's `contenders` are the rows fewer than CONTENDERS others beat that way (a
# "skyband"; a few dozen rows, where the word has thousands of matches), kept up to the row
# `contenders_upto` in meta; rows after it are all scored (plain.CONTENDERS_RANK_SQL). The
# scores themselves are always FTS5's, of the same statement as the ranking.
CONTENDERS = plain.CONTENDERS
#: A word with contenders matches at least this many rows (fewer cost FTS5 under a millisecond).
COMMON = 1000
#: The contenders are brought up to date once this many rows were indexed after `contenders_upto`.
TAIL = 5000
#: A word is checked for COMMON once it is in this many of the rows brought up to date at once.
PROMOTE = 10


def contenders(rows: list[tuple[int, int, int]], depth: int = CONTENDERS) -> list[tuple[int, int, int]]:
    """Of (id, f, d) rows, those fewer than `depth` others beat on every count: newer, f as high, d as low.

    A row beaten by one left out is beaten by `depth` kept ones (each beats it too), so
    counting the kept rows is enough; a (f, d) pair beaten `depth` times stays beaten.
    """
    kept: list[tuple[int, int, int]] = []
    seen: dict[tuple[int, int], int] = {}
    beaten: set[tuple[int, int]] = set()
    for row in sorted(rows, reverse=True):
        pair = row[1:]
        if pair in beaten:
            continue
        count = 0
        for (f, d), many in seen.items():
            if f >= row[1] and d <= row[2]:
                count += many
        if count >= depth:
            beaten.add(pair)
            continue
        kept.append(row)
        seen[pair] = seen.get(pair, 0) + 1
    return kept


def _varint(blob: bytes) -> int:
    """The first SQLite varint of a blob (fts_docsize: a row's length in tokens)."""
    value = 0
    for place, byte in enumerate(blob[:9]):
        if place == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            break
    return value


def keep_contenders(connection: sqlite3.Connection) -> int:
    """Bring the common words' contenders up to the newest row once TAIL rows came after them; the row they reach.

    Runs in the transaction that indexed the rows (_flush), so rows and contenders are
    committed together. A word becomes common (gets contenders, from every row) when it is
    in PROMOTE of the new rows and COMMON in all; a common word stays common.
    """
    upto_row = connection.execute("SELECT value FROM meta WHERE key = 'contenders_upto'").fetchone()
    upto = int(upto_row[0]) if upto_row else 0
    last = int(connection.execute("SELECT COALESCE(MAX(id), 0) FROM docs").fetchone()[0])
    if last - upto < TAIL:
        return upto
    _scratch_tables(connection)
    connection.execute("INSERT INTO temp.recall_tail(rowid, body) SELECT rowid, body FROM fts WHERE rowid > ?", (upto,))
    try:
        kept: dict[str, list[tuple[int, int, int]]] = {}
        for term, row_id, f, d in connection.execute("SELECT term, id, f, d FROM contenders"):
            kept.setdefault(term, []).append((row_id, f, d))
        lengths = {row[0]: _varint(row[1]) for row in connection.execute(
            "SELECT id, sz FROM fts_docsize WHERE id > ?", (upto,))}
        # A word is looked up in the whole index when it is in PROMOTE of the new rows and often
        # enough there to be in half of COMMON rows at that rate (how often it is counts for
        # speed only: a common word without contenders is ranked among every match).
        promote = max(PROMOTE, len(lengths) * COMMON // (2 * last))
        for term, count in connection.execute("SELECT term, doc FROM temp.recall_tail_rows").fetchall():
            before = kept.get(term)
            if before is not None:
                found: dict[int, int] = {}
                for (doc,) in connection.execute("SELECT doc FROM temp.recall_tail_instances WHERE term = ?", (term,)):
                    found[doc] = found.get(doc, 0) + 1
                _replace(connection, term, before,
                         contenders(before + [(doc, f, lengths[doc]) for doc, f in found.items()]))
            elif count >= promote and connection.execute(
                    "SELECT doc FROM temp.recall_rows WHERE term = ?", (term,)).fetchone()[0] >= COMMON:
                _replace(connection, term, [], _all_contenders(connection, term))
    finally:
        connection.execute("INSERT INTO temp.recall_tail(recall_tail) VALUES ('delete-all')")
    return last


def _scratch_tables(connection: sqlite3.Connection) -> None:
    """keep_contenders' scratch tables (the connection's own, in `temp`): the new rows' terms, the index's."""
    for statement in (
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.recall_tail"
            f" USING fts5(body, content='', {plain.TOKENIZE})",
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.recall_tail_rows USING fts5vocab(temp, recall_tail, row)",
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.recall_tail_instances"
            " USING fts5vocab(temp, recall_tail, instance)",
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.recall_rows USING fts5vocab(main, fts, row)",
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.recall_instances USING fts5vocab(main, fts, instance)"):
        connection.execute(statement)


def _all_contenders(connection: sqlite3.Connection, term: str) -> list[tuple[int, int, int]]:
    """A term's contenders among every indexed row (when it becomes common)."""
    found: dict[int, list[int]] = {}
    for doc, size in connection.execute("SELECT i.doc, s.sz FROM temp.recall_instances i"
                                        " JOIN fts_docsize s ON s.id = i.doc WHERE i.term = ?", (term,)):
        entry = found.get(doc)
        if entry is None:
            found[doc] = [1, _varint(size)]
        else:
            entry[0] += 1
    return contenders([(doc, f, d) for doc, (f, d) in found.items()])


def _replace(connection: sqlite3.Connection, term: str, before: list[tuple[int, int, int]],
             after: list[tuple[int, int, int]]) -> None:
    gone = set(before) - set(after)
    new = set(after) - set(before)
    connection.executemany("DELETE FROM contenders WHERE term = ? AND id = ?", ((term, row[0]) for row in gone))
    connection.executemany("INSERT INTO contenders(term, id, f, d) VALUES (?, ?, ?, ?)",
                           ((term, *row) for row in new))
