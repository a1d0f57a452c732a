"""The git objects sync writes trees from: packs made beside a running writer, and objects a clone has lost."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from continuity.core.errors import EXIT_REMOTE, EXIT_WRITE_FAILED
from continuity.sync.git import Repo
from continuity.sync.objects import Entry, TreeWriter
from tests.helpers import cli_process
from tests.integration.test_sync import (  # noqa: F401  # _git_identity: the autouse identity fixture
    STORE,
    World,
    _git_identity,
    append,
    event_names,
    git,
)


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A bare remote, clone `a` (which pushed the code) and clone `b`, both with a store."""
    return World(tmp_path)


def loose_blob(repo: Path, data: bytes) -> str:
    """A new loose blob in `repo`; its id."""
    return subprocess.run(["git", "-C", str(repo), "hash-object", "-w", "--stdin"], input=data,
                          capture_output=True, check=True).stdout.decode().strip()


def test_a_pack_made_while_the_tree_writer_runs_does_not_fail_its_next_tree(tmp_path: Path) -> None:
    """A gc beside a sync packs loose objects and removes them. A running `git mktree --batch` looked for packs
    once, at its first lookup, and never again, so the next tree naming a moved object was refused ('object ...
    is unavailable', exit 5 sending the user to the remote or fsck). The writer now writes it once more with a
    new process, which finds the pack."""
    git(tmp_path, "init", "-q", "repo")
    repo = tmp_path / "repo"
    first, second = loose_blob(repo, b"first\n"), loose_blob(repo, b"second\n")
    writer = TreeWriter(Repo(str(repo)))
    try:
        writer.write([Entry("100644", "a.json", first)])
        subprocess.run(["git", "-C", str(repo), "pack-objects", "-q", ".git/objects/pack/pack"],
                       input=f"{first}\n{second}\n".encode(), stdout=subprocess.DEVNULL, check=True)
        git(repo, "prune-packed")
        assert not (repo / ".git" / "objects" / second[:2] / second[2:]).exists()  # packed, not loose
        tree = writer.write([Entry("100644", "b.json", second), Entry("100644", "c.json", first)])
    finally:
        writer.close()
    assert writer.dropped == []
    assert git(repo, "ls-tree", tree).split() == ["100644", "blob", second, "b.json",
                                                  "100644", "blob", first, "c.json"]


def test_an_event_whose_object_the_clone_lost_fails_the_sync_and_stays_on_the_branch(world: World) -> None:
    """A clone whose git folder lost an event's object (a disk fault, a hand-run clean-up) wrote the day's tree
    without that event and said nothing: the event left the team's branch. Now the sync fails (exit 5) naming
    the object and `git fsck`, and the branch keeps every event."""
    append(world.a, "a1")
    assert cli_process("sync", cwd=world.a).returncode == 0
    assert cli_process("sync", cwd=world.b).returncode == 0
    [name] = event_names(world.b)
    [path] = (world.b / STORE / "events").glob(f"*/{name}")
    sha = git(world.b, "hash-object", str(path)).strip()
    loose = world.b / ".git" / "objects" / sha[:2] / sha[2:]
    assert loose.is_file(), "the fetched event is a loose object"
    loose.chmod(0o600)
    loose.unlink()
    before = git(world.remote, "ls-tree", "-r", "--name-only", "continuity")
    append(world.b, "b1")
    result = cli_process("sync", cwd=world.b)
    assert result.returncode == EXIT_WRITE_FAILED, result.stderr
    assert f"git object {sha}" in result.stderr and "is missing from this clone's repository" in result.stderr
    assert "git fsck" in result.stderr and "Traceback" not in result.stderr
    assert git(world.remote, "ls-tree", "-r", "--name-only", "continuity") == before
    assert any(line.endswith(name) for line in before.splitlines())


def test_a_remote_that_cannot_store_the_push_fails_the_sync_at_once(world: World) -> None:
    """A remote whose disk is full (here: its index-pack held to a small file size, as a full disk or a quota
    does) refuses every push with `[remote rejected] (unpacker error)`. Sync took that for contention and retried
    for its whole minute, then gave up (exit 10, "the next sync will carry them"). It fails at once now (exit 8),
    naming the remote's own reason; the events stay, and once the remote can store them a sync delivers them."""
    import resource
    import signal
    import time

    git(world.remote, "config", "receive.unpackLimit", "1")  # the remote keeps what it receives as one pack
    for index in range(12):
        append(world.a, f"{index} " + os.urandom(2400).hex())  # incompressible: a pack of about 60 kB

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (30_000, 30_000))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails (EFBIG), as on a full disk

    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "continuity", "sync"], cwd=world.a, env=env, capture_output=True,
                            text=True, timeout=120, preexec_fn=small_files)
    assert result.returncode == EXIT_REMOTE, result.stderr
    assert time.monotonic() - started < 30  # not the minute of retries
    assert "could not store what was pushed" in result.stderr, result.stderr
    assert "remote:" in result.stderr or "remote unpack failed" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert cli_process("sync", cwd=world.a).returncode == 0  # the remote can store them again
    assert cli_process("sync", cwd=world.b).returncode == 0
    assert len(event_names(world.b)) == 12


def test_a_remote_that_cannot_move_what_it_received_into_place_fails_at_once(world: World) -> None:
    """receive-pack's other storage refusal, `(unable to migrate objects to permanent storage)` (its pack folder
    unusable: a disk that filled while it moved the objects, a shared repository's permissions), was retried as
    contention for the whole minute (exit 10). It fails at once (exit 8) too."""
    import shutil
    import time

    git(world.remote, "config", "receive.unpackLimit", "1")
    pack = world.remote / "objects" / "pack"
    shutil.rmtree(pack)
    pack.write_text("not a folder\n")
    append(world.a, "a1")
    started = time.monotonic()
    result = cli_process("sync", cwd=world.a)
    assert result.returncode == EXIT_REMOTE, result.stderr
    assert time.monotonic() - started < 30 and "could not store what was pushed" in result.stderr, result.stderr


def test_a_git_stopped_by_a_signal_is_not_called_a_moved_ref(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`git update-ref` killed (kill -9, the OOM killer): the error said the ref "moved during the sync", a cause
    that was not so; it names the signal now. (A `git` on PATH that kills itself for update-ref, else runs git.)"""
    from events.errors import WriteFailed

    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True, check=True).stdout.strip()
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nfor a in "$@"; do [ "$a" = update-ref ] && kill -9 $$; done\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    git(tmp_path, "init", "-q", "repo")
    repo = tmp_path / "repo"
    blob = loose_blob(repo, b"x\n")
    tree = subprocess.run(["git", "-C", str(repo), "mktree"], input=f"100644 blob {blob}\ta\n".encode(),
                          capture_output=True, check=True).stdout.decode().strip()
    commit = subprocess.run(["git", "-C", str(repo), "commit-tree", tree, "-m", "c"], capture_output=True,
                            check=True).stdout.decode().strip()
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(WriteFailed, match="stopped by signal 9") as failed:
        Repo(str(repo)).update_ref("refs/heads/continuity", commit, None)
    assert "moved" not in str(failed.value)


@pytest.mark.parametrize("mark", ["\r", "\n"])
def test_a_path_name_cannot_make_history_seem_to_hold_an_object(tmp_path: Path, mark: str) -> None:
    """`rev-list --objects` prints each object's path after its id: a file named `a<CR><id>` read a line at every
    Unicode break forged a line holding that id, so an object no commit holds was found in the history."""
    git(tmp_path, "init", "-q", "repo")
    repo = tmp_path / "repo"
    absent = "99cbd0fe15b30bff125ac17b35fb7b369c4e566b"
    (repo / f"a{mark}{absent}").write_text("x")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "c")
    present = loose_blob(repo, b"x")
    reader = Repo(str(repo))
    head = reader.rev("HEAD")
    assert not reader.holds_object(head, [], absent)
    assert reader.holds_object(head, [], present)


def test_a_reader_whose_git_is_gone_is_a_sync_failure_not_a_closed_stdout(tmp_path: Path) -> None:
    """A stream `read_many` left early ends its cat-file; a read after it raised BrokenPipeError, which the command
    guard takes for a reader of stdout gone: exit 0 with nothing said, for a sync that had stopped."""
    from continuity.sync.objects import ObjectReader
    from events.errors import WriteFailed

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    blob = loose_blob(tmp_path, b"one")
    reader = ObjectReader(Repo(str(tmp_path)))
    try:
        stream = reader.read_many([blob, blob, blob])
        assert next(stream)[1] == b"one"
        stream.close()  # left early: the process is ended
        reader.process.wait(timeout=30)
        with pytest.raises(WriteFailed, match="sync failed: git cat-file stopped"):
            reader.read_bounded(blob, None)
    finally:
        reader.close()
