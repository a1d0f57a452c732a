"""Many git objects through one process each way: `cat-file --batch` reads, `mktree --batch` writes.

A running git may not notice packs that arrived after it started (a fetch), so callers
start these after the objects they need exist.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from collections.abc import Iterable, Iterator
from typing import IO, NamedTuple

from continuity.sync.git import Repo
from events.errors import WriteFailed

TREE = "40000"
#: The most a tree may hold: a day of about three million events (an entry is about 90 bytes). A remote's
#: bigger tree is refused before it is read, whatever its size.
TREE_LIMIT = 256 << 20
#: Answers smaller than this are read with their trailing newline in one call.
SMALL_ANSWER = 64 << 10


class Entry(NamedTuple):
    """One tree entry: mode (as git stores it, `40000` for a folder), name, object id."""

    mode: str
    name: str
    sha: str

    @property
    def kind(self) -> str:
        """The object type the entry points at."""
        return "tree" if self.mode == TREE else "commit" if self.mode == "160000" else "blob"


def parse_tree(data: bytes, oid_bytes: int) -> list[Entry]:
    """The entries of a raw tree object (ValueError when it is not one)."""
    entries: list[Entry] = []
    index, end = 0, len(data)
    while index < end:
        space = data.index(b" ", index)
        nul = data.index(b"\0", space)
        name = data[space + 1:nul].decode("utf-8", "surrogateescape")
        if nul + 1 + oid_bytes > end:
            raise ValueError("a tree entry's object id is cut short")
        sha = data[nul + 1:nul + 1 + oid_bytes].hex()
        entries.append(Entry(data[index:space].decode("ascii"), name, sha))
        index = nul + 1 + oid_bytes
    return entries


class _BatchProcess:
    """A long-lived git process fed on stdin and read on stdout; its stderr kept for the message of a failure
    (drained by a thread: git writes there only when something is wrong, and must never block on it)."""

    process: subprocess.Popen[bytes]
    stdin: IO[bytes]
    stdout: IO[bytes]

    def _spawn(self, repo: Repo, *args: str) -> None:
        self.repo = repo
        self.process = repo.start(*args)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin = self.process.stdin
        self.stdout = self.process.stdout
        self._errors = bytearray()
        self._drainer = threading.Thread(target=_drain, args=(self.process.stderr, self._errors), daemon=True)
        self._drainer.start()

    def _end(self) -> None:
        """Close its input, wait for the process (killed after 10 s) and for its stderr to be read."""
        with contextlib.suppress(OSError, ValueError):
            self.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._drainer.join(timeout=10)

    def _message(self) -> str:
        """git's line, once the failing process has ended."""
        self._end()
        return self.repo.message(bytes(self._errors))

    def close(self) -> None:
        """End the process."""
        self._end()
        self.stdout.close()


def _drain(stream: IO[bytes] | None, into: bytearray) -> None:
    """Read a process's stderr to its end, keeping the first 64 KiB."""
    if stream is None:
        return
    with stream:
        while chunk := stream.read(4096):
            if len(into) < 1 << 16:
                into += chunk


class ObjectReader(_BatchProcess):
    """One `git cat-file --batch` process: objects by id, one at a time or many in a stream."""

    def __init__(self, repo: Repo) -> None:
        self._spawn(repo, "cat-file", "--batch")

    def read(self, sha: str) -> tuple[str, bytes]:
        """(type, content) of one object."""
        kind, data = self.read_bounded(sha, None)
        assert data is not None  # no bound, never skipped
        return kind, data

    def read_bounded(self, sha: str, limit: int | None) -> tuple[str, bytes | None]:
        """(type, content) of one object; content None when it is bigger than `limit` (never held in memory)."""
        try:
            self.stdin.write(f"{sha}\n".encode())
            self.stdin.flush()
        except (OSError, ValueError):  # the process is gone (a stream read_many left early ended it): a failure
            # of sync's, never the closed stdout a BrokenPipeError stands for at the top (exit 0, nothing said)
            raise WriteFailed(f"sync failed: git cat-file stopped ({self._message()})") from None
        return self._answer(sha, limit)

    def read_tree(self, sha: str) -> list[Entry]:
        """The entries of a tree (WriteFailed for a tree over TREE_LIMIT, or an object that is no tree)."""
        kind, data = self.read_bounded(sha, TREE_LIMIT)
        if kind != "tree":
            raise WriteFailed(f"sync failed: git object {sha} is a {kind}, not a tree")
        if data is None:
            raise WriteFailed(f"sync failed: git tree {sha} holds more than the {TREE_LIMIT >> 20} MiB a day of "
                              "events can; it was not read")
        try:
            return parse_tree(data, self.repo.oid_bytes)
        except (ValueError, UnicodeDecodeError):
            raise WriteFailed(f"sync failed: git object {sha} is not a well-formed tree") from None

    def read_many(self, shas: list[str], limit: int | None = None) -> Iterator[tuple[str, bytes | None]]:
        """(type, content) of each object, in order; the requests stream from a thread. Content is None
        for an object bigger than `limit`: a remote's blob under an event's name is not read into memory
        whatever its size."""
        def feed() -> None:
            with contextlib.suppress(OSError, ValueError):
                for start in range(0, len(shas), 1024):
                    self.stdin.write("".join(f"{sha}\n" for sha in shas[start:start + 1024]).encode())
                self.stdin.flush()

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        finished = False
        try:
            for sha in shas:
                yield self._answer(sha, limit)
            finished = True
        finally:
            if not finished:  # the reader stopped early: the process may be stuck writing to us
                self.process.kill()
            writer.join()

    def _answer(self, sha: str, limit: int | None) -> tuple[str, bytes | None]:
        line = self.stdout.readline()
        if not line:
            raise WriteFailed(f"sync failed: git cat-file stopped ({self._message()})")
        header = line.split()
        if len(header) != 3:
            raise WriteFailed(f"sync failed: git object {sha} is missing")
        size = int(header[2])
        if limit is not None and size > limit:  # skip it a chunk at a time: the stream stays in step
            left = size + 1
            while left:
                chunk = self.stdout.read(min(left, 1 << 20))
                if not chunk:
                    raise WriteFailed(f"sync failed: git cat-file ended early ({self._message()})")
                left -= len(chunk)
            return header[1].decode(), None
        if size < SMALL_ANSWER:  # with the newline after it, in one read (most objects: events)
            data = self.stdout.read(size + 1)
            end = data[size:]
            data = data[:size]
        else:  # a big tree or blob is not copied to take its newline off
            data = self.stdout.read(size)
            end = self.stdout.read(1)
        if len(data) != size or end != b"\n":
            raise WriteFailed(f"sync failed: git cat-file ended early ({self._message()})")
        return header[1].decode(), data


class TreeWriter(_BatchProcess):
    """One `git mktree --batch -z` process: writes trees, one per call, and returns their ids.

    A tree's entries that git carries but refuses to write into a tree again (a name with a
    slash, a mode that does not match its object: only a hand-made tree holds one, and a
    teammate can push it) are left out of the tree written, and named in `dropped`: carrying
    them would fail every sync that rewrites that tree, on every clone.

    An entry whose object this repository lacks is damage, never left out (that would take an
    event off the branch). A refusal naming no such entry is written once more by a new
    process: a running mktree never looks for packs made after its first lookup, so a gc
    repacking beside the sync makes objects it already saw loose "unavailable" to it.
    """

    def __init__(self, repo: Repo) -> None:
        self.dropped: list[str] = []  # names of entries left out
        self._spawn(repo, "mktree", "--batch", "-z")

    def write(self, entries: Iterable[Entry]) -> str:
        """Write a tree of these entries (mktree sorts them), less those git refuses to write; its id."""
        listed = list(entries)
        try:
            return self._write(listed)
        except WriteFailed:
            kinds = self.repo.object_types(sorted({entry.sha for entry in listed if entry.kind != "commit"}))
            for entry in listed:
                if entry.kind != "commit" and kinds.get(entry.sha) == "missing":
                    raise WriteFailed(f"sync failed: git object {entry.sha} ({entry.name!r}) is missing from this "
                                      "clone's repository; `git fsck` names the damage") from None
            writable = [entry for entry in listed
                        if "/" not in entry.name and (entry.kind == "commit" or entry.kind == kinds.get(entry.sha))]
            self.close()  # mktree ended when it refused
            self._spawn(self.repo, "mktree", "--batch", "-z")
            self.dropped += [entry.name for entry in listed if entry not in writable]
            return self._write(writable)  # every object there: once more, by a process that sees today's packs

    def _write(self, entries: list[Entry]) -> str:
        body = "".join(f"{entry.mode} {entry.kind} {entry.sha}\t{entry.name}\0" for entry in entries)
        try:
            self.stdin.write(body.encode("utf-8", "surrogateescape") + b"\0")
            self.stdin.flush()
            sha = self.stdout.readline().decode().strip()
        except OSError:
            sha = ""
        if not sha:
            raise WriteFailed(f"sync failed: git mktree refused a tree ({self._message()})")
        return sha

