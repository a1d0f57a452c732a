"""The worktree a validation ran against: git HEAD plus a deterministic fingerprint of its files (live facts).

The fingerprint covers every tracked and every untracked-not-ignored file: the SHA-256 of
the sorted lines `path NUL blob-id`, where blob-id is git's object id of the file's
content. Files git's index already holds unchanged take their id from the index
(`git ls-files -s`); only the files `git status` reports changed or untracked (and those
marked assume-unchanged or skip-worktree, which status does not look at) are read and
hashed, as `git add` would (`git hash-object`: content cleaned by git's filters, line
endings included; a file whose index copy holds CRLF, which `git add` leaves so, and a
name `--stdin-paths` cannot carry are hashed as they are). So the cost follows git's own
stat-based status, not the size of the tree, and staging a file (same content) does not
change the fingerprint. continuity's own files (the store, the runtime files and transfers in
`.ai-bridge/`) are left out: recording a validation rewrites them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat

import msgspec

from continuity.core.paths import BRIDGE_REL, STORE_REL
from continuity.facts import GitCall, GitUnavailable, work_tree_root
from events import osfs

#: How much of a changed file is read at once while hashing it.
CHUNK = 1 << 20


class Worktree(msgspec.Struct, frozen=True, kw_only=True):
    """HEAD and fingerprint of a worktree (None each when git cannot tell: outside git, no commit yet)."""

    head: str | None = None
    fingerprint: str | None = None
    problem: str | None = None


def blob_id(path: str) -> bytes:
    """git's object id of a file's content (of a symlink: its target), hex; a folder (submodule) is marked.

    A FIFO, device or socket standing where a file was is marked, never opened (reading one
    would block or never end); a regular file is hashed a chunk at a time, so a huge one
    costs no memory, and one that changes size while it is read is marked as changing.
    """
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        data = os.fsencode(os.readlink(path))
        return hashlib.sha1(b"blob %d\x00" % len(data) + data, usedforsecurity=False).hexdigest().encode()
    if stat.S_ISDIR(info.st_mode):
        return b"folder"
    if not stat.S_ISREG(info.st_mode):
        return b"special"
    fd = os.open(path, osfs.READ)  # no link followed, no FIFO waited on, if one was swapped in since
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return b"special"
        digest = hashlib.sha1(b"blob %d\x00" % info.st_size, usedforsecurity=False)
        read = 0
        while chunk := os.read(fd, CHUNK):
            digest.update(chunk)
            read += len(chunk)
            if read > info.st_size:
                break
    finally:
        os.close(fd)
    return digest.hexdigest().encode() if read == info.st_size else b"changing"


def unreadable_id(path: str) -> bytes:
    """What stands for a file this process may not read (no permission: a build's output owned by root): its size
    and modification time, so a write to it makes the evidence stale (a constant let any change through)."""
    try:
        info = os.lstat(path)
    except OSError:
        return b"unreadable"
    return b"unreadable %d %d" % (info.st_size, info.st_mtime_ns)


def _index(listed: bytes) -> tuple[dict[bytes, bytes], set[bytes]]:
    """path -> blob id of every stage-0 index entry, and the paths git status does not look at (marked
    assume-unchanged or skip-worktree: `git update-index`), from `git ls-files -s -v -z`."""
    entries: dict[bytes, bytes] = {}
    unwatched: set[bytes] = set()
    for record in listed.split(b"\x00"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        fields = meta.split(b" ")
        if len(fields) == 4 and fields[3] == b"0":
            entries[path] = fields[2]
            if fields[0].islower() or fields[0] == b"S":
                unwatched.add(path)
    return entries, unwatched


#: The index listing the fingerprint reads: stage, blob id and path, with the letters that mark entries status skips.
LS_ARGS = ("ls-files", "-s", "-v", "-z")
#: The `git status` call the fingerprint reads: it names HEAD too (`# branch.oid`).
STATUS_ARGS = ("status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all", "--no-renames",
               "--ignore-submodules=none")


def _status(out: bytes) -> tuple[str | None, set[bytes], set[bytes]]:
    """(HEAD, paths whose worktree content differs from the index or that are untracked, paths deleted)."""
    head: str | None = None
    changed: set[bytes] = set()
    gone: set[bytes] = set()
    for record in out.split(b"\x00"):
        kind = record[:2]
        if record.startswith(b"# branch.oid "):
            oid = record[len(b"# branch.oid "):].decode("ascii", "replace")
            head = None if oid == "(initial)" else oid
        elif kind == b"? ":
            changed.add(record[2:])
        elif kind in (b"1 ", b"u "):
            fields = record.split(b" ", 10 if kind == b"u " else 8)
            xy, path = fields[1], fields[-1]
            if xy[1:2] == b"D" or (xy[:1] == b"D" and xy[1:2] == b"."):
                gone.add(path)
            elif xy[1:2] != b"." or kind == b"u ":
                changed.add(path)
    return head, changed, gone


#: continuity's own files, relative to the project root (prefixes): never part of the fingerprint. In
#: `.ai-bridge/` only what continuity writes there (the runtime files and their temporary copies, the
#: checkpoint document it removes, transfers): a note of the project's own kept there is the project's.
OWN_PATHS = (f"{STORE_REL}/", f"{BRIDGE_REL}/context-runtime.", f"{BRIDGE_REL}/.context-runtime.",
             f"{BRIDGE_REL}/context-checkpoint.json", f"{BRIDGE_REL}/.context-checkpoint.json.",
             f"{BRIDGE_REL}/context-transfer/")


def fingerprint(top: str, exclude: tuple[bytes, ...] = ()) -> tuple[str | None, str]:
    """HEAD and the fingerprint of the worktree at `top`, leaving out paths under `exclude` (GitUnavailable
    without git)."""
    return _fingerprint(top, exclude, GitCall(top, *LS_ARGS), GitCall(top, *STATUS_ARGS))


#: How deep submodules within submodules are followed; deeper ones count as `folder`.
MAX_NESTING = 8


def nested_id(path: str, depth: int = 1, stop: _Stop | None = None) -> bytes:
    """A changed submodule's (or untracked nested repository's) id: its own HEAD and fingerprint.

    git status names it as one folder; its files and its commit are part of the worktree all the
    same. git looks no higher than the folder itself: a `.git` there that is no repository never
    makes this the outer tree again.
    """
    if depth > MAX_NESTING or not os.path.lexists(os.path.join(path, ".git")):
        return b"folder"
    ceiling = {"GIT_CEILING_DIRECTORIES": os.path.dirname(os.path.abspath(path))}
    stop = stop or _Stop()
    try:
        head, printed = _fingerprint(path, (), stop.started(GitCall(path, *LS_ARGS, env=ceiling)),
                                     stop.started(GitCall(path, *STATUS_ARGS, env=ceiling)), depth, ceiling,
                                     stop=stop)
    except GitUnavailable:
        return b"unreadable-repository"
    return f"repository {head or '-'} {printed}".encode()


class _Stop:
    """An observation's way to stop: a flag its hashing reads between files, and the git calls it started (killed
    on `stop`, so none is left running by a write that no longer waits for it)."""

    def __init__(self) -> None:
        self.stopped = False
        self.calls: list[GitCall] = []

    def started(self, call: GitCall) -> GitCall:
        self.calls.append(call)
        if self.stopped:
            call.cancel()
        return call

    def check(self) -> None:
        if self.stopped:
            raise GitUnavailable("the observation was stopped")

    def stop(self) -> None:
        self.stopped = True
        for call in self.calls:
            call.cancel()


def _fingerprint(top: str, exclude: tuple[bytes, ...], listing: GitCall, status: GitCall,
                 depth: int = 0, env: dict[str, str] | None = None, leaving: bytes | None = None,
                 stop: _Stop | None = None) -> tuple[str | None, str]:
    stop = stop or _Stop()
    try:
        index, unwatched = _index(listing.output())
        head, changed, gone = _status(status.output())
    finally:
        listing.cancel()
        status.cancel()
    if leaving is not None:  # the worktree as it is once that file is removed: gone, as git status would say
        gone.add(leaving)
        changed.discard(leaving)
        unwatched.discard(leaving)
    ids = {path: blob for path, blob in index.items() if path not in gone and not path.startswith(exclude)}
    # status skips what is marked assume-unchanged or skip-worktree: edits there count all the same (a sparse
    # checkout's entry that is not on disk keeps its index id)
    changed |= {path for path in unwatched if os.path.lexists(os.path.join(top, os.fsdecode(path)))}
    files: list[bytes] = []
    for path in changed:
        if path.startswith(exclude):
            continue
        stop.check()
        where = os.path.join(top, os.fsdecode(path))
        try:
            if stat.S_ISREG(os.lstat(where).st_mode) and _plain_line(path):
                files.append(path)
                continue
            ids[path] = blob_id(where)
            if ids[path] == b"folder":  # a submodule or nested repository: what is in it counts
                ids[path] = nested_id(where, depth + 1, stop)
        except FileNotFoundError:  # removed between the listing and the read
            ids.pop(path, None)
        except OSError:
            ids[path] = unreadable_id(where)
    for path in files:  # its id now is the cleaned content's (or none: removed meanwhile)
        ids.pop(path, None)
    ids.update(_cleaned_ids(top, files, [path for path in files if path in index], env, stop))
    digest = hashlib.sha256()
    for path in sorted(ids):
        digest.update(path + b"\x00" + ids[path] + b"\n")
    return head, digest.hexdigest()


def _plain_line(path: bytes) -> bool:
    """Whether `git hash-object --stdin-paths` reads `path` back as it is: a line starting with `"` is unquoted
    as C (`"x"` is `x`), and a line's CR and LF are taken off. Other paths are hashed as they are."""
    return not path.startswith(b'"') and b"\n" not in path and b"\r" not in path


def _cleaned_ids(top: str, paths: list[bytes], tracked: list[bytes], env: dict[str, str] | None,
                 stop: _Stop) -> dict[bytes, bytes]:
    """The blob ids `git add` would give these files: their content as git's filters clean it (line endings under
    `core.autocrlf` or `eol`/`text` attributes, a clean filter), which is what the index holds of a file once it is
    staged. Hashed as they are, a file staged with the same content moved the fingerprint (CRLF on disk, LF in the
    index). One `git hash-object` for all of them, beside `git ls-files --eol` of the `tracked` ones: a file whose
    index copy holds CRLF under automatic line endings is hashed as it is (`git add` keeps CRLF there, which
    hash-object does not know). Where hash-object fails (a file gone meanwhile, a filter that is not installed),
    each file's content as it is."""
    if not paths:
        return {}
    hashing = stop.started(GitCall(top, "hash-object", "--stdin-paths", env=env, given=b"\n".join(paths) + b"\n"))
    # --eol on these paths only (on the whole tree it reads every file: a tenth of a second at 10k files), a
    # command line of at most EOL_ARGS bytes each
    eols = [stop.started(GitCall(top, "--literal-pathspecs", "ls-files", "--eol", "-z", "--", *map(os.fsdecode, part),
                                 env=env)) for part in _parts(tracked, EOL_ARGS)]
    ids: dict[bytes, bytes] = {}
    try:
        found = hashing.output().split()
        if len(found) == len(paths):
            ids = dict(zip(paths, found, strict=True))
            as_they_are: set[bytes] = set()
            for call in eols:
                with contextlib.suppress(GitUnavailable):  # not told: hash-object's cleaning stands for them
                    as_they_are |= _kept_crlf(call.output())
            paths = [path for path in paths if path in as_they_are]
    except GitUnavailable:
        pass
    finally:
        for call in (hashing, *eols):
            call.cancel()
    for path in paths:
        stop.check()
        where = os.path.join(top, os.fsdecode(path))
        try:
            ids[path] = blob_id(where)
        except FileNotFoundError:
            ids.pop(path, None)
        except OSError:
            ids[path] = unreadable_id(where)
    return ids


#: The most bytes of paths one `git ls-files --eol` command line carries (Windows takes 32K characters in all).
EOL_ARGS = 24_000


def _parts(paths: list[bytes], most: int) -> list[list[bytes]]:
    """`paths` in runs of at most `most` bytes (a longer path alone)."""
    parts: list[list[bytes]] = []
    size = most
    for path in paths:
        if size + len(path) + 1 > most:
            parts.append([])
            size = 0
        parts[-1].append(path)
        size += len(path) + 1
    return parts


def _kept_crlf(listed: bytes) -> set[bytes]:
    """The paths of `git ls-files --eol -z` whose index copy holds CRLF (`i/crlf`, `i/mixed`) under automatic line
    endings (no `text` attribute, or `text=auto`): `git add` keeps CRLF there. With `text` or `eol=` set, it
    converts, as hash-object does."""
    found: set[bytes] = set()
    for record in listed.split(b"\x00"):
        info, _, path = record.partition(b"\t")
        attribute = info.partition(b"attr/")[2].strip()
        if info.startswith((b"i/crlf", b"i/mixed")) and (not attribute or attribute.startswith(b"text=auto")):
            found.add(path)
    return found


class Observation:
    """HEAD and fingerprint of the worktree holding `root`, under way: both git calls start at once.

    Start it before other work (a catch-up) and take `result()` when needed: git's stat of
    the tree runs beside it.
    """

    def __init__(self, root: str, leaving: str | None = None) -> None:
        self.top = work_tree_root(root)
        self._calls: tuple[GitCall, GitCall] | None = None
        self._stop = _Stop()
        self._own: tuple[bytes, ...] = ()
        self._leaving: bytes | None = None
        if self.top is not None:
            prefix = os.path.relpath(os.path.abspath(root), self.top)
            self._own = tuple(os.fsencode(own if prefix == "." else f"{prefix}/{own}") for own in OWN_PATHS)
            if leaving is not None:
                where = os.path.relpath(os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(leaving))),
                                                     os.path.basename(leaving)), self.top)
                outside = where == os.pardir or where.startswith(os.pardir + os.sep)  # not `..notes.json`
                self._leaving = None if outside else os.fsencode(where.replace(os.sep, "/"))
            self._calls = (self._stop.started(GitCall(self.top, *LS_ARGS)),
                           self._stop.started(GitCall(self.top, *STATUS_ARGS)))

    def cancel(self) -> None:
        """Stop the git calls and the hashing (the observation is no longer wanted)."""
        self._stop.stop()

    def result(self) -> Worktree:
        """The observation (a reason instead when git cannot tell)."""
        if self.top is None or self._calls is None:
            return Worktree(problem="not in a git worktree")
        try:
            head, printed = _fingerprint(self.top, self._own, *self._calls, leaving=self._leaving, stop=self._stop)
        except GitUnavailable as error:
            return Worktree(problem=str(error))
        return Worktree(head=head, fingerprint=printed)

    def result_within(self, seconds: float) -> Worktree | None:
        """The observation, or None (and the observation stopped) when it takes longer than `seconds`: a worktree
        whose untracked files hold gigabytes is hashed for as long as that takes, which a write need not wait for."""
        import threading

        found: list[Worktree] = []
        worker = threading.Thread(target=lambda: found.append(self.result()), daemon=True)
        worker.start()
        answer = None
        try:
            worker.join(seconds)
            answer = found[0] if found else None  # taken now: once stopped, the worker answers "stopped"
        finally:
            if answer is None:  # past the time, or interrupted (Ctrl-C): no git of it left running
                self.cancel()
        return answer


def observe(root: str, leaving: str | None = None) -> Worktree:
    """HEAD and fingerprint of the worktree holding `root`; a reason instead when git cannot tell. `leaving`: a file
    the command removes once it has recorded (`work checkpoint --file`'s document), observed as removed."""
    return Observation(root, leaving).result()


def freshness(head: str | None, printed: str | None, live: Worktree) -> str:
    """A ledger entry against the live worktree: CURRENT, STALE, or UNBOUND (recorded or observed without git)."""
    if head is None and printed is None:
        return "UNBOUND"
    if live.fingerprint is None:
        return "UNBOUND"
    return "CURRENT" if head == live.head and printed == live.fingerprint else "STALE"
