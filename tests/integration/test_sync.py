"""`continuity sync` and `clone-store` over real git: bare remotes and clones in temp folders."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from continuity.core.errors import EXIT_INTEGRITY, EXIT_REMOTE, EXIT_SYNC_GAVE_UP, EXIT_USAGE, EXIT_WRITE_FAILED
from continuity.core.store import Store
from continuity.sync import health
from continuity.sync.engine import sync
from continuity.sync.git import Repo
from events.errors import ContinuityError
from events.worklog import WorkLogged
from tests.helpers import branch_event_paths, cli_process, pin_node

STORE = Path(".agent", "runtime-continuity")
IDENTITY = {"GIT_AUTHOR_NAME": "Tess Ter", "GIT_AUTHOR_EMAIL": "tess@example.invalid",
            "GIT_COMMITTER_NAME": "Tess Ter", "GIT_COMMITTER_EMAIL": "tess@example.invalid"}


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd`; its stdout (fails the test when git fails)."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    result = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, env=env)
    assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
    return result.stdout


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """A git identity from the environment only (HOME is isolated: no ~/.gitconfig)."""
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


class World:
    """A bare remote and clones of one project, each with a store."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.remote = tmp_path / "remote.git"
        git(tmp_path, "init", "-q", "--bare", "-b", "main", str(self.remote))
        seed = self.clone("a", init=False)
        (seed / "README.md").write_text("the code\n")
        assert cli("init", "--project", "demo", "--root", str(seed))[0] == 0
        git(seed, "add", "README.md", ".gitignore")
        git(seed, "commit", "-q", "-m", "code")
        git(seed, "push", "-q", "origin", "main")
        self.a = seed
        self.b = self.clone("b")

    def clone(self, name: str, *, init: bool = True) -> Path:
        """A new clone of the remote (with a store unless `init` is False)."""
        path = self.tmp / name
        git(self.tmp, "clone", "-q", str(self.remote), str(path))
        if init:
            assert cli("init", "--project", "demo", "--root", str(path))[0] == 0
        return path


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A bare remote, clone `a` (which pushed the code) and clone `b`, both with a store."""
    return World(tmp_path)


def cli(*args: str) -> tuple[int, Any]:
    """Run the CLI in-process with --json; (exit code, parsed stdout or None)."""
    import contextlib
    import io

    raw = io.BytesIO()
    stdout = io.TextIOWrapper(raw, encoding="utf-8")
    with contextlib.redirect_stdout(stdout):
        code = main([*args, "--json"])
    stdout.flush()
    text = raw.getvalue().decode()
    return code, json.loads(text) if text.strip() else None


def append(root: Path, *messages: str) -> None:
    """Append work-log events to a clone's store."""
    log = Store(root).open_log()
    for message in messages:
        log.append(WorkLogged(project="demo", message=message))


def user_git_state(root: Path) -> dict[str, str]:
    """Everything of the user's that sync must not touch: HEAD, branch, index, work tree, stash."""
    index = (root / git(root, "rev-parse", "--git-path", "index").strip()).read_bytes()  # a worktree's too
    return {
        "index_file": hashlib.sha256(index).hexdigest(),
        "head": git(root, "rev-parse", "HEAD"),
        "branch": git(root, "symbolic-ref", "HEAD"),
        "ls_files": hashlib.sha256(git(root, "ls-files", "-s").encode()).hexdigest(),
        "cached": git(root, "diff", "--cached"),
        "worktree": git(root, "diff"),
        "status": git(root, "status", "--porcelain=v1", "--untracked-files=all"),
        "stash": git(root, "stash", "list"),
    }


def synced(root: Path, **options: Any) -> Any:
    """Sync a clone in-process, asserting the user's git state is the same before and after."""
    before = user_git_state(root)
    report = sync(Store(root), **options)
    assert user_git_state(root) == before
    return report


def event_names(root: Path) -> list[str]:
    """The event file names in a clone's store."""
    return sorted(p.name for p in (root / STORE / "events").glob("*/*.json"))


def projections(root: Path) -> dict[str, bytes]:
    """state.json and every file under archives/, by relative path."""
    store = root / STORE
    files = [store / "state.json", *sorted((store / "archives").rglob("*"))]
    return {str(p.relative_to(store)): p.read_bytes() for p in files if p.is_file()}


def store_bytes(root: Path) -> dict[str, bytes]:
    """Every file of a store except machine-local ones."""
    store = root / STORE
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*"))
            if p.is_file() and "local" not in p.relative_to(store).parts}


def test_two_clones_converge_in_either_order(world: World) -> None:
    """Clones appending concurrently and syncing in either order end with one log and identical projections."""
    for round_number in range(3):
        with ThreadPoolExecutor(2) as pool:
            for future in [pool.submit(append, root, *(f"{root.name} r{round_number} e{i}" for i in range(4)))
                           for root in (world.a, world.b)]:
                future.result()
        assert cli("archive", "--reason", f"round {round_number}", "--root", str(world.a))[0] == 0
        first, second = (world.a, world.b) if round_number % 2 == 0 else (world.b, world.a)
        for root in (first, second, first):
            synced(root)
        assert event_names(world.a) == event_names(world.b)
        assert len(event_names(world.a)) == 9 * (round_number + 1)
        assert projections(world.a) == projections(world.b)
        assert any(name.startswith("archives/RC-") for name in projections(world.a))
    code, report = cli("verify", "--root", str(world.b))
    assert code == 0 and report["ok"] is True
    assert report["forks"], "the concurrent appends show up as merges"
    assert {len({child[-8:] for child in fork["children"]}) for fork in report["forks"]} == {2}
    assert git(world.a, "rev-parse", "continuity") == git(world.b, "rev-parse", "continuity")


def test_sync_json_summary_and_fork_count(world: World) -> None:
    """--json reports what moved; the side that joins two histories counts the fork."""
    append(world.a, "base")
    code, first = cli("sync", "--root", str(world.a))
    assert code == 0
    assert first["ok"] and first["added_local"] == 1 and first["added_remote"] == 0 and first["pushed"] is True
    assert synced(world.b).added_remote == 1
    append(world.a, "a after base")
    append(world.b, "b after base")
    synced(world.a)
    code, joined = cli("sync", "--root", str(world.b))
    assert code == 0
    assert (joined["added_local"], joined["added_remote"], joined["forks"]) == (1, 1, 1)
    assert joined["merged"] is True and joined["pushed"] is True
    assert synced(world.a).added_remote == 1


def test_sync_leaves_a_dirty_work_tree_alone(world: World) -> None:
    """Staged and unstaged changes, untracked files, a stash and a feature branch survive a sync as they were."""
    git(world.a, "switch", "-q", "-c", "feature")
    (world.a / "README.md").write_text("stashed edit\n")
    git(world.a, "stash", "-q")
    (world.a / "README.md").write_text("unstaged edit\n")
    (world.a / "staged.txt").write_text("staged\n")
    git(world.a, "add", "staged.txt")
    (world.a / "untracked.txt").write_text("untracked\n")
    append(world.a, "while dirty")
    append(world.b, "other side")
    synced(world.b)
    report = synced(world.a)
    assert report.added_local == 1 and report.added_remote == 1 and report.pushed
    assert git(world.a, "symbolic-ref", "--short", "HEAD").strip() == "feature"


def test_tampered_remote_event_is_refused(world: World) -> None:
    """An event with the same name and other bytes on the remote: refused, named, nothing changed here."""
    append(world.a, "original")
    synced(world.a)
    synced(world.b)
    scratch = world.clone("scratch", init=False)
    git(scratch, "switch", "-q", "continuity")
    [victim] = list((scratch / "events").glob("*/*.json"))
    victim.write_bytes(victim.read_bytes().replace(b"original", b"rewritten"))
    git(scratch, "commit", "-q", "-am", "tamper")
    git(scratch, "push", "-q", "origin", "continuity")
    append(world.a, "later")
    before = store_bytes(world.a)
    code, error = cli("sync", "--root", str(world.a))
    assert code == EXIT_INTEGRITY and error["ok"] is False
    assert victim.name in error["message"] and "other bytes" in error["message"]
    assert store_bytes(world.a) == before
    fresh = world.clone("fresh")
    code, error = cli("sync", "--root", str(fresh))
    # the branch's history holds the event twice (the original commit and the tampered one): refused as such
    assert code == EXIT_INTEGRITY and victim.name in error["message"] and "two contents" in error["message"]
    assert event_names(fresh) == []


def plant_beside_the_event(world: World, content_of: Callable[[bytes], bytes]) -> tuple[Path, Path]:
    """The remote's branch (holding one event) gains a file named for that event's id whose bytes are
    `content_of(its bytes)`, the hash in its name right; (the event's file, the planted one) in a scratch clone."""
    scratch = world.clone("scratch", init=False)
    git(scratch, "switch", "-q", "continuity")
    [real] = list((scratch / "events").glob("*/*.json"))
    content = content_of(real.read_bytes())
    planted = real.with_name(real.name[:-17] + hashlib.sha256(content).hexdigest()[:12] + ".json")
    planted.write_bytes(content)
    git(scratch, "add", "-A")
    git(scratch, "commit", "-q", "-m", "plant")
    git(scratch, "push", "-q", "origin", "continuity")
    return real, planted


@pytest.mark.parametrize("content", [b"{not json", b"{}", b'{"event_id": "RCE-20200101_000000_000000-00000000", '
                                     b'"created_at": "2020-01-01T00:00:00.000000Z"}'],
                         ids=["no-json", "no-id", "another-id"])
def test_a_remote_file_hashed_as_named_but_no_event_of_that_name_is_refused(world: World, content: bytes) -> None:
    """A file whose bytes do hash to its name but are no event, or another event's (an impersonation): refused like a
    tampered one, nothing changed here. It was carried to every clone, where the read models left it out and
    `verify` failed for good (a sync writes back what is removed)."""
    append(world.a, "original")
    synced(world.a)
    _, planted = plant_beside_the_event(world, lambda _: content)
    append(world.b, "mine")
    before = store_bytes(world.b)
    code, error = cli("sync", "--root", str(world.b))
    assert code == EXIT_INTEGRITY and planted.name in error["message"], error
    assert "is not the event its name says" in error["message"]
    assert store_bytes(world.b) == before


@pytest.mark.parametrize("first_here", [False, True], ids=["both-incoming", "one-here"])
def test_a_second_file_of_one_event_on_the_remote_is_refused(world: World, first_here: bool) -> None:
    """A file named for an event that another file already is (same id, other bytes, so another hash): refused
    like a tampered one, whether the first file comes in with it or is here already; nothing changed here. Taken
    in, both files reached every clone, `verify` failed there for good, and each reader saw the one it listed
    first."""
    append(world.a, "original")
    synced(world.a)
    if first_here:
        synced(world.b)
    real, twin = plant_beside_the_event(world, lambda raw: raw.replace(b"original", b"replayed"))
    append(world.b, "mine")
    before = store_bytes(world.b)
    code, error = cli("sync", "--root", str(world.b))
    assert code == EXIT_INTEGRITY, error
    assert f"is a second file of the event {real.name} names" in error["message"] or (
        not first_here and f"is a second file of the event {twin.name} names" in error["message"]), error
    assert store_bytes(world.b) == before
    fresh = world.clone("fresh", init=False)
    code, error = cli("clone-store", "origin", "--root", str(fresh))
    assert code == EXIT_INTEGRITY and "is a second file of the event" in error["message"], error


def push_forged(world: World, refspec: str) -> Path:
    """Clone `a` syncs one event; then a file whose bytes are not what its name says (its hash part names other
    bytes) is committed beside it on the continuity branch and pushed to `refspec`. Returns its path there."""
    append(world.a, "original")
    synced(world.a)
    scratch = world.clone("scratch", init=False)
    git(scratch, "switch", "-q", "continuity")
    [real] = list((scratch / "events").glob("*/*.json"))
    forged = real.with_name(real.name[:-17] + "000000000000.json")
    forged.write_bytes(real.read_bytes().replace(b"original", b"forged!!"))
    git(scratch, "add", "-A")
    git(scratch, "commit", "-q", "-m", "forge")
    git(scratch, "push", "-q", "origin", refspec)
    return forged


def test_a_remote_event_unlike_its_name_is_refused_before_anything_is_pushed(world: World) -> None:
    """A new file on the branch whose bytes are not what its name says, met by a clone with events to push: the
    sync is refused and the remote is as it was (it pushed the union holding the forged file to the shared branch
    and to its own node ref first, then refused: every later sync of every clone failed on it, and rewriting the
    branch did not help while that node ref held it)."""
    forged = push_forged(world, "continuity")
    refs_before = git(world.remote, "for-each-ref", "--format=%(refname) %(objectname)")
    append(world.b, "to push")
    code, error = cli("sync", "--root", str(world.b))
    assert code == EXIT_INTEGRITY and "does not match the hash in its name" in error["message"], error
    assert forged.name in error["message"]
    assert git(world.remote, "for-each-ref", "--format=%(refname) %(objectname)") == refs_before


def test_a_clones_node_ref_holding_a_forged_event_is_skipped_not_a_stop_for_everyone(world: World) -> None:
    """A node ref (one clone's) holding an event that is not what its name says: every sync and clone-store of
    every clone refused, and no rewrite of the branch helped. That ref is skipped with a warning naming it; the
    branch and the other clones' events go on, and the forged event is never written or pushed."""
    forged = push_forged(world, "HEAD:refs/continuity/continuity/nodes/bad00001")
    branch_before = git(world.remote, "rev-parse", "refs/heads/continuity")
    append(world.b, "from b")
    code, report = cli("sync", "--root", str(world.b))
    assert code == 0, report
    assert any("skipped refs/continuity/continuity/nodes/bad00001" in w and forged.name in w
               for w in report["warnings"]), report["warnings"]
    assert forged.name not in event_names(world.b) and len(event_names(world.b)) == 2
    assert forged.name not in git(world.remote, "ls-tree", "-r", "--name-only", "refs/heads/continuity")
    assert git(world.remote, "rev-parse", "refs/heads/continuity") != branch_before  # b's event went out
    fresh = world.clone("fresh")
    code, report = cli("clone-store", "origin", "--root", str(fresh))
    assert code == 0 and forged.name not in event_names(fresh) and len(event_names(fresh)) == 2, report


def test_a_node_ref_holding_other_bytes_under_an_events_own_name_is_skipped_too(world: World) -> None:
    """The same for a copy of an event the branch holds, under that event's own name with other bytes, pushed to a
    node ref: the union met one name with two contents first, and every sync and every clone-store of every clone
    stopped there ("has two contents on the remote"), with `verify` saying every log was intact. The ref holding
    the copy that is not what the name says is skipped, with a warning naming it and the file."""
    append(world.a, "original")
    synced(world.a)
    scratch = world.clone("scratch", init=False)
    git(scratch, "switch", "-q", "continuity")
    [real] = list((scratch / "events").glob("*/*.json"))
    real.write_bytes(real.read_bytes().replace(b"original", b"altered!"))
    git(scratch, "commit", "-q", "-a", "-m", "alter")
    git(scratch, "push", "-q", "origin", "HEAD:refs/continuity/continuity/nodes/bad00002")
    for clone in (world.a, world.b):
        append(clone, f"after, from {clone.name}")
        code, report = cli("sync", "--root", str(clone))
        assert code == 0, report
        assert any("skipped refs/continuity/continuity/nodes/bad00002" in w and real.name in w
                   and "do not match the hash in its name" in w for w in report["warnings"]), report["warnings"]
    synced(world.a)
    for clone in (world.a, world.b):
        assert b"altered!" not in (clone / STORE / "events" / real.parent.name / real.name).read_bytes()
    fresh = world.clone("fresh")
    code, report = cli("clone-store", "origin", "--root", str(fresh))
    assert code == 0 and len(event_names(fresh)) == 3 and event_names(fresh) == event_names(world.a), report


def _files_of(root: Path) -> dict[str, bytes]:
    return {f"events/{path.parent.name}/{path.name}": path.read_bytes()
            for path in (root / STORE / "events").glob("*/*.json")}


def test_a_branch_events_bytes_under_another_events_name_in_a_node_ref_stop_nobody(world: World) -> None:
    """A node ref holding event E's name with the bytes of event G, which the branch holds (at G's own name): the
    skip asked whether the branch's history held those bytes anywhere, so every clone whose branch lacked G (a new
    clone-store, a clone behind) refused for good. Whose copy it is goes by the path now: the ref is skipped."""
    append(world.a, "first")
    synced(world.a)
    [(e_path, _)] = _files_of(world.a).items()
    append(world.a, "second")
    synced(world.a)
    [g_raw] = [raw for path, raw in _files_of(world.a).items() if path != e_path]
    git(world.remote, "update-ref", "refs/continuity/continuity/nodes/bad00003",
        commit_of(world.remote, {e_path: g_raw}))
    fresh = world.clone("fresh")
    for clone, command in ((world.b, "sync"), (fresh, "clone-store"), (world.a, "sync")):
        code, report = cli(command, *(["origin"] if command == "clone-store" else []), "--root", str(clone))
        assert code == 0, (command, report)
        assert any("skipped refs/continuity/continuity/nodes/bad00003" in w for w in report["warnings"]), report
        assert _files_of(clone) == _files_of(world.a)


def test_a_legitimate_ref_is_never_skipped_for_bytes_a_hostile_ref_copied(world: World) -> None:
    """A hostile ref holding E's name with the bytes of a new event F that a clone's own ref brings (at F's name):
    that clone's ref was skipped too, and named as tampered; F did not come. Only the hostile ref is skipped."""
    append(world.a, "original")
    synced(world.a)
    [(e_path, _)] = _files_of(world.a).items()
    tip = git(world.remote, "rev-parse", "refs/heads/continuity").strip()
    other = world.clone("other")
    append(other, "legit, from another clone")
    [(f_path, f_raw)] = _files_of(other).items()
    git(world.remote, "update-ref", "refs/continuity/continuity/nodes/cccc0001",
        commit_of(world.remote, {f_path: f_raw}, parent=tip))
    git(world.remote, "update-ref", "refs/continuity/continuity/nodes/bad00004",
        commit_of(world.remote, {e_path: f_raw}))
    code, report = cli("sync", "--root", str(world.b))
    assert code == 0, report
    skipped = [w for w in report["warnings"] if w.startswith("skipped refs/continuity/")]
    assert len(skipped) == 1 and "nodes/bad00004" in skipped[0], skipped
    assert _files_of(world.b)[f_path] == f_raw


def test_clone_store_names_the_files_it_leaves_on_the_branch_as_sync_does(world: World) -> None:
    """A file in a day folder of the branch that is no event: sync said it was left on the branch; clone-store (a
    restore) skipped it without a word."""
    append(world.a, "original")
    synced(world.a)
    scratch = world.clone("scratch", init=False)
    git(scratch, "switch", "-q", "continuity")
    [real] = list((scratch / "events").glob("*/*.json"))
    (real.parent / "notes.txt").write_text("not an event\n")
    git(scratch, "add", "-A")
    git(scratch, "commit", "-q", "-m", "a stray file")
    git(scratch, "push", "-q", "origin", "continuity")
    fresh = world.clone("fresh")
    code, report = cli("clone-store", "origin", "--root", str(fresh))
    assert code == 0 and len(event_names(fresh)) == 1
    assert f"not an event file, left on the branch only: events/{real.parent.name}/notes.txt" in report["warnings"]


def test_a_secret_in_a_branch_file_name_is_redacted_in_every_warning_line(world: World,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A stray file on the branch named like a token: sync's and clone-store's warning lines on stderr printed the
    name whole, while the same run's --json redacted it."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # secret-shaped, made up
    append(world.a, "original")
    synced(world.a)
    scratch = world.clone("scratch", init=False)
    git(scratch, "switch", "-q", "continuity")
    [real] = list((scratch / "events").glob("*/*.json"))
    (real.parent / token).write_text("not an event\n")
    git(scratch, "add", "-A")
    git(scratch, "commit", "-q", "-m", "a stray file")
    git(scratch, "push", "-q", "origin", "continuity")
    capsys.readouterr()
    append(world.b, "from b")
    assert main(["sync", "--root", str(world.b)]) == 0
    fresh = world.clone("fresh")
    assert main(["clone-store", "origin", "--root", str(fresh)]) == 0
    err = capsys.readouterr().err
    assert err.count("not an event file, left on the branch only: ") == 2, err
    assert token not in err and "[REDACTED:" in err


def test_a_remote_branch_naming_a_blob_is_said_and_the_events_still_travel(world: World,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The remote's branch made to name a blob (git refuses that for a branch; a hand-written ref file does it):
    every sync said "the shared branch moved meanwhile: a later sync brings it up to date", which none ever did,
    and warned of nothing. Now a warning names the branch, the summary points at it, and the node ref carries the
    events to every clone."""
    append(world.a, "before")
    synced(world.a)
    blob = subprocess.run(["git", "-C", str(world.remote), "hash-object", "-w", "--stdin"], input=b"not a commit",
                          capture_output=True, check=True).stdout.decode().strip()
    (world.remote / "refs" / "heads" / "continuity").write_text(blob + "\n")
    append(world.a, "after")
    capsys.readouterr()
    for _ in range(2):
        assert main(["sync", "--root", str(world.a)]) == 0
        out, err = capsys.readouterr()
        assert "moved meanwhile" not in out and "refused the shared branch: see the warning" in out, out
        assert err.count("names no commit") == 1, err
    fresh = world.clone("fresh")
    assert main(["clone-store", "origin", "--root", str(fresh)]) == 0
    assert len(event_names(fresh)) == 2


def test_oversized_remote_blob_under_an_event_name_is_refused_unread(world: World) -> None:
    """A remote blob of 48 MB under a new event's name: refused by sync and clone-store, named, nothing
    written, and never held in memory (the reader skips it without allocating it)."""
    import tracemalloc

    from events import names

    append(world.a, "original")
    synced(world.a)
    scratch = world.clone("scratch", init=False)
    git(scratch, "switch", "-q", "continuity")
    [kept] = list((scratch / "events").glob("*/*.json"))
    parsed = names.parse_name(kept.name)
    assert parsed is not None
    name = names.file_name(parsed.stamp, "deadbeef", "0" * 64)  # a name of that day, a later writer
    planted = kept.parent / name
    planted.write_bytes(b"{" + b" " * (48 << 20) + b"}")
    git(scratch, "add", "-A")
    git(scratch, "commit", "-q", "-m", "plant")
    git(scratch, "push", "-q", "origin", "continuity")
    before = store_bytes(world.b)
    tracemalloc.start()
    try:
        code, error = cli("sync", "--root", str(world.b))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == EXIT_INTEGRITY and name in error["message"] and "bigger than any event" in error["message"]
    assert peak < 16 << 20, f"{peak} bytes traced: the blob was read"
    assert store_bytes(world.b) == before
    fresh = world.clone("fresh", init=False)
    tracemalloc.start()
    try:
        code, error = cli("clone-store", "origin", "--root", str(fresh))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == EXIT_INTEGRITY and name in error["message"] and "bigger than any event" in error["message"]
    assert peak < 16 << 20, f"{peak} bytes traced: the blob was read"
    assert event_names(fresh) == []


def test_unreachable_remote_then_back(world: World) -> None:
    """No remote: exit code 8 and one clear line, nothing lost; the next sync after it returns succeeds."""
    append(world.a, "kept safe")
    away = world.remote.with_name("moved.git")
    world.remote.rename(away)
    code, error = cli("sync", "--root", str(world.a))
    assert code == EXIT_REMOTE and "cannot fetch" in error["message"] and "\n" not in error["message"]
    assert len(event_names(world.a)) == 1
    away.rename(world.remote)
    code, report = cli("sync", "--root", str(world.a))
    assert code == 0 and report["pushed"] is True and report["added_local"] == 0  # recorded by the failed try
    assert synced(world.b).added_remote == 1


def test_push_race_on_the_branch_still_delivers_through_the_node_ref(world: World,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared branch moves between fetch and push: this clone's own node ref still lands (exit 0, one
    attempt, the events on the remote); the next sync of the other clone takes them in and moves the branch."""
    append(world.a, "a1")
    append(world.b, "b1")
    real_push = Repo.push_refs
    raced: list[dict[str, str | None]] = []

    def push_after_b(self: Repo, remote: str, updates: list[tuple[str, str]]) -> dict[str, str | None]:
        if Path(self.root) == world.a and not raced:
            assert sync(Store(world.b)).branch_updated  # b wins the race for the branch
        outcome = real_push(self, remote, updates)
        if Path(self.root) == world.a:
            raced.append(outcome)
        return outcome

    monkeypatch.setattr(Repo, "push_refs", push_after_b)
    report = synced(world.a)
    [outcome] = raced
    node_ref = next(ref for ref in outcome if ref.startswith("refs/continuity/continuity/nodes/"))
    assert outcome[node_ref] is None and "rejected" in (outcome["refs/heads/continuity"] or "")
    assert report.attempts == 1 and report.pushed and not report.branch_updated and report.added_remote == 0
    monkeypatch.undo()
    assert git(world.remote, "for-each-ref", "--format=%(refname)", "refs/continuity/").split() == sorted(
        [node_ref, f"refs/continuity/continuity/nodes/{Store(world.b).node()}"])
    second = synced(world.b)  # a's event comes from a's node ref; the branch takes the union
    assert second.added_remote == 1 and second.branch_updated
    assert synced(world.a).added_remote == 1
    assert event_names(world.a) == event_names(world.b) and len(event_names(world.a)) == 2
    assert projections(world.a) == projections(world.b)
    assert git(world.a, "rev-parse", "continuity") == git(world.remote, "rev-parse", "continuity")
    status = cli("sync", "--status", "--root", str(world.a))[1]
    assert status["waiting"] == 0


@pytest.mark.parametrize("newest", ["far-future", "no-json"])
def test_clone_store_names_the_store_after_the_newest_event_that_counts(world: World, newest: str) -> None:
    """The newest file on the branch named the new store's project: one stamped in 2099 saying `evil` (which the
    read models leave out until its day) made the clone write under `evil`; a file of no JSON (its name's hash
    right) made it the folder's name. The newest readable event that counts as now names it; a file of no JSON
    is no event its name says, so the sync of clone-store refuses it (and takes back the store it began)."""
    import hashlib

    append(world.a, "ours")
    synced(world.a)
    scratch = world.clone("scratch", init=False)
    git(scratch, "switch", "-q", "continuity")
    [real] = list((scratch / "events").glob("*/*.json"))
    day = "20991231" if newest == "far-future" else real.parent.name
    stamp = f"{day}_235959_999999"
    raw = json.dumps({"kind": "work.logged", "v": 1, "event_id": f"RCE-{stamp}-0badc0de", "created_at":
                      f"{day[:4]}-{day[4:6]}-{day[6:]}T23:59:59.999999Z", "project": "evil", "message": "x"}).encode()
    if newest == "no-json":
        raw = b"not json at all"
    digest = hashlib.sha256(raw).hexdigest()
    (scratch / "events" / day).mkdir(exist_ok=True)
    (scratch / "events" / day / f"{stamp}-0badc0de-{digest[:12]}.json").write_bytes(raw)
    git(scratch, "add", "-A")
    git(scratch, "commit", "-q", "-m", "newest")
    git(scratch, "push", "-q", "origin", "continuity")
    fresh = world.tmp / "new-machine"
    git(world.tmp, "clone", "-q", str(world.remote), str(fresh))
    code, out = cli("clone-store", "origin", "--root", str(fresh))
    if newest == "no-json":
        assert code == EXIT_INTEGRITY and "is not the event its name says" in out["message"], out
        assert not (fresh / STORE).exists()
        return
    assert json.loads((fresh / STORE / "config.json").read_text())["project"] == "demo"


def test_clone_store_resumes_on_a_fresh_clone(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """clone-store on a fresh clone brings the events, rebuilds the projections, and resume-bundle works."""
    append(world.a, "first step")
    note = json.dumps({"goal": "ship sync", "next": ["write the benchmark"]})
    assert cli("archive", "--reason", "moving machines", "--note-json", note, "--root", str(world.a))[0] == 0
    synced(world.a)
    fresh = world.tmp / "new-machine"
    git(world.tmp, "clone", "-q", str(world.remote), str(fresh))
    assert not (fresh / STORE).exists()
    monkeypatch.chdir(fresh)
    code, result = cli("clone-store", "origin")
    assert code == 0 and result["initialized"] is True and result["project"] == "demo"
    assert result["events"] == 2 and event_names(fresh) == event_names(world.a)
    assert projections(fresh) == projections(world.a)
    code, bundle = cli("resume-bundle", "--root", str(fresh))
    assert code == 0 and "write the benchmark" in json.dumps(bundle)
    append(fresh, "resumed here")
    assert synced(fresh).pushed and synced(world.a).added_remote == 1
    branched = world.tmp / "branch-already-here"
    git(world.tmp, "clone", "-q", str(world.remote), str(branched))
    git(branched, "branch", "-q", "continuity", "origin/continuity")
    code, result = cli("clone-store", "origin", "--root", str(branched))
    assert code == 0 and result["added_remote"] == 3 and event_names(branched) == event_names(world.a)


def test_union_makes_the_head_hint_stale(world: World) -> None:
    """Events linked by a sync change their day folder's mtime; the next append chains from the true newest."""
    append(world.a, "a old")
    append(world.b, "b newer")
    synced(world.b)
    hint = world.a / STORE / "local" / "head"
    hinted = hint.read_bytes()
    assert Store(world.a).open_log()._head_from_hint() is not None
    day = world.a / STORE / "events" / event_names(world.b)[-1][:8]
    mtime = day.stat().st_mtime_ns
    assert synced(world.a).added_remote == 1
    assert day.stat().st_mtime_ns != mtime  # sync also makes the hint untrusted (mtimes can be coarse), keeping
    assert Store(world.a).open_log()._head_from_hint() is None and hint.read_bytes()[:40] == hinted[:40]  # its name
    hint.write_bytes(hinted)
    assert Store(world.a).open_log()._head_from_hint() is None  # stale by itself: its day's mtime moved
    newest = sorted((world.a / STORE / "events").glob("*/*.json"))[-1]
    stored = Store(world.a).open_log().append(WorkLogged(project="demo", message="after the union"))
    assert stored.event.prev == hashlib.sha256(newest.read_bytes()).hexdigest()


def test_configured_branch_and_no_push(world: World) -> None:
    """sync_branch in config.json names the branch; --no-push records and fetches but pushes nothing."""
    config_path = world.a / STORE / "config.json"
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps({**config, "sync_branch": "agents/state"}))
    append(world.a, "on another branch")
    code, report = cli("sync", "--no-push", "--root", str(world.a))
    assert code == 0 and report["branch"] == "agents/state" and report["pushed"] is False
    heads = ["for-each-ref", "--format=%(refname:short)", "refs/heads"]
    assert git(world.remote, *heads).split() == ["main"]
    assert cli("sync", "--root", str(world.a))[0] == 0
    assert git(world.remote, *heads).split() == ["agents/state", "main"]


@pytest.mark.parametrize("name", ["HEAD", "state.", "agents/state.", "state.lock/x", "agents/x.lock", "FETCH_HEAD",
                                  "ORIG_HEAD", "AUTO_MERGE", "refs/heads/main", "heads/main", "tags/v1",
                                  "remotes/origin/main"])
def test_a_branch_name_git_refuses_or_reads_as_head_is_a_usage_error(world: World, name: str) -> None:
    """sync_branch (or clone-store's --branch) that git refuses as a ref name, or `HEAD` (sync fetched it into
    the clone's refs/remotes/origin/HEAD, the remote's default-branch link, and made `HEAD` ambiguous in every
    git command): exit 2 before anything is written, not a late 'moved during the sync' (exit 5)."""
    git(world.a, "remote", "set-head", "origin", "main")  # as a clone of a remote with a branch has it
    config_path = world.a / STORE / "config.json"
    config_path.write_text(json.dumps({**json.loads(config_path.read_text()), "sync_branch": name}))
    append(world.a, "a1")
    refs = git(world.a, "for-each-ref")
    code, error = cli("sync", "--root", str(world.a))
    assert code == EXIT_USAGE and "invalid sync branch name" in error["message"], error
    assert git(world.a, "for-each-ref") == refs
    assert git(world.a, "symbolic-ref", "refs/remotes/origin/HEAD").strip() == "refs/remotes/origin/main"
    code, error = cli("clone-store", "origin", "--branch", name, "--root", str(world.clone("c", init=False)))
    assert code == EXIT_USAGE and "invalid sync branch name" in error["message"], error


@pytest.mark.parametrize("key", ["sync_branch", "sync_remote"])
@pytest.mark.parametrize("value", ["", False, 0, [], {}])
def test_a_sync_setting_set_to_nothing_is_refused_not_defaulted(world: World, key: str, value: object) -> None:
    """`"sync_branch": ""` (or false, 0, [], {}) synced with `continuity`, and `"sync_remote": ""` with origin: a
    branch or remote nobody named. Refused (exit 2) before anything moves, as an unusable name is; absent or null
    takes the default."""
    config_path = world.a / STORE / "config.json"
    config = json.loads(config_path.read_text())
    append(world.a, "a1")
    refs, remote_refs = git(world.a, "for-each-ref"), git(world.remote, "for-each-ref")
    config_path.write_text(json.dumps({**config, key: value}))
    code, error = cli("sync", "--root", str(world.a))
    assert code == EXIT_USAGE and "invalid" in error["message"], error
    assert git(world.a, "for-each-ref") == refs and git(world.remote, "for-each-ref") == remote_refs
    config_path.write_text(json.dumps({**config, key: None}))
    assert cli("sync", "--root", str(world.a))[0] == 0


@pytest.mark.parametrize("name", ["origin/main", "origin/continuity", "upstream/x"])
def test_a_branch_named_like_a_remotes_tracking_ref_is_refused(world: World, name: str) -> None:
    """sync_branch `origin/main`: refs/heads/origin/main is what git reads for `origin/main` before the user's
    refs/remotes/origin/main, so `git diff origin/main` and `git rebase origin/main` would have taken the
    continuity commit. Refused (exit 2) before any ref is written, here or on the remote."""
    git(world.a, "remote", "add", "upstream", str(world.remote))
    config_path = world.a / STORE / "config.json"
    config_path.write_text(json.dumps({**json.loads(config_path.read_text()), "sync_branch": name}))
    append(world.a, "a1")
    refs, remote_refs = git(world.a, "for-each-ref"), git(world.remote, "for-each-ref")
    code, error = cli("sync", "--root", str(world.a))
    assert code == EXIT_USAGE and f"would shadow refs/remotes/{name}" in error["message"], error
    assert git(world.a, "for-each-ref") == refs and git(world.remote, "for-each-ref") == remote_refs
    assert git(world.a, "rev-parse", "origin/main") == git(world.remote, "rev-parse", "main")


@pytest.mark.parametrize("name", ["CONTEXT", "AI_STATE", "refs", "tags", "team/HEAD_NOTES"])
def test_names_git_reads_as_nothing_else_stay_usable(world: World, name: str) -> None:
    """All capitals that are none of git's pseudo-refs, and a bare `refs` or `tags`, are branch names like any."""
    config_path = world.a / STORE / "config.json"
    config_path.write_text(json.dumps({**json.loads(config_path.read_text()), "sync_branch": name}))
    append(world.a, "a1")
    code, report = cli("sync", "--root", str(world.a))
    assert code == 0 and report["branch"] == name and report["pushed"] is True, report


def test_clone_store_refuses_a_shadowing_branch_before_it_fetches(world: World) -> None:
    """`clone-store origin --branch origin/main` fetched (writing a tracking ref) and then refused: refused first."""
    fresh = world.clone("c", init=False)
    refs = git(fresh, "for-each-ref")
    code, error = cli("clone-store", "origin", "--branch", "origin/main", "--root", str(fresh))
    assert code == EXIT_USAGE and "would shadow refs/remotes/origin/main" in error["message"], error
    assert git(fresh, "for-each-ref") == refs and not (fresh / STORE).exists()


def test_sync_without_a_git_identity(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no user.name/user.email anywhere, sync still commits to its branch (a fallback identity)."""
    for key in IDENTITY:
        monkeypatch.delenv(key)
    append(world.a, "anonymous")
    assert synced(world.a).pushed
    assert git(world.a, "log", "-1", "--format=%an", "continuity").strip() == "continuity"


def test_not_a_work_tree_is_a_usage_error(tmp_path: Path) -> None:
    """A store outside any git work tree: sync is a usage error with one clear line."""
    root = tmp_path / "plain"
    root.mkdir()
    assert cli("init", "--project", "demo", "--root", str(root))[0] == 0
    code, error = cli("sync", "--root", str(root))
    assert code == EXIT_USAGE and "not a git work tree" in error["message"]
    code, error = cli("sync", "--remote", "nowhere", "--root", str(tmp_path / "plain"))
    assert code == EXIT_USAGE


def test_init_ignores_the_store_in_the_project(tmp_path: Path) -> None:
    """init adds the store to the project's .gitignore once; not when commit_events_with_code is true."""
    root = tmp_path / "p"
    root.mkdir()
    (root / ".gitignore").write_text("build/")
    for _ in range(2):
        assert cli("init", "--project", "demo", "--root", str(root))[0] == 0
    lines = (root / ".gitignore").read_text().splitlines()
    assert lines[0] == "build/" and lines.count(".agent/runtime-continuity/") == 1
    other = tmp_path / "q"
    (other / STORE).mkdir(parents=True)
    (other / STORE / "config.json").write_text(json.dumps({"project": "demo", "commit_events_with_code": True}))
    assert cli("init", "--root", str(other))[0] == 0
    assert not (other / ".gitignore").exists()


def test_refuses_when_its_branch_is_checked_out(world: World) -> None:
    """With the continuity branch checked out, sync refuses (it never touches a work tree) and changes nothing."""
    git(world.b, "switch", "-q", "-c", "continuity")
    append(world.b, "waiting")
    code, error = cli("sync", "--root", str(world.b))
    assert code == EXIT_USAGE and "checked out" in error["message"]
    assert git(world.b, "rev-parse", "continuity") == git(world.b, "rev-parse", "main")


@pytest.mark.parametrize("how", ["worktree", "rebase", "bisect"])
def test_refuses_when_its_branch_is_checked_out_in_another_worktree(world: World, how: str) -> None:
    """The continuity branch checked out (or being rebased or bisected) in another work tree of the repository:
    sync, export, import and reconnect refuse (exit 2, naming it) and that work tree's HEAD, index and files
    stay."""
    append(world.b, "b1")
    assert cli("sync", "--root", str(world.b))[0] == 0
    transfer = world.tmp / "transfer"
    assert cli("work", "export", "--out", str(transfer), "--root", str(world.b))[0] == 0
    other = world.tmp / "other"
    git(world.b, "worktree", "add", "-q", str(other), "continuity")
    if how != "worktree":  # what git itself refuses to move: a branch a rebase or bisect will come back to
        git(other, "switch", "-q", "--detach")
        gitdir = Path(git(other, "rev-parse", "--absolute-git-dir").strip())
        if how == "rebase":
            (gitdir / "rebase-merge").mkdir()
            (gitdir / "rebase-merge" / "head-name").write_text("refs/heads/continuity\n")
        else:
            (gitdir / "BISECT_START").write_text("continuity\n")
    before = user_git_state(other) if how == "worktree" else None
    tip = git(world.b, "rev-parse", "continuity")
    append(world.b, "b2")
    for command in (["sync"], ["work", "export"], ["work", "import", str(transfer)], ["work", "reconnect"]):
        code, error = cli(*command, "--root", str(world.b))
        assert code == EXIT_USAGE and "checked out" in error["message"] and str(other) in error["message"], error
    assert git(world.b, "rev-parse", "continuity") == tip
    if before is not None:
        assert user_git_state(other) == before


def test_appends_during_a_sync_are_kept_and_recorded_later(world: World) -> None:
    """Appends racing a sync that writes remote events are never lost and reach the other clone next time."""
    import threading

    append(world.b, *(f"b{i}" for i in range(60)))
    synced(world.b)
    stop = threading.Event()

    def keep_appending() -> None:
        log = Store(world.a).open_log()
        count = 0
        while not stop.is_set() or count < 20:
            log.append(WorkLogged(project="demo", message=f"racing {count}"))
            count += 1

    writer = threading.Thread(target=keep_appending)
    writer.start()
    try:
        report = sync(Store(world.a))
    finally:
        stop.set()
        writer.join()
    assert report.added_remote == 60
    for root in (world.a, world.b, world.a):
        synced(root)
    assert event_names(world.a) == event_names(world.b) and len(event_names(world.a)) >= 80
    code, result = cli("verify", "--root", str(world.a))
    assert code == 0 and result["ok"] is True


def test_archive_triggers_a_background_sync_when_configured(world: World) -> None:
    """With sync_after ["archive"], archive returns at once and a detached sync pushes the events."""
    import time

    config = world.a / ".agent" / "runtime-continuity" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "sync_after": ["archive"]}))
    append(world.a, "before the archive")
    assert cli("archive", "--gate", "agent", "--root", str(world.a))[0] == 0
    deadline = time.monotonic() + 30
    pushed = ""
    while time.monotonic() < deadline:
        result = subprocess.run(["git", "-C", str(world.remote), "ls-tree", "-r", "--name-only", "continuity"],
                                capture_output=True, text=True)
        pushed = result.stdout
        if pushed.count(".json") >= 2:
            break
        time.sleep(0.2)
    assert pushed.count(".json") >= 2, (world.a / ".agent" / "runtime-continuity" / "local" / "sync.log").read_text()


def test_the_background_sync_never_imports_the_projects_own_modules(world: World,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A project holding an `events.py` (a teammate's commit): the background sync, started as `python -m` in the
    project, imported it in place of continuity's `events` (the project's code ran, and the sync ended in a
    traceback in local/sync.log, so nothing was ever pushed). It runs with `-P` now."""
    import time

    marker = world.tmp / "the-projects-code-ran"
    (world.a / "events.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    config = world.a / ".agent" / "runtime-continuity" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "sync_after": ["archive"]}))
    append(world.a, "before the archive")
    monkeypatch.chdir(world.a)
    assert cli("archive", "--gate", "agent")[0] == 0
    deadline = time.monotonic() + 30
    pushed = ""
    while time.monotonic() < deadline and pushed.count(".json") < 2:
        time.sleep(0.2)
        pushed = subprocess.run(["git", "-C", str(world.remote), "ls-tree", "-r", "--name-only", "continuity"],
                                capture_output=True, text=True).stdout
    log = world.a / ".agent" / "runtime-continuity" / "local" / "sync.log"
    assert pushed.count(".json") >= 2, log.read_text() if log.exists() else "no sync.log"
    assert not marker.exists()
    assert "Traceback" not in log.read_text()


def test_a_failing_automatic_sync_never_fails_the_archive(world: World) -> None:
    """An unreachable remote: the archive still succeeds; the failure lands in local/sync.log."""
    import time

    config = world.a / ".agent" / "runtime-continuity" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "sync_after": ["archive"]}))
    git(world.a, "remote", "set-url", "origin", str(world.tmp / "gone.git"))
    assert cli("archive", "--gate", "agent", "--root", str(world.a))[0] == 0
    log = world.a / ".agent" / "runtime-continuity" / "local" / "sync.log"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (log.exists() and log.read_text().strip()):
        time.sleep(0.2)
    assert "continuity: error:" in log.read_text()
    assert Store(world.a).open_reader().head_name() is not None  # the events stay, for the next sync


@pytest.mark.parametrize("name", ["sync.lock", "lock", "continuity-sync.lock"])
def test_a_lock_file_replaced_by_a_symlink_is_refused_not_followed(tmp_path: Path, name: str) -> None:
    """sync's locks (the store's two, the repository's in its git folder) never follow a symlink planted at
    their name: unsafe store (exit 6), nothing made where it points."""
    from continuity.sync import files
    from events.errors import StoreUnsafe

    store = Store(tmp_path)
    os.makedirs(store.local_dir)
    common = tmp_path / "git"
    common.mkdir()
    (tmp_path / "elsewhere").mkdir()
    target = tmp_path / "elsewhere" / "planted"
    os.symlink(target, common / name if name == files.REPOSITORY_LOCK else os.path.join(store.local_dir, name))
    lock = files.append_lock(store) if name == "lock" else files.sync_lock(store, str(common))
    with pytest.raises(StoreUnsafe, match="is a symlink") as refused, lock:
        pass
    assert refused.value.exit_code == 6 and not target.exists()


@pytest.mark.parametrize("planted", ["socket at sync.lock", "socket at continuity-sync.lock", "read-only git folder"])
def test_a_lock_that_cannot_be_opened_fails_in_one_line(world: World, planted: str) -> None:
    """A socket where one of sync's locks belongs (open gives ENXIO), or a git folder mounted read-only (EROFS):
    sync and export fail with one line (exit 5), not an internal error (exit 70); the events stay."""
    import socket

    append(world.b, "b1")
    before = event_names(world.b)
    git_dir = world.b / ".git"
    mounted = False
    if planted == "read-only git folder":
        if os.geteuid() != 0 or subprocess.run(["mount", "--bind", str(git_dir), str(git_dir)]).returncode != 0:
            pytest.skip("needs root with mount rights")
        mounted = True
        if subprocess.run(["mount", "-o", "remount,ro,bind", str(git_dir)]).returncode != 0:
            subprocess.run(["umount", str(git_dir)], check=True)
            pytest.skip("cannot remount read-only")
    else:
        name = planted.rpartition(" ")[2]
        path = git_dir / name if name == "continuity-sync.lock" else world.b / STORE / "local" / name
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()
    try:
        for command in (["sync"], ["work", "export"]):
            code, error = cli(*command, "--root", str(world.b))
            assert code == 5 and "lock" in error["message"] and "\n" not in error["message"], error
    finally:
        if mounted:
            subprocess.run(["umount", str(git_dir)], check=True)
    assert event_names(world.b) == before


# -- one ref per clone beside the shared branch ---------------------------------------------------
def refuse_branch_updates(remote: Path) -> None:
    """An `update` hook on the bare remote that declines every change to the shared branch (node refs pass)."""
    hook = remote / "hooks" / "update"
    hook.write_text('#!/bin/sh\ncase "$1" in refs/heads/continuity) echo "branch frozen" >&2; exit 1;; esac\n')
    hook.chmod(0o755)


def remote_refs(remote: Path) -> list[str]:
    return git(remote, "for-each-ref", "--format=%(refname)", "refs/heads/continuity", "refs/continuity/").split()


def test_each_clone_pushes_its_own_node_ref_and_the_branch(world: World) -> None:
    """A sync pushes the union to `refs/continuity/<branch>/nodes/<node>` and to the shared branch, both equal."""
    append(world.a, "a1")
    report = synced(world.a)
    assert report.pushed and report.branch_updated
    node_ref = f"refs/continuity/continuity/nodes/{Store(world.a).node()}"
    assert remote_refs(world.remote) == [node_ref, "refs/heads/continuity"]
    assert git(world.remote, "rev-parse", node_ref) == git(world.remote, "rev-parse", "continuity")
    assert synced(world.a).attempts == 1  # nothing new: nothing pushed, the node ref stays
    assert git(world.remote, "rev-parse", node_ref) == git(world.remote, "rev-parse", "continuity")


def test_a_refused_branch_still_delivers_through_the_node_refs(world: World) -> None:
    """The remote declines the shared branch: every sync exits 0, the events travel on the clones' node refs,
    `sync --status` counts nothing waiting, and the CLI says the remote refused the branch, with its reason (it
    said the branch had moved meanwhile, with no warning, on every sync for good)."""
    refuse_branch_updates(world.remote)
    append(world.a, "a1", "a2")
    append(world.b, "b1")
    code, out = cli("sync", "--root", str(world.a))
    assert code == 0 and out["pushed"] and not out["branch_updated"]
    assert out["branch_refused"] is not None and "[remote rejected]" in out["branch_refused"], out
    assert any("refused the shared branch refs/heads/continuity" in line for line in out["warnings"]), out
    code, out = cli("sync", "--root", str(world.b))
    assert code == 0 and out["added_remote"] == 2 and not out["branch_updated"]
    assert synced(world.a).added_remote == 1
    assert event_names(world.a) == event_names(world.b) and len(event_names(world.a)) == 3
    assert "refs/heads/continuity" not in remote_refs(world.remote)
    assert cli("sync", "--status", "--root", str(world.b))[1]["waiting"] == 0
    append(world.b, "b2")
    result = subprocess.run([sys.executable, "-m", "continuity", "sync", "--root", str(world.b)],
                            capture_output=True, text=True)
    assert result.returncode == 0 and "the remote refused the shared branch" in result.stdout, result
    assert "moved meanwhile" not in result.stdout and "refused the shared branch" in result.stderr, result
    fresh = world.clone("fresh", init=False)
    code, out = cli("clone-store", "origin", "--root", str(fresh))
    assert code == 0 and out["project"] == "demo" and out["events"] == 4
    assert event_names(fresh) == event_names(world.b)


def test_a_copied_store_writes_under_a_node_of_its_own(world: World) -> None:
    """A store copied beside its original (`cp -r` of the project) kept the node id: the two copies then wrote two
    children of one parent under one node, which `verify` names as a forgery in every clone, for good. The copy
    now makes a node of its own on its first write; both sync and every clone verifies clean."""
    import shutil

    append(world.a, "before the copy")
    node_a = Store(world.a).node()
    shutil.rmtree(world.b / STORE)
    shutil.copytree(world.a / STORE, world.b / STORE)
    assert health.read_node(Store(world.b)) is None  # the copy's status names no node of its own yet
    append(world.a, "on a")
    append(world.b, "on b")
    assert Store(world.a).node() == node_a and Store(world.b).node() != node_a
    assert synced(world.a).pushed and synced(world.b).pushed
    synced(world.a)
    assert event_names(world.a) == event_names(world.b) and len(event_names(world.a)) == 3
    for root in (world.a, world.b):
        code, report = cli("verify", "--root", str(root))
        assert code == 0 and len(report["forks"]) == 1, report  # a fork of two nodes: a merge, not an error


def test_events_deleted_by_hand_come_back_with_the_next_sync(world: World) -> None:
    """An event file deleted from a synced store (the newest, one in the middle, a whole day folder) never came back:
    sync compared only the days the branch changed, the next write followed an older head, and that fork of one
    node's chain made `verify` fail in every clone for good. Sync now writes back what the branch holds and the store
    lacks, and says so."""
    import shutil

    append(world.a, "one", "two", "three")
    assert synced(world.a).pushed
    events = world.a / STORE / "events"
    files = sorted(events.glob("*/*.json"))
    files[-1].unlink()
    files[1].unlink()
    report = synced(world.a)
    assert report.written_back == 2 and sorted(events.glob("*/*.json")) == files
    assert any("wrote back 2 event(s)" in warning and f"newest: events/{files[-1].parent.name}/{files[-1].name}"
               in warning for warning in report.warnings)
    append(world.a, "four (never synced: deleted for good below)")
    for day in events.iterdir():
        shutil.rmtree(day)
    report = synced(world.a)
    assert report.written_back == 3 and sorted(events.glob("*/*.json")) == files
    assert synced(world.a).written_back == 0  # once: nothing is lost any more
    append(world.a, "five")
    assert synced(world.a).pushed
    synced(world.b)
    for root in (world.a, world.b):
        code, out = cli("verify", "--root", str(root))
        assert code == 0 and out["events"] == 4 and out["forks"] == [], out


def test_a_write_never_chains_to_a_newest_event_edited_by_hand(world: World) -> None:
    """The newest event edited by hand (saved by rename, so the head hint is not trusted): the next write chained to
    the edited bytes, a parent no clone holds once the original came back, so `verify` failed in every clone for good.
    The write is now refused (exit 6, nothing written) and names the way back, which leaves every clone clean."""
    append(world.a, "one", "two")
    assert synced(world.a).pushed
    newest = sorted((world.a / STORE / "events").glob("*/*.json"))[-1]
    original = newest.read_bytes()
    edited = newest.with_name("edit.tmp")
    edited.write_bytes(original.replace(b"two", b"tw0"))
    edited.rename(newest)
    for argv in (["log", "-m", "after the edit"], ["log", "-m", "typed", "--log-level", "warning"],
                 ["checkpoint", "-m", "c", "--next", "n"]):
        done = cli_process(*argv, cwd=world.a)
        assert done.returncode == 6 and "does not match the hash in its name" in done.stderr, done.stderr
        assert "continuity sync" in done.stderr and "Traceback" not in done.stderr
    assert len(list((world.a / STORE / "events").glob("*/*.json"))) == 2
    newest.rename(world.a / "edited.json")  # out of the store, as the line says
    assert synced(world.a).written_back == 1 and newest.read_bytes() == original
    assert cli_process("log", "-m", "after the way back", cwd=world.a).returncode == 0
    assert synced(world.a).pushed
    synced(world.b)
    for root in (world.a, world.b):
        code, out = cli("verify", "--root", str(root))
        assert code == 0 and out["events"] == 3, out


def test_a_write_after_the_newest_event_was_deleted_waits_for_sync(world: World) -> None:
    """The newest event of a synced store deleted by hand: the next write followed the event before it, a second
    child of one parent under one node, and once the sync brought the deleted one back `verify` named that fork a
    forgery in every clone, for good. The write is now refused (exit 6, nothing written, the line names the way
    back) until a sync has brought it back; one that never left the store is let go by that sync."""
    import time

    from events.filelog import FileEventLog

    store = Store(world.a)
    long_lived = FileEventLog(store.events_dir, store.local_dir, node=store.node(),  # an MCP server's writer: it
                              clock_us=lambda: time.time_ns() // 1000)  # keeps the hint file open between appends
    append(world.a, "one")
    long_lived.append(WorkLogged(project="demo", message="two"))
    assert synced(world.a).pushed
    events = world.a / STORE / "events"
    newest = sorted(events.glob("*/*.json"))[-1]
    original = newest.read_bytes()
    newest.unlink()
    hook = json.dumps({"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "ls"}, "tool_response": {"stdout": ""}, "cwd": str(world.a)})
    for argv in (["log", "-m", "after the delete"], ["checkpoint", "-m", "c", "--next", "n"],
                 ["log", "-m", "typed", "--log-level", "warning"]):
        done = cli_process(*argv, cwd=world.a)
        assert done.returncode == 6, (argv, done.stderr)
        assert f"the newest event this store wrote, events/{newest.parent.name}/{newest.name}, is gone" \
            in done.stderr and "continuity sync" in done.stderr and "Traceback" not in done.stderr, done.stderr
    done = cli_process("hook", "claude-code", cwd=world.a, stdin=hook, env={"HOME": str(world.tmp)})
    assert done.returncode == 0 and "is gone" in (world.a / STORE / "local" / "hooks.log").read_text()
    with pytest.raises(ContinuityError, match="is gone"):
        long_lived.append(WorkLogged(project="demo", message="refused"))
    assert len(list(events.glob("*/*.json"))) == 1
    assert synced(world.a).written_back == 1 and newest.read_bytes() == original
    long_lived.append(WorkLogged(project="demo", message="three"))
    assert cli_process("log", "-m", "four", cwd=world.a).returncode == 0
    assert synced(world.a).pushed
    # an event written after the last sync and deleted never left this store: the sync lets it go
    long_lived.append(WorkLogged(project="demo", message="five (never synced)"))
    sorted(events.glob("*/*.json"))[-1].unlink()
    assert cli_process("log", "-m", "refused", cwd=world.a).returncode == 6
    assert synced(world.a).written_back == 0  # nothing to bring back, nothing new to push
    long_lived.append(WorkLogged(project="demo", message="six"))
    long_lived.close()
    assert synced(world.a).pushed
    synced(world.b)
    for root in (world.a, world.b):
        code, out = cli("verify", "--root", str(root))
        assert code == 0 and out["events"] == 5 and out["forks"] == [], out


def test_a_deleted_newest_event_is_still_waited_for_after_a_sync_brought_events_in(world: World) -> None:
    """A sync that brought a teammate's events in removed the head hint, so the store forgot which event it wrote
    last: deleted then, the next write followed the one before it and the store forked. The hint is now made
    untrusted instead, and still names the event."""
    append(world.b, "b1")
    assert synced(world.b).pushed
    append(world.a, "a1", "a2")
    assert synced(world.a).added_remote == 1
    newest = sorted((world.a / STORE / "events").glob("*/*.json"), key=lambda path: path.name)[-1]
    newest.unlink()
    done = cli_process("log", "-m", "after the delete", cwd=world.a)
    assert done.returncode == 6 and "is gone" in done.stderr, done.stderr
    assert synced(world.a).written_back == 1 and newest.exists()
    assert cli_process("log", "-m", "after the sync", cwd=world.a).returncode == 0
    assert synced(world.a).pushed
    code, out = cli("verify", "--root", str(world.a))
    assert code == 0 and not any("same node" in str(problem) for problem in out["problems"]), out


def test_a_store_that_never_synced_writes_past_its_deleted_newest_event(tmp_path: Path) -> None:
    """No sync ever ran: a deleted event never left the store, so no clone can hold a sibling of the next one, and the
    next write follows the event before it as it did (refusing would stop a store with no way to sync for good)."""
    assert cli("init", "--project", "demo", "--root", str(tmp_path))[0] == 0
    append(tmp_path, "one", "two")
    events = tmp_path / STORE / "events"
    sorted(events.glob("*/*.json"))[-1].unlink()
    assert not (tmp_path / STORE / "local" / "sync.json").exists()
    assert cli_process("log", "-m", "three", cwd=tmp_path).returncode == 0
    code, out = cli("verify", "--root", str(tmp_path))
    assert code == 0 and out["events"] == 2 and out["forks"] == [], out


def test_a_write_while_the_write_back_runs_follows_the_real_head(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The write-back went oldest day first, a batch at a time: a `log` or a hook between batches followed an old
    event as the head, a second child from this node, and the next sync carried that fork to every clone for good.
    It now writes back the newest event first, alone, then the rest newest first: a write between batches follows
    the real head."""
    import time

    from continuity.sync import engine
    from events.filelog import FileEventLog

    store = Store(world.a)
    earlier = FileEventLog(store.events_dir, store.local_dir, node=store.node(),
                           clock_us=lambda: time.time_ns() // 1000 - 2 * 86_400_000_000)
    for message in ("one", "two", "three"):
        earlier.append(WorkLogged(project="demo", message=message))
    earlier.close()
    append(world.a, "four", "five")
    head = sorted((world.a / STORE / "events").glob("*/*.json"))[-1].name
    ahead = FileEventLog(store.events_dir, store.local_dir, node="teammate",  # a teammate's clock 3 days ahead:
                         clock_us=lambda: time.time_ns() // 1000 + 3 * 86_400_000_000)  # no head an append follows
    ahead.append(WorkLogged(project="demo", message="stamped early"))
    ahead.close()
    assert synced(world.a).pushed
    events = world.a / STORE / "events"
    for path in events.glob("*/*.json"):
        path.unlink()
    monkeypatch.setattr(engine, "RESTORE_BATCH", 2)
    real = engine.Syncer._bring_in
    batches: list[list[str]] = []

    def spied(self: Any, incoming: Any, local_only: Any, **options: Any) -> int:
        done = real(self, incoming, local_only, **options)
        batches.append([entry.name for _, entry in incoming])
        if len(batches) == 1:
            append(world.a, "written between two batches")  # a hook's event, mid write-back
        return done

    monkeypatch.setattr(engine.Syncer, "_bring_in", spied)
    assert synced(world.a).written_back == 6
    monkeypatch.setattr(engine.Syncer, "_bring_in", real)
    names = [name for batch in batches for name in batch]
    assert batches[0] == [head] and names[1:-1] == sorted(names[1:-1], reverse=True) and "teammate" in names[-1]
    assert sorted(names) == sorted(path.name for path in events.glob("*/*.json")
                                   if "written between" not in path.read_text())
    assert synced(world.a).pushed
    synced(world.b)
    for root in (world.a, world.b):
        code, out = cli("verify", "--root", str(root))
        assert code == 0 and out["events"] == 7 and not any("same node" in str(p) for p in out["problems"]), out


def test_a_misfiled_event_whose_day_folder_is_gone_is_not_written_back_twice(world: World) -> None:
    """An event moved by hand into another day folder, its own folder then removed: the write-back took the folder
    as lost and wrote the event into it again, so reads showed it twice and verify said "duplicate event id"."""
    import time

    from events.filelog import FileEventLog

    store = Store(world.a)
    earlier = FileEventLog(store.events_dir, store.local_dir, node=store.node(),
                           clock_us=lambda: time.time_ns() // 1000 - 2 * 86_400_000_000)
    earlier.append(WorkLogged(project="demo", message="an earlier day"))
    earlier.close()
    append(world.a, "today")
    assert synced(world.a).pushed
    events = world.a / STORE / "events"
    old_day, new_day = sorted(events.iterdir())
    moved = next(old_day.iterdir())
    moved.rename(new_day / moved.name)
    old_day.rmdir()
    report = synced(world.a)
    assert report.written_back == 0 and len(list(events.glob("*/*.json"))) == 2
    assert any("filed under another day" in warning for warning in report.warnings)


def test_a_cloned_machine_pushing_the_same_node_converges(world: World) -> None:
    """A machine cloned whole (a VM image, a file-system snapshot: same host name, same folders) keeps the node id:
    both push one node ref. With the branch declined the ref is the only way in, so the second sync must take the
    first one's commit as a parent for its push to be a fast-forward (else it is refused until the retry time runs
    out)."""
    import shutil

    append(world.a, "before the copy")
    shutil.rmtree(world.b / STORE)
    shutil.copytree(world.a / STORE, world.b / STORE)
    pin_node(world.b, Store(world.a).node())
    assert Store(world.b).node() == Store(world.a).node()
    refuse_branch_updates(world.remote)
    config = world.b / STORE / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "sync_retry_seconds": 2}))
    append(world.a, "on a")
    append(world.b, "on b")
    assert synced(world.a).pushed
    report = synced(world.b)
    assert report.pushed and not report.branch_updated and report.added_remote == 1 and report.attempts == 1
    synced(world.a)
    assert event_names(world.a) == event_names(world.b) and len(event_names(world.a)) == 3
    assert remote_refs(world.remote) == [f"refs/continuity/continuity/nodes/{Store(world.a).node()}"]


def test_a_lost_local_branch_takes_its_own_node_ref_back_as_a_parent(world: World) -> None:
    """This clone's node ref was pushed, the branch moved on without it, and the local branch is lost:
    the next sync takes its own ref back (it is no ancestor of the branch) and lands, exit 0, no warning."""
    refuse_branch_updates(world.remote)
    append(world.a, "a1")
    assert synced(world.a).pushed
    (world.remote / "hooks" / "update").unlink()
    append(world.b, "b1")
    assert synced(world.b).branch_updated
    git(world.a, "update-ref", "-d", "refs/heads/continuity")
    append(world.a, "a2")  # something to push (else the branch may just fast-forward: all of a is there)
    code, out = cli("sync", "--root", str(world.a))
    assert code == 0 and out["pushed"] and out["branch_updated"] and out["warnings"] == [], out
    assert out["attempts"] == 1 and out["added_remote"] == 1
    node_ref = f"refs/continuity/continuity/nodes/{Store(world.a).node()}"
    assert git(world.remote, "rev-parse", node_ref) == git(world.remote, "rev-parse", "continuity")
    assert synced(world.b).added_remote == 1 and event_names(world.a) == event_names(world.b)  # a2


def test_seen_node_refs_are_remembered_only_when_taken_in(world: World) -> None:
    """local/sync-nodes.json records a node ref's commit once its events are in the store: a --no-push sync
    records it, a sync that gave up leaves the file as it was."""
    seen_file = world.b / STORE / "local" / "sync-nodes.json"
    node_ref = f"refs/continuity/continuity/nodes/{Store(world.a).node()}"
    refuse_branch_updates(world.remote)  # a's events travel on its node ref alone
    append(world.a, "a1")
    synced(world.a)
    synced(world.b, push=False)
    assert json.loads(seen_file.read_text()) == {
        "refs/continuity-nodes/origin/continuity": {Store(world.a).node(): git(world.remote, "rev-parse",
                                                                                node_ref).strip()}}
    before = seen_file.read_bytes()
    append(world.a, "a2")
    synced(world.a)
    hook = world.remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    config = world.b / STORE / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "sync_retry_seconds": 0.5}))
    append(world.b, "b1")
    assert cli("sync", "--root", str(world.b))[0] == EXIT_SYNC_GAVE_UP
    assert seen_file.read_bytes() == before and len(event_names(world.b)) == 2  # a2 not taken in either
    hook.unlink()
    assert synced(world.b).added_remote == 1 and seen_file.read_bytes() != before


def test_a_node_ref_the_remote_cannot_serve_is_skipped(world: World) -> None:
    """A node ref naming an object the remote does not have makes git refuse the whole fetch: the refs are
    fetched one by one, that one skipped with a warning, the rest taken in (exit 0). (Such a remote refuses
    every push too, `missing necessary objects`: git's own check, on the server.)"""
    append(world.a, "a1")
    synced(world.a)
    missing = world.remote / "refs" / "continuity" / "continuity" / "nodes" / "eeeeeeee"
    missing.write_text("1" * 40 + "\n")
    code, out = cli("sync", "--no-push", "--root", str(world.b))
    assert code == 0 and out["added_remote"] == 1 and event_names(world.b) == event_names(world.a)
    assert [w for w in out["warnings"] if "nodes/eeeeeeee" in w and "cannot serve" in w]


def test_other_names_under_the_node_folder_are_left_alone(world: World) -> None:
    """Only `nodes/<8 characters>` counts: a nested name, a longer one or one with capitals is never fetched,
    even where this clone fetched a ref of that name's first part before (no ref-name clash here)."""
    append(world.a, "a1")
    synced(world.a)
    synced(world.b)
    commit = git(world.remote, "rev-parse", "continuity").strip()
    node_a = Store(world.a).node()
    git(world.remote, "update-ref", "-d", f"refs/continuity/continuity/nodes/{node_a}")
    for name in (f"{node_a}/x", "ABCDEFGH", "abcdefghi", "abc"):
        git(world.remote, "update-ref", f"refs/continuity/continuity/nodes/{name}", commit)
    append(world.b, "b1")
    code, out = cli("sync", "--root", str(world.b))
    assert code == 0 and out["warnings"] == []
    local = git(world.b, "for-each-ref", "--format=%(refname)", "refs/continuity-nodes/").split()
    assert not [ref for ref in local if ref.rsplit("/", 1)[1] in ("x", "ABCDEFGH", "abcdefghi", "abc")]


def test_clone_store_from_node_refs_alone_skips_a_broken_one(world: World) -> None:
    """A remote with no branch (declined) but node refs, one of them a blob: clone-store brings the rest."""
    refuse_branch_updates(world.remote)
    append(world.a, "a1", "a2")
    assert synced(world.a).pushed
    blob = subprocess.run(["git", "-C", str(world.remote), "hash-object", "-w", "--stdin"], input="junk\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    git(world.remote, "update-ref", "refs/continuity/continuity/nodes/00000000", blob)
    fresh = world.clone("fresh", init=False)
    code, out = cli("clone-store", "origin", "--root", str(fresh))
    assert code == 0 and out["project"] == "demo" and out["events"] == 2
    assert any("nodes/00000000" in warning and "a blob" in warning for warning in out["warnings"])
    assert event_names(fresh) == event_names(world.a)


def test_a_server_that_takes_branches_only_still_syncs_through_the_branch(world: World) -> None:
    """A server declining refs outside refs/heads (some forges): the branch carries the events, exit 0, a warning."""
    hook = world.remote / "hooks" / "update"
    hook.write_text('#!/bin/sh\ncase "$1" in refs/heads/*) exit 0;; esac\necho "branches only" >&2\nexit 1\n')
    hook.chmod(0o755)
    append(world.a, "a1")
    code, out = cli("sync", "--root", str(world.a))
    assert code == 0 and out["pushed"] and out["branch_updated"]
    assert any("refused this clone's ref" in warning for warning in out["warnings"])
    assert remote_refs(world.remote) == ["refs/heads/continuity"]
    assert synced(world.b).added_remote == 1
    assert cli("sync", "--status", "--root", str(world.a))[1]["waiting"] == 0


def test_a_broken_node_ref_on_the_remote_is_skipped_with_a_warning(world: World) -> None:
    """A node ref naming a blob or an annotated tag (hostile or broken): skipped and named, the sync goes on."""
    append(world.a, "a1")
    synced(world.a)
    blob = subprocess.run(["git", "-C", str(world.remote), "hash-object", "-w", "--stdin"], input="not a commit\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    git(world.remote, "update-ref", "refs/continuity/continuity/nodes/deadbeef", blob)
    git(world.remote, "tag", "-a", "-m", "a tag", "t1", "continuity")
    tag = git(world.remote, "rev-parse", "t1").strip()
    git(world.remote, "update-ref", "refs/continuity/continuity/nodes/0badc0de", tag)
    append(world.b, "b1")
    code, out = cli("sync", "--root", str(world.b))
    assert code == 0 and out["added_remote"] == 1
    skipped = [warning for warning in out["warnings"] if warning.startswith("skipped refs/continuity/")]
    assert len(skipped) == 2 and any("deadbeef" in w and "a blob" in w for w in skipped)
    assert any("0badc0de" in w and "a tag" in w for w in skipped)
    assert synced(world.a).added_remote == 1
    assert event_names(world.a) == event_names(world.b)


def commit_of(remote: Path, files: dict[str, bytes], parent: str | None = None, empty_day: str | None = None) -> str:
    """A commit made with plumbing in a bare repository: events/<day>/<name> -> bytes (and an empty day tree)."""
    def run(*args: str, data: bytes) -> str:
        return subprocess.run(["git", "-C", str(remote), *args], input=data, capture_output=True,
                              check=True).stdout.decode().strip()

    days: dict[str, list[str]] = {empty_day: []} if empty_day else {}
    for path, raw in files.items():
        _, day, name = path.split("/")
        days.setdefault(day, []).append(f"100644 blob {run('hash-object', '-w', '--stdin', data=raw)}\t{name}")

    def tree(lines: list[str]) -> str:
        return run("mktree", data="".join(f"{line}\n" for line in lines).encode())

    events = tree([f"040000 tree {tree(lines)}\t{day}" for day, lines in days.items()])
    root = tree([f"040000 tree {events}\tevents"])
    return git(remote, "commit-tree", root, *(["-p", parent] if parent else []), "-m", "made by hand").strip()


def event_file(root: Path) -> tuple[str, bytes]:
    """The path under events/ and the bytes of a clone's only event file."""
    [path] = list((root / STORE / "events").glob("*/*.json"))
    return f"events/{path.parent.name}/{path.name}", path.read_bytes()


@pytest.mark.parametrize("under", ["an event's own name", "a new name"])
def test_two_node_refs_with_one_name_and_two_contents_are_both_skipped(world: World, under: str) -> None:
    """Clones' refs on the remote hold one name with two contents, neither what the name says: an event's own name
    the branch holds with its real bytes (refused, and with it every sync of every clone), or a new name. Each ref
    is skipped and named; a clone gets the branch's events, the real bytes, and nothing of theirs."""
    append(world.a, "original")
    synced(world.a)
    path, raw = event_file(world.a)
    day, name = path.split("/")[1:]
    copied = path if under == "an event's own name" else f"events/{day}/{name[:-17]}00000000beef.json"
    for node, text in (("cccccccc", b"rewritten"), ("dddddddd", b"different")):
        git(world.remote, "update-ref", f"refs/continuity/continuity/nodes/{node}",
            commit_of(world.remote, {copied: raw.replace(b"original", text)}))
    fresh = world.clone("fresh")
    code, report = cli("sync", "--root", str(fresh))
    assert code == 0, report
    for node in ("cccccccc", "dddddddd"):
        assert any(f"skipped refs/continuity/continuity/nodes/{node}" in w and copied.split("/")[2] in w
                   for w in report["warnings"]), report["warnings"]
    assert event_names(fresh) == event_names(world.a) and (fresh / STORE / path).read_bytes() == raw


def test_an_empty_day_tree_in_a_node_ref_is_harmless(world: World) -> None:
    """A node ref whose commit holds an empty day folder, beside one bringing a new event: synced, exit 0."""
    append(world.a, "a1")
    synced(world.a)
    append(world.b, "b1")
    path, raw = event_file(world.b)
    base = git(world.remote, "rev-parse", "continuity").strip()
    git(world.remote, "update-ref", "refs/continuity/continuity/nodes/aaaaaaaa",
        commit_of(world.remote, {}, base, empty_day="20991231"))
    git(world.remote, "update-ref", "refs/continuity/continuity/nodes/bbbbbbbb",
        commit_of(world.remote, {path: raw}, base))
    code, out = cli("sync", "--root", str(world.a))
    assert code == 0 and out["added_remote"] == 1
    assert path.split("/")[2] in event_names(world.a) and len(event_names(world.a)) == 2
    assert cli("verify", "--root", str(world.a))[0] == 0


def worktree_of(world: World, name: str) -> Path:
    """A linked git worktree of clone `a` (it shares a's branches) with a store of its own."""
    path = world.tmp / name
    git(world.a, "worktree", "add", "-q", "-b", name, str(path))
    assert cli("init", "--project", "demo", "--root", str(path))[0] == 0
    return path


def test_stores_of_two_worktrees_of_one_repository_converge(world: World) -> None:
    """Each git worktree has its own store, and they share the branch: what one worktree's sync put on it
    comes into the other's store at its next sync (counted apart), and both stores end with every event."""
    append(world.a, "a1", "a2")
    assert synced(world.a).pushed
    other = worktree_of(world, "wt")
    append(other, "w1")
    code, out = cli("sync", "--root", str(other))  # its store never synced: the branch's events come in once
    assert code == 0 and (out["added_branch"], out["added_local"], out["added_remote"]) == (2, 1, 0), out
    append(other, "w2")
    assert synced(other).added_branch == 0
    append(world.a, "a3")
    report = synced(world.a)
    assert (report.added_branch, report.added_remote) == (2, 0)  # w1, w2: from the branch the two share
    assert synced(other).added_branch == 1  # a3
    assert event_names(world.a) == event_names(other) and len(event_names(world.a)) == 5
    assert projections(world.a) == projections(other)
    for root in (world.a, other):
        assert cli("verify", "--root", str(root))[1]["ok"] is True
    assert synced(world.b).added_remote == 5 and event_names(world.b) == event_names(world.a)


def test_the_text_summary_names_events_from_the_shared_branch(world: World,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    append(world.a, "a1")
    synced(world.a)
    other = worktree_of(world, "wt")
    capsys.readouterr()
    assert main(["sync", "--root", str(other)]) == 0
    assert capsys.readouterr().out == ("synced origin/continuity: recorded 0 local event(s), added 0 from the "
                                       "remote, 1 from the branch (synced by another store of this repository); "
                                       "nothing to push\n")


@pytest.mark.parametrize("saved", [None, "", "{not json", '{"ref": "refs/heads/continuity", "commit": "X"}',
                                   '{"ref": "refs/heads/continuity", "commit": "--output={tmp}/x", "format": 2, '
                                   '"days": {}}',
                                   '{"ref": "refs/heads/continuity", "commit": "' + "a" * 40 + '", "format": 2, '
                                   '"days": {}}'])
def test_a_lost_foreign_or_older_marks_file_brings_the_branch_in_once(world: World, saved: str | None) -> None:
    """The commit a store last left the branch at is kept in local/sync.json; without a usable one (lost,
    broken, an older format without the guarantee, not an object id, a commit git does not have) every
    event of the branch the store lacks is written, once; then the file holds the tip again."""
    append(world.a, "a1")
    synced(world.a)
    other = worktree_of(world, "wt")
    marks = other / STORE / "local" / "sync.json"
    assert synced(other).added_branch == 1
    append(world.a, "a2")
    synced(world.a)
    (other / STORE / "events" / event_names(world.a)[-1][:8] / event_names(world.a)[-1]).unlink(missing_ok=True)
    if saved is None:
        marks.unlink()
    else:
        marks.write_text(saved.replace("{tmp}", str(world.tmp)))
    assert synced(other).added_branch == 1  # a2, whatever the file said
    assert json.loads(marks.read_bytes())["commit"] == git(other, "rev-parse", "continuity").strip()
    assert synced(other).added_branch == 0 and event_names(other) == event_names(world.a)
    assert not (world.tmp / "x").exists()  # the file's "commit" never reached git as an option


def test_worktrees_of_one_repository_syncing_at_once_all_succeed(world: World) -> None:
    """Five stores of one repository (the clone and four worktrees) syncing at the same moment, as real
    processes: each exits 0 (the repository's branch is moved by one sync at a time, never reported as a
    failure), and one more sync each leaves every store with all the events."""
    roots = [world.a, *(worktree_of(world, f"wt{n}") for n in range(4))]
    for round_number in range(2):
        for root in roots:
            append(root, *(f"{root.name} r{round_number} e{n}" for n in range(3)))
        env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
        processes = [subprocess.Popen([sys.executable, "-m", "continuity", "sync", "--root", str(root)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for root in roots]
        for process in processes:
            out, err = process.communicate(timeout=120)
            assert process.returncode == 0 and "Traceback" not in err, (out, err)
    for root in roots:
        synced(root)
    assert {len(event_names(root)) for root in roots} == {30}
    assert len({tuple(event_names(root)) for root in roots}) == 1
    lock = Path(git(world.a, "rev-parse", "--git-common-dir").strip())
    assert (world.a / lock / "continuity-sync.lock").is_file()


def test_a_remote_tree_over_the_bound_is_refused_unread(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A remote's day tree bigger than the bound (here lowered to 64 KiB; 256 MiB shipped): the sync fails with
    one line naming it, exit 5, and nothing is written; within the bound the same history syncs."""
    from continuity.sync import objects

    files = {f"events/20260101/{index:020d}.json": b"{}" for index in range(1500)}  # a tree of about 100 KiB
    git(world.remote, "update-ref", "refs/heads/continuity", commit_of(world.remote, files))
    monkeypatch.setattr(objects, "TREE_LIMIT", 64 << 10)
    code, error = cli("sync", "--root", str(world.b))
    assert code == 5 and "holds more than the 0 MiB a day of events can" in error["message"], error
    assert event_names(world.b) == []
    monkeypatch.setattr(objects, "TREE_LIMIT", 1 << 20)
    code, out = cli("sync", "--root", str(world.b))
    assert code == 0, out  # the names are no events: carried on the branch, never written
    assert event_names(world.b) == []


@pytest.mark.parametrize("raw", [b"100644 no-nul-after-the-name", b"100644 cut\0" + b"\x01" * 7,
                                 b"1006\xff4 bad-mode\0" + b"\x01" * 20])
def test_a_malformed_tree_on_the_branch_is_refused_in_one_line(world: World, raw: bytes) -> None:
    """The local branch names a tree git was made to store unchecked (`hash-object --literally`; git's own
    transport refuses to send such a tree, so it can only be planted here): exit 5, one line."""
    def plumbing(*args: str, data: bytes) -> str:
        return subprocess.run(["git", "-C", str(world.b), *args], input=data, capture_output=True,
                              check=True).stdout.decode().strip()

    tree = plumbing("hash-object", "-t", "tree", "--literally", "-w", "--stdin", data=raw)
    events = plumbing("mktree", "--missing", data=f"040000 tree {tree}\t20260101\n".encode())
    root = plumbing("mktree", "--missing", data=f"040000 tree {events}\tevents\n".encode())
    git(world.b, "update-ref", "refs/heads/continuity", git(world.b, "commit-tree", root, "-m", "x").strip())
    append(world.b, "b1")
    code, error = cli("sync", "--root", str(world.b))
    assert code == 5 and "is not a well-formed tree" in error["message"] and "\n" not in error["message"], error


@pytest.mark.parametrize("where", ["day", "events", "root"])
@pytest.mark.parametrize("entry", ["slash", "type", "gitlink"])
def test_a_remote_entry_git_cannot_write_again_never_blocks_the_teams_syncs(world: World, where: str,
                                                                            entry: str) -> None:
    """A teammate pushed a tree holding an entry git carries but refuses to write into a tree again: a name with
    a slash (`../x`) or a mode that does not match its object (a file mode naming a tree). Every sync that
    rewrote that tree failed (exit 5, with git's own `fatal:` line on stderr beside sync's), so no clone of the
    team could deliver events again. Now the entry is left out of the rewritten tree with one warning, the
    events flow both ways and nothing is written outside the store. A submodule's entry (a gitlink) beside it
    is carried as it is."""

    append(world.a, "a1")
    assert cli("sync", "--root", str(world.a))[0] == 0
    [day] = {path.parent.name for path in (world.a / STORE / "events").glob("*/*.json")}

    def plumbing(*args: str, data: bytes = b"") -> str:
        return subprocess.run(["git", "-C", str(world.remote), *args], input=data, capture_output=True,
                              check=True).stdout.decode().strip()

    def literal(raw: bytes) -> str:
        return plumbing("hash-object", "-t", "tree", "--literally", "-w", "--stdin", data=raw)

    def tree_of(rev: str) -> bytes:
        return subprocess.run(["git", "-C", str(world.remote), "cat-file", "tree", rev], capture_output=True,
                              check=True).stdout

    name, target = (b"../x", plumbing("hash-object", "-w", "--stdin", data=b"x")) if entry == "slash" else (
        b"0-not-a-file", plumbing("mktree"))
    hostile = b"100644 " + name + b"\0" + bytes.fromhex(target)
    if entry == "gitlink":  # a submodule's commit beside it: sync ended in exit 70 (KeyError) on every clone
        hostile = b"160000 sub\0" + bytes.fromhex(plumbing("rev-parse", "continuity")) + hostile
    day_tree = plumbing("rev-parse", f"continuity:events/{day}")
    events = plumbing("rev-parse", "continuity:events")
    if where == "day":
        day_tree = literal(hostile + tree_of(day_tree))
        events = plumbing("mktree", data=f"040000 tree {day_tree}\t{day}\n".encode())
    elif where == "events":
        events = literal(hostile + tree_of(events))
    root = literal(hostile + b"40000 events\0" + bytes.fromhex(events)) if where == "root" else plumbing(
        "mktree", data=f"040000 tree {events}\tevents\n".encode())
    git(world.remote, "update-ref", "refs/heads/continuity",
        git(world.remote, "commit-tree", root, "-p", "continuity", "-m", "hostile").strip())
    append(world.b, "b1")
    append(world.a, "a2")
    stderr = ""
    for clone in (world.b, world.a, world.b):
        result = cli_process("sync", cwd=clone)
        assert result.returncode == 0, (clone, stderr, result.stderr)
        stderr += result.stderr
    assert "fatal:" not in stderr and "left out" in stderr, stderr
    assert event_names(world.a) == event_names(world.b) and len(event_names(world.a)) == 3
    assert not (world.tmp / "x").exists()


@pytest.mark.parametrize("planted", [".lock", "/foo"])
@pytest.mark.parametrize("ref", ["refs/heads/continuity", "refs/remotes/origin/continuity"])
def test_a_stale_ref_lock_in_this_clone_is_named_not_blamed_on_the_remote(world: World, ref: str,
                                                                          planted: str) -> None:
    """A `<ref>.lock` left in this clone's git folder by a git that died, or a ref of this clone under the ref's
    name as a folder (`<ref>/foo`): sync fails with git's line naming it, exit 5 (this clone's git refused to
    write), not 'moved during the sync; run sync again' or a transport failure (exit 8, 'fix the remote'); once
    it is gone the sync succeeds."""
    append(world.a, "a1")
    assert cli("sync", "--root", str(world.a))[0] == 0
    append(world.a, "a2")
    append(world.b, "b1")
    assert cli("sync", "--root", str(world.b))[0] == 0  # the remote's branch moved: a fetches it
    if planted == ".lock":
        (world.a / ".git" / f"{ref}.lock").write_text("")
    else:
        git(world.a, "update-ref", "-d", ref)
        git(world.a, "update-ref", f"{ref}/foo", "HEAD")
    code, error = cli("sync", "--root", str(world.a))
    assert code == 5 and f"{ref}{planted}" in error["message"] and "moved during" not in error["message"], error
    if planted == ".lock":
        (world.a / ".git" / f"{ref}.lock").unlink()
    else:
        git(world.a, "update-ref", "-d", f"{ref}/foo")
    assert cli("sync", "--root", str(world.a))[0] == 0


@pytest.mark.parametrize("name", ["main", "develop"])
def test_a_sync_branch_that_holds_code_is_refused_before_anything_moves(world: World, name: str) -> None:
    """sync_branch naming a branch of code (`main`, which this clone tracks, or `develop`, which only the remote
    has): sync, export and reconnect refuse (exit 2) before writing anything. Sync committed the events onto the
    code and pushed them to the team's branch."""
    git(world.a, "switch", "-q", "-c", "feature")
    git(world.b, "push", "-q", "origin", "main:develop")  # clone a has never fetched it
    config_path = world.a / STORE / "config.json"
    config_path.write_text(json.dumps({**json.loads(config_path.read_text()), "sync_branch": name}))
    append(world.a, "a1")
    refs = git(world.a, "for-each-ref", "refs/heads"), git(world.remote, "for-each-ref")
    for command in (["sync"], ["work", "export"], ["work", "reconnect"]):
        code, error = cli(*command, "--root", str(world.a))
        assert code == EXIT_USAGE and "not a continuity branch" in error["message"], (command, error)
        assert (git(world.a, "for-each-ref", "refs/heads"), git(world.remote, "for-each-ref")) == refs


@pytest.mark.parametrize("where", ["remote", "here"])
def test_a_branch_of_code_with_its_own_events_folder_is_refused(world: World, where: str) -> None:
    """A project whose code has a top-level `events/` package (`events/handlers.py`, as this one has): sync_branch
    naming a branch of it was taken for a continuity branch, and the sync pushed a merge whose tree held only
    `events/README`, the code gone from the branch's tip. It is refused as a branch of code (exit 2), nothing
    moved; a continuity branch whose newest commit is such a merge (only the note under events/) still syncs."""
    git(world.b, "switch", "-q", "-c", "feature")
    (world.b / "events").mkdir()
    (world.b / "events" / "handlers.py").write_text("def on_event(): pass\n")
    git(world.b, "add", "events/handlers.py")
    git(world.b, "-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-qm", "handlers")
    git(world.b, "push", "-q", "origin", "feature")
    if where == "here":
        git(world.a, "fetch", "-q", "origin", "feature:feature")
    config_path = world.a / STORE / "config.json"
    config_path.write_text(json.dumps({**json.loads(config_path.read_text()), "sync_branch": "feature"}))
    append(world.a, "a1")
    refs = git(world.a, "for-each-ref", "refs/heads"), git(world.remote, "for-each-ref")
    code, error = cli("sync", "--root", str(world.a))
    assert code == EXIT_USAGE and "not a continuity branch" in error["message"], error
    assert (git(world.a, "for-each-ref", "refs/heads"), git(world.remote, "for-each-ref")) == refs
    assert "events/handlers.py" in git(world.remote, "ls-tree", "-r", "--name-only", "feature")
    append(world.b, "b1")  # the default branch, merged by two clones: its tip may hold only the merge note
    for clone in (world.a, world.b, world.a):
        config_path = clone / STORE / "config.json"
        config = json.loads(config_path.read_text())
        config.pop("sync_branch", None)
        config_path.write_text(json.dumps(config))
        assert cli("sync", "--root", str(clone))[0] == 0
    assert event_names(world.a) == event_names(world.b) and len(event_names(world.a)) == 2


def test_a_remote_commit_of_megabytes_is_named_as_too_big(world: World, tmp_path: Path) -> None:
    """The remote's branch at a commit whose message is 1.5 MB (no commit sync makes): exit 5 as before, the line
    saying it is too big to read (it said "is not a commit with a tree"); nothing changed here."""
    append(world.a, "a1")
    assert cli("sync", "--root", str(world.a))[0] == 0
    tree = git(world.remote, "rev-parse", "continuity^{tree}").strip()
    message = tmp_path / "message"
    message.write_bytes(b"x" * 1_500_000)
    big = git(world.remote, "-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit-tree", tree,
              "-p", "continuity", "-F", str(message)).strip()
    git(world.remote, "update-ref", "refs/heads/continuity", big)
    before = event_names(world.b)
    code, error = cli("sync", "--root", str(world.b))
    assert code == EXIT_WRITE_FAILED and f"commit {big} is over 1 MiB" in error["message"], error
    assert event_names(world.b) == before


@pytest.mark.parametrize("synced_before", [True, False], ids=["clone-that-synced", "clone-with-no-branch"])
def test_a_branch_of_code_refused_on_the_remote_refuses_no_sync_once_the_remote_is_repaired(
        world: World, synced_before: bool) -> None:
    """The shared branch forced to a branch of code: a sync refuses it (exit 2), then the remote is put back: the
    next sync takes it as it is now (in the clone that pushed the code too). The refused sync (or the push) left
    this clone's copy of the remote's branch on the code, and every later sync refused that copy before fetching,
    the remote repaired or not (for good)."""
    append(world.a, "a1")
    assert cli("sync", "--root", str(world.a))[0] == 0
    good = git(world.remote, "rev-parse", "continuity").strip()
    if synced_before:
        assert cli("sync", "--root", str(world.b))[0] == 0
    append(world.b, "b1")
    git(world.a, "push", "-q", "--force", "origin", "main:continuity")  # a branch of code lands on the remote
    code, error = cli("sync", "--root", str(world.b))
    assert code == EXIT_USAGE and "not a continuity branch" in error["message"], error
    code, error = cli("work", "export", "--root", str(world.b))  # offline: the copy here says what the remote is
    assert code == EXIT_USAGE and "not a continuity branch" in error["message"], error
    git(world.remote, "update-ref", "refs/heads/continuity", good)  # repaired
    code, report = cli("sync", "--root", str(world.b))
    assert code == 0, report
    assert cli("sync", "--root", str(world.a))[0] == 0
    assert event_names(world.a) == event_names(world.b) and len(event_names(world.a)) == 2


@pytest.mark.parametrize("command", ["sync", "clone-store"])
def test_remote_events_are_never_written_through_a_day_folder_symlink(world: World, command: str) -> None:
    """A day folder of the store that is a symlink out of it: sync and clone-store refuse (unsafe store, exit 6)
    and write nothing where it points. Sync linked the remote's events of that day into the folder it named."""
    append(world.a, "a1", "a2")
    assert cli("sync", "--root", str(world.a))[0] == 0
    [day] = {path.parent.name for path in (world.a / STORE / "events").glob("*/*.json")}
    outside = world.tmp / "outside"
    outside.mkdir()
    (world.b / STORE / "events").mkdir(exist_ok=True)
    (world.b / STORE / "events" / day).symlink_to(outside)
    code, error = cli(*(["sync"] if command == "sync" else ["clone-store", "origin"]), "--root", str(world.b))
    assert code == 6 and f"{day} is a symlink" in error["message"], error
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("command", ["sync", "clone-store"])
def test_an_event_listed_twice_in_a_remote_day_tree_is_written_once(world: World, command: str) -> None:
    """A hand-made day tree listing one event twice (git never writes one name twice in a tree; its transport
    carries it): a first sync and clone-store write the event once (exit 0). They failed with 'remote events not
    written: File exists' (exit 5), so no new clone of the team could take the history."""
    append(world.a, "a1")
    assert cli("sync", "--root", str(world.a))[0] == 0

    def plumbing(*args: str, data: bytes = b"") -> bytes:
        return subprocess.run(["git", "-C", str(world.remote), *args], input=data, capture_output=True,
                              check=True).stdout

    [day] = {path.parent.name for path in (world.a / STORE / "events").glob("*/*.json")}
    listed = plumbing("cat-file", "tree", f"continuity:events/{day}")
    twice = plumbing("hash-object", "-t", "tree", "--literally", "-w", "--stdin", data=listed + listed).strip()
    events = plumbing("mktree", data=b"040000 tree " + twice + f"\t{day}\n".encode()).strip()
    root = plumbing("mktree", data=b"040000 tree " + events + b"\tevents\n").strip().decode()
    git(world.remote, "update-ref", "refs/heads/continuity",
        git(world.remote, "commit-tree", root, "-p", "continuity", "-m", "twice").strip())
    target = world.b if command == "sync" else world.clone("c", init=False)
    code, out = cli(*(["sync"] if command == "sync" else ["clone-store", "origin"]), "--root", str(target))
    assert code == 0, out
    assert event_names(target) == event_names(world.a)


def test_a_pushed_commit_without_events_on_the_branch_is_united_not_refused(world: World) -> None:
    """A teammate pushed onto the continuity branch (a fast-forward) a commit whose tree holds a file but no
    events/ folder: it descends from the clones' history, so it is no branch of code; every clone still syncs
    (exit 0), keeps its events and puts them back on the branch."""
    append(world.a, "a1")
    assert cli("sync", "--root", str(world.a))[0] == 0
    assert cli("sync", "--root", str(world.b))[0] == 0
    blob = subprocess.run(["git", "-C", str(world.remote), "hash-object", "-w", "--stdin"], input=b"hi",
                          capture_output=True, check=True).stdout.decode().strip()
    root = subprocess.run(["git", "-C", str(world.remote), "mktree"], input=f"100644 blob {blob}\tREADME\n".encode(),
                          capture_output=True, check=True).stdout.decode().strip()
    git(world.remote, "update-ref", "refs/heads/continuity",
        git(world.remote, "commit-tree", root, "-p", "continuity", "-m", "no events").strip())
    append(world.a, "a2")
    append(world.b, "b1")
    for clone in (world.a, world.b, world.a):
        code, out = cli("sync", "--root", str(clone))
        assert code == 0, out
    assert event_names(world.a) == event_names(world.b) and len(event_names(world.a)) == 3
    on_branch = {path.rpartition("/")[2] for path in branch_event_paths(world.remote, "continuity")}
    assert on_branch == set(event_names(world.a))


def test_a_corrupt_object_in_this_clone_fails_in_one_line(world: World) -> None:
    """A loose object of the branch cut short (a disk fault, a copy gone wrong): sync fails with one line on stderr
    naming git's reason, exit 5; git's own 'error:' and 'fatal:' lines printed beside it before, and sync's said
    only 'git cat-file ended early'."""
    from tests.helpers import cli_process

    append(world.b, "b1")
    assert cli("sync", "--root", str(world.b))[0] == 0
    tree = git(world.b, "rev-parse", "continuity:events").strip()
    loose = world.b / ".git" / "objects" / tree[:2] / tree[2:]
    loose.chmod(0o644)
    loose.write_bytes(loose.read_bytes()[:20])
    append(world.b, "b2")
    result = cli_process("sync", cwd=world.b)
    assert result.returncode == 5, result.stderr
    assert result.stderr.count("\n") == 1 and "corrupt" in result.stderr, result.stderr


@pytest.mark.parametrize("name", ["two\nlines", "carriage\rreturn", "line\u2028separator"])
def test_a_project_folder_whose_name_holds_a_line_break_syncs(tmp_path: Path, name: str) -> None:
    """A clone in a folder whose name holds a newline (or another character Python splits lines at): sync and
    export work (exit 0). git's answers were split into lines, so sync said 'not a git work tree' (exit 2)."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    clone = tmp_path / name
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    assert cli("init", "--project", "demo", "--root", str(clone))[0] == 0
    append(clone, "first")
    code, out = cli("sync", "--root", str(clone))
    assert code == 0 and out["pushed"], out
    code, out = cli("work", "export", "--out", str(tmp_path / "t"), "--root", str(clone))
    assert code == 0, out


@pytest.mark.parametrize("broken", ["commit over 1 MiB", "malformed day tree"])
def test_a_node_ref_sync_cannot_read_is_skipped_not_fatal(world: World, broken: str) -> None:
    """One clone's node ref names a commit sync refuses to read (over 1 MiB, or holding a malformed day tree),
    beside a good one: the good one is taken, the broken one skipped with a warning naming it, exit 0. It
    stopped every clone's sync (exit 5), against 'one broken ref never stops the others'."""
    append(world.a, "a1")
    synced(world.a)
    append(world.b, "b1")
    path, raw = event_file(world.b)
    base = git(world.remote, "rev-parse", "continuity").strip()
    if broken == "commit over 1 MiB":
        tree = git(world.remote, "rev-parse", "continuity^{tree}").strip()
        bad = subprocess.run(["git", "-C", str(world.remote), "commit-tree", tree, "-p", base, "-F", "-"],
                             input=b"m" * (2 << 20), capture_output=True, check=True).stdout.decode().strip()
    else:
        def plumbing(*args: str, data: bytes) -> str:
            return subprocess.run(["git", "-C", str(world.remote), *args], input=data, capture_output=True,
                                  check=True).stdout.decode().strip()

        day = plumbing("hash-object", "-t", "tree", "--literally", "-w", "--stdin", data=b"100644 cut\0" + b"\1" * 7)
        events = plumbing("mktree", "--missing", data=f"040000 tree {day}\t20261231\n".encode())
        root = plumbing("mktree", data=f"040000 tree {events}\tevents\n".encode())
        bad = git(world.remote, "commit-tree", root, "-p", base, "-m", "broken").strip()
    git(world.remote, "update-ref", "refs/continuity/continuity/nodes/aaaaaaaa", bad)
    git(world.remote, "update-ref", "refs/continuity/continuity/nodes/bbbbbbbb",
        commit_of(world.remote, {path: raw}, base))
    code, out = cli("sync", "--root", str(world.a))
    assert code == 0 and out["added_remote"] == 1, out
    assert [w for w in out["warnings"] if "nodes/aaaaaaaa" in w], out["warnings"]
    assert path.split("/")[2] in event_names(world.a)
    git(world.remote, "update-ref", "-d", "refs/heads/continuity")  # clone-store from the node refs alone
    fresh = world.clone("c", init=False)
    code, out = cli("clone-store", "origin", "--root", str(fresh))
    assert code == 0 and path.split("/")[2] in event_names(fresh), out


def test_with_events_committed_with_code_only_the_log_and_config_are_tracked(tmp_path: Path) -> None:
    """`commit_events_with_code: true`: every derived document the features write (handoffs, memories,
    workstreams, role documents, member snapshots) is ignored by the store's own .gitignore, so `git add -A`
    takes only the log, the config and the generated schema files: derived files would conflict on every merge."""
    root = tmp_path / "p"
    (root / STORE).mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / STORE / "config.json").write_text(json.dumps({"project": "demo", "commit_events_with_code": True}))
    assert cli("init", "--root", str(root))[0] == 0
    base = ["--root", str(root)]
    for command in (["checkpoint", "-m", "parser done", "--next", "wire the CLI"], ["archive", "--reason", "eod"],
                    ["role", "create", "core", "reviewer"], ["role", "claim", "core", "reviewer", "--agent", "ash"],
                    ["snapshot", "core", "ash", "build", "--objective", "ship"],
                    ["handoff", "create", "--to", "bob", "--message", "take the parser", "--agent", "ash"]):
        assert cli(*command, *base)[0] == 0, command
    code, created = cli("task", "create", "--title", "parser tests", *base)
    assert code == 0
    task = created["task_id"]
    assert cli("task", "update", task, "--status", "completed", "--note", "done", *base)[0] == 0
    document = {"schemaVersion": 2, "repository": "demo", "scope": "all", "status": "IN_PROGRESS",
                "objective": "o", "confirmedFindings": [], "decisions": [], "rejectedApproaches": [],
                "validation": [], "openQuestions": [], "nextAction": "step",
                "continuity": {"mode": "tracked", "validationLedger": [], "workstream": {
                    "id": "WS-1", "title": "One", "status": "IN_PROGRESS", "objective": "o",
                    "repositories": [{"repository": "demo", "role": "primary"}],
                    "cursor": {"currentItemId": None, "lastCompletedItemId": None, "phase": None,
                               "lastCompletedAction": None, "nextAction": "step"}, "items": []}}}
    (root / "doc.json").write_text(json.dumps(document))
    assert cli("work", "checkpoint", "--file", str(root / "doc.json"), *base)[0] == 0
    tracked = subprocess.run(["git", "-C", str(root), "ls-files", "--others", "--exclude-standard", str(STORE)],
                             capture_output=True, text=True, check=True).stdout.split()
    kinds = {path.split("/")[2] for path in tracked}
    assert kinds <= {"events", "config.json", "README.md", ".gitignore", "event.schema.json", "archive.schema.json"}
    assert "events" in kinds
    written = {path.relative_to(root / STORE).parts[0] for path in (root / STORE).rglob("*") if path.is_file()}
    assert {"handoffs", "memories", "workstreams", "team"} <= written  # the documents exist, and are ignored


def test_a_git_stopped_by_the_file_size_limit_is_named_not_no_message(world: World) -> None:
    """On a full quota git dies of SIGXFSZ without a word, and sync said "git hash-object: no message"; it names
    how git ended now (exit 5, one line)."""
    import base64
    import resource
    import subprocess
    import sys

    append(world.a, *(base64.b64encode(os.urandom(6000)).decode() for _ in range(3)))  # too big even packed
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    done = subprocess.run([sys.executable, "-m", "continuity", "sync"], cwd=world.a, env=env, capture_output=True,
                          text=True, timeout=120,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048)))
    assert done.returncode == 5, done.stderr
    assert "git hash-object: stopped by SIGXFSZ" in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


@pytest.mark.parametrize("variable", ["GIT_DIR", "GIT_WORK_TREE+GIT_DIR", "GIT_NAMESPACE"])
def test_git_variables_of_another_repository_are_not_followed(world: World, tmp_path: Path, variable: str) -> None:
    """`GIT_DIR` inherited from another repository (a git hook's, `vcsh enter`, a dotfiles alias) sent this
    project's events to that repository's branch and remote, and the brief described it: every git call is
    about the store's own work tree, as a real `continuity` process run from the project finds it."""
    other_remote = tmp_path / "other.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(other_remote))
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(other_remote), str(other))
    git(other, "checkout", "-q", "-b", "theirs")
    git(other, "commit", "-q", "--allow-empty", "-m", "theirs")
    append(world.a, "ours")
    env = {"GIT_DIR": str(other / ".git")}
    if "GIT_WORK_TREE" in variable:
        env["GIT_WORK_TREE"] = str(other)
    if variable == "GIT_NAMESPACE":
        env = {"GIT_NAMESPACE": "elsewhere"}
    before = user_git_state(other)
    result = cli_process("sync", "--json", cwd=world.a, env=env)
    assert result.returncode == 0, result.stderr
    assert git(world.remote, "for-each-ref", "--format=%(refname)", "refs/heads/continuity").strip()
    assert git(other_remote, "for-each-ref", "refs/heads/continuity", "refs/namespaces") == ""
    assert git(other, "for-each-ref", "refs/heads/continuity") == "" and user_git_state(other) == before
    brief = cli_process("resume-bundle", "--format", "json", cwd=world.a, env=env)
    assert json.loads(brief.stdout)["git"]["branch"] == "main"  # the brief's git facts: this project's too
    compat = subprocess.run([sys.executable, "-m", "continuity.adapters.compat.runtime_continuity", "resume-bundle",
                             "--project", "demo"], cwd=world.a, env={**os.environ, **env}, capture_output=True,
                            text=True, timeout=60)
    assert compat.returncode == 0 and json.loads(compat.stdout)["git"]["branch"] == "main", compat.stderr


@pytest.mark.parametrize("answer", ['printf "garbage\\0x\\n"', "true", 'printf "a\\nb\\nsha999\\nc\\n"',
                                    'case "$*" in *--show-object-format*) exec "$REAL_GIT" "$@";; esac\n'
                                    'printf "\\377garbage\\n"'])
def test_a_git_that_answers_nonsense_is_named_not_an_internal_error(world: World, tmp_path: Path,
                                                                    answer: str) -> None:
    """A `git` early on PATH that exits 0 with garbage (a NUL in a path, nothing at all, an object format git has
    not) made `sync` end in "internal error: ValueError: embedded null byte": exit 2, one line."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text(f"#!/bin/sh\n{answer}\nexit 0\n")
    (fake / "git").chmod(0o755)
    import shutil

    result = cli_process("sync", cwd=world.a, env={"PATH": f"{fake}{os.pathsep}{os.environ['PATH']}",
                                                    "REAL_GIT": str(shutil.which("git"))})
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "no sense" in result.stderr and "internal error" not in result.stderr


def test_no_process_to_be_had_is_a_failed_write_not_an_internal_error(world: World) -> None:
    """Too many open files when sync starts git (a `subprocess` pipe, or `cat-file`'s long-lived process) was exit
    70, "internal error": exit 5 with one line naming the git command, nothing recorded on the branch. With the
    limit lifted, the same sync goes through."""
    import resource

    from continuity.core.errors import EXIT_WRITE_FAILED
    from continuity.sync.git import PACK_FROM

    append(world.a, *(f"event {i}" for i in range(PACK_FROM + 20)))  # enough to be packed by `git fast-import`
    before = store_bytes(world.a)
    failed = []
    for limit in range(8, 24):
        def capped(limit: int = limit) -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
        done = subprocess.run([sys.executable, "-m", "continuity", "sync"], cwd=world.a, env=env, text=True,
                              capture_output=True, timeout=120, preexec_fn=capped)
        if done.returncode == 0:  # this limit left enough for the whole sync: the next ones do too
            break
        failed.append(done.stderr)
        assert done.returncode == EXIT_WRITE_FAILED, (limit, done.stderr)
        assert done.stderr.startswith("continuity: error: sync failed: git ") and "could not be started (Too many " \
            "open files)" in done.stderr and len(done.stderr.splitlines()) == 1, (limit, done.stderr)
        assert store_bytes(world.a) == before
    assert any("git fast-import could not be started" in line for line in failed), failed
    assert cli("sync", "--root", str(world.a))[0] == 0


def test_a_local_hook_that_declines_continuitys_ref_is_named_not_taken_for_a_race(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """A `reference-transaction` hook of the clone's own that aborts updates of the continuity branch: every sync
    failed with "refs/heads/continuity moved during the sync; run sync again", which no rerun ever fixed."""
    from continuity.cli import main

    hook = world.a / ".git" / "hooks" / "reference-transaction"
    hook.write_text('#!/bin/sh\n[ "$1" = prepared ] || exit 0\n'
                    'grep -q " refs/heads/continuity$" && { echo "policy: no" >&2; exit 1; }\nexit 0\n')
    hook.chmod(0o755)
    append(world.a, "a1")
    capsys.readouterr()
    assert main(["sync", "--root", str(world.a)]) == EXIT_WRITE_FAILED
    err = capsys.readouterr().err
    assert "a hook of this repository declined the update of refs/heads/continuity" in err, err
    assert "run sync again" not in err and "moved during the sync" not in err


def test_a_shallow_clone_takes_the_whole_branch_and_stays_shallow_itself(world: World) -> None:
    """`git clone --depth 1 --no-single-branch` brings the continuity branch at depth 1 too: under `delta` each
    commit holds only its own events, so `clone-store` took the newest sync's and `verify` found the rest missing
    (no later sync repaired it). The fetch deepens continuity's refs alone: the user's branches stay shallow."""
    for round_number in range(4):
        append(world.a, f"event {round_number}")
        assert synced(world.a).pushed
        (world.a / "code.txt").write_text(f"{round_number}\n")
        git(world.a, "add", "code.txt")
        git(world.a, "commit", "-q", "-m", f"code {round_number}")
        git(world.a, "push", "-q", "origin", "main")
    shallow = world.tmp / "shallow"
    git(world.tmp, "clone", "-q", "--depth", "1", "--no-single-branch", f"file://{world.remote}", str(shallow))
    assert git(shallow, "rev-list", "--count", "origin/continuity").strip() == "1"
    code, out = cli("clone-store", "origin", "--root", str(shallow))
    assert code == 0, out
    assert event_names(shallow) == event_names(world.a)
    assert cli("verify", "--root", str(shallow))[0] == 0
    assert git(shallow, "rev-list", "--count", "HEAD").strip() == "1"  # the user's history as they cloned it
    append(world.a, "after the clone")
    assert synced(world.a).pushed
    assert cli("sync", "--root", str(shallow))[0] == 0
    assert event_names(shallow) == event_names(world.a)


def test_a_store_an_earlier_release_cloned_short_in_a_shallow_clone_is_made_whole(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A clone-store of a release that fetched continuity's branch at the clone's depth left the store short, and
    its index of the branch was built from the cut history: once a sync deepened the branch, the events below the
    cut were still in no index, so none was taken in or written back. The first sync that deepens rebuilds it."""
    from continuity.sync.git import Repo

    for round_number in range(4):
        append(world.a, f"event {round_number}")
        assert synced(world.a).pushed
    shallow = world.tmp / "shallow"
    git(world.tmp, "clone", "-q", "--depth", "1", "--no-single-branch", f"file://{world.remote}", str(shallow))
    with monkeypatch.context() as patched:  # the earlier release: fetches that never deepen
        patched.setattr(Repo, "_deepening", lambda self: ())
        patched.setattr(Repo, "shallow", property(lambda self: False))
        assert cli("clone-store", "origin", "--root", str(shallow))[0] == 0
    assert len(event_names(shallow)) < len(event_names(world.a))
    code, out = cli("sync", "--root", str(shallow))
    assert code == 0, out
    assert event_names(shallow) == event_names(world.a)


def test_a_local_hook_that_declines_the_fetch_is_named_not_taken_for_an_unreachable_remote(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """The same hook declining the fetch's update of the remote's branch here: exit 8, "cannot fetch ... sync
    again later", which no later sync gets past."""
    from continuity.cli import main

    append(world.a, "a1")
    assert synced(world.a).pushed
    hook = world.b / ".git" / "hooks" / "reference-transaction"
    hook.write_text('#!/bin/sh\n[ "$1" = prepared ] || exit 0\ngrep -q continuity && exit 1\nexit 0\n')
    hook.chmod(0o755)
    capsys.readouterr()
    assert main(["sync", "--root", str(world.b)]) == EXIT_WRITE_FAILED
    err = capsys.readouterr().err
    assert "a hook of this repository declined the update" in err and "sync again later" not in err, err


def test_a_local_hook_that_declines_node_refs_is_named_not_blamed_on_the_remote(world: World) -> None:
    """The hook declining only the copies of the clones' node refs: every sync warned that the remote "cannot
    serve" them, its own ref included; the warning names this repository's hook."""
    append(world.a, "a1")
    assert synced(world.a).pushed
    hook = world.b / ".git" / "hooks" / "reference-transaction"
    hook.write_text('#!/bin/sh\n[ "$1" = prepared ] || exit 0\ngrep -q nodes/ && exit 1\nexit 0\n')
    hook.chmod(0o755)
    code, out = cli("sync", "--root", str(world.b))
    assert code == 0, out
    skipped = [line for line in out["warnings"] if line.startswith("skipped refs/continuity/")]
    assert skipped and all("a hook of this repository declined" in line and "cannot serve" not in line
                           for line in skipped), out["warnings"]


@pytest.mark.parametrize("recorded_by", ["this release", "an earlier release"])
def test_a_remote_of_another_projects_log_is_refused_once_a_clone_has_synced(world: World, tmp_path: Path,
                                                                             recorded_by: str) -> None:
    """origin pointed at another repository (`git remote set-url`, a wrong `--remote`) whose continuity branch is
    another project's log: the sync united it with this store's, for good (its events pushed on with the next
    sync). Once this clone has synced, a branch that shares no history and holds no ref of this clone is refused,
    exit 2, nothing moved on either side (a sync that only fetched since, as `work start` runs one, made it forget
    its push); `--allow-unrelated` unites them. A clone's first sync, and one whose own local branch was lost, still
    unite (the team's branch; the same log)."""
    append(world.a, "a1")
    assert synced(world.a).pushed
    if recorded_by == "an earlier release":  # its sync-state.json: the push recorded in `last_success` alone
        state_file = world.a / STORE / "local" / "sync-state.json"
        state = json.loads(state_file.read_text())
        assert state.pop("last_pushed")["continuity"]["pushed"] is True
        state_file.write_text(json.dumps(state))
    append(world.a, "a1b")
    assert cli("sync", "--no-push", "--root", str(world.a))[0] == 0  # (as `work start` syncs): not the last push
    other_remote = tmp_path / "other.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(other_remote))
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(other_remote), str(other))
    assert cli("init", "--project", "payments", "--root", str(other))[0] == 0
    assert cli("log", "payments work", "--root", str(other))[0] == 0
    assert cli("sync", "--root", str(other))[0] == 0
    foreign = git(other_remote, "rev-parse", "continuity")
    git(world.a, "remote", "set-url", "origin", str(other_remote))
    before, branch = event_names(world.a), git(world.a, "rev-parse", "continuity")
    append(world.a, "a2")
    code, out = cli("sync", "--root", str(world.a))
    assert code == 2 and "shares no history with this clone's log, which it has pushed before" in out["message"], out
    assert "--allow-unrelated" in out["message"]
    assert git(other_remote, "rev-parse", "continuity") == foreign
    assert git(other_remote, "for-each-ref", "--format=%(refname)", "refs/continuity/").split() == [
        f"refs/continuity/continuity/nodes/{Store(other).node()}"]
    assert len(event_names(world.a)) == len(before) + 1  # a2 only: nothing of payments came in (a1b was recorded)
    assert git(world.a, "merge-base", "--is-ancestor", branch.strip(), "continuity") == ""
    code, out = cli("sync", "--root", str(world.a), "--allow-unrelated")
    assert code == 0 and out["added_remote"] == 1, out
    assert set(event_names(other)) <= set(event_names(world.a))
    git(world.a, "remote", "set-url", "origin", str(world.remote))
    assert synced(world.b).added_remote >= 1  # b's first sync unites with the team's branch


def test_clones_that_have_not_pushed_or_lost_their_branch_still_unite(world: World, tmp_path: Path) -> None:
    """The refusal of an unrelated remote branch counts only a sync that left this clone's log on the remote, of
    this branch: a sync that exchanged nothing (b's, before anyone pushed) is none; and the same log is known by
    the commit the last sync left there (a clone-store whose local branch was lost and made again from the store,
    which pushed no node ref), or a clone's own node ref."""
    assert cli("sync", "--root", str(world.b))[0] == 0  # nothing recorded, nothing on the remote
    append(world.a, "a1")
    assert synced(world.a).pushed
    append(world.b, "b1")
    code, out = cli("sync", "--root", str(world.b))
    assert code == 0 and out["added_remote"] == 1, out
    c = world.clone("c", init=False)
    assert cli("clone-store", "origin", "--root", str(c))[0] == 0
    git(c, "update-ref", "-d", "refs/heads/continuity")
    assert cli("log", "c1", "--root", str(c))[0] == 0
    code, out = cli("sync", "--root", str(c))
    assert code == 0, out
    assert {"a1", "b1"} <= {json.loads(path.read_bytes()).get("message") for path in (c / STORE / "events").rglob(
        "*.json")}
