"""Faults on the write path: the append fails closed and leaves nothing visible."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from events.errors import EventExists, WriteFailed
from events.filelog import FileEventLog, FileOps
from events.worklog import WorkLogged
from tests.conftest import FakeClock
from tests.helpers import REPO, all_event_files, make_read_only


class FsyncEIO(FileOps):
    def fsync(self, fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))


class DirFsyncEIO(FileOps):
    """Fails only the directory sync that follows the links."""

    def fsync(self, fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        os.fsync(fd)


class ShortWriteThenENOSPC(FileOps):
    def __init__(self) -> None:
        self.writes = 0

    def write(self, fd: int, data: bytes | memoryview) -> int:
        self.writes += 1
        if self.writes == 1:
            return os.write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class ShortWritesOnly(FileOps):
    """Writes at most 7 bytes a call: the loop must still write everything."""

    def write(self, fd: int, data: bytes | memoryview) -> int:
        return os.write(fd, data[:7])


class LinkEEXIST(FileOps):
    def link(self, source: str, target: str) -> None:
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), target)


class ReadOnly(FileOps):
    def open(self, path: str, flags: int, mode: int = 0o777) -> int:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)


def make(tmp_path: Path, clock: FakeClock, fs: FileOps | None = None) -> FileEventLog:
    return FileEventLog(tmp_path / "events", tmp_path / "local", node="node0001",
                        clock_us=clock, fs=fs)


@pytest.mark.parametrize(
    ("fs", "message"),
    [
        (FsyncEIO(), "Input/output error"),
        (DirFsyncEIO(), "Input/output error"),
        (ShortWriteThenENOSPC(), "No space left on device"),
        (LinkEEXIST(), "already exists"),
        (ReadOnly(), "store is not writable"),
    ],
    ids=["fsync-EIO", "dir-fsync-EIO", "short-write-then-ENOSPC", "link-EEXIST", "read-only"],
)
def test_fault_leaves_nothing_visible(tmp_path: Path, fake_clock: FakeClock, fs: FileOps,
                                      message: str) -> None:
    """Each injected fault raises WriteFailed with a clear message; no event, no temp remains."""
    make(tmp_path, fake_clock).append(WorkLogged(project="demo", message="before"))
    before = all_files(tmp_path)
    faulty = make(tmp_path, fake_clock, fs)
    with pytest.raises(WriteFailed, match=message) as failed:
        faulty.append_many([WorkLogged(project="demo", message=f"m{i}") for i in range(3)])
    assert "\n" not in str(failed.value)
    assert all_files(tmp_path) == before
    assert list((tmp_path / "local" / "tmp").iterdir()) == []
    healthy = make(tmp_path, fake_clock)
    healthy.append(WorkLogged(project="demo", message="after"))
    assert [s.event.message for s in healthy.read()] == ["before", "after"]
    assert healthy.verify().ok


def test_eexist_is_its_own_error(tmp_path: Path, fake_clock: FakeClock) -> None:
    """A taken name is never overwritten: EventExists, a kind of WriteFailed."""
    with pytest.raises(EventExists):
        make(tmp_path, fake_clock, LinkEEXIST()).append(WorkLogged(project="demo"))


def test_short_writes_are_completed(tmp_path: Path, fake_clock: FakeClock) -> None:
    """A write that returns short is continued until every byte is on disk."""
    stored = make(tmp_path, fake_clock, ShortWritesOnly()).append(
        WorkLogged(project="demo", message="m" * 500)
    )
    assert make(tmp_path, fake_clock).head() == stored


def all_files(tmp_path: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in (tmp_path / "events").rglob("*") if p.is_file()}


def test_cli_reports_an_fsync_failure_in_one_line(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`continuity log` with fsync failing: exit 5, one stderr line, nothing written."""
    from continuity.cli import main
    from continuity.core.errors import EXIT_WRITE_FAILED

    capsys.readouterr()

    def broken_fsync(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", broken_fsync)
    assert main(["log", "this will not land"]) == EXIT_WRITE_FAILED
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Input/output error" in err and "Traceback" not in err
    monkeypatch.undo()
    assert all_event_files(project) == []


def test_cli_on_a_read_only_store(tmp_path: Path) -> None:
    """A store on a read-only file system: exit 5, one line, nothing written (no fakes)."""
    root = tmp_path / "proj"
    root.mkdir()
    subprocess.run([sys.executable, "-m", "continuity", "init"], cwd=root, check=True,
                   capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    store = root / ".agent" / "runtime-continuity"
    mounts = make_read_only(store)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "continuity", "log", "no permission"], cwd=root,
            env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=60,
        )
    finally:
        for mount in mounts:
            subprocess.run(["umount", str(mount)], check=True)
    assert result.returncode == 5, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "not writable" in result.stderr or "Read-only" in result.stderr
    assert all_event_files(root) == []
