"""`work export|import|reconnect` over real git: bare remotes and clones in temp folders, no network."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from continuity.core.errors import EXIT_INTEGRITY, EXIT_INVARIANT, EXIT_UNSAFE_STORE, EXIT_USAGE
from continuity.core.store import Store
from events.worklog import WorkLogged
from tests.helpers import all_event_files
from tests.integration.test_sync import IDENTITY, World, append, cli, event_names, git, refuse_branch_updates
from tests.workstream_docs import tracked

MARKER = Path(".agent/runtime-continuity/local/offline-import.json")


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """A git identity from the environment only (HOME is isolated)."""
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def checkpoint(root: Path, doc: dict[str, object]) -> tuple[int, object]:
    (root / ".ai-bridge").mkdir(exist_ok=True)
    (root / ".ai-bridge/context-checkpoint.json").write_text(json.dumps(doc))
    return cli("work", "checkpoint", "--root", str(root))


def offline_clone(world: World, name: str) -> Path:
    """A fresh clone of the code with no remote and no store."""
    path = world.clone(name, init=False)
    git(path, "remote", "remove", "origin")
    return path


@pytest.fixture
def exported(tmp_path: Path) -> tuple[World, Path]:
    """Clone a checkpointed a workstream, synced it, and exported its branch to `transfer/`."""
    world = World(tmp_path)
    assert checkpoint(world.a, tracked())[0] == 0
    assert cli("sync", "--root", str(world.a))[0] == 0
    code, out = cli("work", "export", "--out", str(tmp_path / "transfer"), "--root", str(world.a))
    assert code == 0, out
    return world, tmp_path / "transfer"


def test_export_writes_bundle_and_manifest(exported: tuple[World, Path]) -> None:
    """The manifest binds identity, branch, head, size, SHA-256 and the cursor; the bundle verifies."""
    world, folder = exported
    manifest = json.loads((folder / "manifest.json").read_text())
    data = (folder / "context.bundle").read_bytes()
    assert manifest["bundle"] == {"file": "context.bundle", "bytes": len(data),
                                  "sha256": hashlib.sha256(data).hexdigest()}
    assert manifest["project"] == "demo" and manifest["branch"] == "continuity"
    assert manifest["head"] == git(world.a, "rev-parse", "refs/heads/continuity").strip()
    assert manifest["cursor"]["workstreamId"] == "WS-1" and manifest["cursor"]["unresolved"] == 2
    assert manifest["rootCommits"] == git(world.a, "rev-list", "--max-parents=0", "HEAD").split()
    git(world.a, "bundle", "verify", "--quiet", str(folder / "context.bundle"))


def test_default_export_folder_is_git_ignored(exported: tuple[World, Path]) -> None:
    """Without --out the transfer goes to .ai-bridge/context-transfer/, which git does not list."""
    world, _ = exported
    assert cli("work", "export", "--root", str(world.a))[0] == 0
    assert (world.a / ".ai-bridge/context-transfer/context.bundle").exists()
    assert "context-transfer" not in git(world.a, "status", "--porcelain", "--untracked-files=all")


def test_import_offline_checkpoint_then_reconnect_pushes(exported: tuple[World, Path]) -> None:
    """Import on a fresh clone with no remote; status/start/checkpoint work offline; reconnect pushes."""
    world, folder = exported
    c = offline_clone(world, "c")
    code, out = cli("work", "import", str(folder), "--root", str(c))
    assert code == 0, out
    assert (c / MARKER).exists()
    assert event_names(c) == event_names(world.a)
    code, status = cli("work", "status", "--root", str(c))
    assert code == 0 and status["contextState"] == "OFFLINE_IMPORTED_CONTEXT"
    assert status["activeWorkstream"]["id"] == "WS-1"
    assert cli("work", "start", "--root", str(c))[0] == 0
    doc = tracked(items=[{"id": "A1", "title": "Item A1", "status": "COMPLETED", "priority": "MEDIUM"},
                         {"id": "A2", "title": "Item A2", "status": "IN_PROGRESS", "priority": "MEDIUM"}])
    assert checkpoint(c, doc)[0] == 0
    code, out = cli("sync", "--root", str(c))
    assert code == EXIT_USAGE  # offline mode is left by reconnect only
    git(c, "remote", "add", "origin", str(world.remote))
    code, out = cli("work", "reconnect", "--root", str(c))
    assert code == 0, out
    assert out["result"] == "push"
    assert not (c / MARKER).exists()
    assert git(world.remote, "rev-parse", "continuity") == git(c, "rev-parse", "refs/heads/continuity")
    assert cli("sync", "--root", str(world.a))[0] == 0
    assert event_names(world.a) == event_names(c)


def test_reconnect_fast_forwards_when_only_the_remote_moved(exported: tuple[World, Path]) -> None:
    """Nothing new offline, the remote advanced: the branch fast-forwards and the events arrive."""
    world, folder = exported
    c = offline_clone(world, "c")
    assert cli("work", "import", str(folder), "--root", str(c))[0] == 0
    append(world.a, "after the export")
    assert cli("sync", "--root", str(world.a))[0] == 0
    git(c, "remote", "add", "origin", str(world.remote))
    code, out = cli("work", "reconnect", "--root", str(c))
    assert code == 0, out
    assert out["result"] == "fast-forward" and out["added_remote"] == 1
    assert event_names(c) == event_names(world.a)
    assert git(c, "rev-parse", "refs/heads/continuity") == git(world.remote, "rev-parse", "continuity")


def diverged_offline(exported: tuple[World, Path]) -> tuple[Path, str]:
    """Clone `c` imported the transfer offline, then it and clone `a` (synced) both advanced; `c` has the remote
    back. (`c`, the remote's branch commit.)"""
    world, folder = exported
    c = offline_clone(world, "c")
    assert cli("work", "import", str(folder), "--root", str(c))[0] == 0
    append(c, "offline work")
    append(world.a, "online work")
    assert cli("sync", "--root", str(world.a))[0] == 0
    git(c, "remote", "add", "origin", str(world.remote))
    return c, git(world.remote, "rev-parse", "continuity").strip()


def test_reconnect_refuses_diverged_histories_and_keeps_both(exported: tuple[World, Path]) -> None:
    """Both advanced: exit 12, both branches unchanged, marker and local events kept; a newer import is refused."""
    world, folder = exported
    c, remote_before = diverged_offline(exported)
    names_before = event_names(c)
    code, out = cli("work", "reconnect", "--root", str(c))
    assert code == EXIT_INVARIANT
    assert "histories diverged" in out["message"] and "offline-imported" in out["message"]
    assert git(world.remote, "rev-parse", "continuity").strip() == remote_before
    assert (c / MARKER).exists()
    assert event_names(c) == names_before
    local = git(c, "rev-parse", "refs/heads/continuity").strip()
    assert local != remote_before and git(c, "cat-file", "-t", local).strip() == "commit"
    code, status = cli("work", "status", "--root", str(c))
    assert status["contextState"] == "OFFLINE_IMPORTED_CONTEXT"
    assert cli("work", "export", "--out", str(folder.parent / "later"), "--root", str(world.a))[0] == 0
    code, out = cli("work", "import", str(folder.parent / "later"), "--root", str(c))
    assert code == EXIT_INVARIANT and "conflicts with the existing context cache HEAD" in out["message"]


def test_reconnect_union_is_the_way_out_of_diverged_histories(exported: tuple[World, Path]) -> None:
    """Both advanced: every way out was refused (reconnect 12, sync and clone-store 2, a newer import 12) and the
    refusal named none. It now names `work reconnect --union`, which unites them as sync unites clones: a merge
    commit whose parents are both tips, pushed without force; every event of both kept, the marker gone, both clones
    equal and verify clean. A refused union (a remote that declines) keeps the marker."""
    world, _ = exported
    c, remote_before = diverged_offline(exported)
    code, out = cli("work", "reconnect", "--root", str(c))
    assert code == EXIT_INVARIANT and "`continuity work reconnect --union`" in out["message"]
    local_before = git(c, "rev-parse", "refs/heads/continuity").strip()
    hook = world.remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho declined >&2\nexit 1\n")
    hook.chmod(0o755)
    config = c / ".agent/runtime-continuity/config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "sync_retry_seconds": 1}))
    code, out = cli("work", "reconnect", "--union", "--root", str(c))
    assert code != 0 and (c / MARKER).exists() and git(world.remote, "rev-parse", "continuity").strip() == remote_before
    hook.unlink()
    code, out = cli("work", "reconnect", "--union", "--root", str(c))
    assert code == 0 and out["result"] == "union" and out["was_offline"] and out["added_remote"] == 1, out
    assert not (c / MARKER).exists()
    tip = git(world.remote, "rev-parse", "continuity").strip()
    assert tip == git(c, "rev-parse", "refs/heads/continuity").strip()
    assert git(c, "merge-base", "--is-ancestor", remote_before, tip) == "" and \
        git(c, "merge-base", "--is-ancestor", local_before, tip) == ""  # no history rewritten
    assert cli("sync", "--root", str(c))[0] == 0 and cli("sync", "--root", str(world.a))[0] == 0
    assert event_names(c) == event_names(world.a)
    messages = {json.loads(path.read_text()).get("message") for path in all_event_files(c)}
    assert {"offline work", "online work"} <= messages
    for root in (c, world.a):
        code, report = cli("verify", "--root", str(root))
        assert code == 0, report
    code, status = cli("work", "status", "--root", str(c))
    assert status["contextState"] != "OFFLINE_IMPORTED_CONTEXT"


def test_a_union_whose_branch_push_is_refused_keeps_the_store_offline(exported: tuple[World, Path]) -> None:
    """A remote that takes this clone's node ref but declines the branch: the union's events are on the remote, but
    the team's branch did not move, so the store stays offline-imported (exit 12, as a refused push of plain
    reconnect); it was said to have reconnected (exit 0, the marker gone). Once the branch is taken, reconnect
    pushes."""
    world, _ = exported
    c, remote_before = diverged_offline(exported)
    refuse_branch_updates(world.remote)
    code, out = cli("work", "reconnect", "--union", "--root", str(c))
    assert code == EXIT_INVARIANT and "took this clone's ref but not branch" in out["message"], out
    assert (c / MARKER).exists() and git(world.remote, "rev-parse", "continuity").strip() == remote_before
    (world.remote / "hooks" / "update").unlink()
    code, out = cli("work", "reconnect", "--root", str(c))  # the union is made: the remote's branch is behind it
    assert code == 0 and out["result"] == "push" and not (c / MARKER).exists(), out
    assert git(world.remote, "rev-parse", "continuity") == git(c, "rev-parse", "refs/heads/continuity")


def _refused_import(world: World, folder: Path, fragment: str) -> None:
    c = offline_clone(world, "c")
    code, out = cli("work", "import", str(folder), "--root", str(c))
    assert code == EXIT_INVARIANT, out
    assert fragment in out["message"]
    assert not (c / ".agent").exists() or not all_event_files(c)
    assert not (c / MARKER).exists()
    assert git(c, "for-each-ref", "refs/heads/continuity", "refs/continuity") == ""


def test_import_refuses_a_flipped_byte(exported: tuple[World, Path]) -> None:
    """One byte changed, same size: the SHA-256 check refuses it."""
    world, folder = exported
    bundle = folder / "context.bundle"
    data = bytearray(bundle.read_bytes())
    data[len(data) // 2] ^= 0x01
    bundle.write_bytes(bytes(data))
    _refused_import(world, folder, "bundle SHA-256 does not match the manifest.")


def test_import_refuses_a_wrong_size(exported: tuple[World, Path]) -> None:
    """A truncated bundle: the contract's size message."""
    world, folder = exported
    bundle = folder / "context.bundle"
    bundle.write_bytes(bundle.read_bytes()[:-10])
    _refused_import(world, folder, "bundle size does not match the manifest.")


@pytest.mark.parametrize("planted", ["bundle-fifo", "bundle-zero", "manifest-fifo"])
def test_import_refuses_a_fifo_or_device_without_waiting(exported: tuple[World, Path], planted: str) -> None:
    """A FIFO, or a link to /dev/zero, where the bundle or manifest belongs: refused (exit 12) in a real process
    that ends, instead of blocking on the FIFO or hashing /dev/zero for ever."""
    world, folder = exported
    name = "manifest.json" if planted.startswith("manifest") else "context.bundle"
    (folder / name).unlink()
    if planted.endswith("fifo"):
        os.mkfifo(folder / name)
    else:
        (folder / name).symlink_to("/dev/zero")
    c = offline_clone(world, "c")
    done = subprocess.run([sys.executable, "-m", "continuity", "work", "import", str(folder), "--root", str(c)],
                          cwd=c, capture_output=True, text=True, timeout=30)
    assert done.returncode == EXIT_INVARIANT, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and f"cannot read {folder / name}" in done.stderr
    assert not (c / MARKER).exists()


def test_import_refuses_another_repositorys_transfer(exported: tuple[World, Path], tmp_path: Path) -> None:
    """A clone of other code (other root commits), or a store of another project, is refused."""
    world, folder = exported
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    (other / "x").write_text("x\n")
    git(other, "add", "x")
    git(other, "commit", "-qm", "other code")
    code, out = cli("work", "import", str(folder), "--root", str(other))
    assert code == EXIT_INVARIANT
    assert out["message"].startswith("Refused import: transfer repository does not match this repository config. ")
    assert not (other / ".agent").exists()
    c = offline_clone(world, "c")
    assert cli("init", "--project", "another", "--root", str(c))[0] == 0
    code, out = cli("work", "import", str(folder), "--root", str(c))
    assert code == EXIT_INVARIANT and "project another" in out["message"]


@pytest.mark.parametrize("edit", [
    lambda m: m.update(extra=1),
    lambda m: m.update(schemaVersion=2),
    lambda m: m["bundle"].update(file="../../etc/passwd"),
    lambda m: m.update(head="zz"),
    lambda m: m.pop("branch"),
])
def test_import_refuses_a_malformed_manifest(exported: tuple[World, Path], edit: object) -> None:
    """Unknown keys, another schema version, a path in `file`, a bad head, a missing key: refused."""
    world, folder = exported
    manifest = json.loads((folder / "manifest.json").read_text())
    edit(manifest)  # type: ignore[operator]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    _refused_import(world, folder, "manifest")


def test_import_refuses_a_bundle_whose_head_is_not_the_manifests(exported: tuple[World, Path]) -> None:
    """A valid bundle of another branch tip, with size and SHA-256 updated: the HEAD check refuses it."""
    world, folder = exported
    append(world.a, "later")
    assert cli("sync", "--root", str(world.a))[0] == 0
    git(world.a, "bundle", "create", "-q", str(folder / "context.bundle"), "refs/heads/continuity")
    manifest = json.loads((folder / "manifest.json").read_text())
    data = (folder / "context.bundle").read_bytes()
    manifest["bundle"].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    (folder / "manifest.json").write_text(json.dumps(manifest))
    _refused_import(world, folder, "HEAD does not match the manifest")


@pytest.mark.parametrize("escaped", [False, True], ids=["as-written", "json-escaped"])
def test_export_refuses_secret_like_material_naming_the_file_not_the_secret(tmp_path: Path, escaped: bool) -> None:
    """An event file holding a token (bytes matching its name) blocks export; the message names only the file.
    Written with JSON escapes (`\\u0067hp_`), the token is the same string once read: refused too (it was
    exported, and imported into every clone the transfer reached)."""
    world = World(tmp_path)
    append(world.a, "ordinary")
    store = Store(str(world.a))
    first = all_event_files(world.a)[0]
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    raw = json.loads(first.read_bytes())
    raw["message"] = f"leaked {token}"
    data = json.dumps(raw, sort_keys=True, separators=(",", ":")).encode()
    if escaped:
        data = data.replace(b"ghp_", b"\\u0067hp_")
        assert b"ghp_" not in data and json.loads(data)["message"] == f"leaked {token}"
    name = first.name[:-len("xxxxxxxxxxxx.json")] + hashlib.sha256(data).hexdigest()[:12] + ".json"
    planted = first.parent / name
    planted.write_bytes(data)
    assert store.events_dir in str(planted)
    code, out = cli("work", "export", "--out", str(tmp_path / "t"), "--root", str(world.a))
    assert code == EXIT_INVARIANT
    assert out["message"].endswith(f"refused secret-like material in tracked file: events/{first.parent.name}/{name}")
    assert token not in json.dumps(out)
    assert not (tmp_path / "t" / "context.bundle").exists()


def test_an_export_whose_manifest_cannot_be_written_leaves_no_bundle(tmp_path: Path) -> None:
    """A disk that fills between the bundle and its manifest: exit 5, and no bundle is left without the manifest
    that vouches for it (a half transfer was left, while the exit code says nothing was written)."""
    from tests.injected import SyscallFaults, path_contains
    from tests.injected import run as run_in_process

    world = World(tmp_path)
    append(world.a, "ordinary")
    out = tmp_path / "t"
    code, _, err = run_in_process(["work", "export", "--out", str(out), "--root", str(world.a)],
                                  SyscallFaults(match=path_contains("manifest.json")))
    assert code == 5 and "the bundle written beside it was removed" in err, err
    assert sorted(os.listdir(out)) == []
    code, _ = cli("work", "export", "--out", str(out), "--root", str(world.a))  # the disk has room again
    assert code == 0 and sorted(os.listdir(out)) == ["context.bundle", "manifest.json"]


def test_an_event_nested_too_deeply_to_walk_refuses_the_transfer_unread() -> None:
    """An event (its name's hash, id and time right, as msgspec reads it) nested deeper than the walk of its strings
    can go: a reason to refuse (exit 12, naming the file), never an internal error (exit 70, RecursionError)."""
    import inspect

    from continuity.sync.transfer import _strings_refused

    deep = b'{"message":"x","deep":' + b'{"a":' * 600 + b"1" + b"}" * 600 + b"}"
    assert _strings_refused(b'{"message":"x","deep":{"a":1}}') is None
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 300)  # the walk meets the limit, as a deep enough event does
    try:
        assert _strings_refused(deep) == "tracked context file is nested too deeply to read"
    finally:
        sys.setrecursionlimit(limit)


@pytest.mark.parametrize("content", [b"not an event at all", b'{"event_id": "RCE-20200101_000000_000000-00000000"}'],
                         ids=["no-json", "another-id"])
def test_export_refuses_a_file_that_is_not_the_event_its_name_says(tmp_path: Path, content: bytes) -> None:
    """A file on the branch whose bytes hash to its name but hold no event, or another event's id: export refuses
    it (exit 12, naming the file); it was carried to every clone, whose `verify` then failed for good."""
    world = World(tmp_path)
    append(world.a, "ordinary")
    first = all_event_files(world.a)[0]
    name = first.name[:-len("xxxxxxxxxxxx.json")] + hashlib.sha256(content).hexdigest()[:12] + ".json"
    (first.parent / name).write_bytes(content)
    code, out = cli("work", "export", "--out", str(tmp_path / "t"), "--root", str(world.a))
    assert code == EXIT_INVARIANT, out
    assert out["message"].endswith(f"tracked context file is not the event its name says (no event, or another "
                                   f"event's id or time): events/{first.parent.name}/{name}")
    assert not (tmp_path / "t").exists()


def test_export_refuses_a_file_bigger_than_any_event_unread(tmp_path: Path) -> None:
    """A teammate pushed a big text file beside the events (sync carries it on the branch): export refuses it
    naming the file (exit 12) without reading it into memory (a 200 MB file held 600 MB and took 19 s; a few
    GB ended in MemoryError, an internal error); nothing is written."""
    world = World(tmp_path)
    append(world.a, "ordinary")
    assert cli("sync", "--root", str(world.a))[0] == 0
    big = subprocess.run(["git", "-C", str(world.a), "hash-object", "-w", "--stdin"], input=b"a" * (2 << 20),
                         capture_output=True, check=True).stdout.decode().strip()
    listing = git(world.a, "ls-tree", "continuity") + f"100644 blob {big}\tnotes.txt\n"
    root = subprocess.run(["git", "-C", str(world.a), "mktree"], input=listing.encode(), capture_output=True,
                          check=True).stdout.decode().strip()
    git(world.a, "update-ref", "refs/heads/continuity", git(world.a, "commit-tree", root, "-p", "continuity",
                                                             "-m", "big").strip())
    code, out = cli("work", "export", "--out", str(tmp_path / "t"), "--root", str(world.a))
    # a file where the branch's writers put none is refused by its path, before it is read
    assert code == EXIT_INVARIANT and out["message"].endswith("unsupported path in tracked context: notes.txt"), out
    assert not (tmp_path / "t" / "context.bundle").exists()


def test_reconnect_refuses_a_remote_url_with_credentials_without_echoing_it(exported: tuple[World, Path]) -> None:
    """--remote with a token, or a configured remote whose URL holds one: exit 2, the token never printed."""
    world, folder = exported
    c = offline_clone(world, "c")
    assert cli("work", "import", str(folder), "--root", str(c))[0] == 0
    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    code, out = cli("work", "reconnect", "--remote", f"https://user:{token}@example.invalid/r.git", "--root", str(c))
    assert code == EXIT_USAGE and token not in json.dumps(out)
    git(c, "remote", "add", "origin", f"https://{token}@example.invalid/r.git")
    code, out = cli("work", "reconnect", "--root", str(c))
    assert code == EXIT_USAGE and token not in json.dumps(out) and "credentials" in out["message"]
    assert (c / MARKER).exists()
    shutil.rmtree(folder)


def test_a_transfer_made_while_the_branch_was_refused_fast_forwards_later(tmp_path: Path) -> None:
    """A's sync lands on its node ref only (the branch declined); A exports; B's sync takes A's node ref
    into the branch as a parent; a clone that imported A's transfer then reconnects by fast-forward."""
    from tests.integration.test_sync import refuse_branch_updates

    world = World(tmp_path)
    assert checkpoint(world.a, tracked())[0] == 0
    append(world.b, "b1")
    assert cli("sync", "--root", str(world.b))[0] == 0  # the branch exists; A's push of it will be declined
    refuse_branch_updates(world.remote)
    code, out = cli("sync", "--root", str(world.a))
    assert code == 0 and out["pushed"] and not out["branch_updated"]
    assert cli("work", "export", "--out", str(tmp_path / "transfer"), "--root", str(world.a))[0] == 0
    (world.remote / "hooks" / "update").unlink()
    append(world.b, "b2")
    code, out = cli("sync", "--root", str(world.b))
    assert code == 0 and out["branch_updated"] and out["added_remote"] > 0
    a_tip = git(world.a, "rev-parse", "refs/heads/continuity").strip()
    git(world.remote, "merge-base", "--is-ancestor", a_tip, "continuity")  # fails the test when it is not
    c = offline_clone(world, "c")
    assert cli("work", "import", str(tmp_path / "transfer"), "--root", str(c))[0] == 0
    git(c, "remote", "add", "origin", str(world.remote))
    code, out = cli("work", "reconnect", "--root", str(c))
    assert code == 0 and out["result"] == "fast-forward", out
    assert event_names(c) == event_names(world.b)


@pytest.mark.parametrize("planted", [".ai-bridge", ".ai-bridge/context-transfer"])
def test_default_export_never_writes_through_a_planted_link(exported: tuple[World, Path], tmp_path: Path,
                                                            planted: str) -> None:
    """A link in the project on the way to the default transfer folder: exit 6, nothing written out there."""
    world, _ = exported
    outside = tmp_path / "outside"
    outside.mkdir()
    target = world.a / planted
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(outside)
    code, out = cli("work", "export", "--root", str(world.a))
    assert code == EXIT_UNSAFE_STORE, out
    assert "is a symlink" in out["message"] and list(outside.iterdir()) == []


def test_default_export_through_the_users_own_link_to_the_project(exported: tuple[World, Path],
                                                                   tmp_path: Path) -> None:
    """`--root` through a symlink of the user's: the transfer lands in the project."""
    world, _ = exported
    link = tmp_path / "link"
    link.symlink_to(world.a)
    assert cli("work", "export", "--root", str(link))[0] == 0
    assert (world.a / ".ai-bridge/context-transfer/context.bundle").exists()


@pytest.mark.parametrize("standing", ["file", "fifo", "under-a-file", "bundle-is-a-folder"])
def test_export_to_an_out_path_it_cannot_write_fails_with_one_line(exported: tuple[World, Path], tmp_path: Path,
                                                                   standing: str) -> None:
    """--out naming a file, a FIFO or a path below a file: exit 5 (write failed) with one line naming the path, no
    temp file left (was an internal error, exit 70); a folder whose context.bundle is a folder: the same (it was
    refused as no earlier export's, exit 2, while the default folder's said exit 5, as the docs do)."""
    from continuity.core.errors import EXIT_WRITE_FAILED

    world, _ = exported
    spot = tmp_path / "spot"
    spot.mkdir()
    out = spot / "out"
    if standing == "file":
        out.write_text("mine\n")
    elif standing == "fifo":
        os.mkfifo(out)
    elif standing == "under-a-file":
        out.write_text("mine\n")
        out = out / "below"
    else:
        (out / "context.bundle").mkdir(parents=True)
    before = sorted(spot.rglob("*"))
    code, answer = cli("work", "export", "--out", str(out), "--root", str(world.a))
    assert code == EXIT_WRITE_FAILED, answer
    assert answer["message"].startswith(f"export failed: {spot}")
    assert sorted(spot.rglob("*")) == before


def test_an_offline_marker_that_is_a_folder_fails_import_and_reconnect_with_one_line(
        exported: tuple[World, Path], tmp_path: Path) -> None:
    """local/offline-import.json standing as a folder: import and reconnect exit 5 with one line naming it
    (each was an internal error, exit 70)."""
    from continuity.core.errors import EXIT_WRITE_FAILED

    world, folder = exported
    c = world.clone("c", init=False)
    assert cli("work", "import", str(folder), "--root", str(c))[0] == 0
    marker = c / MARKER
    marker.unlink()
    marker.mkdir()
    for action in (["work", "reconnect"], ["work", "import", str(folder)]):
        code, answer = cli(*action, "--root", str(c))
        assert code == EXIT_WRITE_FAILED, answer
        assert answer["message"].startswith(f"{action[1]} failed: ") and "offline-import.json" in answer["message"]


def folder_state(root: Path) -> dict[str, object]:
    """Every file and folder of a work tree but `.git/` (a file's bytes, None for a folder), and the refs."""
    paths = (p for p in sorted(root.rglob("*")) if p.relative_to(root).parts[0] != ".git")
    return {"files": {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes() for p in paths},
            "refs": git(root, "for-each-ref")}


def _rebundle(folder: Path, repo: Path, ref: str, **manifest_changes: object) -> None:
    """Replace the transfer's bundle with `ref` of `repo`, its manifest updated to match (size, SHA-256, head)."""
    git(repo, "bundle", "create", "-q", str(folder / "context.bundle"), ref)
    data = (folder / "context.bundle").read_bytes()
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["bundle"].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    manifest.update(head=git(repo, "rev-parse", ref).strip(), **manifest_changes)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _corrupt_pack(world: World, folder: Path, c: Path) -> None:
    bundle = folder / "context.bundle"
    data = bytearray(bundle.read_bytes())
    pack = data.index(b"\n\n") + 2  # the pack after the bundle's header
    data[pack + (len(data) - pack) // 2] ^= 0xFF
    bundle.write_bytes(bytes(data))
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["bundle"].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    (folder / "manifest.json").write_text(json.dumps(manifest))
    git(c, "reflog", "expire", "--expire=now", "--all")
    git(c, "gc", "-q", "--prune=now")  # the clone's copy of the branch's objects: git would not read the pack
    assert subprocess.run(["git", "-C", str(c), "cat-file", "-e", manifest["head"]]).returncode != 0


def _member_of_another_repository(world: World, folder: Path, c: Path) -> None:
    (c / ".ai/context").mkdir(parents=True)
    (c / ".ai/context/config.json").write_text(json.dumps({"repositoryId": "repo-b"}))


def _another_branch(world: World, folder: Path, c: Path) -> None:
    git(world.a, "branch", "ctx", "continuity")
    _rebundle(folder, world.a, "refs/heads/ctx", branch="ctx")


def _a_branch_of_code(world: World, folder: Path, c: Path) -> None:
    git(world.a, "update-ref", "refs/heads/continuity", "main")
    _rebundle(folder, world.a, "refs/heads/continuity")


def _a_diverged_branch_here(world: World, folder: Path, c: Path) -> None:
    append(world.b, "b only")  # b never synced: its export records a history of its own
    assert cli("work", "export", "--out", str(folder.parent / "b"), "--root", str(world.b))[0] == 0
    git(c, "fetch", "-q", str(world.b), "refs/heads/continuity:refs/heads/continuity")


def _an_event_unlike_its_name(world: World, folder: Path, c: Path, *, last: bool = False) -> None:
    """The branch of world.a gains a copy of its first event (its last with `last`) under another name."""
    head = git(world.a, "rev-parse", "continuity").strip()
    paths = [line.split("\t")[1] for line in git(world.a, "ls-tree", "-r", head).splitlines()
             if line.split("\t")[1].startswith("events/")]
    path = paths[-1] if last else paths[0]
    blob = git(world.a, "rev-parse", f"{head}:{path}").strip()
    index = {**os.environ, "GIT_INDEX_FILE": str(folder.parent / "index")}
    run = lambda *args: subprocess.run(["git", "-C", str(world.a), *args], env=index, check=True,  # noqa: E731
                                       capture_output=True, text=True).stdout.strip()
    run("read-tree", head)
    run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path[:-len('.json') - 12]}{'0' * 12}.json")
    git(world.a, "update-ref", "refs/heads/continuity", run("commit-tree", run("write-tree"), "-p", head, "-m", "x"))
    held = {path for path in git(world.a, "log", "--format=", "--name-only", "--root", "-m", "continuity").split()
            if path.startswith("events/") and not path.endswith("/README")}
    _rebundle(folder, world.a, "refs/heads/continuity", events=len(held))  # the manifest counts the copy too


@pytest.mark.parametrize(("make", "code", "fragment"), [
    (_corrupt_pack, EXIT_INVARIANT, "cannot read the bundle"),
    (_member_of_another_repository, EXIT_INVARIANT, "transfer repository does not match this repository config."),
    (_another_branch, EXIT_INVARIANT, "transfer branch 'ctx' is not this store's branch 'continuity'"),
    (_a_branch_of_code, EXIT_INVARIANT, "it is not a continuity branch"),
    (_a_diverged_branch_here, EXIT_INVARIANT, "conflicts with the existing context cache HEAD"),
    (_an_event_unlike_its_name, EXIT_INVARIANT, "does not match the hash in its name"),
], ids=lambda value: value.__name__.strip("_") if callable(value) else None)
def test_a_refused_import_leaves_a_folder_without_a_store_as_it_was(
        exported: tuple[World, Path], make: object, code: int, fragment: str) -> None:
    """Into a clone with no store (and no .gitignore): whatever refuses the import, nothing is left behind (no
    store, no .agent/, no .gitignore, no ref), files and refs as they were."""
    world, folder = exported
    c = offline_clone(world, "c")
    (c / ".gitignore").unlink()
    make(world, folder, c)  # type: ignore[operator]
    before = folder_state(c)
    answer, out = cli("work", "import", str(folder), "--root", str(c))
    assert answer == code, out
    assert fragment in out["message"]
    assert folder_state(c) == before


def test_export_names_the_repository_of_the_newest_checkpoint_and_import_checks_it(
        exported: tuple[World, Path]) -> None:
    """No member config, no work_repository: the export names the repository as `work status` resolves it (the
    newest checkpoint's), and a store of another repository refuses it (exit 12)."""
    world, folder = exported
    code, status = cli("work", "status", "--root", str(world.a))
    assert status["membership"]["repositorySource"] == "the newest checkpoint"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["repository"] == status["membership"]["repository"] == "repo-a"
    c = offline_clone(world, "c")
    assert cli("init", "--project", "demo", "--root", str(c))[0] == 0
    config = Store(str(c)).config_path
    Path(config).write_text(json.dumps({**json.loads(Path(config).read_text()), "work_repository": "repo-b"}))
    code, out = cli("work", "import", str(folder), "--root", str(c))
    assert code == EXIT_INVARIANT, out
    assert out["message"].startswith("Refused import: transfer repository does not match this repository config. ")
    assert "repository repo-a; here: project demo, repository repo-b" in out["message"]
    assert not (c / MARKER).exists() and not all_event_files(c)


def test_an_import_that_conflicts_with_the_branch_refuses_before_recording_the_stores_events(
        exported: tuple[World, Path], tmp_path: Path) -> None:
    """A store whose branch holds a history of its own, with events not yet recorded on it: the conflict is found
    before those events are committed, so the refusal's "nothing changed" is true (branch, refs and files)."""
    world, folder = exported
    c = offline_clone(world, "c")
    assert cli("init", "--project", "demo", "--root", str(c))[0] == 0
    append(c, "c only")
    assert cli("work", "export", "--out", str(tmp_path / "c-out"), "--root", str(c))[0] == 0  # records c's events
    append(c, "not recorded yet")
    before = folder_state(c)
    code, out = cli("work", "import", str(folder), "--root", str(c))
    assert code == EXIT_INVARIANT, out
    assert "conflicts with the existing context cache HEAD" in out["message"]
    assert out["message"].endswith("nothing changed.")
    assert folder_state(c) == before


def test_an_import_the_stores_own_events_diverge_from_says_they_were_recorded(
        exported: tuple[World, Path], tmp_path: Path) -> None:
    """The branch here is behind the transfer, but the store has events of its own the transfer lacks: both
    advanced, so the import is refused; the refusal says the store's events were recorded on the branch (the
    step before the check) and that the transfer was not taken: the earlier import's marker and events stay."""
    world, folder = exported
    c = offline_clone(world, "c")
    assert cli("work", "import", str(folder), "--root", str(c))[0] == 0
    marker = (c / MARKER).read_bytes()
    first = git(c, "rev-parse", "refs/heads/continuity").strip()
    append(c, "offline work")
    append(world.a, "online work")
    assert cli("sync", "--root", str(world.a))[0] == 0
    assert cli("work", "export", "--out", str(tmp_path / "later"), "--root", str(world.a))[0] == 0
    names = event_names(c)
    code, out = cli("work", "import", str(tmp_path / "later"), "--root", str(c))
    assert code == EXIT_INVARIANT, out
    now = git(c, "rev-parse", "refs/heads/continuity").strip()
    assert now != first and git(c, "rev-parse", f"{now}^").strip() == first  # one commit: c's own event
    # seed 002's words for a diverged transfer (scripts look for them), then what was recorded here
    assert f"conflicts with the existing context cache HEAD {now[:12]} (histories diverged" in out["message"]
    assert "now recorded on branch 'continuity'" in out["message"]
    assert out["message"].endswith("the transfer was not taken.")
    assert "to unite both machines' events, reach one git remote from both" in out["message"]
    assert "nothing changed" not in out["message"]
    assert (c / MARKER).read_bytes() == marker and event_names(c) == names


def test_into_a_new_folder_a_later_batch_refused_leaves_nothing_and_says_so(
        exported: tuple[World, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The same transfer into a clone with no store: refused (each file is checked against its name before any
    batch is written), nothing changed (the store the import made goes, with the events earlier batches wrote,
    so the refusal never says they were kept)."""
    from continuity.core.store import now_us
    from continuity.sync import engine
    from events.filelog import FileEventLog

    world, folder = exported
    store = Store(str(world.a))
    tomorrow = lambda: now_us() + 86400 * 10**6  # noqa: E731
    FileEventLog(store.events_dir, store.local_dir, node=store.node(), clock_us=tomorrow).append(
        WorkLogged(project="demo", message="a day later"))
    assert cli("sync", "--root", str(world.a))[0] == 0
    _an_event_unlike_its_name(world, folder, world.a, last=True)
    c = offline_clone(world, "c")
    before = folder_state(c)
    monkeypatch.setattr(engine, "RESTORE_BATCH", 1)
    code, out = cli("work", "import", str(folder), "--root", str(c))
    assert code == EXIT_INVARIANT, out  # a refused transfer (it was exit 1, sync's word for a tampered remote)
    assert out["message"].startswith("Refused import: ") and "does not match the hash in its name" in out["message"]
    assert "are kept" not in out["message"]
    assert folder_state(c) == before


def test_a_tampered_event_in_a_later_batch_says_what_the_earlier_batches_wrote(
        exported: tuple[World, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A history restored in batches (RESTORE_BATCH events at a time; 1 here) whose last day holds an event unlike
    its name: an import refuses it before any batch is written (exit 12; each file of the transfer is checked
    against its name first); clone-store of the same branch writes the batches before it, checked, and says so
    instead of "changed nothing". The branch does not take the transfer, no marker is written."""
    from continuity.core.store import now_us
    from continuity.sync import engine
    from events.filelog import FileEventLog

    world, folder = exported
    store = Store(str(world.a))
    tomorrow = lambda: now_us() + 86400 * 10**6  # noqa: E731
    later = FileEventLog(store.events_dir, store.local_dir, node=store.node(), clock_us=tomorrow)
    later.append(WorkLogged(project="demo", message="a day later"))  # a second day folder: a second batch
    assert cli("sync", "--root", str(world.a))[0] == 0
    _an_event_unlike_its_name(world, folder, world.a, last=True)
    c = offline_clone(world, "c")
    assert cli("init", "--project", "demo", "--root", str(c))[0] == 0
    before = set(event_names(c))
    monkeypatch.setattr(engine, "RESTORE_BATCH", 1)
    code, out = cli("work", "import", str(folder), "--root", str(c))
    assert code == EXIT_INVARIANT, out
    assert set(event_names(c)) == before and "does not match the hash in its name" in out["message"]
    assert not (c / MARKER).exists()
    assert git(c, "for-each-ref", "refs/heads/continuity").strip() == ""
    git(world.a, "push", "-q", "--force", "origin", "continuity")
    fresh = world.clone("fresh", init=False)
    code, out = cli("clone-store", "origin", "--root", str(fresh))
    assert code == EXIT_INTEGRITY, out
    written = set(event_names(fresh))
    assert written and "does not match the hash in its name" in out["message"]
    assert f"the {len(written):,} events written before it (each checked against its name) are kept" in out["message"]
    assert "changed nothing" not in out["message"]


def test_a_clone_store_refused_before_any_event_landed_leaves_no_store(exported: tuple[World, Path]) -> None:
    """The remote's branch holds an event unlike its name: clone-store refuses (exit 1, "changed nothing"), and a
    store it made for the clone is removed again with what init added to .gitignore (it stayed, named after the
    folder and remembering the remote, as if the clone had half worked)."""
    world, folder = exported
    _an_event_unlike_its_name(world, folder, world.a)
    git(world.a, "push", "-q", "-f", "origin", "continuity")
    c = world.clone("c", init=False)
    before = folder_state(c)
    code, out = cli("clone-store", "origin", "--root", str(c))
    assert code == EXIT_INTEGRITY, out
    assert "does not match the hash in its name" in out["message"] and "changed nothing" in out["message"]
    after = folder_state(c)
    assert after["files"] == before["files"]  # no .agent/, .gitignore as it was


def test_clone_store_into_a_store_that_is_there_says_what_came(exported: tuple[World, Path],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A second clone-store into the same folder said "cloned N events", N counting what the store already held;
    it now says how many new events came and how many the store holds in all."""
    from continuity.cli import main

    world, _ = exported
    c = world.clone("c", init=False)
    assert main(["clone-store", "origin", "--root", str(c)]) == 0
    first = capsys.readouterr().out
    assert first.startswith("cloned ") and " events from origin/continuity into " in first
    held = len(event_names(c))
    append(world.a, "one more")
    assert cli("sync", "--root", str(world.a))[0] == 0
    capsys.readouterr()
    assert main(["clone-store", "origin", "--root", str(c)]) == 0
    again = capsys.readouterr().out
    assert again.startswith("brought 1 new event(s) from origin/continuity into the existing store "), again
    assert again.rstrip().endswith(f"; {held + 1} events in all)")


@pytest.mark.parametrize("project", ["../../evil", "a b", "x" * 200])
def test_a_manifest_naming_an_invalid_project_is_a_refused_transfer(exported: tuple[World, Path],
                                                                     project: str) -> None:
    """Into a clone without a store: a project name no store may take was exit 2 from init ("invalid project
    name"); every other manifest fault is a refused transfer (exit 12), and so is this one, nothing left."""
    world, folder = exported
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "project": project}))
    c = offline_clone(world, "c")
    before = folder_state(c)
    code, out = cli("work", "import", str(folder), "--root", str(c))
    assert code == EXIT_INVARIANT, out
    assert out["message"].startswith("Refused import: invalid transfer manifest: invalid project name")
    assert folder_state(c) == before


@pytest.mark.parametrize("planted", ["manifest.json", "context.bundle", "both"])
def test_export_never_replaces_files_that_are_no_earlier_export(exported: tuple[World, Path], tmp_path: Path,
                                                                 planted: str) -> None:
    """`work export --out DIR` replaced a user's own manifest.json (or, as root, one under /etc) without a word:
    a folder holding either name, not from an earlier export, is refused (exit 2, one line, nothing written, the
    branch not recorded on); an earlier export's folder is written again."""
    world, folder = exported
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    names = ["manifest.json", "context.bundle"] if planted == "both" else [planted]
    for name in names:
        (theirs / name).write_text('{"mine": true}\n')
    code, out = cli("work", "export", "--out", str(theirs), "--root", str(world.a))
    assert code == EXIT_USAGE and "not from an earlier export" in out["message"], out
    assert sorted(path.name for path in theirs.iterdir()) == sorted(names)
    assert all((theirs / name).read_text() == '{"mine": true}\n' for name in names)
    append(world.a, "a later event")
    code, out = cli("work", "export", "--out", str(folder), "--root", str(world.a))
    assert code == 0, out
    assert json.loads((folder / "manifest.json").read_text())["events"] == out["manifest"]["events"]


def test_an_export_killed_before_its_manifest_is_written_again(exported: tuple[World, Path], tmp_path: Path) -> None:
    """An export killed between its bundle and its manifest left a folder whose next export was refused as no
    earlier export's (the user had to empty it by hand): a git bundle with no manifest is taken over. A file of
    that name that is no git bundle is still refused."""
    world, folder = exported
    stopped = tmp_path / "stopped"
    stopped.mkdir()
    shutil.copy(folder / "context.bundle", stopped / "context.bundle")
    (stopped / f".manifest.json.{os.getpid()}.tmp").write_text("{")  # what the kill left beside it
    code, out = cli("work", "export", "--out", str(stopped), "--root", str(world.a))
    assert code == 0, out
    assert json.loads((stopped / "manifest.json").read_text()) == out["manifest"]
    assert sorted(path.name for path in stopped.iterdir()) == ["context.bundle", "manifest.json"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "context.bundle").write_bytes(b"# v2 git bundles of mine\n")
    code, out = cli("work", "export", "--out", str(other), "--root", str(world.a))
    assert code == EXIT_USAGE and "not from an earlier export" in out["message"], out


KILLED_BEFORE_THE_BRANCH_MOVES = """
import os, sys
from continuity.sync import git
git.Repo.update_ref = lambda self, *args, **kwargs: os.kill(os.getpid(), 9)
from continuity.cli import main
sys.argv = ["continuity", "work", "import", *sys.argv[1:]]
sys.exit(main())
"""


@pytest.mark.parametrize("store_there", [False, True])
def test_an_import_killed_before_the_branch_moved_is_finished_by_the_next(
        exported: tuple[World, Path], tmp_path: Path, store_there: bool) -> None:
    """kill -9 after the transfer's events were written and before the branch moved: the next import recorded
    those same events as a commit of this store's own, found the transfer diverged from it, and every import and
    reconnect after was refused for good. The next import now finishes it; the store's events stay as they came."""
    world, folder = exported
    c = offline_clone(world, "c")
    later = folder
    if store_there:  # an earlier import, then a later transfer whose import is killed
        assert cli("work", "import", str(folder), "--root", str(c))[0] == 0
        append(world.a, "online work")
        assert cli("sync", "--root", str(world.a))[0] == 0
        later = tmp_path / "later"
        assert cli("work", "export", "--out", str(later), "--root", str(world.a))[0] == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    killed = subprocess.run([sys.executable, "-c", KILLED_BEFORE_THE_BRANCH_MOVES, str(later), "--root", str(c)],
                            cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, timeout=120)
    assert killed.returncode == -9, killed.stderr
    assert event_names(c) == event_names(world.a)  # the events landed; the branch did not move
    head = json.loads((later / "manifest.json").read_text())["head"]
    assert head not in git(c, "for-each-ref", "refs/heads/continuity")
    code, out = cli("work", "import", str(later), "--root", str(c))
    assert code == 0, out
    assert git(c, "rev-parse", "refs/heads/continuity").strip() == head
    assert "refs/continuity/import" not in git(c, "for-each-ref")
    assert event_names(c) == event_names(world.a)
    git(c, "remote", "add", "origin", str(world.remote))
    code, out = cli("work", "reconnect", "--root", str(c))
    assert code == 0 and out["result"] == "in-sync", out


def test_export_removes_the_temps_a_killed_export_left_in_its_folder(exported: tuple[World, Path]) -> None:
    """An export killed mid-write left `.context.bundle.<pid>.tmp` (part of a bundle) in `--out`, which no
    rebuild sweeps; the next export into that folder removes those of dead writers, and nothing else."""
    world, folder = exported
    dead_pid = 4_194_304 + 7  # above Linux's largest pid
    left = [folder / f".context.bundle.{dead_pid}.tmp", folder / f".manifest.json.{dead_pid}.tmp"]
    for path in left:
        path.write_bytes(b"partial")
    (folder / "notes.txt").write_text("mine")
    assert cli("work", "export", "--out", str(folder), "--root", str(world.a))[0] == 0
    assert sorted(path.name for path in folder.iterdir()) == ["context.bundle", "manifest.json", "notes.txt"]


def test_an_import_with_no_room_for_the_bundle_is_a_write_failure(exported: tuple[World, Path]) -> None:
    """A file size limit (a full disk, a quota) while git stored the bundle's objects was a refused transfer
    ("cannot read the bundle: error: index-pack died of signal 25", exit 12): the transfer is fine, the disk
    here is not. It is a write failure now (exit 5), and the folder is left without a store, as it was."""
    import base64
    import resource

    world, _ = exported
    append(world.a, *(base64.b64encode(os.urandom(4000)).decode() for _ in range(120)))  # a pack of ~500 KB
    folder = world.tmp / "big"
    assert cli("work", "export", "--out", str(folder), "--root", str(world.a))[0] == 0
    c = offline_clone(world, "c")
    before = sorted(path.name for path in c.iterdir())
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    done = subprocess.run([sys.executable, "-m", "continuity", "work", "import", str(folder)], cwd=c, env=env,
                          capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, 300_000)))
    assert done.returncode == 5, done.stderr
    assert "import failed: the bundle's objects cannot be stored here" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert sorted(path.name for path in c.iterdir()) == before
    assert cli("work", "import", str(folder), "--root", str(c))[0] == 0  # with room, it is taken


def test_clone_store_counts_the_event_files_that_came_a_kind_it_does_not_know_included(
        exported: tuple[World, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A teammate's event of a kind this release does not know came with the clone but was left out of "cloned N
    events" (N counted what the read models folded): the count is the files that came."""
    from continuity.cli import main
    from events.session import SessionStarted
    from tests.helpers import release_without

    world, _ = exported
    Store(world.a).open_log().append(SessionStarted(project="demo", session_id="s2", host="hostB", source="startup",
                                                    message="a newer kind"))
    assert cli("sync", "--root", str(world.a))[0] == 0
    c = world.clone("c", init=False)
    with release_without(monkeypatch, "session.started"):
        capsys.readouterr()
        assert main(["clone-store", "origin", "--root", str(c)]) == 0
        out = capsys.readouterr().out
    assert out.startswith(f"cloned {len(event_names(world.a))} events from origin/continuity into "), out
    assert event_names(c) == event_names(world.a)


def _planted(world: World, folder: Path, path: str | None, data: bytes, **manifest: object) -> str:
    """world.a's branch gains a file (at `path`, else at an event name of its first event's day), rebundled into
    the transfer with the manifest counting what its export would; the path."""
    head = git(world.a, "rev-parse", "continuity").strip()
    first = next(line.split("\t")[1] for line in git(world.a, "ls-tree", "-r", head).splitlines()
                 if line.split("\t")[1].startswith("events/"))
    path = path or f"{first[:-len('.json') - 12]}{'0' * 12}.json"
    blob = subprocess.run(["git", "-C", str(world.a), "hash-object", "-w", "--stdin"], input=data,
                          capture_output=True, check=True).stdout.decode().strip()

    def tree(listing: str) -> str:  # mktree checks no name (update-index refuses `.git` and `..`)
        return subprocess.run(["git", "-C", str(world.a), "mktree"], input=listing.encode(), capture_output=True,
                              check=True).stdout.decode().strip()

    def planted(tree_id: str | None, parts: list[str]) -> str:  # the tree with the blob at parts, made as it goes
        listing = git(world.a, "ls-tree", tree_id) if tree_id else ""
        entries = {line.split("\t", 1)[1]: line for line in listing.splitlines()}
        name = parts[0]
        if len(parts) == 1:
            entries[name] = f"100644 blob {blob}\t{name}"
        else:
            below = entries.get(name)
            inner = planted(below.split()[2] if below and below.split()[1] == "tree" else None, parts[1:])
            entries[name] = f"040000 tree {inner}\t{name}"
        return tree("".join(line + "\n" for line in entries.values()))

    root = planted(git(world.a, "rev-parse", f"{head}^{{tree}}").strip(), path.split("/"))
    commit = git(world.a, "commit-tree", root, "-p", head, "-m", "x").strip()
    git(world.a, "update-ref", "refs/heads/continuity", commit)
    counted = json.loads((folder / "manifest.json").read_text())["events"]
    _rebundle(folder, world.a, "refs/heads/continuity", **{"events": counted + 1, **manifest})
    return path


TOKEN = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8L9z0"


@pytest.mark.parametrize(("path", "data", "fragment"), [
    (None, json.dumps({"project": "demo", "message": f"deploy with {TOKEN}"}).encode(),
     "refused secret-like material in tracked file: events/"),
    (None, b'{"project": "demo", "message": "\xff\xfe"}', "tracked context file is not UTF-8 text: events/"),
    (".git/config", b"[core]\n\tfsmonitor = touch /tmp/pwned\n", "unsupported path in tracked context: .git/config"),
    ("events/README/x", b"note", "unsupported path in tracked context: events/README/x"),
    ("events/20261205/..", b"x", "unsupported path in tracked context: events/20261205/.."),
], ids=["secret", "not-utf8", "dot-git", "under-readme", "dot-dot"])
@pytest.mark.parametrize("with_store", [False, True])
def test_import_refuses_what_an_export_would_refuse(exported: tuple[World, Path], path: str | None, data: bytes,
                                                    fragment: str, with_store: bool) -> None:
    """A hand-made transfer with a secret, a file that is not UTF-8 text, or a path no writer makes (`.git/config`)
    was imported (exit 0), after which every export refused and the reconnect pushed it to the team's remote. It
    is refused now as its export would be (exit 12), nothing changed: no store made, no event, no branch."""
    world, folder = exported
    _planted(world, folder, path, data)
    c = offline_clone(world, "c")
    if with_store:
        assert cli("init", "--project", "demo", "--root", str(c))[0] == 0
    before = folder_state(c)
    code, out = cli("work", "import", str(folder), "--root", str(c))
    assert code == EXIT_INVARIANT, out
    assert out["message"].startswith("Refused import: ") and fragment in out["message"], out
    assert TOKEN not in json.dumps(out)
    after = folder_state(c)
    after["files"].pop(".agent/runtime-continuity/local/sync.lock", None)  # the lock the import held
    assert after == before and git(c, "for-each-ref", "refs/heads/continuity").strip() == ""
    # the refused file is not kept in .git either (the fetch left a pack of it there, the secret with it)
    blob = subprocess.run(["git", "-C", str(c), "hash-object", "--stdin"], input=data, capture_output=True,
                          check=True).stdout.decode().strip()
    assert subprocess.run(["git", "-C", str(c), "cat-file", "-e", blob], capture_output=True).returncode != 0
    assert not list((c / ".git" / "objects").glob("continuity-incoming-*"))


@pytest.mark.parametrize(("with_store", "name"), [(False, "c"), (True, "c"), (False, 'c:o"l\\on')])
def test_an_accepted_import_keeps_its_objects_and_no_folder_a_killed_import_left(
        exported: tuple[World, Path], with_store: bool, name: str) -> None:
    """The transfer's objects wait in a folder of their own until every check passed, then join the repository's:
    the branch's whole history is there (`git fsck`), and a waiting folder a killed import left is gone. (A
    project path holding `:`, which git's list of object folders splits at, is quoted.)"""
    world, folder = exported
    c = offline_clone(world, name)
    if with_store:
        assert cli("init", "--project", "demo", "--root", str(c))[0] == 0
    left = c / ".git" / "objects" / "continuity-incoming-killed"
    (left / "pack").mkdir(parents=True)
    (left / "pack" / "pack-0.pack").write_bytes(b"half")
    code, out = cli("work", "import", str(folder), "--root", str(c))
    assert code == 0, out
    head = json.loads((folder / "manifest.json").read_text())["head"]
    assert git(c, "rev-parse", "refs/heads/continuity").strip() == head
    assert subprocess.run(["git", "-C", str(c), "fsck", "--connectivity-only", "--no-dangling"], capture_output=True,
                          text=True).returncode == 0
    assert git(c, "rev-list", "--objects", head).count("\n") > 3
    assert not list((c / ".git" / "objects").glob("continuity-incoming-*"))
    assert event_names(c) == event_names(world.a)


def test_export_refuses_a_path_no_writer_makes(exported: tuple[World, Path], tmp_path: Path) -> None:
    """`.git/config` on the branch (a hand-made commit a sync brought in) was exported and carried on."""
    world, folder = exported
    _planted(world, folder, ".git/config", b"[core]\n")
    code, out = cli("work", "export", "--out", str(tmp_path / "again"), "--root", str(world.a))
    assert code == EXIT_INVARIANT and out["message"].endswith("unsupported path in tracked context: .git/config")
    assert not (tmp_path / "again" / "context.bundle").exists()


@pytest.mark.parametrize("change", [{"events": -99}, {"events": 1}, {"events": 10**6}])
def test_import_refuses_a_manifest_that_miscounts_the_events(exported: tuple[World, Path],
                                                             change: dict[str, int]) -> None:
    world, folder = exported
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, **change}))
    c = offline_clone(world, "c")
    before = folder_state(c)
    code, out = cli("work", "import", str(folder), "--root", str(c))
    assert code == EXIT_INVARIANT and f"the manifest counts {change['events']} event(s)" in out["message"], out
    assert folder_state(c) == before


def test_import_into_a_new_folder_refuses_a_manifest_naming_another_project(exported: tuple[World, Path]) -> None:
    """The store an import makes takes the manifest's project: one naming none of its events' made a store whose
    every view was empty (`resume-bundle`: 0 events; the workstream gone), exit 0."""
    world, folder = exported
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "project": "evil", "repository": None}))
    c = offline_clone(world, "c")
    before = folder_state(c)
    code, out = cli("work", "import", str(folder), "--root", str(c))
    assert code == EXIT_INVARIANT, out
    assert "the transfer's events are of another project than its manifest's 'evil' (they name 'demo')" in \
        out["message"], out
    assert folder_state(c) == before


def test_import_naming_the_checked_out_branch_is_a_refused_transfer(exported: tuple[World, Path]) -> None:
    """A manifest naming `main` (checked out here) was told to switch the user's work tree off it (exit 2): the
    branch is not this store's, which is what is refused (exit 12)."""
    world, folder = exported
    _rebundle(folder, world.a, "refs/heads/main", branch="main")
    c = offline_clone(world, "c")
    code, out = cli("work", "import", str(folder), "--root", str(c))
    assert code == EXIT_INVARIANT, out
    assert "transfer branch 'main' is not this store's branch 'continuity'" in out["message"]
    assert "switch" not in out["message"]


def test_two_machines_that_both_worked_offline_unite_through_a_remote_both_reach(exported: tuple[World, Path],
                                                                                 tmp_path: Path) -> None:
    """The way out the refusal of a diverged transfer names (docs/workstreams.md, "Two machines that both worked
    offline"): each machine imported the same transfer and wrote events offline, so each refuses the other's bundle;
    a fresh bare repository both reach, `work reconnect --remote <url> --union` on one then the other, then `sync`
    on the first: both hold every event of both, and verify is clean on each."""
    world, folder = exported
    c, d = offline_clone(world, "c"), offline_clone(world, "d")
    for machine, said in ((c, "work on c"), (d, "work on d")):
        assert cli("work", "import", str(folder), "--root", str(machine))[0] == 0
        append(machine, said)
    assert cli("work", "export", "--out", str(tmp_path / "from-d"), "--root", str(d))[0] == 0
    code, out = cli("work", "import", str(tmp_path / "from-d"), "--root", str(c))
    assert code == EXIT_INVARIANT and "reconnect --remote <url> --union` on each" in out["message"], out
    shared = tmp_path / "usb.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(shared))
    for machine in (c, d):
        code, out = cli("work", "reconnect", "--remote", str(shared), "--union", "--root", str(machine))
        assert code == 0, out
    code, out = cli("sync", "--remote", str(shared), "--root", str(c))
    assert code == 0, out
    assert event_names(c) == event_names(d)
    messages = {json.loads(path.read_text()).get("message") for path in all_event_files(c)}
    assert {"work on c", "work on d"} <= messages
    for machine in (c, d):
        assert cli("verify", "--root", str(machine))[0] == 0


def test_a_project_in_a_subfolder_exports_clones_and_imports_its_own_store(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A project kept in a subfolder of its repository: `work export` writes the bundle where it says (git before
    2.43 wrote `bundle create -` as a file named `-` in the subfolder, the bundle left empty), and `clone-store`
    and `work import` run there fill the subfolder's store, as every other command finds it, not a second one
    at the repository's top."""
    world = World(tmp_path)
    (world.a / "web").mkdir()
    assert cli("init", "--project", "web", "--root", str(world.a / "web"))[0] == 0
    append(world.a / "web", "in the subfolder")
    monkeypatch.chdir(world.a / "web")
    assert cli("sync")[0] == 0
    code, out = cli("work", "export", "--out", str(tmp_path / "transfer"))
    assert code == 0, out
    data = (tmp_path / "transfer" / "context.bundle").read_bytes()
    assert out["manifest"]["bundle"]["bytes"] == len(data) > 0
    git(world.a, "bundle", "verify", "--quiet", str(tmp_path / "transfer" / "context.bundle"))
    assert not (world.a / "web" / "-").exists() and not (world.a / "-").exists()

    d = world.clone("d", init=False)
    (d / "web").mkdir()
    assert cli("init", "--project", "web", "--root", str(d / "web"))[0] == 0
    monkeypatch.chdir(d / "web")
    code, out = cli("clone-store", "origin")
    assert code == 0, out
    assert event_names(d / "web") == event_names(world.a / "web")
    assert not (d / ".agent").exists()

    c = offline_clone(world, "c")
    (c / "web").mkdir()
    assert cli("init", "--project", "web", "--root", str(c / "web"))[0] == 0
    monkeypatch.chdir(c / "web")
    code, out = cli("work", "import", str(tmp_path / "transfer"))
    assert code == 0, out
    assert event_names(c / "web") == event_names(world.a / "web")
    assert not (c / ".agent").exists()


def test_a_shallow_clone_of_the_same_repository_takes_and_gives_transfers(exported: tuple[World, Path]) -> None:
    """A shallow clone's oldest commits are where its history was cut, not its roots: a transfer between it and a
    full clone of the same repository was refused both ways ("other root commits"). Its manifest names no root
    commits (as a clone without a commit), and a shallow side checks none; project and repository id still do."""
    world, folder = exported
    (world.a / "more.txt").write_text("more\n")
    git(world.a, "add", "more.txt")
    git(world.a, "commit", "-q", "-m", "more")
    git(world.a, "push", "-q", "origin", "main")
    shallow = world.tmp / "shallow"
    git(world.tmp, "clone", "-q", "--depth", "1", f"file://{world.remote}", str(shallow))
    git(shallow, "remote", "remove", "origin")
    assert git(shallow, "rev-parse", "--is-shallow-repository").strip() == "true"
    code, out = cli("work", "import", str(folder), "--root", str(shallow))
    assert code == 0, out
    assert event_names(shallow) == event_names(world.a)
    code, out = cli("work", "export", "--out", str(world.tmp / "from-shallow"), "--root", str(shallow))
    assert code == 0, out
    assert out["manifest"]["rootCommits"] == []
    c = offline_clone(world, "c")
    code, out = cli("work", "import", str(world.tmp / "from-shallow"), "--root", str(c))
    assert code == 0, out
