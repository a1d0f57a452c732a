"""Remote events moving into the store: a day the store lacks arrives as one folder, renamed whole.

Real git (test_sync's World: a bare remote and clones in temp folders) and the CLI in-process.
A day folder that appears between staging and the move, a move that fails part-way, and the
rename's refusal to replace a folder, with `renameat2` and without it.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_clone_fold import DAY_US, STORE, history
from tests.integration.test_sync import World, append, cli, event_names
from tests.integration.test_sync import _git_identity as _git_identity  # autouse: a git identity


def day_folders(root: Path) -> list[str]:
    return sorted(entry.name for entry in (root / STORE / "events").iterdir() if entry.is_dir())


def linked_and_moved(monkeypatch: pytest.MonkeyPatch, root: Path) -> dict[str, int]:
    """Counts of links and whole-folder moves into `root`'s events made in this process."""
    from continuity.sync import files
    from events import osfs

    counts = {"links": 0, "moves": 0}
    real_link, real_move = osfs.link, files._move_folder

    events = str(root / STORE / "events")

    def link(source: str, target: str) -> None:
        counts["links"] += target.startswith(events)
        real_link(source, target)

    def move(source: str, target: str) -> None:
        counts["moves"] += target.startswith(events)
        real_move(source, target)

    monkeypatch.setattr(osfs, "link", link)
    monkeypatch.setattr(files, "_move_folder", move)
    return counts


def test_days_the_store_lacks_arrive_whole_and_days_it_has_event_by_event(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Five past days come to an empty store as five folder moves and no links; a later sync adding to a
    day the store has links each new event. Either way the store verifies and nothing stays staged."""
    world = World(tmp_path)
    history(world, monkeypatch, days=5)
    counts = linked_and_moved(monkeypatch, world.b)
    assert cli("sync", "--root", str(world.b))[0] == 0
    assert counts == {"links": 0, "moves": 5}
    assert event_names(world.b) == event_names(world.a)
    assert not (world.b / STORE / "local" / "incoming").exists()

    append(world.a, "today, first")
    assert cli("sync", "--root", str(world.a))[0] == 0
    assert cli("sync", "--root", str(world.b))[0] == 0  # today's folder is new to b: moved
    append(world.a, "today, second")
    assert cli("sync", "--root", str(world.a))[0] == 0
    assert cli("sync", "--root", str(world.b))[0] == 0  # today's folder is b's now: linked
    assert counts == {"links": 1, "moves": 6}
    assert event_names(world.b) == event_names(world.a)
    assert cli("verify", "--root", str(world.b))[0] == 0


def test_a_day_folder_made_between_staging_and_the_move_is_added_to_not_replaced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An append that makes today's folder while sync stages today's remote events (it waits for the
    append lock only to move them): the remote events are linked into that folder beside the local one."""
    from continuity.sync import files

    world = World(tmp_path)
    append(world.a, "from a, 1", "from a, 2")
    assert cli("sync", "--root", str(world.a))[0] == 0
    real_install = files.install

    def install_after_an_append(store: Any, staged: Any) -> Any:
        append(world.b, "from b, while staging")
        return real_install(store, staged)

    monkeypatch.setattr(files, "install", install_after_an_append)
    assert cli("sync", "--root", str(world.b))[0] == 0
    names = event_names(world.b)
    assert len(names) == 3 and set(event_names(world.a)) < set(names)
    assert cli("verify", "--root", str(world.b))[0] == 0


@pytest.mark.parametrize("fails", ["the folder's fsync", "a link after the move"])
def test_a_move_that_fails_part_way_takes_back_the_folders_it_moved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: str) -> None:
    """A failure after some days were renamed in (the events folder's fsync; a link into a day the store
    has): the moved days go back where they were staged, so nothing of the batch stays visible; sync exits
    with the write error and the next sync brings everything in."""
    import continuity.core.store as store_module
    from events import osfs

    world = World(tmp_path)
    history(world, monkeypatch, days=3)
    if fails == "a link after the move":  # b holds one of the days already, with an event of its own
        real = store_module.now_us
        monkeypatch.setattr(store_module, "now_us", lambda: real() - 1 * DAY_US)
        append(world.b, "b's own, on day -1")
        monkeypatch.setattr(store_module, "now_us", real)
    before = event_names(world.b)
    events_dir = str(world.b / STORE / "events")
    real_fsync_dir, real_link = osfs.fsync_dir, osfs.link

    def fsync_dir(path: str, *args: Any) -> None:
        if fails == "the folder's fsync" and os.path.realpath(path) == os.path.realpath(events_dir):
            raise OSError(errno.EIO, "Input/output error")
        real_fsync_dir(path, *args)

    def link(source: str, target: str) -> None:
        if fails == "a link after the move":
            raise OSError(errno.ENOSPC, "No space left on device")
        real_link(source, target)

    monkeypatch.setattr(osfs, "fsync_dir", fsync_dir)
    monkeypatch.setattr(osfs, "link", link)
    counts = linked_and_moved(monkeypatch, world.b)
    code, _ = cli("sync", "--root", str(world.b))
    assert code != 0
    assert counts["moves"] == (3 if fails == "the folder's fsync" else 2)  # it failed after folders moved
    assert event_names(world.b) == before
    assert len(day_folders(world.b)) == (1 if before else 0)
    monkeypatch.setattr(osfs, "fsync_dir", real_fsync_dir)
    monkeypatch.setattr(osfs, "link", real_link)
    assert cli("sync", "--root", str(world.b))[0] == 0
    assert set(event_names(world.a)) <= set(event_names(world.b))
    assert cli("verify", "--root", str(world.b))[0] == 0


@pytest.mark.parametrize("way", ["renameat2", "checked rename"])
@pytest.mark.parametrize("there", ["an empty folder", "a file"])
def test_a_staged_day_is_never_renamed_over_what_is_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, way: str, there: str) -> None:
    """The move refuses a target that exists, even an empty folder (which a plain rename would replace),
    and leaves the staged folder where it was."""
    from continuity.sync import files

    if way == "checked rename":
        monkeypatch.setattr(files, "_rename_noreplace", lambda source, target: False)
    elif sys.platform.startswith("linux"):  # the call itself, not the checked rename behind it
        probe = tmp_path / "probe"
        probe.mkdir()
        assert files._rename_noreplace(str(probe), str(tmp_path / "probed")) is True
        assert (tmp_path / "probed").is_dir() and not probe.exists()
    source = tmp_path / "incoming" / "20260101"
    source.mkdir(parents=True)
    (source / "event.json").write_bytes(b"{}")
    target = tmp_path / "events" / "20260101"
    target.parent.mkdir()
    if there == "an empty folder":
        target.mkdir()
    else:
        target.write_bytes(b"")
    with pytest.raises(FileExistsError):
        files._move_folder(str(source), str(target))
    assert (source / "event.json").read_bytes() == b"{}"
    if there == "an empty folder":
        assert target.is_dir() and not any(target.iterdir())
    else:
        assert target.is_file() and target.read_bytes() == b""
    files._move_folder(str(source), str(tmp_path / "events" / "20260102"))
    assert (tmp_path / "events" / "20260102" / "event.json").read_bytes() == b"{}" and not source.exists()


def test_a_store_without_its_events_folder_gets_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`events/` is made when first written (a store whose folder was removed): sync makes it and moves the
    days in."""
    import shutil

    world = World(tmp_path)
    history(world, monkeypatch, days=2)
    shutil.rmtree(world.b / STORE / "events", ignore_errors=True)
    assert cli("sync", "--root", str(world.b))[0] == 0
    assert event_names(world.b) == event_names(world.a)
    assert cli("verify", "--root", str(world.b))[0] == 0


def test_a_big_batch_made_durable_at_once_moves_its_days(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch past SYNCFS_FROM is made durable with one `syncfs` (names in the day folders included): its
    days are moved without a folder fsync of their own before the move; the events all arrive."""
    import continuity.core.store as store_module
    from continuity.sync import files
    from events import osfs

    world = World(tmp_path)
    real = store_module.now_us
    for back in (2, 1):
        monkeypatch.setattr(store_module, "now_us", lambda back=back: real() - back * DAY_US)
        append(world.a, *(f"day -{back}: {n}" for n in range(files.SYNCFS_FROM)))
    monkeypatch.setattr(store_module, "now_us", real)
    assert cli("sync", "--root", str(world.a))[0] == 0
    incoming = str(world.b / STORE / "local" / "incoming")
    staged_fsyncs: list[str] = []
    real_fsync_dir = osfs.fsync_dir

    def fsync_dir(path: str, *args: Any) -> None:
        if path.startswith(incoming):
            staged_fsyncs.append(path)
        real_fsync_dir(path, *args)

    monkeypatch.setattr(osfs, "fsync_dir", fsync_dir)
    counts = linked_and_moved(monkeypatch, world.b)
    assert cli("sync", "--root", str(world.b))[0] == 0
    assert counts == {"links": 0, "moves": 2} and staged_fsyncs == []
    assert event_names(world.b) == event_names(world.a)


def test_a_small_batch_makes_each_moved_folder_durable_before_the_move(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below SYNCFS_FROM each file is fsynced, and each day folder to be moved has its own names made
    durable before it is renamed into the store."""
    from events import osfs

    world = World(tmp_path)
    history(world, monkeypatch, days=2)
    incoming = str(world.b / STORE / "local" / "incoming")
    staged_fsyncs: list[str] = []
    real_fsync_dir = osfs.fsync_dir

    def fsync_dir(path: str, *args: Any) -> None:
        if path.startswith(incoming):
            staged_fsyncs.append(os.path.basename(path))
        real_fsync_dir(path, *args)

    monkeypatch.setattr(osfs, "fsync_dir", fsync_dir)
    assert cli("sync", "--root", str(world.b))[0] == 0
    assert sorted(staged_fsyncs) == day_folders(world.b) and len(staged_fsyncs) == 2


@pytest.mark.parametrize("when", ["while staging", "before the move"])
def test_a_link_planted_in_the_staging_folder_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    """A symlink at `local/incoming/<day>` (planted before sync makes that day's folder, or swapped in for
    it before the move): sync refuses as an unsafe store (exit 6), writes nothing outside the store and
    moves nothing in."""
    from continuity.sync import files

    world = World(tmp_path)
    history(world, monkeypatch, days=2)
    outside = tmp_path / "outside"
    outside.mkdir()
    days = sorted({name[:8] for name in event_names(world.a)})
    incoming = world.b / STORE / "local" / "incoming"
    if when == "while staging":
        real_write = files._write

        def write(path: str, data: bytes) -> None:
            later = incoming / days[-1]
            if not later.exists() and not later.is_symlink():
                later.symlink_to(outside)
            real_write(path, data)

        monkeypatch.setattr(files, "_write", write)
    else:
        real_install = files.install

        def install(store: Any, staged: Any) -> Any:
            folder = incoming / days[0]
            folder.rename(outside / days[0])
            folder.symlink_to(outside / days[0])
            return real_install(store, staged)

        monkeypatch.setattr(files, "install", install)
    code, _ = cli("sync", "--root", str(world.b))
    assert code == 6
    assert event_names(world.b) == []
    assert not (world.b / STORE / "events").exists() or day_folders(world.b) == []
    if when == "while staging":
        assert list(outside.iterdir()) == []


@pytest.mark.parametrize("fails", ["making a batch durable", "staging a batch"])
def test_clone_store_stopped_between_two_batches_leaves_no_staged_events(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: str) -> None:
    """restore brings a long history in a batch at a time. A batch that cannot be made durable, or staged:
    clone-store exits with the write error, the batches before are in the store whole, that one is not,
    no staged file is left, and a sync brings in the rest."""
    import continuity.sync.engine as engine
    from continuity.sync import files

    world = World(tmp_path)
    history(world, monkeypatch, days=5)
    fresh = world.clone("d", init=False)
    monkeypatch.setattr(engine, "RESTORE_BATCH", 1)  # a batch per day: five
    calls = {"flush": 0, "write": 0}
    real_durable, real_write = files._make_durable, files._write

    def make_durable(folder: str, paths: list[str]) -> bool:
        calls["flush"] += 1
        if fails == "making a batch durable" and calls["flush"] == 3:
            raise OSError(errno.EIO, "Input/output error")
        return real_durable(folder, paths)

    def write(path: str, data: bytes) -> None:
        calls["write"] += 1
        if fails == "staging a batch" and calls["write"] == 2 * 3 + 2:  # the third day's second event
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(path, data)

    monkeypatch.setattr(files, "_make_durable", make_durable)
    monkeypatch.setattr(files, "_write", write)
    code, _ = cli("clone-store", "origin", "--root", str(fresh))
    assert code == 5
    days = day_folders(fresh)
    assert len(days) == 2 and all(len(list((fresh / STORE / "events" / day).iterdir())) == 3 for day in days)
    assert not (fresh / STORE / "local" / "incoming").exists()
    monkeypatch.setattr(files, "_make_durable", real_durable)
    monkeypatch.setattr(files, "_write", real_write)
    assert cli("sync", "--root", str(fresh))[0] == 0
    assert event_names(fresh) == event_names(world.a)
    assert cli("verify", "--root", str(fresh))[0] == 0


@pytest.mark.parametrize("planted", ["a link to a folder outside", "a file"])
def test_a_staging_folder_planted_in_the_store_is_an_unsafe_store(tmp_path: Path, planted: str) -> None:
    """local/incoming a symlink (or a file): exit 6 "unsafe store" naming it, nothing staged outside the store,
    the outside folder untouched (it was exit 5 "remote events not written: File exists")."""
    from continuity.core.errors import EXIT_UNSAFE_STORE

    world = World(tmp_path)
    append(world.a, "a1", "a2")
    assert cli("sync", "--root", str(world.a))[0] == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    incoming = world.b / STORE / "local" / "incoming"
    if planted == "a file":
        incoming.write_text("not a folder")
    else:
        incoming.symlink_to(outside, target_is_directory=True)
    before = event_names(world.b)
    code, error = cli("sync", "--root", str(world.b))
    assert code == EXIT_UNSAFE_STORE and "unsafe store" in error["message"] and "incoming" in error["message"]
    assert sorted(path.name for path in outside.iterdir()) == ["keep.txt"]
    assert event_names(world.b) == before
