"""Keeping read models current on disk: incremental catch-up and full rebuild, per model.

Each read model is saved in its own file, ``local/models/<name>.msgpack``: its format,
its state, the last event file it read, and each day folder's mtime and event count as
it last saw them. Catch-up stats the day folders (one per day, not per event, shared by
every model of the call): an older day whose mtime moved, or a count that does not add
up, means an event arrived "in the past" (a git merge), and that model is rebuilt from
the start. A model saved with another format is rebuilt alone. Otherwise only events
after the model's checkpoint are read, each decoded once for every model that needs it.
"""

import bisect
import contextlib
import errno
import importlib
import os
import stat
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar, cast

import msgspec

from continuity.core.fsio import ensure_folder
from continuity.core.store import Store
from continuity.readside.views import Models
from events import names, osfs
from events.base import Event
from events.durable import hour_folders, hours_left_warning, no_folder, unreadable_error
from events.errors import ContinuityError, EventsUnlisted, EventUndecodable, UnknownEventType
from events.filelog import FileEventLog, list_days
from events.log import Head
from projections.readmodel import Fold, Passes, Projects, ReadModel
from projections.registry import models

MODELS_DIR = "models"
S = TypeVar("S")

#: Called after a model folds an event: (the model's state, file name, event).
Writer = Callable[[Projects[Any], str, Event], None]
#: Called after each day folder read: (events read so far, events to read in all).
Progress = Callable[[int, int | None], None]
#: Bytes of event files just written by the caller, by day and name (catch_up's `held`).
Held = Mapping[str, Mapping[str, bytes]]


class DayMark(msgspec.Struct, array_like=True):
    """A day folder as last folded: its mtime and how many event files it held; for the day a reader stands in,
    a digest of the names up to its position (0: none taken, a mark an earlier release saved)."""

    mtime_ns: int
    count: int
    names: int = 0


#: Each day folder's mark, by day.
Marks = dict[str, DayMark]


def day_mark(mtime_ns: int, listed: list[str], day: str, position: str | None, whole: bool = True) -> DayMark:
    """A day folder's mark for a reader that stands at `position` (`whole`: it read the day to its end): the names up
    to its position when that lies in this day, for an entry shaped like an event that is none (a stamp of no real
    time, junk) after it is never read, and must not read as an event that arrived in the past."""
    if whole and not (position and position.startswith(day)):
        return DayMark(mtime_ns, len(listed))
    count = bisect.bisect_right(listed, position or "")
    return DayMark(mtime_ns, count, prefix_digest(listed, count))


def prefix_digest(listed: list[str], count: int) -> int:
    """`names.digest(listed[:count])`, going on from the last one taken of the same listing: a catch-up checks the
    names up to where its models stood, then marks them up to where they stand now (one pass over the day's
    names, not one for the check and one for each model's mark)."""
    last = _LAST_PREFIX
    if last[0] is listed and last[1] <= count:
        crc = names.names_crc(listed[last[1]:count], last[2])
    else:
        crc = names.names_crc(listed[:count])
    last[:] = [listed, count, crc]
    return crc + 1


#: The listing, count and CRC prefix_digest took last (the listing is held, so another cannot take its place).
_LAST_PREFIX: list[Any] = [None, 0, 0]


class Saved(msgspec.Struct, Generic[S], kw_only=True):
    """One saved read model: its state plus what the log looked like when it was saved."""

    format: int
    #: The newest event file read, folded or skipped as unreadable (the state's last_name
    #: only counts folded ones; an unreadable newest file must not look like a merge).
    last_read: str | None = None
    days: dict[str, DayMark] = msgspec.field(default_factory=dict)
    #: Event files read past as unreadable (no permission, mid-write, planted junk), at most UNREAD_KEPT:
    #: every catch-up tries them again, and one that reads now sends the model back to fold it in order.
    unread: list[str] = msgspec.field(default_factory=list)
    #: Kinds of events read past because this release does not know them (a newer teammate's), at most
    #: UNKNOWN_KEPT ("*" past that, or for a name no kind has): a release that knows one rebuilds the model.
    unknown: list[str] = msgspec.field(default_factory=list)
    #: With "*" in `unknown`: the kinds the release that saved knew (`known_kinds`); another set rebuilds.
    kinds: int | None = None
    state: Projects[S] = msgspec.field(default_factory=Projects)


class Outcome(msgspec.Struct, kw_only=True):
    """What a catch-up did: the models, whether any was rebuilt, how many events were read."""

    models: Models
    rebuilt: bool = False
    folded: int = 0
    warnings: list[str] = msgspec.field(default_factory=list)
    #: False when the models or derived documents could not be saved (the answer still stands).
    saved: bool = True
    #: Day folders that are symlinks: their events were not read, so the models may lack some.
    linked_days: list[str] = msgspec.field(default_factory=list)
    #: Events read and skipped as unreadable, and the first of them ("name: why"), as the warning says.
    skipped: int = 0
    first_skipped: str | None = None
    #: Of those, the ones this catch-up met first (the others, read past before, were tried again), and the first.
    met: int = 0
    first_met: str | None = None
    #: Why the read stopped short of the log's end (a day folder, or events/ itself, that cannot be listed; or a
    #: deadline, then it starts with OUT_OF_TIME).
    stopped: str | None = None
    #: events/ could not be listed: the models are as last saved, and nothing may be written from them.
    as_saved: bool = False
    #: The models handed over whole (decoded; the others are the view asked for): those a fold may have changed.
    whole: list[str] = msgspec.field(default_factory=list)
    #: What could not be written of the models' documents in the store (archives, role and handoff files,
    #: memories...); the user-level Markdown copies of archives are warnings only (a read-only home).
    unwritten: list[str] = msgspec.field(default_factory=list)


class _Head(msgspec.Struct, kw_only=True):
    """A saved model as read before its state is needed: the state stays undecoded bytes.

    A catch-up that has nothing to fold for a model never decodes its whole state: the
    command gets it decoded as the view it asked for (say, only the tasks of the `tasks`
    model for `task list`), so reading stays cheap however big the kept state is.
    """

    format: int
    last_read: str | None = None
    days: dict[str, DayMark] = msgspec.field(default_factory=dict)
    unread: list[str] = msgspec.field(default_factory=list)
    #: None: saved by a release from before kinds read past were noted (see _skipped_unnoted).
    unknown: list[str] | None = None
    kinds: int | None = None
    state: msgspec.Raw


class _Counters(msgspec.Struct, kw_only=True):
    """A saved state's counters, its projects left as encoded: `Projects` as saved, field for field."""

    last_name: str | None = None
    events_folded: int = 0
    projects: msgspec.Raw = msgspec.field(default_factory=lambda: msgspec.Raw(b"\x80"))


class _Unreadable(Exception):
    """A saved model's state does not decode (a torn or foreign file): rebuild that model."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


_ENCODER = msgspec.msgpack.Encoder()
_HEAD = msgspec.msgpack.Decoder(_Head)
_COUNTERS = msgspec.msgpack.Decoder(_Counters)
#: A saved state's projects by name, each left as encoded.
_PROJECTS = msgspec.msgpack.Decoder(dict[str, msgspec.Raw])
_DECODERS: dict[str, msgspec.msgpack.Decoder[Any]] = {}
_STATE_DECODERS: dict[Any, msgspec.msgpack.Decoder[Any]] = {}


def _state_decoder(kind: Any) -> msgspec.msgpack.Decoder[Any]:
    """A decoder of `Projects[kind]` (a model's state type, or a view of it, or "module:Name" naming one), made once."""
    decoder = _STATE_DECODERS.get(kind)
    if decoder is None:
        found: Any = kind
        if isinstance(kind, str):  # imported only when a state is decoded as it
            module, _, attr = kind.partition(":")
            found = getattr(importlib.import_module(module), attr)
        decoder = _STATE_DECODERS[kind] = msgspec.msgpack.Decoder(Projects[found])
    return decoder


def models_dir(store: Store) -> str:
    """Where the saved read models live (machine-local)."""
    return os.path.join(store.local_dir, MODELS_DIR)


_PATHS: dict[tuple[str, str], str] = {}


def model_path(store: Store, model: ReadModel[Any]) -> str:
    """The file one read model is saved in (joined once per process: every catch-up asks twice per model)."""
    key = (store.local_dir, model.name)
    found = _PATHS.get(key)
    if found is None:
        found = _PATHS[key] = os.path.join(models_dir(store), f"{model.name}.msgpack")
    return found


# A saved model is a machine-local cache, rewritten on most catch-ups: it is overwritten in
# place under an flock (no temp file and rename per model, which cost five directory
# updates per catch-up), framed as MAGIC, payload length, CRC-32 of the payload, payload.
# A reader takes the shared lock; a frame that does not check out (a writer killed
# mid-write) reads as missing, and the model is rebuilt from the log. CRC-32 is enough to
# catch a torn frame (this is no integrity guard against a hostile writer: the log is).
MAGIC = b"CTMODEL2"
#: How long a model's lock is waited for. A save holds it for a write of the model (milliseconds); a holder past
#: this is stopped (Ctrl-Z, a hung mount): a read folds the model from the log instead, a save is skipped (it is a
#: cache; the warning names the file), and no session start waits for that holder.
MODEL_LOCK_SECONDS = 1.0
#: The models whose saved copy this process found locked past MODEL_LOCK_SECONDS (so a catch-up says why it folds
#: them from the log).
_LOCKED: set[str] = set()
_HEADER = len(MAGIC) + 8 + 4
#: The largest saved payload read: models are bounded (a million events save under 100 kB); a frame claiming more
#: (a damaged length) reads as missing, and a file grown huge behind a frame is read no further than the frame.
MAX_MODEL_BYTES = 256 * 1024 * 1024


def _payload(store: Store, model: ReadModel[Any]) -> memoryview | None:
    """A saved model's payload, or None when missing, torn or unreadable (read under the shared lock)."""
    try:
        fd = os.open(model_path(store, model), osfs.READ)
    except OSError:
        return None
    try:
        if not osfs.lock_within(fd, MODEL_LOCK_SECONDS, shared=True):
            _LOCKED.add(model.name)  # its saver is stopped mid-save: fold from the log rather than wait for it
            return None
        _LOCKED.discard(model.name)  # (a server's process reads it again later)
        header = osfs.pread(fd, _HEADER, 0)
        length = int.from_bytes(header[len(MAGIC):len(MAGIC) + 8], "big") if len(header) == _HEADER else 0
        if not header.startswith(MAGIC) or length > min(os.fstat(fd).st_size - _HEADER, MAX_MODEL_BYTES):
            return None  # not a frame, or one its file cannot hold: never a read of a file grown huge
        frame = osfs.pread(fd, _HEADER + length, 0)
    except (OSError, MemoryError):
        return None
    finally:
        osfs.release(fd)
    return _unframe(frame)


#: What an explicit `rebuild` whose store documents could not all be written leaves where the model's saved copy
#: was (readside/writers.py): no saved model, so the next catch-up rebuilds it and writes them, saying why.
UNFINISHED = b"continuity: the last rebuild did not finish writing this model's documents\n"


def mark_unfinished(store: Store, model: ReadModel[Any]) -> None:
    """Put UNFINISHED where the model's saved copy is (removed instead if that cannot be written)."""
    from continuity.core.fsio import write_atomic

    path = model_path(store, model)
    try:
        write_atomic(path, UNFINISHED, durable=False)
    except OSError:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _unfinished(store: Store, model: ReadModel[Any]) -> bool:
    """Whether a failed `rebuild` left UNFINISHED in place of the model's saved copy."""
    try:
        return osfs.read_regular(model_path(store, model), follow=False, limit=len(UNFINISHED)) == UNFINISHED
    except (OSError, ValueError):
        return False


def _load_head(store: Store, model: ReadModel[Any]) -> _Head | None:
    """A saved model with its state undecoded, or None when missing, torn, unreadable or from another format."""
    payload = _payload(store, model)
    if payload is None:
        return None
    try:
        head = _HEAD.decode(payload)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    return head if head.format == model.format else None


def _why_not_loaded(store: Store, model: ReadModel[Any]) -> str:
    """Why `_load_head` found no saved model to go on from (asked again: only a model about to be rebuilt asks)."""
    if not os.path.lexists(model_path(store, model)):
        return "the saved projection was missing"
    payload = _payload(store, model)
    try:
        head = None if payload is None else _HEAD.decode(payload)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        head = None
    if head is None:
        return "the saved projection was unreadable (damaged, cut short or not a saved model)"
    if head.format != model.format:  # an upgrade (or a downgrade): another release's shape of the model
        return (f"the saved projection was written in another format of the model ({head.format}; this release "
                f"reads {model.format})")
    return "the saved projection changed while it was read"  # saved again between the two reads


def load(store: Store, model: ReadModel[Any]) -> Saved[Any] | None:
    """A saved model, whole, or None when missing, torn, unreadable or from another format."""
    decoder = _DECODERS.get(model.name)
    if decoder is None:
        decoder = _DECODERS[model.name] = msgspec.msgpack.Decoder(Saved[model.state_type])  # type: ignore[name-defined]
    payload = _payload(store, model)
    if payload is None:
        return None
    try:
        saved: Saved[Any] = decoder.decode(payload)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    return saved if saved.format == model.format else None


def _unframe(frame: bytes) -> memoryview | None:
    """The payload of a saved model's frame (a view of it: a big model's bytes are not copied), or None."""
    if len(frame) < _HEADER or not frame.startswith(MAGIC):
        return None
    length = int.from_bytes(frame[len(MAGIC):len(MAGIC) + 8], "big")
    payload = memoryview(frame)[_HEADER:_HEADER + length]
    if len(payload) != length or zlib.crc32(payload) != int.from_bytes(frame[len(MAGIC) + 8:_HEADER], "big"):
        return None
    return payload


#: How long a catch-up waits for another process's turn to end before it answers from memory, writing nothing.
TURN_WAIT_SECONDS = 10.0
_TURNS_HELD: dict[int, int] = {}  # turns held, by thread: a catch-up inside one (a writer's) takes no second
#: When this process last waited for the turn in vain (`time.monotonic()`): a command that catches up twice
#: (`archive`: before its decision and after its append) waited twice for a holder that was stopped (Ctrl-Z on a
#: rebuild), 21 s. Within TURN_WAIT_SECONDS of a wait in vain, a wait is at most MISSED_WAIT_SECONDS: enough for
#: another process's catch-up of a few ms (a server's next call), little for a holder still stopped.
_MISSED_AT: list[float] = []
MISSED_WAIT_SECONDS = 0.5


def _turn_wait(wait: float) -> float:
    """`wait`, shortened to MISSED_WAIT_SECONDS within TURN_WAIT_SECONDS of a wait in vain."""
    if _MISSED_AT and time.monotonic() - _MISSED_AT[-1] < TURN_WAIT_SECONDS:
        return min(wait, MISSED_WAIT_SECONDS)
    return wait


@contextlib.contextmanager
def writing_turn(store: Store, wait: float | None = None) -> Iterator[bool]:
    """Hold the catch-up turn (a lock on `local/models`) for the body; whether this process may write derived
    files and save models.

    Catch-ups running at once each wrote the files of what they folded, and one that folded less could write
    after one that folded more and leave its older file under a model saved past it, stale until that entity
    changed again or a rebuild (a role's log missing its newest lines). They take turns now: each loads the
    saved models, folds, writes and saves inside its turn. A turn that does not come within `wait` (a long
    rebuild running) gives False: the caller folds in memory and writes nothing. A lock that cannot be had at
    all (a read-only store, a link planted there) gives True, as before there was one: the writes say what fails.
    """
    from _thread import get_ident

    thread = get_ident()
    if _TURNS_HELD.get(thread):
        _TURNS_HELD[thread] += 1
        try:
            yield True
        finally:
            _TURNS_HELD[thread] -= 1
        return
    try:  # the models' folder itself: a catch-up that writes nothing (`work audit`) leaves the store as it was
        fd = osfs.open_folder_lock(models_dir(store))
    except OSError:  # none yet (a fresh store: the first catch-up makes it) or a link planted there
        yield True
        return
    wait = _turn_wait(TURN_WAIT_SECONDS if wait is None else wait)
    try:
        if osfs.lock_within(fd, wait):
            _TURNS_HELD[thread] = 1
            try:
                yield True
            finally:
                del _TURNS_HELD[thread]
            return
        if wait > 0:
            _MISSED_AT[:] = [time.monotonic()]
    finally:
        osfs.release(fd)
    yield False


#: What a catch-up that did not get its turn says.
NO_TURN = ("another process kept the read models' files for over {seconds:g} s (a rebuild?): this answer was "
           "folded in memory and nothing was saved")


def in_turn(store: Store, run: Callable[[bool], Outcome], deadline: float | None = None) -> Outcome:
    """`run(write=True)` in this process's catch-up turn; `run(False)`, said so, when the turn does not come
    (within TURN_WAIT_SECONDS, or by `deadline` when that comes first: a hook the harness kills)."""
    wait = TURN_WAIT_SECONDS if deadline is None else min(TURN_WAIT_SECONDS, max(0.0, deadline - time.monotonic()))
    wait = _turn_wait(wait)  # as writing_turn takes it: the warning says how long it was waited for
    with writing_turn(store, wait) as turn:
        if turn:
            return run(True)
    outcome = run(False)
    outcome.warnings.append(NO_TURN.format(seconds=round(wait, 1)))
    return outcome


def save(store: Store, model: ReadModel[Any], saved: Saved[Any], *, folder_checked: bool = False) -> None:
    """Save one model for the next catch-up (in place, framed and locked; no fsync: it is rebuildable).

    `folder_checked`: the caller has made sure `local/models` is a real folder in the store.
    """
    payload = _ENCODER.encode(saved)
    header = MAGIC + len(payload).to_bytes(8, "big") + zlib.crc32(payload).to_bytes(4, "big")
    path = model_path(store, model)
    if not folder_checked:
        ensure_folder(store.path, os.path.dirname(path))
    try:
        fd = os.open(path, osfs.UPDATE, 0o666)
    except OSError as error:  # ELOOP: a link planted there (never followed)
        raise OSError(error.errno, f"{path} is a symbolic link" if error.errno == errno.ELOOP
                      else f"{error.strerror or error} ({path})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or a device planted there: said so, by its path
            raise OSError(errno.EINVAL, f"{path} is not a regular file")
        if not osfs.lock_within(fd, MODEL_LOCK_SECONDS):
            raise OSError(errno.EWOULDBLOCK, f"{path} is locked by another process (waited {MODEL_LOCK_SECONDS:g} s)")
        # header and payload written apart: a model of megabytes is not copied into one frame first
        if osfs.pwrite(fd, header, 0) != len(header) or osfs.pwrite(fd, payload, len(header)) != len(payload):
            raise OSError(errno.EIO, f"short write of {path}")
        os.ftruncate(fd, len(header) + len(payload))  # a model that shrank keeps no stale bytes past its frame
    except OSError as error:
        reason = error.strerror or str(error)
        raise OSError(error.errno, reason if path in reason else f"{reason} ({path})") from None
    finally:
        osfs.release(fd)


def _event_names(entries: list[str]) -> list[str]:
    """Entries shaped like event names, sorted (names are parsed only when read).

    A day folder holds only event files unless something else was put there, and an
    active day holds thousands: check the common case in C (one join, every name the
    same length, the suffix read with strided slices) before filtering name by name.
    """
    entries.sort()
    count, length = len(entries), names.NAME_LENGTH
    joined = "".join(entries)
    if (len(joined) == length * count and min(map(len, entries), default=length) == length
            and all(joined[length - 5 + i::length] == char * count for i, char in enumerate(".json"))):
        return entries
    return [entry for entry in entries if len(entry) == length and entry.endswith(".json")]


class Days:
    """Day folders' mtimes and listings, each taken at most once per catch-up (the recall index's too)."""

    def __init__(self, log: FileEventLog, now_us: int | None = None) -> None:
        self.log = log
        self.events_dir = log.events_dir
        self.links: list[str] = []  # day names that are symlinks: never read, but a read says so
        self.others: list[str] = []  # day names of a file or FIFO: no events there, but a read says so
        #: Why events/ itself cannot be listed (no permission, an I/O error), or None: then nothing is read.
        self.unlistable: str | None = None
        try:
            self.days = list_days(self.events_dir, self.links, self.others)
        except OSError as error:
            self.days, self.unlistable = [], error.strerror or type(error).__name__
        #: With `now_us`, the day folders past what counts as now: their events are stamped early, and wait.
        self.early: list[str] = []
        if now_us is not None and self.days and self.days[-1] > names.last_day(now_us):
            limit = log.now_limit(now_us, self.days)
            cut = bisect.bisect_right(self.days, limit)
            self.days, self.early = self.days[:cut], self.days[cut:]
        self._mtimes: dict[str, int] = {}
        self._listings: dict[str, list[str]] = {}
        self._hint: Head | bool | None = False  # False: not read yet

    def settled(self, day: str, position: str | None, mark: DayMark | None) -> bool:
        """Whether the newest day is as a model left it after folding up to `position`, known without listing it.

        The newest day is otherwise always listed (mtimes can tick coarsely: a file landing in
        the same tick as a catch-up keeps the mtime). The log's head hint closes that gap for
        local appends: every append records the head and its day's mtime after linking (and
        marks the hint pending before), and a sync's union drops it. So when the hint is
        trusted by the log's own rule, names `position`, and the model's mark for the day has
        the day's current mtime, no file has landed there since the model listed it.
        """
        if position is None or mark is None or not self.days or self.days[-1] != day:
            return False
        try:
            if mark.mtime_ns != self.mtime(day):  # a file landed there since (the hint is not read for that)
                return False
        except OSError:  # gone since events/ was listed: not settled (the fold says why it stops there)
            return False
        if self._hint is False:
            self._hint = self.log.head_hint(self.days, self.mtime)
        hint = self._hint
        return isinstance(hint, Head) and hint.name == position

    def mtime(self, day: str) -> int:
        found = self._mtimes.get(day)
        if found is None:
            found = self._mtimes[day] = os.stat(os.path.join(self.events_dir, day)).st_mtime_ns
        return found

    def take_mtimes(self, days: Sequence[str]) -> None:
        """Take the mtimes of these day folders at once, through one descriptor of events/ (`mtime` then answers
        from them; one that could not be stat'ed is stat'ed again there, and says why)."""
        wanted = [day for day in days if day not in self._mtimes]
        if len(wanted) > 1:
            self._mtimes.update(osfs.mtimes_in(self.events_dir, wanted))

    def listing(self, day: str) -> list[str]:
        found = self._listings.get(day)
        if found is None:
            self.mtime(day)  # the mark is taken before the listing
            found = self._listings[day] = _event_names(self.log.day_entries(os.path.join(self.events_dir, day)))
        return found

    def count(self, day: str) -> int:
        """How many entries a day folder holds (for progress; not kept, so memory stays flat)."""
        found = self._listings.get(day)
        if found is not None:
            return len(found)
        try:
            return len(os.listdir(os.path.join(self.events_dir, day)))
        except OSError:  # the fold says why
            return 0

    def forget(self, day: str) -> None:
        """Drop a day's listing once folded: memory stays flat however many days a rebuild reads."""
        self._listings.pop(day, None)


class _Track:
    """One model during a catch-up: its saved form, where it stands, what it folded.

    The saved state is decoded only when the model folds an event, must be saved, or is
    handed to the command (then possibly as a view of it).
    """

    def __init__(self, model: ReadModel[Any], head: _Head | None, why: str | None) -> None:
        self.model = model
        self.rebuilding = why is not None
        self.why = why
        self.changed = self.rebuilding
        self._raw: msgspec.Raw | None = None
        #: The saved bytes of a state decoded only to be handed over whole (nothing folded into it): saved as they
        #: are, its counters moved, rather than encoded again.
        self._kept: msgspec.Raw | None = None
        self.folded_before = 0
        # Events gone past while the state stays undecoded (none it would change): counted in when it is decoded,
        # or into the saved bytes' counters (`to_save`).
        self.passed = 0
        self.passed_last: str | None = None
        if head is None or why is not None:
            self.saved: Saved[Any] = Saved(format=model.format, state=model.empty())
            self.position: str | None = None  # the newest name already read; None: from the start
            return
        self.saved = Saved(format=head.format, last_read=head.last_read, days=head.days, unread=head.unread,
                           unknown=[] if head.unknown is None else head.unknown, kinds=head.kinds)
        self._raw = head.state
        self.position = head.last_read or self._counters().last_name

    def _counters(self, raw: msgspec.Raw | None = None) -> _Counters:
        """The saved state's counters, its projects left encoded (of `raw`: bytes it was read from)."""
        raw = raw if raw is not None else self._raw
        assert raw is not None
        try:
            return _COUNTERS.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            raise _Unreadable(self.model.name) from None

    @property
    def state(self) -> Projects[Any]:
        """The model's whole state (decoded from the saved bytes on first use)."""
        if self._raw is not None:
            try:
                decoded: Projects[Any] = _state_decoder(self.model.state_type).decode(self._raw)
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                raise _Unreadable(self.model.name) from None
            self._raw = None
            self.folded_before = decoded.events_folded
            self.saved.state = self._counted(decoded)
            self.passed, self.passed_last = 0, None
        return self.saved.state

    @property
    def undecoded(self) -> bool:
        """Whether the saved state is still bytes (nothing folded into it yet)."""
        return self._raw is not None

    def view(self, kind: Any, project: str | None = None) -> tuple[Projects[Any], int | None]:
        """The state for the command: decoded as `kind` (a view naming some of its fields) if not decoded yet; and
        None, or how many projects the model holds when it is handed over without them. `project`: the one project
        the command reads of the model: a state not decoded yet that holds none for it is not decoded (nor its
        model's module imported), and is handed over with its counters and no project at all (Models.partial)."""
        if self._raw is not None and project is not None:
            counters = self._counters()
            try:
                held = _PROJECTS.decode(counters.projects)
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                raise _Unreadable(self.model.name) from None
            if project not in held:
                bare: Projects[Any] = Projects(last_name=counters.last_name, events_folded=counters.events_folded)
                return self._counted(bare), len(held)
        return self._whole_view(kind), None

    def _whole_view(self, kind: Any) -> Projects[Any]:
        if self._raw is None:
            return self.state
        if kind is None:  # decoded whole to be handed over: saved again from these bytes (to_save)
            self._kept = self._raw
            return self.state
        try:
            found: Projects[Any] = _state_decoder(kind).decode(self._raw)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            raise _Unreadable(self.model.name) from None
        counted: Projects[Any] = self._counted(found)
        return counted

    def _counted(self, state: Any) -> Any:
        """`state` (decoded from the saved bytes) with the events gone past since counted in."""
        if self.passed:
            state.events_folded += self.passed
            state.last_name = self.passed_last
        return state

    def go_past(self, count: int, last: str) -> None:
        """`count` events up to `last` that this model folds or passes over: its counters move, and an undecoded
        state stays so (what `ReadModel.apply` does to the counters)."""
        if self._raw is None:
            self.saved.state.events_folded += count
            self.saved.state.last_name = last
        else:
            self.passed += count
            self.passed_last = last

    def to_save(self) -> Saved[Any]:
        """The saved form: a state that was never decoded is saved as its bytes, with its counters moved."""
        if self._raw is not None:
            self.saved.state = cast(Any, self._counted(self._counters()))
        elif self._kept is not None:
            counters = self._counters(self._kept)
            counters.last_name, counters.events_folded = self.saved.state.last_name, self.saved.state.events_folded
            return msgspec.structs.replace(self.saved, state=cast(Any, counters))
        return self.saved

    @property
    def folded(self) -> int:
        """How many events this catch-up folded into the model (or went past: they move its counters)."""
        return self.passed if self._raw is not None else self.saved.state.events_folded - self.folded_before

    @property
    def first_day(self) -> str:
        """The oldest day this model may still need ("" from the start)."""
        return names.shard_of(self.position) if self.position is not None else ""

    def wants_day(self, day: str, days: Days) -> bool:
        if self.position is None:
            return True
        last_day = names.shard_of(self.position)
        if day < last_day:
            return False
        mark = self.saved.days.get(day)
        if day == last_day:
            return not days.settled(day, self.position, mark)
        return not (mark is not None and mark.mtime_ns == days.mtime(day))


#: Why a saved model is read again from the start: a day folder it had read is gone (deleted, or moved away).
VANISHED = "a day folder vanished"
#: The same for day folders read before that count as stamped early now (this machine's clock went back).
EARLY_NOW = "day folders read before are past what this machine's clock counts as now (the clock is behind the log)"
#: The same for a day before the newest one read that changed (a merge brought events there, or some were removed).
PAST_CHANGED = "events before the last catch-up changed (a merge brought some, or some were removed)"


def _validate(saved: Saved[Any], position: str | None, days: Days) -> str | None:
    """Why a saved model (read up to `position`) must be rebuilt (the log changed in its past), or None."""
    return validate_marks(saved.days, position, days)


def validate_marks(marks: Marks, position: str | None, days: Days) -> str | None:
    """Why what was read up to `position`, with these day marks, must be read again from the start, or None."""
    gone = set(marks) - set(days.days)
    if gone:
        return EARLY_NOW if gone <= set(days.early) else VANISHED
    last_day = names.shard_of(position) if position else ""
    older = days.days[:bisect.bisect_left(days.days, last_day)]
    days.take_mtimes(older)
    for day in older:
        mark = marks.get(day)
        try:
            if mark is None or days.mtime(day) != mark.mtime_ns:
                return PAST_CHANGED
        except FileNotFoundError:  # removed since events/ was listed
            return VANISHED
    mark = marks.get(last_day) if last_day else None
    # The newest folded day is listed (where mtimes tick coarsely, older kernels and NFS, a
    # file landing in the same tick as the last catch-up keeps the mtime) unless the head
    # hint shows it settled (Days.settled).
    try:
        if (mark is not None and last_day in days.days and position is not None
                and not days.settled(last_day, position, mark)):
            listing = days.listing(last_day)
            count = bisect.bisect_right(listing, position)
            if count != mark.count or (mark.names and prefix_digest(listing, count) != mark.names):
                return PAST_CHANGED
    except OSError:  # a day folder that cannot be listed: the fold stops there and says so, nothing is rebuilt
        return None
    return None


def catch_up(
    store: Store,
    log: FileEventLog,
    names_wanted: Iterable[str] | None = None,
    *,
    writers: Mapping[str, Writer] | None = None,
    force_rebuild: bool = False,
    views: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
    held: Held | None = None,
    deadline: float | None = None,
    sparse: Mapping[str, str] | None = None,
) -> tuple[Outcome, list[tuple[ReadModel[Any], Saved[Any], bool]]]:
    """Bring the named read models (all when None) up to date with the log.

    `views` maps a model to the Struct its command reads of each project's state (a subset
    of its fields): a model with nothing to fold is then decoded only that far. `held`: the
    bytes of event files the caller has just written (day -> name -> bytes), folded without
    reading the files back. `deadline` (`time.monotonic()`): a read that must answer in time
    (a session start) stops folding at the first day folder that ends past it (or inside a dense
    day, every MID_DAY_CHUNK events after the first chunk), keeps what it
    folded (the next catch-up goes on from there) and says so in `stopped`. `sparse` maps a model
    to the one project the command reads of it: one this catch-up did not decode that holds nothing
    for that project is handed over with no project (`Models.partial`), its module not imported.
    Returns the outcome and, per model, its saved form and whether it changed (to save).
    """
    wanted = list(names_wanted) if names_wanted is not None else None
    unreadable: set[str] = set()
    while True:
        try:
            return _catch_up(store, log, wanted, writers or {}, force_rebuild, views or {}, unreadable, progress,
                             held=held or {}, deadline=deadline, sparse=sparse or {})
        except _Unreadable as error:  # a saved state that does not decode: that model is rebuilt
            if error.name in unreadable:
                raise
            unreadable.add(error.name)


def early_warning(early: Sequence[str]) -> str:
    """What a read says of the day folders stamped early (`names.last_day`): they wait, and why."""
    first = early[0]
    return (f"{len(early)} day folder(s) from events/{first}/ on ({first[:4]}-{first[4:6]}-{first[6:]}) hold events "
            "stamped more than a day ahead of this machine's clock (a broken or hostile clock's): the read models "
            "leave them out and new events do not follow them until this clock reaches their day (see "
            "`continuity verify`)")


def moved_line(moved: int) -> str:
    """What a command says once it has moved the first release's hour folders."""
    return f"moved {moved} event(s) of the first release's hour folders (events/<day>/<HH>/) into their day folders"


def adopt_first_release_folders(log: FileEventLog) -> tuple[int, str | None]:
    """Move the events of the first release's hour folders into their day folders, if any are left.

    Returns how many moved and a warning when some stay unread (a store that cannot be
    written, a file that is no event of its day, or a day folder holding other bytes).
    """
    if not hour_folders(log.events_dir):
        return 0, None
    try:
        moved, kept = log.adopt_hour_folders()
    except ContinuityError as error:
        return 0, hours_left_warning([], error)
    return moved, hours_left_warning(kept) if kept else None


def _catch_up(
    store: Store, log: FileEventLog, names_wanted: list[str] | None, writers: Mapping[str, Writer],
    force_rebuild: bool, views: Mapping[str, Any], unreadable: set[str], progress: Progress | None = None,
    adopted: bool = False, held: Held | None = None, deadline: float | None = None,
    sparse: Mapping[str, str] | None = None,
) -> tuple[Outcome, list[tuple[ReadModel[Any], Saved[Any], bool]]]:
    days = Days(log, log.clock_us())
    if days.unlistable is not None:
        if force_rebuild:  # a rebuild from no event would claim an empty log
            raise EventsUnlisted(f"events/ cannot be listed ({days.unlistable}): nothing rebuilt")
        return _as_saved(store, names_wanted, views, days.unlistable)
    tracks: list[_Track] = []
    # Models saved by the same catch-up carry the same day marks and position: check those once.
    verdicts: list[tuple[dict[str, DayMark], str | None, str | None]] = []
    for model in models(names_wanted):
        head = None if force_rebuild or model.name in unreadable else _load_head(store, model)
        why: str | None = "forced" if force_rebuild else None
        if head is None:
            why = why or ("the last `continuity rebuild` did not finish writing its documents" if _unfinished(
                store, model) else f"the saved projection is locked by another process (waited "
                f"{MODEL_LOCK_SECONDS:g} s)" if model.name in _LOCKED else _why_not_loaded(store, model))
            tracks.append(_Track(model, None, why))
            continue
        track = _Track(model, head, None)
        known = next((verdict for marks, at, verdict in verdicts if at == track.position and marks == head.days), "-")
        why = _validate(track.saved, track.position, days) if known == "-" else known
        if known == "-":
            verdicts.append((head.days, track.position, why))
        if why is None and track.saved.unknown and reads_now(track.saved.unknown, track.saved.kinds, log.codec.current):
            why = UNKNOWN_READ_NOW
        elif why is None and head.unknown is None:  # once: from then on the model is saved with its list
            why = _skipped_unnoted(track)
            track.changed = True
        tracks.append(track if why is None else _Track(model, None, why))
    if not adopted and any(track.rebuilding for track in tracks):
        # A store the first release wrote has no saved models: its first catch-up lands here.
        moved, unread = adopt_first_release_folders(log)
        if moved or unread:  # the day folders changed under the marks just checked: start again
            outcome, saved = _catch_up(store, log, names_wanted, writers, force_rebuild, views, unreadable,
                                       progress, adopted=True, held=held, deadline=deadline, sparse=sparse)
            if moved:
                outcome.warnings.insert(0, moved_line(moved))
            outcome.warnings.extend([unread] if unread else [])
            return outcome, saved
    readable, still = _read_again(log, [track for track in tracks if track.saved.unread], days.days)
    if readable:
        tracks = [_Track(track.model, None, "an event file read past as unreadable can be read now")
                  if readable & set(track.saved.unread) else track for track in tracks]
    folded, skipped, stopped = _fold(log, days, tracks, writers, progress, held or {}, deadline)
    if force_rebuild and stopped is not None and not out_of_time(stopped):
        # a rebuild that could not read a day would save the log up to there over models that held it all
        raise EventsUnlisted(f"{stopped}; nothing rebuilt")
    kinds = None
    for track in tracks:
        if "*" in track.saved.unknown and track.saved.kinds != (kinds := kinds or known_kinds(log.codec.current)):
            track.saved.kinds, track.changed = kinds, True
    warnings: list[str] = []
    rebuilt = [track for track in tracks if track.rebuilding]
    # every event gone is said too, unless a day folder turned into a link or a file (said below) is why
    if rebuilt and not force_rebuild and (folded or (rebuilt[0].why in (VANISHED, EARLY_NOW)
                                                     and not (days.links or days.others))):
        reason = rebuilt[0].why
        which = "projections" if len(rebuilt) == len(tracks) else \
            "projections (" + ", ".join(track.model.name for track in rebuilt) + ")"
        warnings.append(f"{reason}: {which} rebuilt from {folded} events")
    if skipped:
        warnings.append(f"skipped {len(skipped)} unreadable event(s); first: {skipped[0]}")
    again = {line.split(":", 1)[0] for line in skipped}  # a rebuilt model met them again: said once, above
    still = [line for line in still if line.split(":", 1)[0] not in readable | again]
    if still:
        warnings.append(f"{len(still)} unreadable event(s) are still left out (each catch-up tries them again); "
                        f"first: {still[0]}")
    if stopped:
        warnings.append(stopped)
    if days.links:
        warnings.append(no_folder(days.events_dir, min(days.links)))
    if days.others:
        warnings.append(no_folder(days.events_dir, min(days.others)))
    if days.early:
        warnings.append(early_warning(days.early))
    states: dict[str, Projects[Any]] = {}
    partial: dict[str, int] = {}
    for track in tracks:
        name = track.model.name
        states[name], holding = track.view(views.get(name), (sparse or {}).get(name))
        if holding is not None:
            partial[name] = holding
    result = Models(states, partial)
    outcome = Outcome(models=result, rebuilt=bool(rebuilt), folded=folded, warnings=warnings,
                      linked_days=sorted(days.links), skipped=len(skipped) + len(still),
                      first_skipped=next(iter(skipped or still), None), met=len(skipped),
                      first_met=next(iter(skipped), None), stopped=stopped,
                      whole=[track.model.name for track in tracks if not track.undecoded])
    return outcome, [(track.model, track.to_save() if track.changed else track.saved, track.changed)
                     for track in tracks]


def _as_saved(
    store: Store, names_wanted: list[str] | None, views: Mapping[str, Any], why: str,
) -> tuple[Outcome, list[tuple[ReadModel[Any], Saved[Any], bool]]]:
    """The read models as last saved, nothing folded and nothing saved: events/ cannot be listed, so whether the
    log moved is unknown (a read fails open on what it had; a write fails at the lock, closed). A model with no
    saved state that reads is as before any event."""
    found: dict[str, Any] = {}
    unsaved: list[str] = []
    for model in models(names_wanted):
        head = _load_head(store, model)
        try:
            found[model.name] = (model.empty() if head is None
                                 else _Track(model, head, None).view(views.get(model.name))[0])
        except _Unreadable:
            head = None
        if head is None:  # missing, torn, or saved in another format (an upgrade): nothing to answer from
            found[model.name] = model.empty()
            unsaved.append(model.name)
    stopped = f"events/ cannot be listed ({why}): the read models are as last saved; no new event is read"
    if unsaved:
        stopped += f" ({', '.join(unsaved)}: no saved state this release reads, so shown empty)"
    return Outcome(models=Models(found), warnings=[stopped], stopped=stopped, as_saved=True), []


def _fold(
    log: FileEventLog, days: Days, tracks: Sequence[_Track], writers: Mapping[str, Writer],
    progress: Progress | None = None, held: Held | None = None, deadline: float | None = None,
) -> tuple[int, list[str], str | None]:
    """Read each needed day once and fold its new events into every model behind them; the unreadable events,
    and why it stopped early (a day folder that cannot be listed: it and every later day wait, in order; or
    `deadline` passed with days still to fold: they wait for the next catch-up)."""
    decode: Callable[[bytes], Any] | None = None  # the codec is built only when an event is read
    skipped: list[str] = []
    # Days before every model's checkpoint day are never read: start at the oldest one needed,
    # so a catch-up costs O(new days), not O(all days) per model.
    oldest = min((track.first_day for track in tracks), default="")
    todo = days.days[bisect.bisect_left(days.days, oldest):]
    total = sum(days.count(day) for day in todo) if progress is not None else None
    read = 0
    went_on = False  # at least one day with new events is folded, so every catch-up gets further
    for day in todo:
        needing = [track for track in tracks if track.wants_day(day, days)]
        if not needing:
            continue
        if deadline is not None and went_on and time.monotonic() >= deadline:
            return (max((track.folded for track in tracks), default=0), skipped,
                    f"{OUT_OF_TIME} and this read ran out of time: "
                    f"events from events/{day}/ on are not in this answer yet; the next command goes on from there "
                    "(`continuity rebuild` finishes now)")
        try:
            listed = days.listing(day)
        except OSError as error:
            return (max((track.folded for track in tracks), default=0), skipped,
                    f"events/{day}/ cannot be read ({error.strerror or error}): its events and every later one are "
                    "left out until it can")
        starts = [bisect.bisect_right(listed, track.position) if track.position else 0 for track in needing]
        first = min(starts)
        wanted = [name for name in listed[first:] if names.parse_name(name) is not None]
        if wanted:
            if decode is None:
                decode = log.codec.decode
            kept = held.get(day) if held else None
            files = (_read_held(log, day, wanted, kept) if kept
                     else log.read_files(day, wanted, unreadable_as_empty=True))
            # A dense day (a swarm's hundred thousand events) is cut short too, once MID_DAY_CHUNK of it are folded.
            before = names.event_before(listed, first)
            day_skipped, next_name = _fold_day(files, decode, wanted[0], needing, writers, deadline, before)
            skipped.extend(day_skipped)
            went_on = True
        else:
            next_name = None
        for track in needing:
            mark = day_mark(days.mtime(day), listed, day, track.saved.last_read)
            if track.saved.days.get(day) != mark:
                track.saved.days[day] = mark
                track.changed = True
        days.forget(day)
        if progress is not None and wanted:
            read += len(wanted)
            progress(read, total)
        if next_name is not None:
            return (max((track.folded for track in tracks), default=0), skipped,
                    f"{OUT_OF_TIME} and this read ran out of time: "
                    f"events from events/{day}/{next_name} on are not in this answer yet; the next command goes on "
                    "from there (`continuity rebuild` finishes now)")
    folded = max((track.folded for track in tracks), default=0)
    return folded, skipped, None


#: A catch-up with a deadline checks it inside a day folder once per this many events (never before the first ones).
MID_DAY_CHUNK = 512


#: How a catch-up stopped by its deadline starts its `stopped` line (out_of_time).
OUT_OF_TIME = "the read models are still catching up (a rebuild, or new formats after an upgrade)"


def out_of_time(stopped: str | None) -> bool:
    """Whether a catch-up stopped at its deadline (not at a day folder or events/ that cannot be listed)."""
    return stopped is not None and stopped.startswith(OUT_OF_TIME)


def cut_short(line: str) -> bool:
    """Whether a warning line says a catch-up stopped before the log's end: its deadline, a day folder that cannot
    be read, or events/ that cannot be listed (the lines `_fold` and `_as_saved` write)."""
    return out_of_time(line) or (line.startswith("events/") and (" cannot be read (" in line
                                                                  or " cannot be listed (" in line))


#: Unreadable event files a saved model keeps to try again, at most (a store with more has worse problems; the
#: warning still counts them all).
UNREAD_KEPT = 1000


#: How many unknown kinds a saved model names (a newer release adds a few; planted files could add any number).
UNKNOWN_KEPT = 64
KIND_CHARS = 100
UNKNOWN_READ_NOW = "events of a kind this release reads (written by a newer release) were read past before"


def _skipped_unnoted(track: _Track) -> str | None:
    """For a model saved by a release from before kinds read past were noted: why to rebuild it when that release
    read past events it did not take for unreadable (a kind it did not know may be one this release knows), else
    None. The day marks count every event file read; the state, every event folded."""
    read = sum(mark.count for mark in track.saved.days.values())
    passed = read - track.state.events_folded - len(track.saved.unread)
    if passed <= 0:
        return None
    return f"saved by an earlier release that read past {passed} event(s) (of kinds it did not know?)"


def keep_unknown(unknown: list[str], kind: str) -> bool:
    """Note an event kind read past as unknown (see Saved.unknown); whether the list changed."""
    if kind in unknown:
        return False
    if len(kind) <= KIND_CHARS and len(unknown) < UNKNOWN_KEPT - ("*" not in unknown):  # a place kept for "*"
        unknown.append(kind)
        return True
    if "*" in unknown:
        return False
    unknown.append("*")
    return True


def known_kinds(current: Mapping[str, int]) -> int:
    """A fingerprint of the event kinds, and their versions, a release knows."""
    return zlib.crc32("\n".join(f"{kind} v{version}" for kind, version in sorted(current.items())).encode())


def reads_now(unknown: Sequence[str], kinds: int | None, current: Mapping[str, int]) -> bool:
    """Whether this release knows a kind a model (or the recall index) read past as unknown, so it must be rebuilt
    to hold those events: a named kind (or `<kind> v<N>`, UnknownEventType.kind) it knows now, or "*" saved by a
    release that knew other kinds."""
    return any(_known(entry, current) for entry in unknown) or ("*" in unknown and kinds != known_kinds(current))


def _known(entry: str, current: Mapping[str, int]) -> bool:
    kind, _, version = entry.partition(" v")
    return kind in current and (not version or (version.isascii() and version.isdigit() and len(version) < 10
                                                and current[kind] >= int(version)))


def _keep_unread(track: _Track, name: str) -> None:
    if len(track.saved.unread) < UNREAD_KEPT and name not in track.saved.unread:  # full: no scan of 1,000 names
        track.saved.unread.append(name)


def _read_again(log: FileEventLog, tracks: Sequence[_Track], days: Sequence[str]) -> tuple[set[str], list[str]]:
    """The events each model read past as unreadable, tried again: the names that read now (their models go back
    to fold them in order) and those still unreadable ("name: why"). A vanished one is dropped, and so is one whose
    day folder is no longer one a reader takes (now a symlink: never read through)."""
    real = set(days)
    wanted = sorted({name for track in tracks for name in track.saved.unread if names.shard_of(name) in real})
    readable: set[str] = set()
    still: list[str] = []
    if not wanted:
        return readable, still
    decode = log.codec.decode
    found: set[str] = set()
    for day in sorted({names.shard_of(name) for name in wanted}):
        for name, raw in log.read_files(day, [name for name in wanted if name.startswith(day)],
                                        unreadable_as_empty=True):
            found.add(name)
            try:
                decode(raw)
            except EventUndecodable as error:
                still.append(f"{name}: {unreadable_error(raw, error)}")
            else:
                readable.add(name)
    for track in tracks:
        if readable.intersection(track.saved.unread):
            continue  # rebuilt by the caller
        kept = [name for name in track.saved.unread if name in found]
        if kept != track.saved.unread:
            track.saved.unread = kept
            track.changed = True
    return readable, still


def _read_held(log: FileEventLog, day: str, wanted: list[str], kept: Mapping[str, bytes]
               ) -> Iterator[tuple[str, bytes]]:
    """`log.read_files` for a day some of whose files' bytes are held in memory: those are not read again."""
    for name in wanted:
        raw = kept.get(name)
        if raw is None:
            yield from log.read_files(day, [name], unreadable_as_empty=True)
        else:
            yield name, raw


def _fold_day(
    files: Iterable[tuple[str, bytes]], decode: Callable[[bytes], Any], first: str,
    needing: Sequence[_Track], writers: Mapping[str, Writer], deadline: float | None = None, before: str | None = None,
) -> tuple[list[str], str | None]:
    """Fold one day's events (`files`, in name order from `first`; `before`, the day's event file before it) into the
    models that need them; the unreadable, and the name it stopped before when `deadline` passed (checked every
    MID_DAY_CHUNK events, after the first chunk), else None. The second of two files named for one event is left out
    for good (names.TWIN), as every read leaves it out.

    What `ReadModel.apply` does per event, with the bookkeeping done once per day: a model
    whose position is before `first` (a rebuild, or models saved together) folds every
    event, through folds looked up once per event class; a model whose position falls
    inside the day skips the names up to it, event by event. A model's saved state is decoded
    at the first event that may change it (`ReadModel.changes`); the events it passes over
    only move its counters, and its writer (whose documents its state makes) does not see them.
    """
    whole = [track for track in needing if track.position is None or track.position < first]
    partial = [track for track in needing if track not in whole]
    # Per event class, the models whose folds take it: (track, its projects or None while undecoded, fold, passes,
    # writer). Dropped when a state is decoded, so that later events find its projects.
    plans: dict[type[Any], list[tuple[_Track, dict[str, Any] | None, Fold, Passes | None, Writer | None]]] = {}
    skipped: list[str] = []
    decoded = read = 0
    last_read = last_decoded = stopped = None
    for name, raw in files:
        read += 1
        if deadline is not None and read % MID_DAY_CHUNK == 1 and read > 1 and time.monotonic() >= deadline:
            stopped = name
            break
        last_read = name
        retry = False
        unknown = None
        twin, before = names.twin(name, before), name
        try:
            if twin:
                raise EventUndecodable(names.TWIN)
            event = decode(raw)
        except EventUndecodable as error:
            skipped.append(f"{name}: {names.TWIN if twin else unreadable_error(raw, error)}")
            event = None
            # A kind this version does not know (a newer writer's) reads no better next time: said once, and its
            # kind kept, so that the release that knows it rebuilds. One that could not be read or parsed (no
            # permission, a copy caught mid-write) is tried again.
            retry = not twin and not isinstance(error, UnknownEventType)
            unknown = error.noted if isinstance(error, UnknownEventType) else None
        else:
            if not names.content_matches(name, event.event_id, event.created_at):  # said once, like a kind unknown
                skipped.append(f"{name}: {names.FORGED}")
                event = None
        for track in partial:
            if track.position is not None and name <= track.position:
                continue
            track.saved.last_read = name
            track.changed = True
            if event is None:
                if retry:
                    _keep_unread(track, name)
                elif unknown is not None:
                    keep_unknown(track.saved.unknown, unknown)
                continue
            if not track.model.changes(event):
                track.go_past(1, name)
                continue
            track.model.apply(track.state, name, event)
            writer = writers.get(track.model.name)
            if writer is not None:
                writer(track.state, name, event)
        if event is None:
            for track in whole if retry else ():
                _keep_unread(track, name)
            if unknown is not None:
                for track in whole:
                    keep_unknown(track.saved.unknown, unknown)
            continue
        decoded += 1
        last_decoded = name
        kind = type(event)
        plan = plans.get(kind)
        if plan is None:
            plan = plans[kind] = [
                (track, None if track.undecoded else track.state.projects, fold, passes, writers.get(track.model.name))
                for track in whole for fold, passes in (track.model.entry_for(kind),) if fold is not None]
        project = event.project
        for track, projects, fold, passes, writer in plan:
            if passes is not None and passes(event):
                continue
            if projects is None:
                projects = track.state.projects
                plans.clear()
            current = projects.get(project)
            projects[project] = fold(track.model.initial() if current is None else current, name, event)
            if writer is not None:
                writer(track.saved.state, name, event)
    for track in whole:
        if last_read is None:  # every wanted file vanished
            break
        track.saved.last_read = last_read
        track.changed = True
        if last_decoded is not None:
            track.go_past(decoded, last_decoded)
    return skipped, stopped
