"""Offline transfer (seed 002): export the continuity branch as a git bundle, import it, reconnect.

- export: record the local events on the branch, check every file on it (regular, UTF-8,
  no secret-like material: the file is named, never the secret), write `context.bundle`
  (`git bundle create` of the branch) and `manifest.json` (transfer schema 1: identity,
  branch, HEAD, provenance, byte length, SHA-256, cursor summary) into
  `.ai-bridge/context-transfer/` (git-ignored) or `--out DIR`.
- import: check the manifest's shape, the identity, the size, the SHA-256, `git bundle
  verify` and the bundle's HEAD; take the branch only when it fast-forwards (or already
  holds it), write its events into the store, and mark the store offline-imported.
- reconnect: record, fetch, and by ancestry only: the remote behind -> push (no force); the
  branch behind -> fast-forward; both advanced -> refused, both histories and the marker kept.
  Never a merge, rebase, reset or force-push.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import msgspec
import orjson

from continuity.core.errors import EventConflict, TransferRefused, UsageError
from continuity.core.fsio import ensure_folder, write_atomic
from continuity.core.paths import TRANSFER_BUNDLE, TRANSFER_MANIFEST, TRANSFER_REL
from continuity.core.store import Store
from continuity.sync import files, health
from continuity.sync.credentials import guard_remote, has_secret, mask_url
from continuity.sync.engine import Syncer, given_remote, open_repo, refuse_checked_out, refuse_foreign
from continuity.sync.git import Repo
from continuity.sync.objects import ObjectReader
from continuity.sync.settings import branch_of, remote_of
from continuity.workstreams.membership import member_repository
from events import osfs
from events.errors import WriteFailed
from events.problems import quoted

if TYPE_CHECKING:
    from projections.workstreams import WorkstreamsState

MANIFEST_LIMIT = 1 << 20
_OID = r"^[0-9a-f]{40}([0-9a-f]{24})?$"
Oid = msgspec.Meta(pattern=_OID)


class _Shape(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    pass


class BundleInfo(_Shape, frozen=True, kw_only=True):
    """The bundle file beside the manifest."""

    file: Literal["context.bundle"]
    bytes: int
    sha256: str


class Source(_Shape, frozen=True, kw_only=True):
    """Where and when the transfer was made."""

    node: str
    host: str
    created_at: str
    tool: str


class Manifest(_Shape, frozen=True, kw_only=True):
    """`manifest.json` (its own transfer schema, version 1)."""

    schema_version: Literal[1]
    kind: Literal["continuity-transfer"]
    project: str
    repository: str | None
    root_commits: list[str]
    branch: str
    head: str
    events: int
    source: Source
    bundle: BundleInfo
    cursor: dict[str, Any] | None


def _refuse(action: str, text: str) -> TransferRefused:
    return TransferRefused(f"Refused {action}: {text}")


def repository_id(store: Store, state: WorkstreamsState | None = None, *, write: bool = True) -> str | None:
    """This clone's repository id as `work status` and `work start` resolve it (membership_of: member config,
    else `work_repository`, else the newest checkpoint's repository), or None.

    `state`: the store project's workstreams state when the caller has it; else read (its files written
    unless not `write`).
    """
    from continuity.workstreams.service import membership_of, workstreams_state

    project = store.reading_project()[0]
    if state is None:
        state, _, _ = workstreams_state(store, project, write=write)
    return membership_of(store, project, state).repository


def root_commits(repo: Repo) -> list[str]:
    """The root commits of the code's HEAD: who this repository is, across clones (empty without a commit, and in a
    shallow clone, whose oldest commits are where its history was cut, not the roots: another clone of the same
    repository was refused as "other root commits")."""
    shallow = repo.try_run("rev-parse", "--is-shallow-repository")
    if shallow.returncode != 0 or shallow.stdout.strip() != b"false":
        return []
    result = repo.try_run("rev-list", "--max-parents=0", "HEAD")
    return sorted(result.stdout.decode().split()) if result.returncode == 0 else []


def _record(store: Store, repo: Repo, branch: str, held_by: str | None = None) -> str | None:
    """Commit the local events the branch lacks, unless the commit `held_by` (a transfer's HEAD) holds them all
    already (what an import killed before it moved the branch left in the store is the transfer's own, and
    recording it would fork the branch from the transfer); the branch's tip."""
    syncer = Syncer(store, repo, branch, remote_of(store), None)
    try:
        syncer.check_branches()
        syncer.adopt()
        if held_by is None or not syncer.holds_unrecorded(held_by):
            syncer.record()
            files.save_marks(store, syncer.ref, syncer.tip, syncer.marks)
        return syncer.tip
    finally:
        syncer.close()


class Tracked(msgspec.Struct):
    """What the checked history holds: how many event files, and the projects they name."""

    events: int
    projects: set[str]


def _unfit_path(path: str) -> bool:
    """Whether a path on the branch is none the branch's writers make: `events/<day>/<event of that day>`, or the
    note a merge's tree holds (`events/README`). Anything else (`.git/config`, `..`, another root entry) would be
    carried to every clone the transfer reaches."""
    from continuity.sync.tree import EVENTS, MERGE_NOTE, is_day
    from events import names

    parts = path.split("/")
    if parts == [EVENTS, MERGE_NOTE]:
        return False
    return not (len(parts) == 3 and parts[0] == EVENTS and is_day(parts[1]) and names.parse_name(parts[2]) is not None
                and names.shard_of(parts[2]) == parts[1])


def check_tracked(repo: Repo, tip: str, action: str = "export") -> Tracked:
    """Refuse the first file in the branch's history (the bundle carries all of it: under `delta` the tip's tree
    holds only what its commit adds) that is not a regular UTF-8 file free of secret-like material at a path the
    branch's writers make, or is bigger than any event can be (read no further: a teammate's huge file must not
    fill this clone's memory); the event files in that history.

    Every file each commit adds or changes, from git's raw log (merges against each parent), each blob once.
    `action`: `export`, or `import` (a transfer's history, checked as its export would: a hand-made bundle must
    not bring in what no export here would carry on, to be pushed at the reconnect).
    """
    from continuity.sync.objects import ObjectReader
    from events.durable import READ_LIMIT
    from events.guard import find_secret

    listing = repo.run("log", "--format=", "--raw", "-r", "-z", "--no-abbrev", "--no-renames", "--root", "-m",
                       "--diff-filter=AMT", tip)
    fields = listing.split(b"\0")
    reader = ObjectReader(repo)
    checked: set[tuple[str, str]] = set()
    events: set[str] = set()
    projects: set[str] = set()
    try:
        for meta, raw_path in zip(fields[0::2], fields[1::2], strict=False):
            parts = meta.decode(errors="replace").lstrip("\n:").split(" ")
            if len(parts) != 5:  # not git's raw format as read here: nothing is exported unchecked
                raise WriteFailed("export failed: git log --raw printed a line export does not read; nothing written")
            mode, sha, path = parts[1], parts[3], raw_path.decode(errors="replace")
            if (sha, path) in checked:
                continue
            checked.add((sha, path))
            if mode != "100644":
                raise _refuse(action, f"unsupported file in tracked context (mode {mode}): {_shown(path)}")
            if _unfit_path(path):
                raise _refuse(action, f"unsupported path in tracked context: {_shown(path)}")
            kind, data = reader.read_bounded(sha, READ_LIMIT)
            if kind != "blob":
                raise _refuse(action, f"unsupported file in tracked context ({kind}): {_shown(path)}")
            if data is None:
                raise _refuse(action, f"tracked context file is bigger than any event ({READ_LIMIT >> 20} MiB): "
                              f"{_shown(path)}")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise _refuse(action, f"tracked context file is not UTF-8 text: {_shown(path)}") from None
            if find_secret(text) is not None:
                raise _refuse(action, f"refused secret-like material in tracked file: {_shown(path)}")
            if not path.endswith("/README"):
                unfit = files.unfit_event(path.rsplit("/", 1)[-1], data)
                if unfit is not None:
                    raise _refuse(action, f"tracked context file {unfit}: {_shown(path)}")
                refused = _strings_refused(data)  # its strings as they read: JSON escapes (`\u0067hp_`) hide none
                if refused is not None:
                    raise _refuse(action, f"{refused}: {_shown(path)}")
                events.add(path)
                project = _project_of(data)
                if project is not None:
                    projects.add(project)
    finally:
        reader.close()
    return Tracked(len(events), projects)


def _strings_refused(data: bytes) -> str | None:
    """Why an event's strings (and nested entries, as the write path reads them) refuse the transfer: a secret-like
    match, or a nesting too deep to walk (no writer of events nests that deep); None when they do not."""
    from events.guard import find_secret, strings_in

    try:
        if any(find_secret(text) is not None for _, text in strings_in(orjson.loads(data), "")):
            return "refused secret-like material in tracked file"
    except (RecursionError, orjson.JSONDecodeError):
        return "tracked context file is nested too deeply to read"
    return None


def _shown(path: str) -> str:
    """A path on the branch for a refusal: a hand-made tree's names may hold any bytes (a secret, controls)."""
    from continuity.core.text import one_line, shortened
    from events.guard import redact_text

    return shortened(one_line(redact_text(path)[0]), 200)


def _project_of(data: bytes) -> str | None:
    """The `project` an event file names (None when it names none readable)."""
    try:
        project = orjson.loads(data).get("project")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return project if isinstance(project, str) else None


def _cursor(state: WorkstreamsState) -> dict[str, Any] | None:
    from projections.workstreams import active, unresolved

    ws = active(state)
    if ws is None:
        return None
    return {"workstreamId": ws.id, "status": ws.status, "currentItemId": ws.cursor.current_item_id,
            "nextAction": ws.cursor.next_action, "unresolved": len(unresolved(ws))}


def _sha256(path: str, limit: int | None = None) -> tuple[int, str]:
    """(size, SHA-256) of a regular file read in chunks, stopping past `limit` bytes (the size then says so).

    A transfer folder comes from another machine: a FIFO or a device (a link to /dev/zero) standing
    for the bundle is refused at once (OSError) instead of blocking or being read without end.
    """
    import stat

    from events import osfs

    digest = hashlib.sha256()
    size = 0
    fd = os.open(path, os.O_RDONLY | osfs.CLOEXEC | osfs.BINARY | osfs.NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
            size += len(chunk)
            if limit is not None and size > limit:
                break
    finally:
        os.close(fd)
    return size, digest.hexdigest()


def export(store: Store, out: str | None = None) -> dict[str, Any]:
    """Write the bundle and its manifest; refused (nothing written) when a tracked file is unfit."""
    from continuity.core.store import now_us
    from continuity.workstreams.service import workstreams_state
    from events import clock

    store.check_safe()
    project = store.written_project(flag=False)  # a write: a config.json that cannot say refuses it (exit 9)
    if out:
        _refuse_foreign_files(os.path.abspath(out))
    repo = open_repo(store)
    branch = branch_of(store)
    refuse_checked_out(repo, branch)
    with files.sync_lock(store, repo.common_dir):
        tip = _record(store, repo, branch)
        if tip is None:
            raise UsageError("nothing to export: the store has no events")
        count = check_tracked(repo, tip).events
        root = os.path.realpath(store.root)  # the root may be reached through the user's own link
        folder = os.path.abspath(out) if out else os.path.join(root, *TRANSFER_REL.split("/"))
        if out is None:  # inside the project: a link planted on the way (.ai-bridge -> elsewhere) is refused
            ensure_folder(root, folder)
            write_atomic(os.path.join(folder, ".gitignore"), b"# written by continuity work export\n*\n")
        else:  # a folder the user named: theirs to point anywhere
            os.makedirs(folder, exist_ok=True)
        bundle = os.path.join(folder, TRANSFER_BUNDLE)
        # from the top of the work tree: in a subfolder, git before 2.43 wrote `-` as a file there, not to stdout
        result = repo.try_run("bundle", "create", "--quiet", "-", f"refs/heads/{branch}", at=repo.toplevel)
        if result.returncode != 0:
            raise WriteFailed(f"export failed: git bundle create: {repo.message(result.stderr, result.returncode)}")
        write_atomic(bundle, result.stdout, sweep=True)
    size, digest = _sha256(bundle)
    state, _, _ = workstreams_state(store, project)
    manifest = Manifest(
        schema_version=1, kind="continuity-transfer", project=project,
        repository=repository_id(store, state), root_commits=root_commits(repo), branch=branch, head=tip, events=count,
        source=Source(node=health.read_node(store) or "", host=socket.gethostname(), created_at=clock.iso(now_us()),
                      tool="continuity"),
        bundle=BundleInfo(file=TRANSFER_BUNDLE, bytes=size, sha256=digest), cursor=_cursor(state))
    document = orjson.dumps(msgspec.to_builtins(manifest), option=orjson.OPT_INDENT_2) + b"\n"
    try:
        write_atomic(os.path.join(folder, TRANSFER_MANIFEST), document, sweep=True)
    except OSError as error:  # a full disk: no bundle is left without the manifest that vouches for it
        with contextlib.suppress(OSError):
            os.unlink(bundle)
        raise WriteFailed(f"export failed: {TRANSFER_MANIFEST} not written ({error.strerror or error}); the bundle "
                          "written beside it was removed (the store and its branch are as the export left them)"
                          ) from None
    return {"ok": True, "action": "work-export", "folder": folder, "manifest": msgspec.to_builtins(manifest)}


def _refuse_foreign_files(folder: str) -> None:
    """Refuse (exit 2, nothing written) a folder named with --out whose manifest.json or context.bundle is no
    earlier export's: the export replaced them (a user's own manifest.json, or one under /etc)."""
    from continuity.core.text import one_line

    taken = [name for name in (TRANSFER_MANIFEST, TRANSFER_BUNDLE) if _holds_file(os.path.join(folder, name))]
    if not taken or (taken == [TRANSFER_BUNDLE] and _git_bundle(os.path.join(folder, TRANSFER_BUNDLE))):
        return  # nothing there, or an export stopped (killed) between its bundle and its manifest: written again
    try:
        read_manifest(folder)
    except TransferRefused:
        raise UsageError(f"--out: {one_line(folder)} already holds {' and '.join(taken)}, and not from an earlier "
                         "export; choose a new or empty folder (nothing written)") from None


def _holds_file(path: str) -> bool:
    """Whether something an export would replace stands at `path`: a folder is not (the export cannot write over
    it: exit 5 naming it, as at the default folder), a link to one is (it would be followed)."""
    return os.path.lexists(path) and (os.path.islink(path) or not os.path.isdir(path))


def _git_bundle(path: str) -> bool:
    """Whether `path` is a regular file that opens as a git bundle does (`# v2 git bundle`, `# v3 git bundle`)."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, 16) in (b"# v2 git bundle\n", b"# v3 git bundle\n")
    except OSError:
        return False
    finally:
        os.close(fd)


def read_manifest(folder: str) -> Manifest:
    """The manifest, checked for shape; refused when missing, too large or malformed."""
    path = os.path.join(folder, TRANSFER_MANIFEST)
    from events.osfs import read_regular

    try:  # a FIFO or a device is refused without waiting on it
        raw = read_regular(path, limit=MANIFEST_LIMIT)
    except OSError as error:
        if error.errno == errno.EFBIG:
            raise _refuse("import", f"{path} is larger than {MANIFEST_LIMIT} bytes") from None
        raise _refuse("import", f"cannot read {path} ({error.strerror or error})") from None
    try:
        manifest = msgspec.json.decode(raw, type=Manifest)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise _refuse("import", f"invalid transfer manifest {path}: {error}") from None
    except RecursionError:
        raise _refuse("import", f"invalid transfer manifest {path}: nested too deeply") from None
    if not re.match(_OID, manifest.head) or not re.fullmatch(r"[0-9a-f]{64}", manifest.bundle.sha256):
        raise _refuse("import", f"invalid transfer manifest {path}: head or sha256 is not a hex digest")
    return manifest


def _identity_problem(store: Store | None, root: str, repo: Repo, manifest: Manifest) -> str | None:
    here_roots = root_commits(repo)
    other_roots = bool(here_roots and manifest.root_commits and not set(here_roots) & set(manifest.root_commits))
    project = store.reading_project()[0] if store is not None else None
    # without a store, the member config alone can say which repository this is
    repository = repository_id(store, write=False) if store is not None else member_repository(root)
    if (project is not None and project != manifest.project) or (
            repository is not None and manifest.repository is not None and repository != manifest.repository) or (
            other_roots):
        # seed 002's sentence whole (its users match it), then what differs
        return (f"transfer repository does not match this repository config. Transfer: project {manifest.project}, "
                f"repository {manifest.repository or '-'}; here: project {project or '-'}, repository "
                f"{repository or '-'}{', other root commits' if other_roots else ''}.")
    return None


def _fetch_bundle(repo: Repo, bundle: str, branch: str) -> None:
    """Fetch the bundle's branch (git checks its pack) into `repo`, a quarantine view: no ref names it, and its
    objects join the repository's only when every check passed. Refused when git cannot read it."""
    fetched = repo.try_run("fetch", "--no-tags", "--no-write-fetch-head", "--no-auto-gc", "--quiet", bundle,
                           f"refs/heads/{branch}")
    if fetched.returncode != 0:
        said = repo.message(fetched.stderr, fetched.returncode)
        if _NO_ROOM.search(fetched.stderr.decode(errors="replace")):  # the disk here, not the transfer: exit 5
            raise WriteFailed(f"import failed: the bundle's objects cannot be stored here ({said}); nothing was "
                              "taken")
        raise _refuse("import", f"cannot read the bundle: {said}")


#: git's words (LC_ALL=C) for a disk that has no room: a full disk, a quota, a file size limit (SIGXFSZ, 25).
_NO_ROOM = re.compile(r"No space left on device|Disk quota exceeded|File too large|died of signal 25\b")


#: What a diverged transfer's refusal names as the way out: a bundle is taken only when it fast-forwards the branch
#: here (a union needs a merge both machines then share, which a one-way file cannot carry back).
_DIVERGED_WAY = ("to unite both machines' events, reach one git remote from both and run `continuity work "
                 "reconnect --remote <url> --union` on each: docs/workstreams.md, \"Two machines that both worked "
                 "offline\"")


def _check_head(repo: Repo, reader: ObjectReader, branch: str, head: str, tip: str | None,
                recorded: bool = False) -> bool:
    """Refuse a transfer HEAD (fetched) that is no continuity branch, or whose history diverged from the
    branch's `tip` here; whether the branch already holds it. `recorded`: `tip` is the commit that just
    recorded this store's own events (the branch was checked before that, and held no conflict)."""
    try:
        refuse_foreign(repo, reader, branch, head, "in the transfer", tip)
    except UsageError as error:  # a branch of code: an offline transfer refused (exit 12, nothing changed)
        raise _refuse("import", str(error)) from None
    if tip is not None and tip != head and not repo.is_ancestor(tip, head):
        if not repo.is_ancestor(head, tip):
            if recorded:
                raise _refuse("import", f"transfer HEAD {head[:12]} conflicts with the existing context cache "
                              f"HEAD {tip[:12]} (histories diverged: the transfer lacks this store's own events, "
                              f"which are now recorded on branch {branch!r}; {_DIVERGED_WAY}); the transfer was not "
                              "taken.")
            raise _refuse("import", f"transfer HEAD {head[:12]} conflicts with the existing "
                          f"context cache HEAD {tip[:12]} (histories diverged; {_DIVERGED_WAY}); nothing changed.")
        return True
    return False


def _precheck_new_store(repo: Repo, bundle: str, manifest: Manifest) -> None:
    """Before a store is made for the import: fetch the bundle, check its HEAD against the branch here and its
    history as an export checks it, so every refusal comes while the folder is as it was (the HEAD's checks run
    again under the store's lock). The store takes the manifest's project: its events must name it."""
    with files.flocked(os.path.join(repo.common_dir, files.REPOSITORY_LOCK)), repo.quarantine() as held:
        _fetch_bundle(held, bundle, manifest.branch)
        reader = ObjectReader(held)
        try:
            _check_head(held, reader, manifest.branch, manifest.head, held.rev(f"refs/heads/{manifest.branch}"))
        finally:
            reader.close()
        tracked = _checked_transfer(held, manifest)
        if tracked.events and manifest.project not in tracked.projects:
            named = ", ".join(quoted(name, 64) for name in sorted(tracked.projects)[:3]) or "none readable"
            raise _refuse("import", f"the transfer's events are of another project than its manifest's "
                          f"{quoted(manifest.project, 64)} (they name {named}); nothing changed.")


def _checked_transfer(repo: Repo, manifest: Manifest) -> Tracked:
    """The transfer's history (fetched) checked as its export would be, and its event count against the
    manifest's."""
    tracked = check_tracked(repo, manifest.head, "import")
    if tracked.events != manifest.events:
        raise _refuse("import", f"the manifest counts {manifest.events} event(s), the bundle's history holds "
                      f"{tracked.events}; nothing changed.")
    return tracked


def undo_new_store(root: str, store_path: str) -> Callable[[], None]:
    """For an import (or a clone-store) about to make the store: what removes it again, and what `init` appended
    to the project's `.gitignore`, when a step after fails (an event that does not match its name, a disk
    error). A store folder that was there already is left alone."""
    ignore = os.path.join(root, ".gitignore")
    kept: bytes | None = None
    with contextlib.suppress(OSError):  # none (init writes one), or not a file (init refuses to touch it)
        kept = osfs.read_regular(ignore, limit=None)
    had_ignore = os.path.lexists(ignore)
    parent = os.path.dirname(store_path)
    made_parent, made_store = not os.path.lexists(parent), not os.path.lexists(store_path)

    def undo() -> None:
        if made_store:
            with contextlib.suppress(OSError):
                shutil.rmtree(store_path)
            if made_parent:
                with contextlib.suppress(OSError):
                    os.rmdir(parent)
        with contextlib.suppress(OSError):
            if not had_ignore:
                os.unlink(ignore)
            elif kept is not None and osfs.read_regular(ignore, limit=None).startswith(kept):
                os.truncate(ignore, len(kept))  # init only appends

    return undo


def import_transfer(root: str, folder: str) -> dict[str, Any]:
    """Check the transfer, take its branch when it fast-forwards, write its events, mark the store offline.

    Every check that can refuse runs before a store is made (a refused import leaves a folder without one as it
    was); a store made here is removed again when a later step fails before the branch takes the transfer.
    """
    from continuity.core.initialize import init_store
    from continuity.core.store import now_us
    from continuity.readside.writers import refresh
    from events import clock
    from projections.registry import REGISTRY

    folder = os.path.abspath(folder)
    repo = Repo(root)
    manifest = read_manifest(folder)
    bundle = os.path.join(folder, manifest.bundle.file)
    try:
        size, digest = _sha256(bundle, limit=manifest.bundle.bytes)
    except OSError as error:
        raise _refuse("import", f"cannot read {bundle} ({error.strerror or error})") from None
    if size != manifest.bundle.bytes:
        raise _refuse("import", "bundle size does not match the manifest.")
    if digest != manifest.bundle.sha256:
        raise _refuse("import", "bundle SHA-256 does not match the manifest.")
    existing = Store(root) if os.path.exists(Store(root).config_path) else None
    if existing is not None:
        existing.check_safe()
    else:  # the name the store made for the import takes: a refused transfer (exit 12), as every manifest fault
        from continuity.core.store import check_project_name
        from events.errors import SecretRefused

        try:
            check_project_name(manifest.project)
        except (UsageError, SecretRefused) as error:
            raise _refuse("import", f"invalid transfer manifest: {error}") from None
    problem = _identity_problem(existing, root, repo, manifest)
    if problem:
        raise _refuse("import", problem)
    verified = repo.try_run("bundle", "verify", "--quiet", bundle)
    if verified.returncode != 0:
        raise _refuse("import", f"git bundle verify failed: {repo.message(verified.stderr)}")
    heads = repo.run("bundle", "list-heads", bundle).decode(errors="replace").split()
    if f"refs/heads/{manifest.branch}" not in heads or heads[heads.index(f"refs/heads/{manifest.branch}") - 1] \
            != manifest.head:
        raise _refuse("import", "the bundle's context HEAD does not match the manifest.")
    branch = branch_of(existing or Store(root))  # a new store's: the default
    if branch != manifest.branch:  # before asking to switch a work tree off the branch the manifest names
        raise _refuse("import", f"transfer branch {quoted(manifest.branch, 64)} is not this store's branch "
                      f"{branch!r}.")
    refuse_checked_out(repo, branch)
    undo = None
    if existing is None:
        _precheck_new_store(repo, bundle, manifest)
        undo = undo_new_store(root, Store(root).path)
    try:
        store = existing or init_store(root, project=manifest.project, language=None, adopt=False)[0]
        store.check_safe()
        with files.sync_lock(store, repo.common_dir):
            before = repo.rev(f"refs/heads/{branch}")
            with repo.quarantine() as held:  # a refused transfer's objects (a secret) do not stay in `.git`
                _fetch_bundle(held, bundle, branch)
                reader = ObjectReader(held)
                try:  # a conflict with the branch as it is refuses before this store's events are recorded on it
                    _check_head(held, reader, branch, manifest.head, before)
                finally:
                    reader.close()
                if existing is not None:  # a new store's was checked before it was made
                    _checked_transfer(held, manifest)
                repo.admit(held)
            tip = _record(store, repo, branch, held_by=manifest.head)
            syncer = Syncer(store, repo, branch, remote_of(store), None)
            try:
                if _check_head(repo, syncer.reader, branch, manifest.head, tip, recorded=tip != before):
                    added = 0  # the branch already holds the transfer
                else:
                    try:
                        added = syncer.restore(manifest.head, kept=undo is None)  # a new store goes on refusal
                    except EventConflict as error:  # a file that is not the event its name says: refused
                        raise _refuse("import", str(error).replace(" on the remote ", " in the transfer ").replace(
                            files.REFUSED, "nothing changed")) from None
                    if tip != manifest.head:
                        repo.update_ref(f"refs/heads/{branch}", manifest.head, tip)
                        undo = None  # the branch holds the transfer: its events stay with it
            finally:
                syncer.close()
            marker = {"schemaVersion": 1, "importedAt": clock.iso(now_us()), "project": manifest.project,
                      "repository": manifest.repository, "branch": branch, "head": manifest.head,
                      "bundleSha256": manifest.bundle.sha256, "source": msgspec.to_builtins(manifest.source)}
            write_atomic(health.offline_marker(store), orjson.dumps(marker, option=orjson.OPT_INDENT_2) + b"\n",
                         within=store.path)
    except BaseException:
        if undo is not None:
            undo()
        raise
    outcome = refresh(store, tuple(REGISTRY))
    return {"ok": True, "action": "work-import", "project": manifest.project, "branch": branch,
            "head": manifest.head, "added": added, "contextState": "OFFLINE_IMPORTED_CONTEXT",
            "warnings": outcome.warnings}


def reconnect_action(local: str | None, remote: str | None, local_in_remote: bool, remote_in_local: bool) -> str:
    """By ancestry only: `in-sync`, `push` (the remote is behind), `fast-forward` (the branch is), or `diverged`."""
    if local == remote:
        return "in-sync"
    if remote is None or remote_in_local:
        return "push"
    if local is None or local_in_remote:
        return "fast-forward"
    return "diverged"


def reconnect(store: Store, remote: str | None = None, *, union: bool = False) -> dict[str, Any]:
    """Leave offline mode by ancestry (see the module docstring); the marker goes only on success.

    Histories that both advanced are refused, unless `union`: then they are united as `continuity sync` unites
    clones (a merge commit whose parents are both tips, pushed without force). Event files are immutable and
    uniquely named, so the union keeps every event of both and rewrites none; only the user asks for it."""
    from continuity.readside.writers import refresh
    from projections.registry import REGISTRY

    store.check_safe()
    repo = open_repo(store)
    branch = branch_of(store)
    name = remote_of(store, given_remote(repo, remote))
    refuse_checked_out(repo, branch)
    guard_remote(repo, name)  # a URL with credentials is refused before git runs
    if name in repo.remotes():
        leaky = [url for url in repo.remote_urls(name) if has_secret(url)]
        if leaky:
            raise UsageError(f"refused remote {name!r}: its URL embeds credentials ({mask_url(leaky[0])}); "
                             "reconnect uses the host's credential chain only")
    offline = os.path.exists(health.offline_marker(store))
    with files.sync_lock(store, repo.common_dir):
        syncer = Syncer(store, repo, branch, name, None)
        try:
            syncer.check_branches()
            with syncer.undo_new_branch():
                adopted = syncer.adopt()
                syncer.record()
                local = syncer.tip
                remote_tip = repo.fetch(name, branch, syncer.tracking)
                syncer._fresh_reader()
                syncer.refuse_foreign(remote_tip, f"on {mask_url(name)}", local)
            action = reconnect_action(
                local, remote_tip,
                bool(local and remote_tip and repo.is_ancestor(local, remote_tip)),
                bool(local and remote_tip and repo.is_ancestor(remote_tip, local)))
            added = adopted
            if action == "diverged" and not union:
                assert local is not None and remote_tip is not None
                raise _refuse("reconnect", f"local and remote continuity histories diverged (local {local[:12]}, "
                              f"remote {remote_tip[:12]}); both are kept"
                              + (" and the store stays offline-imported" if offline else "")
                              + ". Nothing was merged, rebased, reset or force-pushed. To unite them, keeping "
                              "every event of both, run `continuity work reconnect --union`.")
            if action == "push":
                assert local is not None
                refused = repo.push(name, local, branch)
                if refused is not None:
                    raise _refuse("reconnect", f"the remote refused the push ({refused}); the store stays as it was.")
                with contextlib.suppress(WriteFailed):  # git push may have moved it already
                    repo.update_ref(syncer.tracking, local, remote_tip)
                syncer.in_sync = True
            elif action == "fast-forward":
                assert remote_tip is not None
                added += syncer.restore(remote_tip)
                syncer._move(remote_tip)
                syncer.in_sync = True
            elif action == "in-sync":
                syncer.in_sync = True
            # diverged, with --union: not in sync yet; united below, by sync, once this lock is let go
            files.save_marks(store, syncer.ref, syncer.tip, syncer.marks)
            if syncer.recorded_through is not None and syncer.in_sync:  # a union: sync says when pushed
                state = health.load(store) or health.SyncState()
                state.pushed_through = syncer.recorded_through
                health.save(store, state)
        finally:
            syncer.close()
        if offline and syncer.in_sync:
            os.unlink(health.offline_marker(store))
    answer = {"ok": True, "action": "work-reconnect", "remote": mask_url(name), "branch": branch, "result": action,
              "commit": syncer.tip, "added_remote": added, "was_offline": offline}
    if not syncer.in_sync:
        from continuity.sync.engine import sync

        report = sync(store, remote=name, branch=branch, reconnecting=True, unrelated=True)  # --union asked for it
        # this clone's ref landed, the team's branch did not move: as a refused push (a branch that already held the
        # union, another clone's sync having made it, is the branch moved)
        if not report.branch_updated and (report.commit is None or report.commit != report.remote_commit):
            raise _refuse("reconnect", f"the remote took this clone's ref but not branch {branch!r} (another clone "
                          "moved it, or the remote declines it); the events are on the remote"
                          + (" and the store stays offline-imported" if offline else "")
                          + ": run `continuity work reconnect --union` again.")
        if offline:
            os.unlink(health.offline_marker(store))
        return {**answer, "result": "union", "commit": report.commit, "added_remote": added + report.added_remote,
                "warnings": report.warnings}
    return {**answer, "warnings": refresh(store, tuple(REGISTRY)).warnings}
