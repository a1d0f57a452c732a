"""The store on disk: finding it, creating it, its config and this machine's node id."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from continuity.errors import StoreNotFound, StoreUnsafe, UsageError
from events.errors import WriteFailed

STORE_PARTS = (".agent", "runtime-continuity")
_NAME_OK = re.compile(r"[^A-Za-z0-9._:@+=-]+")


def now_us() -> int:
    """The wall clock in microseconds since the epoch: the one clock continuity reads."""
    return time.time_ns() // 1000


def project_name_for(root: Path) -> str:
    """A valid project name derived from a folder name."""
    name = _NAME_OK.sub("-", root.name).strip("-.") or "project"
    return name.replace("..", ".")[:128]


class Store:
    """A store: ``<root>/.agent/runtime-continuity`` and what lives in it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root.joinpath(*STORE_PARTS)
        self.events_dir = self.path / "events"
        self.local_dir = self.path / "local"
        self.config_path = self.path / "config.json"
        self._config: dict[str, Any] | None = None

    def check_safe(self) -> None:
        """Refuse a store whose folders are symlinks or not folders (writes could escape)."""
        for path in (self.path, self.events_dir, self.local_dir):
            if path.is_symlink():
                raise StoreUnsafe(f"unsafe store: {path} is a symlink")
            if path.exists() and not path.is_dir():
                raise StoreUnsafe(f"unsafe store: {path} is not a folder")

    @property
    def config(self) -> dict[str, Any]:
        """config.json as a dict (empty when missing or unreadable)."""
        if self._config is None:
            import orjson

            try:
                loaded = orjson.loads(self.config_path.read_bytes())
            except (OSError, orjson.JSONDecodeError):
                loaded = {}
            self._config = loaded if isinstance(loaded, dict) else {}
        return self._config

    @property
    def project(self) -> str:
        """The project name events are recorded under."""
        name = self.config.get("project")
        return name if isinstance(name, str) and name else project_name_for(self.root)

    def node(self) -> str:
        """This machine's node id for this store, made on first use (and after a move)."""
        host = os.uname().nodename
        node_path = self.local_dir / "node"
        try:
            node, _, made_on = node_path.read_text().strip().partition(" ")
            if made_on == host and re.fullmatch(r"[a-z0-9]{8}", node):
                return node
        except (OSError, UnicodeDecodeError):
            pass
        node = os.urandom(4).hex()
        try:
            self.local_dir.mkdir(parents=True, exist_ok=True)
            write_atomic(node_path, f"{node} {host}\n".encode())
        except OSError as error:
            raise WriteFailed(f"event not written: cannot record the node id ({error.strerror})") from None
        return node

    def open_log(self) -> Any:
        """The file event log of this store (a FileEventLog)."""
        from events.filelog import FileEventLog

        self.check_safe()
        return FileEventLog(self.events_dir, self.local_dir, node=self.node(), clock_us=now_us)


def find_store(start: Path | None = None, root: str | None = None) -> Store:
    """The store at `root`, or the nearest one from `start` (the working directory) upward."""
    explicit = root or os.environ.get("CONTINUITY_ROOT")
    if explicit:
        if "\x00" in explicit:
            raise UsageError("--root contains a NUL character")
        store = Store(Path(explicit).absolute())
        if not store.path.exists() and not store.path.is_symlink():
            raise StoreNotFound(f"no store at {store.path} (run `continuity init`)")
        store.check_safe()
        return store
    here = (start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        store = Store(folder)
        if store.path.is_dir() or store.path.is_symlink():
            store.check_safe()
            return store
    raise StoreNotFound("no store found here or above (run `continuity init`)")


def write_atomic(path: Path, data: bytes) -> None:
    """Write a derived file whole or not at all (temp file, fsync, rename)."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(temp, path)
    except OSError:
        temp.unlink(missing_ok=True)
        raise
