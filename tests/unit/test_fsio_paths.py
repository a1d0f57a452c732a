"""The store's one folder check: where a derived write may go, for every shape of path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from continuity.core.fsio import ensure_folder, relative_folder
from events.errors import StoreUnsafe

PARTS = st.sampled_from(["a", "b", ".", "..", "", ".a", "...", "a.", "..b", "store"])
PATHS = st.tuples(st.booleans(), st.lists(PARTS, max_size=6)).map(
    lambda found: ("/" if found[0] else "") + "/".join(found[1]))


@given(base=PATHS, below=st.lists(PARTS, max_size=5), trailing=st.booleans())
def test_relative_folder_is_relpath(base: str, below: list[str], trailing: bool) -> None:
    """The quick answer equals os.path.relpath for any base and any folder below or beside it."""
    if not base:
        base = "."
    folder = base + "".join("/" + part for part in below) + ("/" if trailing else "")
    assert relative_folder(base, folder) == os.path.relpath(folder, base)


@given(base=PATHS, other=PATHS)
def test_relative_folder_of_unrelated_paths(base: str, other: str) -> None:
    if not base or not other or base.startswith("/") != other.startswith("/"):
        return
    assert relative_folder(base, other) == os.path.relpath(other, base)


@pytest.mark.parametrize("below", ["..", "../x", "a/../..", "a/./../../x", "./..", "a//../../x"])
def test_ensure_folder_refuses_a_folder_that_climbs_out(tmp_path: os.PathLike[str], below: str) -> None:
    base = os.path.join(str(tmp_path), "store")
    os.mkdir(base)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(StoreUnsafe, match="outside"):
        ensure_folder(base, base + "/" + below)
    assert sorted(os.listdir(tmp_path)) == before and os.listdir(base) == []


def test_ensure_folder_makes_real_folders_and_refuses_a_link(tmp_path: os.PathLike[str]) -> None:
    base = os.path.join(str(tmp_path), "store")
    os.mkdir(base)
    ensure_folder(base, base + "/local/models")
    assert os.path.isdir(base + "/local/models") and not os.path.islink(base + "/local")
    os.symlink(str(tmp_path), base + "/out")
    with pytest.raises(StoreUnsafe, match="symlink"):
        ensure_folder(base, base + "/out/x")
    assert not os.path.exists(os.path.join(str(tmp_path), "x"))


@pytest.mark.parametrize("made", ["folder", "symlink"])
def test_ensure_folder_when_another_process_makes_it_first(tmp_path: os.PathLike[str], made: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Two writers making `archives/` at once: the one whose mkdir finds it made goes on when it is a real folder
    (was: FileExistsError, so its archive JSON was not written), and still refuses a link made in between."""
    base = os.fspath(tmp_path)
    target = os.path.join(base, "archives")
    real_mkdir = os.mkdir

    def raced(path: str, *args: object) -> None:
        if path == target:  # the other process wins the race between our lstat and our mkdir
            if made == "folder":
                real_mkdir(path)
            else:
                os.symlink(os.path.join(base, "elsewhere"), path)
        real_mkdir(path)

    monkeypatch.setattr(os, "mkdir", raced)
    if made == "folder":
        ensure_folder(base, target)
        assert os.path.isdir(target) and not os.path.islink(target)
    else:
        with pytest.raises(StoreUnsafe):
            ensure_folder(base, target)


def test_write_atomic_names_the_file_it_could_not_write_or_the_temp_in_its_way(tmp_path: Path) -> None:
    """A write that fails for lack of room names its file (a filename-less error read as stdout's own failure
    at the top); a temp name taken by a folder or a link is named itself, with its errno's class kept."""
    import errno
    import resource

    from continuity.core.fsio import write_atomic

    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "x.json"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, hard))
    try:
        with pytest.raises(OSError) as full:
            write_atomic(target, b"x" * 4096)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert full.value.errno == errno.EFBIG and full.value.filename == str(target)
    assert list(folder.iterdir()) == []
    (folder / f".x.json.{os.getpid()}.tmp").mkdir()
    with pytest.raises((FileExistsError, IsADirectoryError)) as taken:
        write_atomic(target, b"{}")
    assert taken.value.filename.endswith(f".x.json.{os.getpid()}.tmp")


def test_write_atomic_in_a_folder_that_takes_no_new_files_says_so_not_that_the_file_is_missing() -> None:
    """/proc answers ENOENT to a new file beside /proc/version: "No such file" named a file that is there."""
    from continuity.core.fsio import write_atomic

    if not os.path.isfile("/proc/version"):
        pytest.skip("needs Linux's /proc")
    with pytest.raises(FileNotFoundError) as refused:
        write_atomic("/proc/version", b"x")
    assert refused.value.filename == "/proc/version"
    assert refused.value.strerror == "this folder takes no new files"


@pytest.mark.parametrize("refused", [1, 22])  # EPERM, EINVAL
def test_write_atomic_keeps_the_owner_where_it_can_and_writes_where_it_cannot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refused: int) -> None:
    """Root writing another user's file gives the new file that owner; where the owner cannot be given (a user
    namespace's root and an unmapped uid: EINVAL; EPERM), the write goes on as before instead of failing.
    The kernel's refusal is injected: this machine cannot map users."""
    from continuity.core import fsio

    path = tmp_path / "settings.json"
    path.write_bytes(b"{}")
    real = path.stat()
    calls: list[tuple[int, int]] = []

    def fake_stat(where: object, *args: object, **kwargs: object) -> os.stat_result:
        found = os.lstat(where)  # type: ignore[arg-type]
        if str(where) == str(path):
            return os.stat_result((found.st_mode, found.st_ino, found.st_dev, found.st_nlink, 4242, 4343,
                                   found.st_size, found.st_atime, found.st_mtime, found.st_ctime))
        return found

    def fake_fchown(fd: int, uid: int, gid: int) -> None:
        calls.append((uid, gid))
        raise OSError(refused, os.strerror(refused))

    monkeypatch.setattr(fsio.os, "geteuid", lambda: 0)
    monkeypatch.setattr(fsio.os, "stat", fake_stat)
    monkeypatch.setattr(fsio.os, "fchown", fake_fchown)
    fsio.write_atomic(path, b'{"a": 1}', keep_mode=True)
    assert calls == [(4242, 4343)] and path.read_bytes() == b'{"a": 1}'
    assert os.lstat(path).st_uid == real.st_uid  # the writer's own, as before


@pytest.mark.parametrize("name", ["b" * 245 + ".html", "é" * 125 + ".md", "x" * 230, "x" * 255])
def test_a_name_near_the_limit_is_written_and_its_left_over_temp_swept(tmp_path: Path, name: str) -> None:
    """A valid name of up to 255 bytes was refused ("File name too long") when `.<name>.<pid>.tmp` passed the limit:
    the temp stands for it by a shorter stem now, and a killed writer's temp of it is still swept as that file's."""
    import os

    from continuity.core.fsio import temp_stem, write_atomic
    from continuity.core.leftovers import remove_temps_of

    assert len(os.fsencode(name)) <= 255
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / name
    write_atomic(target, b"page\n", sweep=True)
    assert target.read_bytes() == b"page\n" and sorted(os.listdir(folder)) == [name]
    left = folder / f".{temp_stem(name)}.999999999.tmp"  # a writer that is gone
    assert len(os.fsencode(left.name)) <= 255
    left.write_bytes(b"half")
    other = folder / f".{temp_stem('other' + name[5:])}.999999999.tmp"  # another file's: kept
    other.write_bytes(b"half")
    remove_temps_of(str(target), 0.0)
    assert not left.exists() and other.exists()
