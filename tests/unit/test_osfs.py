"""events/osfs.py: the one home of the calls that differ between POSIX and Windows.

The POSIX branch is tested for real (locks across processes, links, folder fsync,
positional I/O). Windows cannot run here, so its branch is loaded with a stand-in for
`msvcrt` that records calls and behaves as the C runtime documents (`LK_LOCK` raises
after its retries while another holder keeps the lock); those tests check the branch's
own logic, not Windows.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import pytest

from events import osfs


def _child_locker(lock_file: Path, shared: bool, marker: Path) -> subprocess.Popen[bytes]:
    code = textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from events import osfs
        fd = os.open({str(lock_file)!r}, osfs.UPDATE, 0o644)
        osfs.lock(fd, shared={shared!r})
        with open({str(marker)!r}, "w") as out:
            out.write(repr(time.monotonic()))
        os.close(fd)
    """)
    return subprocess.Popen([sys.executable, "-c", code])


def test_exclusive_lock_keeps_another_process_waiting_until_released(tmp_path: Path) -> None:
    lock_file, marker = tmp_path / "lock", tmp_path / "marker"
    fd = os.open(lock_file, osfs.UPDATE, 0o644)
    osfs.lock(fd)
    child = _child_locker(lock_file, False, marker)
    try:
        time.sleep(0.5)
        assert not marker.exists(), "the child took a lock this process holds"
        released = time.monotonic()
        osfs.unlock(fd)
        assert child.wait(timeout=30) == 0
        assert float(marker.read_text()) >= released
    finally:
        os.close(fd)
        if child.poll() is None:
            child.kill()


def test_shared_locks_coexist_and_keep_a_writer_out(tmp_path: Path) -> None:
    lock_file = tmp_path / "lock"
    fd = os.open(lock_file, osfs.UPDATE, 0o644)
    osfs.lock(fd, shared=True)
    try:
        reader = _child_locker(lock_file, True, tmp_path / "reader")
        assert reader.wait(timeout=30) == 0  # a second reader is not kept out
        writer = _child_locker(lock_file, False, tmp_path / "writer")
        time.sleep(0.5)
        assert not (tmp_path / "writer").exists(), "an exclusive lock was granted beside a shared one"
        osfs.unlock(fd)
        assert writer.wait(timeout=30) == 0
    finally:
        os.close(fd)


def test_link_never_replaces_a_file(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"first")
    (tmp_path / "b").write_bytes(b"second")
    with pytest.raises(FileExistsError):
        osfs.link(str(tmp_path / "a"), str(tmp_path / "b"))
    assert (tmp_path / "b").read_bytes() == b"second"
    osfs.link(str(tmp_path / "a"), str(tmp_path / "c"))
    assert os.stat(tmp_path / "c").st_ino == os.stat(tmp_path / "a").st_ino


def test_fsync_dir_fsyncs_the_folder_itself(tmp_path: Path) -> None:
    seen: list[int] = []

    def fsync(fd: int) -> None:
        seen.append(os.fstat(fd).st_ino)
        os.fsync(fd)

    osfs.fsync_dir(str(tmp_path), fsync)
    assert seen == [os.stat(tmp_path).st_ino]
    with pytest.raises(NotADirectoryError):
        (tmp_path / "file").write_bytes(b"")
        osfs.fsync_dir(str(tmp_path / "file"))


def test_positional_io_and_the_open_flags(tmp_path: Path) -> None:
    path = tmp_path / "f"
    fd = os.open(path, osfs.UPDATE, 0o644)
    try:
        assert osfs.pwrite(fd, b"hello world", 0) == 11
        assert osfs.pwrite(fd, b"W", 6) == 1
        assert osfs.pread(fd, 5, 6) == b"World"
    finally:
        os.close(fd)
    (tmp_path / "link").symlink_to(path)
    for flags in (osfs.READ, osfs.UPDATE, osfs.APPEND):
        with pytest.raises(OSError):  # a symlink is refused, never followed
            os.open(tmp_path / "link", flags)
    with pytest.raises(FileExistsError):
        os.open(path, osfs.CREATE_NEW, 0o644)


def test_no_other_module_calls_the_platform_specific_primitives() -> None:
    """Locks, links and folder fsyncs go through events/osfs.py (the Windows branch lives there only)."""
    root = Path(__file__).resolve().parents[2]
    offenders = []
    for folder in ("continuity", "events", "projections"):
        for path in (root / folder).rglob("*.py"):
            if path.name == "osfs.py":
                continue
            text = path.read_text(encoding="utf-8")
            for needle in ("import fcntl", "fcntl.flock", "os.link(", "os.O_DIRECTORY", "os.pread(",
                           "os.pwrite("):
                if needle in text:
                    offenders.append(f"{path.relative_to(root)}: {needle.strip()}")
    assert offenders == []


# -- the Windows branch, with a stand-in for msvcrt -------------------------------------------
class _Msvcrt(types.ModuleType):
    LK_LOCK, LK_UNLCK = 1, 0

    def __init__(self, failures: int) -> None:
        super().__init__("msvcrt")
        self.failures = failures
        self.calls: list[tuple[int, int, int]] = []

    def locking(self, fd: int, mode: int, nbytes: int) -> None:
        self.calls.append((mode, nbytes, os.lseek(fd, 0, os.SEEK_CUR)))
        if mode == self.LK_LOCK and self.failures:
            self.failures -= 1
            os.lseek(fd, 1, os.SEEK_SET)  # as if the runtime moved the position
            raise OSError(36, "Resource deadlock avoided")  # what LK_LOCK raises after its ten tries


def _windows_osfs(monkeypatch: pytest.MonkeyPatch, msvcrt: _Msvcrt) -> types.ModuleType:
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setitem(sys.modules, "msvcrt", msvcrt)
    spec = importlib.util.spec_from_file_location("osfs_windows", osfs.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.WINDOWS
    return module


def test_windows_lock_waits_through_lk_lock_give_ups_and_locks_the_first_byte(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    msvcrt = _Msvcrt(failures=3)
    windows = _windows_osfs(monkeypatch, msvcrt)
    fd = os.open(tmp_path / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.lseek(fd, 7, os.SEEK_SET)
        windows.lock(fd, shared=True)  # no shared lock there: the exclusive one
        assert msvcrt.calls == [(msvcrt.LK_LOCK, 1, 0)] * 4  # retried from byte 0 each time
        windows.unlock(fd)
        assert msvcrt.calls[-1] == (msvcrt.LK_UNLCK, 1, 0)
    finally:
        os.close(fd)


def test_windows_folder_fsync_is_a_no_op_and_positional_io_seeks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    windows = _windows_osfs(monkeypatch, _Msvcrt(failures=0))
    called: list[int] = []
    windows.fsync_dir(str(tmp_path), called.append)
    assert called == []
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        assert windows.pwrite(fd, b"abcdef", 0) == 6
        assert windows.pwrite(fd, b"X", 2) == 1
        assert windows.pread(fd, 3, 1) == b"bXd"
    finally:
        os.close(fd)


def test_windows_folder_lock_uses_a_lock_file_in_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    msvcrt = _Msvcrt(failures=0)
    windows = _windows_osfs(monkeypatch, msvcrt)
    with windows.folder_lock(str(tmp_path)):
        assert (tmp_path / ".lock").is_file()
        assert msvcrt.calls == [(msvcrt.LK_LOCK, 1, 0)]


class _BrokenMsvcrt(_Msvcrt):
    """`locking` failing for another reason than a held lock (a closed descriptor, a read-only share)."""

    def locking(self, fd: int, mode: int, nbytes: int) -> None:
        self.calls.append((mode, nbytes, os.lseek(fd, 0, os.SEEK_CUR)))
        if len(self.calls) > 50:
            raise AssertionError("lock() kept retrying an error that is not a held lock")
        raise OSError(13, "Permission denied")


def test_windows_lock_raises_errors_other_than_a_held_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only LK_LOCK's give-up (EDEADLOCK) is waited through; any other error is raised at once, never spun on."""
    msvcrt = _BrokenMsvcrt(failures=0)
    windows = _windows_osfs(monkeypatch, msvcrt)
    fd = os.open(tmp_path / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        with pytest.raises(PermissionError):
            windows.lock(fd)
        assert len(msvcrt.calls) == 1
    finally:
        os.close(fd)


def test_try_lock_takes_a_free_lock_and_never_waits_for_a_held_one(tmp_path: Path) -> None:
    """flock locks of two descriptors exclude each other, in one process as across two."""
    lock_file = tmp_path / "lock"
    first, second = (os.open(lock_file, osfs.UPDATE, 0o644) for _ in range(2))
    try:
        assert osfs.try_lock(first)
        started = time.monotonic()
        assert not osfs.try_lock(second)
        assert time.monotonic() - started < 5
        osfs.unlock(first)
        assert osfs.try_lock(second)
    finally:
        os.close(first)
        os.close(second)


class _HeldMsvcrt(_Msvcrt):
    """LK_NBLCK on a byte another process holds: EACCES (the C runtime's locking violation), or `error`."""

    LK_NBLCK = 2

    def __init__(self, error: int) -> None:
        super().__init__(failures=0)
        self.error = error

    def locking(self, fd: int, mode: int, nbytes: int) -> None:
        self.calls.append((mode, nbytes, os.lseek(fd, 0, os.SEEK_CUR)))
        if self.error:
            raise OSError(self.error, os.strerror(self.error))


@pytest.mark.parametrize(("error", "expected"), [(0, True), (13, False), (36, False), (9, OSError)])
def test_windows_try_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: int, expected: object) -> None:
    """The Windows branch tries byte 0 once: free is True, held (EACCES, EDEADLOCK) False, anything else raised."""
    msvcrt = _HeldMsvcrt(error)
    windows = _windows_osfs(monkeypatch, msvcrt)
    fd = os.open(tmp_path / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.lseek(fd, 5, os.SEEK_SET)
        if expected is OSError:
            with pytest.raises(OSError):
                windows.try_lock(fd)
        else:
            assert windows.try_lock(fd) is expected
        assert msvcrt.calls == [(msvcrt.LK_NBLCK, 1, 0)]
    finally:
        os.close(fd)


def _holder(lock_file: Path, shared: bool) -> subprocess.Popen[str]:
    """A process holding the lock on `lock_file` (a file, or a folder as folder_lock locks it) until killed (it
    says `held` once it does)."""
    code = textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from events import osfs
        path = {str(lock_file)!r}
        fd = osfs.open_folder_lock(path) if os.path.isdir(path) else os.open(path, osfs.UPDATE, 0o644)
        osfs.lock(fd, shared={shared!r})
        print("held", flush=True)
        time.sleep(120)
    """)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "held\n"
    return child


@pytest.mark.parametrize(("held_shared", "shared", "taken"), [(False, False, False), (False, True, False),
                                                              (True, False, False), (True, True, True)])
def test_lock_within_gives_up_on_a_held_lock_and_takes_a_compatible_one(tmp_path: Path, held_shared: bool,
                                                                         shared: bool, taken: bool) -> None:
    """lock_within polls for `seconds` and says whether it holds the lock: an exclusive holder keeps everyone out,
    shared holders keep writers out only; once the holder is gone the lock is taken."""
    lock_file = tmp_path / "lock"
    holder = _holder(lock_file, held_shared)
    fd = os.open(lock_file, osfs.UPDATE, 0o644)
    try:
        assert osfs.lock_within(fd, 0.2, shared=shared) is taken
        if taken:
            osfs.unlock(fd)
        holder.kill()
        holder.wait()
        assert osfs.lock_within(fd, 5, shared=shared) is True
    finally:
        os.close(fd)
        holder.kill()
        holder.wait()


def test_a_folder_lock_with_a_bound_raises_instead_of_waiting(tmp_path: Path) -> None:
    """folder_lock(seconds=...) raises OSError while another process holds the folder's lock (folder_locked then
    writes without it); without a bound it waits."""
    from continuity.core.fsio import folder_locked

    holder = _holder(tmp_path, False)  # the folder itself is the lock on POSIX
    try:
        with pytest.raises(OSError, match="locked by another process"), osfs.folder_lock(str(tmp_path), 0.1):
            pass
        ran = []
        with folder_locked(str(tmp_path), 0.1):
            ran.append(True)
        assert ran == [True]
    finally:
        holder.kill()
        holder.wait()


def test_open_nowhere_else_tells_a_file_open_in_another_process(tmp_path: Path) -> None:
    path = tmp_path / "doc"
    path.write_bytes(b"x")
    fd = os.open(path, osfs.UPDATE, 0o644)
    try:
        assert osfs.open_nowhere_else(fd)
        assert osfs.open_nowhere_else(fd)  # the lease was let go: asked again, the same answer
        holder = subprocess.Popen([sys.executable, "-c", f"import time; f = open({str(path)!r}, 'rb'); "
                                   "print('open', flush=True); time.sleep(30)"], stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "open\n"
            assert not osfs.open_nowhere_else(fd)
        finally:
            holder.kill()
            holder.wait()
        assert osfs.open_nowhere_else(fd)
        with open(path, "rb"):  # another open file of this process counts too
            assert not osfs.open_nowhere_else(fd)
        # an open by name right after the answer does not wait for a lease, nor signal this process
        started = time.monotonic()
        assert path.read_bytes() == b"x" and time.monotonic() - started < 5
    finally:
        os.close(fd)


def test_open_nowhere_else_cannot_tell_on_windows(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    windows = _windows_osfs(monkeypatch, _Msvcrt(failures=0))
    fd = os.open(tmp_path / "doc", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        assert windows.open_nowhere_else(fd) is False
    finally:
        os.close(fd)


@pytest.mark.parametrize("by_folder", [True, False])
def test_mtimes_in_stats_names_through_the_folder_as_stat_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_folder: bool,
) -> None:
    """Each entry's mtime as `os.stat` gives it (a symlink followed), a name that cannot be stat'ed left out; by the
    folder's descriptor, or by path where the platform has none (as Windows)."""
    if not by_folder:
        monkeypatch.setattr(os, "supports_dir_fd", set())
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    os.utime(tmp_path / "b", ns=(10**18, 10**18 + 7))
    (tmp_path / "c").symlink_to(tmp_path / "b")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    names = ["a", "b", "c", "dangling", "missing", "../" + tmp_path.name + "/a"]
    found = osfs.mtimes_in(str(tmp_path), names)
    expected = {name: os.stat(tmp_path / name).st_mtime_ns for name in names if os.path.exists(tmp_path / name)}
    assert found == expected and found["b"] == found["c"] == 10**18 + 7 and "dangling" not in found
    linked = tmp_path / "linked"
    linked.symlink_to(tmp_path, target_is_directory=True)
    assert osfs.mtimes_in(str(linked), ["b"]) == {"b": 10**18 + 7}  # a link to a folder: by path, as os.stat
    assert osfs.mtimes_in(str(tmp_path / "missing"), ["a"]) == {}
