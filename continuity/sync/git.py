"""git for sync: plumbing only, so the user's HEAD, index, work tree and stash stay untouched.

Every call is `git -C <project root> ...` with GIT_TERMINAL_PROMPT=0 (a remote that asks
for a password fails instead of hanging) and LC_ALL=C (messages are parsed); network calls
have a timeout; no message repeats a secret of a remote's URL (credentials.py). Many
blobs cost one process, not one each: `hash-object --stdin-paths`, or `fast-import` into
one pack; objects.py reads and writes trees the same way.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator

from continuity.core.errors import RemoteUnreachable, UsageError
from continuity.sync.credentials import mask_text, mask_url
from events import osfs
from events.durable import read_event_file
from events.errors import WriteFailed
from events.names import NODE_PATTERN

LOCAL_TIMEOUT = 600.0
NETWORK_TIMEOUT = 120.0
MAX_NODE_REFS = 10_000  # node refs read from one remote's branch: a bound, not a limit teams meet
PACK_FROM = 100  # objects; like git's fetch.unpackLimit: fewer stay loose, more go into one pack
#: Signs in git's messages that the remote answered but its ref was locked or moved: retried.
CONTENTION_SIGNS = ("failed to update ref", "cannot lock ref", "incorrect old value", "unable to lock",
                    "failed to lock", "reference already exists")
#: Signs in a push's refusal that the remote could not store the objects at all (a full disk, a quota, a broken
#: repository): not contention, so never retried for the minute a sync may spend.
STORAGE_SIGNS = ("(unpacker error)", "(missing necessary objects)", "(unable to migrate objects to permanent storage)")
#: Signs in git's messages that this clone's git could not write a ref (a `.lock` a git that died left behind,
#: a ref of this clone whose folder has the ref's name, a read-only folder): the remote is not to blame.
LOCAL_REF_SIGNS = ("unable to create", "unable to write", "exists; cannot create", "read-only file system",
                   "permission denied")
#: The folders (in the repository's objects folder) that hold objects not yet accepted: see `Repo.quarantine`.
QUARANTINE_PREFIX = "continuity-incoming-"
FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "continuity", "GIT_AUTHOR_EMAIL": "continuity@localhost",
    "GIT_COMMITTER_NAME": "continuity", "GIT_COMMITTER_EMAIL": "continuity@localhost",
}


def first_message(stderr: bytes, hidden: Iterable[str] = (), code: int | None = None) -> str:
    """The line of git's stderr worth showing (the first fatal/error line, else the last), secrets masked;
    without one, how git ended (`code`: its exit status, negative for a signal, as subprocess gives it)."""
    lines = [line.strip() for line in stderr.decode(errors="replace").splitlines()]
    lines = [line for line in lines if line and not line.startswith("hint:")]
    for line in lines:
        if line.startswith(("fatal:", "error:")):
            return mask_text(line, hidden)
    if lines:
        return mask_text(lines[-1], hidden)
    if code is not None and code < 0:
        import signal

        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        why = " (a file size limit: a full disk or quota)" if name == "SIGXFSZ" else ""
        return f"stopped by {name}{why} without a message"
    return f"exited {code} without a message" if code else "no message"


def not_started(command: str, error: OSError) -> WriteFailed:
    """The failure of a git command that could not be started (too many open files, no memory): exit 5."""
    return WriteFailed(f"sync failed: git {command} could not be started ({error.strerror or error})")


class Repo:
    """The git work tree holding a store, driven with plumbing commands."""

    def __init__(self, root: str, *, network_timeout: float = NETWORK_TIMEOUT) -> None:
        self.root = root
        self.network_timeout = network_timeout
        self.hidden: tuple[str, ...] = ()  # secrets of a remote's URL, masked in every message
        from continuity.facts import git_environ

        self.env = git_environ(GIT_TERMINAL_PROMPT="0", LC_ALL="C", LANGUAGE="C")  # this work tree's git, always
        asked = ("--show-toplevel", "--absolute-git-dir", "--show-object-format", "--git-common-dir")
        probe = self.try_run("rev-parse", *asked)
        lines = os.fsdecode(probe.stdout).split("\n")[:-1]  # paths as the file system names them
        if probe.returncode == 0 and len(lines) != 4:  # a path holding a newline: one answer at a time
            answers = [self.try_run("rev-parse", flag) for flag in asked]
            lines = [os.fsdecode(answer.stdout).removesuffix("\n") for answer in answers
                     if answer.returncode == 0]
        if probe.returncode != 0 or len(lines) != 4:
            from continuity.facts import git_refusal

            refused = git_refusal(probe.stderr) if probe.returncode != 0 else "not a git work tree"
            if refused != "not a git work tree":  # a repository git will not work in (owned by another user, a
                raise UsageError(f"{refused} (in {root})")  # broken config file): git's own line says why
            raise UsageError(f"not a git work tree: {root} (sync keeps events on a git branch: "
                             "run it inside a clone of the project)")
        self.toplevel, self.git_dir, object_format, common = lines
        if object_format not in ("sha1", "sha256") or any("\x00" in line or not line for line in lines):
            raise UsageError(f"git's answers about {root} make no sense (object format {object_format[:20]!r}): is "
                             "the `git` on PATH git?")
        #: The folder every worktree of the repository shares (its branches live there).
        self.common_dir = os.path.normpath(os.path.join(root, common))
        self.oid_bytes = 32 if object_format == "sha256" else 20
        self.zero = "0" * (2 * self.oid_bytes)

    # -- running ---------------------------------------------------------------------------
    def try_run(self, *args: str, input: bytes | None = None, network: bool = False,
                env: dict[str, str] | None = None, at: str | None = None) -> subprocess.CompletedProcess[bytes]:
        """Run git (in `at`, else in the store's root); the result whatever its exit code (a missing git or a
        timeout raises)."""
        timeout = self.network_timeout if network else LOCAL_TIMEOUT
        try:
            return subprocess.run(["git", "-C", at or self.root, *args], input=input, capture_output=True,
                                  env=env or self.env, timeout=timeout)
        except FileNotFoundError:
            raise UsageError("sync needs git, and git is not installed") from None
        except OSError as error:  # no process to be had (too many open files, no memory): nothing was done
            raise not_started(args[0], error) from None
        except subprocess.TimeoutExpired:
            if network:
                raise RemoteUnreachable(f"git {args[0]} did not finish within {timeout:g} s "
                                        "(events stay safe locally; sync again later)") from None
            raise WriteFailed(f"sync failed: git {args[0]} did not finish within {timeout:g} s") from None

    def start(self, *args: str, stdout: int = subprocess.PIPE) -> subprocess.Popen[bytes]:
        """A long-lived git process fed on stdin (its stderr piped); WriteFailed when none can be started."""
        try:
            return subprocess.Popen(["git", "-C", self.root, *args], stdin=subprocess.PIPE, stdout=stdout,
                                    stderr=subprocess.PIPE, env=self.env)
        except OSError as error:  # too many open files, no memory: nothing was done
            raise not_started(args[0], error) from None

    def run(self, *args: str, input: bytes | None = None) -> bytes:
        """Run a local git command; its stdout, or WriteFailed with git's message."""
        result = self.try_run(*args, input=input)
        if result.returncode != 0:
            raise WriteFailed(f"sync failed: git {args[0]}: {self.message(result.stderr, result.returncode)}")
        return result.stdout

    def hide(self, secrets: Iterable[str]) -> None:
        """Mask these strings (a remote's credentials) in every git message from now on."""
        self.hidden = tuple(sorted({*self.hidden, *secrets}, key=len, reverse=True))

    def message(self, stderr: bytes, code: int | None = None) -> str:
        """git's line worth showing, with the hidden secrets and any URL's credentials masked (first_message)."""
        return first_message(stderr, self.hidden, code)

    # -- refs ------------------------------------------------------------------------------
    def rev(self, ref: str) -> str | None:
        """The commit a ref points at, or None when it does not exist."""
        result = self.try_run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        if result.returncode != 0:
            return None
        oid = result.stdout.decode(errors="replace").strip()
        if len(oid) != 2 * self.oid_bytes or oid.strip("0123456789abcdef"):
            raise UsageError(f"git's answer for {ref} makes no sense ({oid[:20]!r}): is the `git` on PATH git?")
        return oid

    def checked_out(self, ref: str) -> str | None:
        """The work tree of this repository that has `ref` checked out, or that a rebase or bisect in it will
        bring back to it (git refuses to move such a branch too); None when none has.

        Read from each work tree's git folder, as git does: its HEAD, `rebase-merge/head-name`,
        `rebase-apply/head-name` and `BISECT_START` (a branch's short name).
        """
        common = self.common_dir
        folders = [(common, os.path.dirname(common) if os.path.basename(common) == ".git" else common)]
        linked = os.path.join(common, "worktrees")
        for name in sorted(os.listdir(linked)) if os.path.isdir(linked) else []:
            gitdir = os.path.join(linked, name)
            pointer = _small_text(os.path.join(gitdir, "gitdir"))  # the linked work tree's `.git` file
            folders.append((gitdir, os.path.dirname(pointer) if pointer else gitdir))
        short = ref.removeprefix("refs/heads/")
        for gitdir, work_tree in folders:
            head = _small_text(os.path.join(gitdir, "HEAD")) or ""
            if head.startswith("ref:") and head[4:].strip() == ref:
                return work_tree
            if ref in (_small_text(os.path.join(gitdir, "rebase-merge", "head-name")),
                       _small_text(os.path.join(gitdir, "rebase-apply", "head-name"))) or (
                    _small_text(os.path.join(gitdir, "BISECT_START")) in (short, ref)):
                return work_tree
        return None

    def remotes(self) -> list[str]:
        """The names of the configured remotes."""
        return self.run("remote").decode(errors="replace").split()

    def remote_urls(self, name: str) -> list[str]:
        """A configured remote's fetch and push URLs, as written and as url.*.insteadOf rewrites them."""
        written = self.try_run("config", "-z", "--get-regexp", r"^remote\..*\.(push)?url$").stdout
        keys = {f"remote.{name}.url", f"remote.{name}.pushurl"}
        urls = [value for key, _, value in (item.partition("\n") for item in
                                            written.decode(errors="replace").split("\0")) if key in keys]
        for push in ((), ("--push",)):
            result = self.try_run("remote", "get-url", "--all", *push, name)
            urls += result.stdout.decode(errors="replace").splitlines() if result.returncode == 0 else []
        return list(dict.fromkeys(url for url in urls if url))

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """True when `ancestor` is reachable from `descendant` (or is it)."""
        result = self.try_run("merge-base", "--is-ancestor", ancestor, descendant)
        if result.returncode not in (0, 1):
            raise WriteFailed(f"sync failed: git merge-base: {self.message(result.stderr)}")
        return result.returncode == 0

    def related(self, first: str, second: str) -> bool:
        """True when two commits share history (they have a merge base)."""
        result = self.try_run("merge-base", first, second)
        if result.returncode not in (0, 1):
            raise WriteFailed(f"sync failed: git merge-base: {self.message(result.stderr)}")
        return result.returncode == 0

    def update_ref(self, ref: str, new: str, old: str | None) -> None:
        """Move `ref` to `new` only if it still points at `old` (None: only if it does not exist)."""
        result = self.try_run("update-ref", "-m", "continuity sync", ref, new, old or self.zero)
        if result.returncode != 0 and _local_ref_failure(result.stderr):
            raise WriteFailed(f"sync failed: cannot update {ref} in this clone ({self.message(result.stderr)})")
        if result.returncode > 0 and b"aborted by hook" in result.stderr:  # no race: running again meets it again
            raise WriteFailed(f"sync failed: a hook of this repository declined the update of {ref} "
                              f"({self.message(result.stderr)}): its reference-transaction hook must let "
                              "continuity's refs move")
        if result.returncode < 0:  # git itself was stopped (a kill, the OOM killer): the ref did not move
            raise WriteFailed(f"sync failed: git update-ref of {ref} was stopped by signal {-result.returncode}; "
                              "run sync again")
        if result.returncode != 0:
            raise WriteFailed(f"sync failed: {ref} moved during the sync ({self.message(result.stderr)}); "
                              "run sync again")

    # -- objects ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def quarantine(self) -> Iterator[Repo]:
        """A view of this repository whose git writes new objects into a folder of their own (what git's
        receive-pack does with a push until it is accepted) and reads the repository's too. They join the
        repository's objects only through `admit`; the folder goes when the block ends, so objects that were
        refused (a secret in a transfer) are not left in `.git`. The caller holds the repository's sync lock:
        a folder a killed process left is removed at the next quarantine."""
        objects = os.path.join(self.common_dir, "objects")
        with contextlib.suppress(OSError):
            for name in os.listdir(objects):
                if name.startswith(QUARANTINE_PREFIX):
                    shutil.rmtree(os.path.join(objects, name), ignore_errors=True)
        try:
            folder = tempfile.mkdtemp(prefix=QUARANTINE_PREFIX, dir=objects)
        except OSError as error:
            raise WriteFailed(f"sync failed: cannot make a folder in {objects} ({error.strerror or error})") from None
        view = copy.copy(self)
        view.env = {**self.env, "GIT_OBJECT_DIRECTORY": folder, "GIT_ALTERNATE_OBJECT_DIRECTORIES": _c_quoted(objects)}
        try:
            yield view
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def admit(self, view: Repo) -> None:
        """Link the objects a `quarantine` view holds into the repository's: packs (before their indexes, as git
        moves a push's: an index never names a pack not there yet) and loose objects, nothing else git may have
        written there (`info/`). Linked, as git finalizes an object: never over one that is there (the same
        object, its name being its hash); the quarantine's copies go with its folder."""
        folder, objects = view.env["GIT_OBJECT_DIRECTORY"], os.path.join(self.common_dir, "objects")
        moves: list[tuple[int, str, str]] = []
        for parent, _, names in os.walk(folder):
            part = os.path.relpath(parent, folder)
            if part == "pack" or (len(part) == 2 and all(char in "0123456789abcdef" for char in part)):
                moves += [(1 if name.endswith(".idx") else 0, os.path.join(part, name), os.path.join(parent, name))
                          for name in names]
        try:
            for _, relative, source in sorted(moves):
                target = os.path.join(objects, relative)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with contextlib.suppress(FileExistsError):  # the same object (its name is its hash): there
                    osfs.link(source, target)
        except OSError as error:
            raise WriteFailed(f"sync failed: cannot move fetched objects into {objects} "
                              f"({error.strerror or error})") from None

    def hash_files(self, paths: list[str]) -> list[str]:
        """Store files as blobs, byte for byte (no filters); their ids, in order.

        A few become loose objects (`hash-object --stdin-paths`); many go into one pack
        through `fast-import`, as a fetch would keep them: thousands of loose objects cost
        one file each, and a `gc` later.
        """
        if len(paths) >= PACK_FROM or any("\n" in path for path in paths):  # --stdin-paths reads lines
            return self._pack_files(paths)
        if not paths:
            return []
        data = "".join(f"{path}\n" for path in paths).encode()
        answer = self.run("hash-object", "-w", "--no-filters", "--stdin-paths", input=data)
        shas = answer.decode(errors="replace").split()
        if len(shas) != len(paths):
            raise WriteFailed("sync failed: git hash-object returned fewer ids than files")
        return shas

    def _pack_files(self, paths: list[str]) -> list[str]:
        digest = hashlib.sha256 if self.oid_bytes == 32 else hashlib.sha1
        process = self.start("fast-import", "--quiet", "--done", stdout=subprocess.DEVNULL)
        assert process.stdin is not None and process.stderr is not None
        shas = []
        try:
            chunk: list[bytes] = []
            for path in paths:
                data = read_event_file(path)
                shas.append(digest(b"blob %d\0" % len(data) + data).hexdigest())
                chunk += (b"blob\ndata %d\n" % len(data), data, b"\n")
                if len(chunk) >= 3000:
                    process.stdin.write(b"".join(chunk))
                    chunk = []
            process.stdin.write(b"".join(chunk) + b"done\n")
            process.stdin.close()
        except BrokenPipeError:
            pass
        except OSError as error:
            process.kill()
            process.wait()
            raise WriteFailed(f"sync failed: cannot read {error.filename}: {error.strerror}") from None
        stderr = process.stderr.read()
        process.stderr.close()
        if process.wait() != 0:
            raise WriteFailed(f"sync failed: git fast-import: {self.message(stderr)}")
        return shas

    def commit_tree(self, tree: str, parents: list[str], message: str) -> str:
        """A new commit of `tree`; a fallback identity when the user has none configured."""
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        args += ["-m", message]
        result = self.try_run(*args)
        if result.returncode != 0 and b"ident" in result.stderr.lower():
            fallback = {key: value for key, value in FALLBACK_IDENTITY.items() if key not in self.env}
            result = self.try_run(*args, env={**self.env, **fallback})
        if result.returncode != 0:
            raise WriteFailed(f"sync failed: git commit-tree: {self.message(result.stderr, result.returncode)}")
        return result.stdout.decode(errors="replace").strip()

    # -- network ---------------------------------------------------------------------------
    def fetch(self, remote: str, branch: str, tracking: str) -> str | None:
        """Fetch the remote's branch into `tracking`; its commit, or None when it has no such branch."""
        result = self.try_run("fetch", "--no-tags", "--no-write-fetch-head", "--quiet", *self._deepening(), remote,
                              f"+refs/heads/{branch}:{tracking}", network=True)
        if result.returncode == 0:
            return self.rev(tracking)
        if b"couldn't find remote ref" in result.stderr:
            return None
        raise self.unreachable(remote, branch, result.stderr)

    def unreachable(self, remote: str, branch: str, stderr: bytes) -> RemoteUnreachable | WriteFailed:
        """The transport failure of fetching `branch` from `remote`, with git's line (secrets masked); or
        WriteFailed when git could not write the fetched ref in this clone."""
        if _local_ref_failure(stderr):
            return WriteFailed(f"sync failed: cannot record branch {branch!r} of {mask_url(remote)!r} in this clone: "
                               f"{self.message(stderr)}")
        if b"aborted by hook" in stderr:  # this clone's reference-transaction hook: no rerun gets past it
            return WriteFailed(f"sync failed: a hook of this repository declined the update of the copy of branch "
                               f"{branch!r} of {mask_url(remote)!r} ({self.message(stderr)}): its "
                               "reference-transaction hook must let continuity's refs move")
        return RemoteUnreachable(f"cannot fetch branch {branch!r} from {mask_url(remote)!r}: {self.message(stderr)} "
                                 "(events stay safe locally; sync again later)")

    def list_remote(self, remote: str, branch: str) -> tuple[str | None, dict[str, str]]:
        """(the remote's branch commit or None, node -> commit of its node refs), by `git ls-remote`.

        Only node refs named exactly `refs/continuity/<branch>/nodes/<8 characters [a-z0-9]>`
        count; anything else under that folder is not ours and is left alone. At most
        MAX_NODE_REFS of them are read.
        """
        prefix = f"{node_refs(branch)}/"
        result = self.try_run("ls-remote", remote, f"refs/heads/{branch}", f"{prefix}*", network=True)
        if result.returncode != 0:
            raise self.unreachable(remote, branch, result.stderr)
        tip: str | None = None
        nodes: dict[str, str] = {}
        for line in result.stdout.decode(errors="replace").split("\n"):
            sha, _, ref = line.partition("\t")
            if len(sha) != 2 * self.oid_bytes or not all(char in "0123456789abcdef" for char in sha):
                continue
            if ref == f"refs/heads/{branch}":
                tip = sha
            elif ref.startswith(prefix) and NODE_PATTERN.match(ref[len(prefix):]) and len(nodes) < MAX_NODE_REFS:
                nodes[ref[len(prefix):]] = sha
        return tip, nodes

    @property
    def shallow(self) -> bool:
        """Whether this is a shallow clone (`git clone --depth`): git keeps where its history was cut in `shallow`."""
        return os.path.exists(os.path.join(self.common_dir, "shallow"))

    def shallow_cut(self) -> bytes | None:
        """Where a shallow clone's history is cut (git's `shallow` file), or None: compared before and after a fetch,
        it says whether the fetch deepened it."""
        try:
            return osfs.read_regular(os.path.join(self.common_dir, "shallow"), limit=1 << 26)
        except (OSError, ValueError):
            return None

    def _deepening(self) -> tuple[str, ...]:
        """What a fetch of continuity's refs adds in a shallow clone: their whole history (a branch fetched at the
        clone's depth held its newest events only, under `delta` each commit holds its own). Not git's 2147483647,
        which unshallows every branch of the user's clone: only the refs fetched are deepened."""
        return ("--depth=1000000",) if self.shallow else ()

    def fetch_refs(self, remote: str, specs: list[str]) -> bytes | None:
        """Fetch refspecs in one `git fetch` (given on stdin); None when done, else git's stderr."""
        if not specs:
            return None
        result = self.try_run("fetch", "--no-tags", "--no-write-fetch-head", "--quiet", *self._deepening(), "--stdin",
                              remote,
                              input="".join(f"{spec}\n" for spec in specs).encode(), network=True)
        return None if result.returncode == 0 else result.stderr

    def object_types(self, shas: list[str]) -> dict[str, str]:
        """The type of each object (`missing` when absent), without reading any object's content."""
        if not shas:
            return {}
        out = self.run("cat-file", "--batch-check=%(objectname) %(objecttype)",
                       input="".join(f"{sha}\n" for sha in shas).encode())
        found = {}
        for line in out.decode(errors="replace").splitlines():
            name, _, kind = line.partition(" ")
            found[name] = kind if kind in ("commit", "tree", "blob", "tag") else "missing"
        return {sha: found.get(sha, "missing") for sha in shas}

    def refs_under(self, folder: str) -> dict[str, str]:
        """Refs directly under a folder of refs: last name part -> commit."""
        listing = self.run("for-each-ref", "--format=%(objectname) %(refname)", f"{folder}/")
        found = {}
        for line in listing.decode(errors="replace").split("\n"):
            sha, _, ref = line.partition(" ")
            name = ref[len(folder) + 1:]
            if "/" not in name:
                found[name] = sha
        return found

    def rev_list(self, heads: Iterable[str], bases: Iterable[str] = (), *, grep: str | None = None,
                 invert: bool = False, limit: int | None = None, parents: bool = False) -> list[list[str]]:
        """The commits reachable from `heads` and not from `bases`, newest first, each as [commit, *parents]
        when `parents` is asked, else [commit]; only those whose message holds `grep` (a fixed string), or with
        `invert`, only those whose message does not."""
        args = ["rev-list", "--stdin"]
        if grep is not None:
            args += ["--fixed-strings", f"--grep={grep}"] + (["--invert-grep"] if invert else [])
        if limit is not None:
            args.append(f"--max-count={limit}")
        if parents:
            args.append("--parents")
        answer = self.run(*args, input=_revisions(heads, bases))
        return [line.split() for line in answer.decode(errors="replace").splitlines()
                if line]

    def each_commit(self, heads: Iterable[str], bases: Iterable[str] = ()) -> Iterator[str]:
        """The commits reachable from `heads` and not from `bases`, newest first, read from a temp file as they
        are taken (a long history's list never sits in memory)."""
        try:
            spool = tempfile.TemporaryFile()  # noqa: SIM115 (closed by the `with` below; its own failure is ours)
        except OSError as error:
            raise not_started("rev-list", error) from None
        with spool as out:
            try:
                result = subprocess.run(["git", "-C", self.root, "rev-list", "--stdin"], input=_revisions(heads, bases),
                                        stdout=out, stderr=subprocess.PIPE, env=self.env, timeout=LOCAL_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise WriteFailed(f"sync failed: git rev-list did not finish within {LOCAL_TIMEOUT:g} s") from None
            except OSError as error:
                raise not_started("rev-list", error) from None
            if result.returncode != 0:
                raise WriteFailed(f"sync failed: git rev-list: {self.message(result.stderr, result.returncode)}")
            out.seek(0)
            for line in out:
                yield line.decode("ascii", "replace").strip()

    def holds_object(self, head: str | None, bases: list[str], sha: str) -> bool:
        """Whether `head`'s history past `bases` reaches the object `sha` (a blob a commit there added)."""
        if head is None:
            return False
        # ids only: a path name after an id may hold any byte (a "\r" or "\n" and an id forged a line that held it)
        listed = self.run("rev-list", "--objects", "--no-object-names", head, *(f"^{base}" for base in bases), "--")
        return sha.encode() in listed.split(b"\n")

    def merged_into(self, folder: str, commit: str) -> set[str]:
        """The refs directly under a folder whose commits `commit` already holds (is or descends from)."""
        listing = self.run("for-each-ref", "--format=%(refname)", f"--merged={commit}", f"{folder}/")
        return {ref[len(folder) + 1:] for ref in listing.decode(errors="replace").split()}

    def _remote_reason(self, stderr: bytes, summary: str) -> str:
        """The remote's own line about why it could not take a push (`remote: fatal: write error: No space left
        on device`), else git's line that the remote's unpacking failed, else git's summary; secrets masked."""
        lines = [line.strip() for line in stderr.decode(errors="replace").splitlines()]
        said = [line for line in lines if line.startswith("remote:") and ("fatal" in line or "error" in line)]
        said += [line for line in lines if line.startswith("error: remote unpack failed")]  # index-pack died
        return mask_text((said or [summary])[0], self.hidden)

    def push(self, remote: str, commit: str, branch: str) -> str | None:
        """Push `commit` to the remote's branch without force; None when done, else why it was refused."""
        return self.push_refs(remote, [(commit, f"refs/heads/{branch}")])[f"refs/heads/{branch}"]

    def push_refs(self, remote: str, updates: list[tuple[str, str]]) -> dict[str, str | None]:
        """Push commits to remote refs without force, in one connection; each ref -> None or why it was refused.

        The refs move one by one (not atomically): one may land while another is refused. A
        refusal by a remote that answered is returned for a retry: a fast-forward rejection
        (the remote moved), contention on its ref lock (`failed to update ref`, `cannot lock
        ref`, `incorrect old value`), a declining hook. Only a transport failure raises
        RemoteUnreachable. Hooks of the user's working branch are skipped (`--no-verify`):
        these refs hold no code.
        """
        result = self.try_run("push", "--porcelain", "--no-verify", remote,
                              *(f"{commit}:{ref}" for commit, ref in updates), network=True)
        outcome: dict[str, str | None] = {}
        for line in result.stdout.decode(errors="replace").split("\n"):
            flag, _, rest = line.partition("\t")
            spec, _, summary = rest.partition("\t")
            ref = spec.rpartition(":")[2]
            if ref not in {wanted for _, wanted in updates}:
                continue
            if flag == "!" and any(sign in summary for sign in STORAGE_SIGNS):  # no retry stores it
                raise RemoteUnreachable(f"cannot push to {mask_url(remote)!r}: the remote could not store what was "
                                        f"pushed ({self._remote_reason(result.stderr, summary)}) (events stay safe "
                                        "locally; sync again once the remote is fixed)")
            if flag == "!" and summary.startswith(("[rejected]", "[remote rejected]")):
                outcome[ref] = mask_text(summary, self.hidden)
            elif flag == "!":
                raise RemoteUnreachable(f"push to {mask_url(remote)!r} refused: {mask_text(summary, self.hidden)}")
            else:
                outcome[ref] = None
        if result.returncode == 0 and len(outcome) == len(updates):
            return outcome
        if len(outcome) == len(updates) and any(outcome.values()):
            return outcome
        stderr = result.stderr.decode(errors="replace").lower()
        if any(sign in stderr for sign in CONTENTION_SIGNS):
            reason = self.message(result.stderr)
            return {ref: outcome.get(ref) if ref in outcome else reason for _, ref in updates}
        raise RemoteUnreachable(f"cannot push to {mask_url(remote)!r}: {self.message(result.stderr)} "
                                "(events stay safe locally; sync again later)")


def _c_quoted(path: str) -> str:
    """A path as one entry of GIT_ALTERNATE_OBJECT_DIRECTORIES, which git splits at `:`: quoted C-style."""
    escaped = "".join(f"\\{ord(char):03o}" if ord(char) < 32 or char == "\x7f" else "\\" + char if char in '"\\'
                      else char for char in path)
    return f'"{escaped}"'


def _revisions(heads: Iterable[str], bases: Iterable[str]) -> bytes:
    """`rev-list --stdin`'s input: the commits to walk from, then those whose history to leave out."""
    return ("".join(f"{commit}\n" for commit in heads) + "".join(f"^{commit}\n" for commit in bases)).encode()


def _local_ref_failure(stderr: bytes) -> bool:
    """True when git's message says it could not write a ref in this clone (LOCAL_REF_SIGNS)."""
    text = stderr.decode(errors="replace").lower()
    return "cannot lock ref" in text and any(sign in text for sign in LOCAL_REF_SIGNS)


def _small_text(path: str) -> str | None:
    """A small pointer file of git's, stripped; None when absent or unreadable."""
    try:
        return osfs.read_regular(path, limit=osfs.SMALL_LIMIT).decode().strip()
    except (OSError, ValueError):  # ValueError: not UTF-8, or a NUL in a path made of what git answered
        return None


def node_refs(branch: str) -> str:
    """The remote's folder of per-clone refs for a continuity branch: `refs/continuity/<branch>/nodes`."""
    return f"refs/continuity/{branch}/nodes"
