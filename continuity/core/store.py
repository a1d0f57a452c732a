"""The store on disk: finding it, its config and this machine's node id.

Paths are plain strings here: this module is on the hook path, where importing pathlib
(and the urllib it pulls in) costs more than the rest of a `continuity log`.
"""

from __future__ import annotations

import os
import time

from continuity.core.errors import ConfigBroken, StoreNotFound, UsageError
from continuity.core.fsio import write_atomic
from events import lazyre, osfs
from events.errors import ContinuityError, WriteFailed

TYPE_CHECKING = False
if TYPE_CHECKING:  # on the hook path: `typing` costs its start a few ms
    from typing import Any

STORE_PARTS = (".agent", "runtime-continuity")
_NAME_OK = lazyre.pattern(r"[^A-Za-z0-9._:@+=-]+")
#: The node of a log opened only to read: it never appends, so it never needs a real id.
READ_ONLY_NODE = "00000000"
CONFIG_LIMIT = 1 << 20  # config.json holds a few settings: a bigger one is refused as unreadable


def now_us() -> int:
    """The wall clock in microseconds since the epoch: the one clock continuity reads."""
    return time.time_ns() // 1000


def check_project_name(name: object) -> str:
    """`name` if a project may carry it (it becomes a field of every event and a folder name).

    continuity's own project names are `Name`s (events/base.py), the type of every id field.
    """
    from continuity.core.idfields import is_name

    if not isinstance(name, str) or not is_name(name):
        raise UsageError(
            "invalid project name: use letters, digits and ._:@+=- (no '..', '/', spaces or control characters)"
        )
    from events.guard import refuse_secret_id

    refuse_secret_id("project", name)  # every event would carry it: refused at init, not at each write after
    return name


def check_project_to_read(name: object) -> str:
    """`name` if a read may be asked for it: any project an event can carry (events/base.py's `ProjectName`), so a
    project `runtime-continuity` writes (`web app`, contract I4) is read here too; continuity's own writes take only
    what `check_project_name` accepts."""
    from continuity.core.idfields import is_project_name

    if not isinstance(name, str) or not is_project_name(name):
        raise UsageError("invalid project name: no event carries it (one line of at most 128 characters, "
                         "no '/', '\\', '[', ']', '..' or control characters)")
    from events.guard import refuse_secret_id

    refuse_secret_id("project", name)  # a read echoes the name it answers for
    return name


def config_json(config: dict[str, Any]) -> bytes:
    """config.json's text as continuity writes it: indented; on one line when indented it would be more than a config
    holds (values nested hundreds deep, added by hand), so no write makes a file every command then refuses."""
    from continuity.core.fsio import indented_json, surrogate_json

    text = indented_json(config) + b"\n"
    if len(text) <= CONFIG_LIMIT:
        return text
    import msgspec

    try:
        text = msgspec.json.encode(config) + b"\n"
    except UnicodeEncodeError:  # a lone surrogate: written as its escape
        text = surrogate_json(config) + b"\n"
    if len(text) > CONFIG_LIMIT:  # numbers written longer than they were read (`1E5` as 100000.0), many of them
        raise WriteFailed(f"config.json not written: it would hold {len(text)} bytes, more than a config holds "
                          f"({CONFIG_LIMIT >> 20} MiB); remove the settings added to it by hand")
    return text


def json_problem(raw: bytes, error: ValueError) -> str:
    """Where and why a hand-edited JSON file does not parse, in a few words that quote none of it."""
    import json

    if raw.startswith(b"\xef\xbb\xbf"):
        return "it starts with a byte order mark: save it as UTF-8 without one"
    if isinstance(error, UnicodeDecodeError):
        return f"not UTF-8 at byte {error.start}"
    if isinstance(error, UnicodeEncodeError):
        return "an escape names half of a surrogate pair"
    if isinstance(error, json.JSONDecodeError):
        return f"line {error.lineno} column {error.colno}: {error.msg}"
    if "integer string conversion" in str(error):  # Python's guard against huge numbers: its advice is not ours
        return "a number with more than 4300 digits"
    return str(error)  # plain.loads' own: NaN, a number out of range, nested too deeply


def project_name_for(root: str) -> str:
    """A valid project name derived from a folder's name."""
    from events.guard import cut  # a cut that splits a token keeps its first characters, which match no rule

    name = _NAME_OK().sub("-", os.path.basename(os.path.normpath(root))).strip("-.") or "project"
    return cut(name.replace("..", "."), 128).strip("-.") or "project"


class Store:
    """A store: ``<root>/.agent/runtime-continuity`` and what lives in it."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.path = os.path.join(self.root, *STORE_PARTS)
        self.events_dir = os.path.join(self.path, "events")
        self.local_dir = os.path.join(self.path, "local")
        self.config_path = os.path.join(self.path, "config.json")
        #: How long this store's appends wait for the append lock (None: as long as it takes; hooks set it).
        self.lock_wait: float | None = None
        self._config: dict[str, Any] | None = None
        self._config_problem: str | None = None
        #: Where `init --repair` copied a config.json that did not parse before replacing it.
        self.config_kept: str | None = None
        #: What `init` carried over from the original seed-004 tool's files (continuity/core/seed004.py).
        self.adopted: list[str] = []

    def check_safe(self, *, reading: bool = False) -> None:
        """Refuse a store whose folders are symlinks or not folders (writes could escape).

        Day folders are checked when an append uses them, derived folders by the one
        atomic writer (`within=`). `reading`: only what a reader reads from (the events and
        the saved models); a linked `archives/` or `local/tmp` is the writers' to refuse, so a
        read (`task list`) answers, and its derived writes warn.
        """
        folders = (os.path.join(self.local_dir, "models"),) if reading else self.local_folders()
        _refuse_unsafe((self.agent_dir, self.path, self.events_dir, self.local_dir, *folders))

    @property
    def agent_dir(self) -> str:
        """The project's `.agent/` folder, which holds the store: a link there (a cloned repository can carry one)
        would take every write into another project's store."""
        return os.path.dirname(self.path)

    def local_folders(self) -> tuple[str, ...]:
        """The folders the program writes under `local/` and the store (tmp, models, archives)."""
        return (os.path.join(self.local_dir, "tmp"), os.path.join(self.local_dir, "models"),
                os.path.join(self.path, "archives"))

    @property
    def config(self) -> dict[str, Any]:
        """config.json as a dict (empty when missing or unreadable: see `config_problem`)."""
        if self._config is None:
            self._config, self._config_problem = self._load_config()
        return self._config

    def _load_config(self) -> tuple[dict[str, Any], str | None]:
        from events.plain import loads  # reads what msgspec reads, without loading it (the plain append path)

        try:
            raw = osfs.read_regular(self.config_path, limit=CONFIG_LIMIT)
        except FileNotFoundError:
            return {}, f"{self.config_path} is missing"
        except OSError as error:
            return {}, f"{self.config_path} cannot be read ({error.strerror or error})"
        if not raw.strip():
            return {}, f"{self.config_path} is empty"
        try:
            loaded = loads(raw, max_depth=None)
        except ValueError as error:  # UnicodeDecodeError and JSONDecodeError included
            return {}, f"{self.config_path} is not valid JSON ({json_problem(raw, error)})"
        if not isinstance(loaded, dict):
            return {}, f"{self.config_path} is not a JSON object"
        from events.errors import SecretRefused

        try:
            check_project_name(loaded.get("project"))
        except (UsageError, SecretRefused):  # a name an earlier version took, this one refuses: `init --repair`
            return loaded, f"{self.config_path} names no valid project"
        return loaded, None

    @property
    def config_problem(self) -> str | None:
        """What is wrong with config.json (None when it is sound)."""
        if self._config is None:
            self._config, self._config_problem = self._load_config()
        return self._config_problem

    def number_setting(self, key: str, low: float, high: float, default: float) -> float:
        """A number in config.json from `low` to `high`; `default` for anything else.

        A bool (JSON `true` reads as 1), a string, NaN or a number out of the range (10**400 cannot
        even become a float) falls back: a setting never ends a command in an internal error.
        """
        value = self.config.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
            return default
        return float(value)

    def flag(self, key: str) -> bool:
        """A true/false setting in config.json, off unless it is JSON `true`.

        `"false"`, `"no"`, 1 or a list are the wrong type and read as the default (off), as every
        setting does: a quoted `"false"` must never turn on what it meant to keep off (the prompt's text).
        """
        return self.config.get(key) is True

    @property
    def project(self) -> str:
        """The project name events are recorded under (for a write: the store is checked first).

        StoreUnsafe for a store a write could escape; ConfigBroken when config.json cannot say.
        """
        return self.written_project()

    def written_project(self, *, flag: bool = True) -> str:
        """`project`, for a write that takes a --project (`flag`: the refusal names it as a way out) or not."""
        self.check_safe()
        problem = self.config_problem
        if problem is not None:
            raise ConfigBroken(f"{problem}: nothing written (run `continuity init --repair`"
                               f"{', or give --project' if flag else ''})")
        name: str = self.config["project"]
        return name

    def reading_project(self) -> tuple[str, list[str]]:
        """The project to answer reads for, and a warning when config.json could not say.

        Reads fail open: with a broken config the newest event's project is used (never a
        name guessed from the folder, which would hide the whole history). A store that is a link (or under one)
        is not read, its config.json neither: the answer, which says so, is under the folder's name (the name in
        the linked config was another project's).
        """
        from events.errors import StoreUnsafe

        try:
            _refuse_unsafe((self.agent_dir, self.path))
        except StoreUnsafe:
            return project_name_for(self.root), []
        problem = self.config_problem
        if problem is None:
            return self.config["project"], []
        guess = None
        try:
            guess = self._own_newest_project()
            if guess is None:
                head = self.open_reader().head()
                guess = head.event.project if head is not None else None
        except (OSError, ContinuityError):
            pass
        name = guess or project_name_for(self.root)
        return name, [f"{problem}; answering for project {name} (run `continuity init --repair`)"]

    #: How many of the newest events `_own_newest_project` looks through for one of this clone's (a read's bound).
    OWN_EVENTS_SCANNED = 2000

    def _own_newest_project(self) -> str | None:
        """The project of the newest event this clone wrote, among the newest OWN_EVENTS_SCANNED (None: none there):
        in a log sync has shared with clones of other projects, the newest event may be another project's, and
        `init --repair` renamed this clone after it."""
        from events import names
        from events.durable import node_file

        node, _ = node_file(self.local_dir)
        if node is None:
            return None
        reader = self.open_reader()
        for scanned, (name, raw) in enumerate(reader.read_raw_newest_first()):
            if scanned >= self.OWN_EVENTS_SCANNED:
                break
            parsed = names.parse_name(name)
            if parsed is None or parsed.node != node:
                continue
            try:
                project = getattr(reader.codec.decode(raw), "project", None)
            except ContinuityError:
                continue
            if isinstance(project, str) and project:
                return project
        return None

    def node(self) -> str:
        """This machine's node id for this store, made on first use, and again in a copy of the store or on another
        host (`durable.node_record`).

        Made under the append lock, so writers that start together on a new host (a new container, a
        store carried to another machine) agree on one id: each used to make its own, and the ids of
        all but the last were this store's under no record (`own_node`), a node apiece in `verify`.
        """
        from events.durable import node_file, node_record, open_lock, take_lock
        from events.errors import StoreUnsafe

        node, whole = node_file(self.local_dir)
        if whole:
            assert node is not None
            return node
        lock_path = os.path.join(self.local_dir, "lock")
        fd = open_lock(lock_path)
        try:
            take_lock(fd, self.lock_wait, lock_path)
            node, whole = node_file(self.local_dir)  # made by a writer this one waited for
            if whole:
                assert node is not None
                return node
            path = os.path.join(self.local_dir, "node")
            if node is None:
                _readable_node_file(path)
            node = node or os.urandom(4).hex()  # a first release's file: its id, now with the folder
            if os.path.isdir(path) and not os.path.islink(path):  # planted, or left by a tool: no file goes over it
                try:
                    os.rmdir(path)
                except OSError:
                    raise StoreUnsafe(f"event not written: {path} is a folder where the node id file belongs; move "
                                      "it out of the store (the next write makes the file)") from None
            try:
                write_atomic(path, node_record(node, self.local_dir), within=self.path)
            except OSError as error:
                raise WriteFailed(f"event not written: cannot record the node id in {path} ({error.strerror})") \
                    from None
            return node
        finally:
            osfs.release(fd)

    def open_log(self) -> Any:
        """The file event log of this store (a FileEventLog), ready to append."""
        from events.filelog import FileEventLog

        self.check_safe()
        log = FileEventLog(self.events_dir, self.local_dir, node=self.node(), clock_us=now_us)
        log.lock_wait = self.lock_wait
        return log

    def open_folder(self) -> Any:
        """The write protocol of this store's log alone (a DurableFolder): the plain append path writes through it."""
        from events.durable import DurableFolder

        self.check_safe()
        folder = DurableFolder(self.events_dir, self.local_dir)
        folder.lock_wait = self.lock_wait
        return folder

    def open_reader(self) -> Any:
        """The file event log for reading only: it never writes (not even the node id)."""
        from events.filelog import FileEventLog

        self.check_safe(reading=True)
        return FileEventLog(self.events_dir, self.local_dir, node=READ_ONLY_NODE, clock_us=now_us)

    def open_events_reader(self) -> tuple[Any, list[str]]:
        """The log for a read of the events alone (`events list`, the timeline): `open_reader`, or, when `local/`
        cannot be trusted (a link or a file planted there), the events without it and the warning that says so (a
        read fails open). StoreUnsafe when the store or `events/` itself is a link or no folder."""
        from events.errors import StoreUnsafe

        try:
            return self.open_reader(), []
        except StoreUnsafe as error:
            return self.open_events_only(), [f"{error}: nothing under local/ is read"]

    def open_events_only(self) -> Any:
        """The event log for reading when `local/` cannot be trusted (a link planted there): nothing under `local/`
        is read (no head hint, no node id; a folder that cannot exist stands in for it). StoreUnsafe when the
        store or `events/` itself is a link or no folder."""
        from events.filelog import FileEventLog

        _refuse_unsafe((self.agent_dir, self.path, self.events_dir))
        return FileEventLog(self.events_dir, os.path.join(os.devnull, "local"), node=READ_ONLY_NODE, clock_us=now_us)


def _readable_node_file(path: str) -> None:
    """WriteFailed when `local/node` is there but this user may not read it (a teammate's, made under a strict
    umask): a new id written over it would start a second node for this very clone, for good."""
    try:
        os.close(os.open(path, osfs.READ))
    except PermissionError as error:
        raise WriteFailed(f"event not written: {path} cannot be read by this user ({error.strerror}): its owner can "
                          "give read access (`chmod a+r` it); it names this clone's node") from None
    except OSError:  # missing, or no file (a folder, a link: replaced below, as before)
        pass


def _refuse_unsafe(folders: tuple[str, ...]) -> None:
    """StoreUnsafe for the first of the store's `folders` that is a symlink or no folder (a missing one, made when
    first written, or one not reachable passes: as islink/exists would say)."""
    from events.durable import refuse_link

    for path in folders:
        refuse_link(path, note="", passing=OSError)


def explicit_root(root: str | None = None) -> str | None:
    """The project root named by `--root`, else by CONTINUITY_ROOT (None: search upward)."""
    return root or os.environ.get("CONTINUITY_ROOT") or None


def working_folder() -> str:
    """The working directory; StoreNotFound (exit 3) when it was removed under the process (a shell left in a
    deleted worktree or temp folder), instead of an internal error."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise StoreNotFound("the working folder no longer exists (removed under this shell or server?): run "
                            "from the project (cd into it, or restart the server there), or give --root") from None


def find_store(start: str | None = None, root: str | None = None) -> Store:
    """The store at `root`, or the nearest one from `start` (the working directory) upward.

    Finding is not checking: writes check the store (`open_log`), and reads answer from
    what they can read safely, with a warning.
    """
    explicit = explicit_root(root)
    if explicit:
        if "\x00" in explicit:
            raise UsageError("--root contains a NUL character")
        if not os.path.isabs(explicit):  # a relative root is taken from the working folder, which may be gone
            try:
                explicit = os.path.join(os.getcwd(), explicit)
            except FileNotFoundError:
                from events.problems import quoted

                raise StoreNotFound(f"--root {quoted(explicit)} is relative to the working folder, which no longer "
                                    "exists (removed under this shell?): give it as an absolute path") from None
        store = Store(explicit)
        if not os.path.lexists(store.path):
            raise StoreNotFound(f"no store at {store.path} (run `continuity init`)")
        return store
    here = os.path.abspath(start or working_folder())
    while True:
        store = Store(here)
        if os.path.isdir(store.path) or os.path.islink(store.path):
            return store
        parent = os.path.dirname(here)
        if parent == here:
            raise StoreNotFound("no store found here or above (run `continuity init`)")
        here = parent
