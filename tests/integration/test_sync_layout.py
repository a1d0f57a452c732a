"""The branch's two layouts (`sync_layout`): what a pushed commit holds, the local index, moving between them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from continuity.core.store import Store
from continuity.sync import engine
from continuity.sync.tree import DELTA_MARK, FULL_MARK
from tests.helpers import all_event_files, branch_event_paths, set_config
from tests.integration.test_sync import (  # noqa: F401  # _git_identity: the autouse identity fixture
    World,
    _git_identity,
    append,
    cli,
    event_names,
    git,
)

INDEX = "refs/continuity-index/continuity"


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A bare remote, clone `a` (which pushed the code) and clone `b`, both with a store."""
    return World(tmp_path)


def set_layout(root: Path, layout: object) -> None:
    set_config(root, sync_layout=layout)


def synced(root: Path) -> dict[str, object]:
    code, report = cli("sync", "--root", str(root))
    assert code == 0, report
    assert isinstance(report, dict)
    return report


def tree_paths(repository: Path, commit: str) -> list[str]:
    """The files of one commit's own tree."""
    return git(repository, "ls-tree", "-r", "--name-only", commit).split()


def on_branch(repository: Path) -> list[str]:
    """The event names the remote's branch holds along its whole history."""
    return sorted(path.rpartition("/")[2] for path in branch_event_paths(repository, "continuity"))


def test_a_push_carries_and_makes_the_server_walk_what_it_adds(world: World) -> None:
    """After 300 events are on the branch, a sync of 3 more pushes a commit whose tree, and whose parents'
    trees, hold those few events: what a git server walks to check a push (the trees of its refs and of the
    pushed commit's parents) stays the size of the change, not of the history."""
    append(world.a, *(f"old {i}" for i in range(300)))
    synced(world.a)
    append(world.b, "b")
    synced(world.b)
    append(world.a, "new 1", "new 2", "new 3")
    report = synced(world.a)
    assert report["added_local"] == 3 and report["added_remote"] == 1
    tip = git(world.remote, "rev-parse", "continuity").strip()
    parents = git(world.remote, "rev-list", "--parents", "-1", tip).split()[1:]
    assert len(parents) == 2  # a merge with b's push
    assert tree_paths(world.remote, tip) == ["events/README"]  # a merge adds no events
    sizes = sorted(len(tree_paths(world.remote, parent)) for parent in parents)
    assert sizes == [1, 3]  # b's one event; a's three
    added = git(world.remote, "rev-list", "--objects", tip, "--not", *parents).split("\n")
    assert len([line for line in added if line.endswith(".json")]) == 0
    assert DELTA_MARK in git(world.remote, "log", "-1", "--format=%B", tip)
    assert on_branch(world.remote) == event_names(world.a) == sorted(event_names(world.b) + [
        name for name in event_names(world.a) if name not in event_names(world.b)])
    assert len(on_branch(world.remote)) == 304
    synced(world.b)
    assert event_names(world.b) == event_names(world.a)
    assert git(world.remote, "for-each-ref", "refs/continuity-index").strip() == ""  # never pushed


def test_a_big_record_is_cut_into_parts(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recording more than RECORD_CHUNK events makes several commits, none holding more: no later push has a
    parent the server must walk whole. A fresh clone still gets every event."""
    monkeypatch.setattr(engine, "RECORD_CHUNK", 7)
    monkeypatch.setattr(engine, "INDEX_CHUNK", 2)  # clone-store builds the index two commits at a time
    append(world.a, *(f"e {i}" for i in range(20)))
    assert synced(world.a)["added_local"] == 20
    commits = git(world.remote, "rev-list", "continuity").split()
    assert sorted(len(tree_paths(world.remote, commit)) for commit in commits) == [6, 7, 7]
    assert "(part 3 of 3)" in git(world.remote, "log", "-1", "--format=%s", "continuity")
    fresh = world.clone("fresh", init=False)
    assert cli("clone-store", "origin", "--root", str(fresh))[0] == 0
    assert event_names(fresh) == event_names(world.a) and len(event_names(fresh)) == 20


@pytest.mark.parametrize("damage", ["deleted", "another line", "not a commit", "names no commit"])
def test_a_lost_or_damaged_index_is_built_again_from_the_history(world: World, damage: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The index (the whole events tree of the branch, kept in this clone only) is a cache: deleted, moved to a
    commit of another history, pointed at a tree, or naming no commit, the next sync builds it from the
    history (two commits at a time here), records only the new event and loses none."""
    monkeypatch.setattr(engine, "INDEX_CHUNK", 2)
    append(world.a, "one", "two")
    synced(world.a)
    append(world.b, "three")
    synced(world.b)
    synced(world.a)
    assert git(world.a, "rev-parse", "--verify", "--quiet", INDEX).strip()
    if damage == "deleted":
        git(world.a, "update-ref", "-d", INDEX)
    elif damage == "another line":
        git(world.a, "update-ref", INDEX, git(world.a, "rev-parse", "main").strip())
    elif damage == "not a commit":
        git(world.a, "update-ref", INDEX, git(world.a, "rev-parse", "main^{tree}").strip())
    else:
        tree = git(world.a, "rev-parse", "main^{tree}").strip()
        git(world.a, "update-ref", INDEX, git(world.a, "commit-tree", tree, "-m", "continuity: index of 1234").strip())
    append(world.a, "four")
    report = synced(world.a)
    assert report["added_local"] == 1
    assert tree_paths(world.remote, "continuity") and len(tree_paths(world.remote, "continuity")) == 1
    assert len(on_branch(world.remote)) == 4
    index = git(world.a, "rev-parse", INDEX).strip()
    assert git(world.a, "log", "-1", "--format=%s", index).strip() == (
        f"continuity: index of {git(world.a, 'rev-parse', 'continuity').strip()}")
    assert len(tree_paths(world.a, index)) == 4  # the four events (no merge note)


def test_a_full_history_moved_to_delta_keeps_every_event(world: World) -> None:
    """A branch written whole-tree (`full`, the first releases' layout) for a while, then by a `delta` clone:
    every clone, and a fresh clone-store, ends with every event; the `full` clone's commits keep holding the
    whole history, the `delta` clone's only what they add."""
    set_layout(world.a, "full")
    for round_number in range(3):
        append(world.a, f"full {round_number}")
        synced(world.a)
    synced(world.b)  # b (delta) adopts a full history: its index is the tip's tree
    append(world.b, "delta 1", "delta 2")
    synced(world.b)
    assert len(tree_paths(world.remote, "continuity")) == 2
    append(world.a, "full again")
    synced(world.a)
    assert len(tree_paths(world.remote, "continuity")) == 6  # a full commit: the whole history
    synced(world.b)
    fresh = world.clone("fresh", init=False)
    assert cli("clone-store", "origin", "--root", str(fresh))[0] == 0
    assert event_names(fresh) == event_names(world.a) == event_names(world.b)
    assert len(event_names(fresh)) == 6 and on_branch(world.remote) == event_names(fresh)


@pytest.mark.parametrize("value", [5, "FULL", "../full", None, ["full"], "delta"])
def test_a_layout_setting_sync_does_not_know_is_delta(world: World, value: object) -> None:
    """`sync_layout` is `delta` or `full`; any other value (a number, another spelling, a list) is `delta`."""
    set_layout(world.a, value)
    append(world.a, "one")
    synced(world.a)
    assert DELTA_MARK in git(world.remote, "log", "-1", "--format=%B", "continuity")


def plant_secret(root: Path) -> None:
    """An event file whose bytes carry a token and match its name (the guard refuses such text at append)."""
    first = all_event_files(root)[0]
    raw = json.loads(first.read_bytes())
    raw["message"] = "leaked ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    data = json.dumps(raw, sort_keys=True, separators=(",", ":")).encode()
    name = first.name[:-len("0123456789ab.json")] + hashlib.sha256(data).hexdigest()[:12] + ".json"
    (first.parent / name).write_bytes(data)


@pytest.mark.parametrize("layout", ["delta", "full"])
def test_export_checks_every_file_of_the_history_and_counts_its_events(tmp_path: Path, layout: str) -> None:
    """`work export` bundles the branch's whole history: a secret-like file recorded in an earlier commit is
    refused though the tip's own tree no longer shows it, and the manifest counts every event of the history
    (not the tip's own tree, which under `delta` is one commit's events or a merge's note)."""
    world = World(tmp_path)
    set_layout(world.a, layout)
    append(world.a, *(f"e{i}" for i in range(10)))
    synced(world.a)
    append(world.b, "b")
    synced(world.b)
    append(world.a, "a")
    synced(world.a)  # a merge
    code, out = cli("work", "export", "--out", str(tmp_path / "t"), "--root", str(world.a))
    assert code == 0, out
    assert out["manifest"]["events"] == len(event_names(world.a)) == 12
    plant_secret(world.a)
    synced(world.a)
    append(world.a, "later 1", "later 2")
    synced(world.a)
    code, out = cli("work", "export", "--out", str(tmp_path / "t2"), "--root", str(world.a))
    assert code != 0 and "secret-like" in out["message"] and not (tmp_path / "t2").exists()


def hand_commit(world: World, events: list[Path], parents: list[str], message: str) -> str:
    """A commit made by hand in the remote: a tree of these event files only."""
    import os
    import subprocess

    scratch = world.tmp / "scratch-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(scratch)}
    subprocess.run(["git", "-C", str(world.remote), "read-tree", "--empty"], env=env, check=True)
    for path in events:
        blob = git(world.remote, "hash-object", "-w", str(path)).strip()
        subprocess.run(["git", "-C", str(world.remote), "update-index", "--add", "--cacheinfo",
                        f"100644,{blob},events/{path.parent.name}/{path.name}"], env=env, check=True)
    tree = subprocess.run(["git", "-C", str(world.remote), "write-tree"], env=env, check=True, capture_output=True,
                          text=True).stdout.strip()
    return git(world.remote, "commit-tree", tree, *(f"-p{parent}" for parent in parents), "-m", message).strip()


def test_an_index_built_from_history_holds_what_a_commit_made_by_hand_dropped(world: World) -> None:
    """Two commits made by hand without the layout line, the second dropping the first's event: the tip's tree
    does not hold every event of the history, so the shortcut (a history never written `delta` is indexed by
    its tip's tree) is not taken, and a fresh clone-store gets what a syncing clone got."""
    append(world.b, "x", "y")
    x, y = sorted(all_event_files(world.b))[-2:]
    first = hand_commit(world, [x], [], "by hand: x")
    second = hand_commit(world, [y], [first], "by hand: y only")
    git(world.remote, "update-ref", "refs/heads/continuity", second)
    append(world.a, "z")
    synced(world.a)
    assert {x.name, y.name} <= set(event_names(world.a))
    fresh = world.clone("fresh", init=False)
    assert cli("clone-store", "origin", "--root", str(fresh))[0] == 0
    assert event_names(fresh) == event_names(world.a)


def test_commits_of_an_earlier_release_on_a_delta_branch_are_named_in_a_warning(world: World) -> None:
    """An earlier release writes whole trees without the layout line and reads only the tip's tree: a `delta`
    clone says so when such commits come in (once), and takes their events; a `full` clone of this release,
    whose commits carry the line, is no cause."""
    append(world.a, "a1")
    synced(world.a)
    append(world.b, "b1")
    report = synced(world.b)
    assert not [w for w in report["warnings"] if "earlier release" in w]
    append(world.b, "b2")
    tip = git(world.remote, "rev-parse", "continuity").strip()
    old = hand_commit(world, sorted(all_event_files(world.b)), [tip], "continuity: record 1 events from node 0ld0ld00")
    git(world.remote, "update-ref", "refs/heads/continuity", old)
    report = synced(world.a)
    assert [w for w in report["warnings"] if "earlier release" in w and 'sync_layout to "full"' in w]
    assert set(event_names(world.b)) <= set(event_names(world.a))
    set_layout(world.b, "full")
    append(world.b, "b3")
    synced(world.b)
    node_ref = f"refs/continuity/continuity/nodes/{Store(world.b).node()}"
    assert FULL_MARK in git(world.remote, "log", "-1", "--format=%B", node_ref)
    append(world.a, "a2")
    report = synced(world.a)
    assert not [w for w in report["warnings"] if "earlier release" in w]


def test_adopt_after_a_whole_tree_commit_stages_only_what_the_store_lacks(world: World,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A second worktree's store takes in what the shared branch gained; when a `full` teammate's whole-tree
    commit is among it, the events its store holds are not staged again (the change, not the history)."""
    from continuity.sync import files

    worktree = world.tmp / "wt"
    git(world.a, "worktree", "add", "-q", "--detach", str(worktree))
    assert cli("init", "--project", "demo", "--root", str(worktree))[0] == 0
    append(world.a, *(f"old {i}" for i in range(200)))
    synced(world.a)
    append(world.a, "one more")
    synced(world.a)  # the branch's tip holds one event: what the worktree's store last saw
    synced(worktree)
    set_layout(world.b, "full")
    synced(world.b)
    append(world.b, "from b")
    synced(world.b)
    synced(world.a)
    staged: list[int] = []
    real = files.stage
    monkeypatch.setattr(files, "stage", lambda store, reader, incoming, progress=None, keep=0, **options: (
        staged.append(len(incoming)), real(store, reader, incoming, progress, keep, **options))[1])
    report = synced(worktree)
    assert report["added_branch"] == 1 and event_names(worktree) == event_names(world.a)
    assert staged[0] == 1
