"""state.json and projects.json are rewritten by every catch-up through `fsio.write_swapped`: the next bytes go into
a spare file in place and the spare is renamed over the document, the replaced file kept as the next spare. These
tests hold it to `write_atomic`'s promise (a reader finds the old bytes or the new, whole; nothing outside is ever
written) on real files, with planted links, concurrent readers and writers, and writers killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from continuity.core import fsio
from continuity.core.fsio import folder_locked, spare_names, write_if_changed, write_swapped
from events import osfs

ROOT = Path(__file__).resolve().parents[2]


def names_in(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder of its own (tmp_path holds the test's home)."""
    made = tmp_path / "store"
    made.mkdir()
    return made


def test_each_write_replaces_the_document_and_reuses_the_file_it_replaced(folder: Path) -> None:
    path = str(folder / "state.json")
    spare, prior = spare_names(path)
    inodes = []
    for round_ in range(6):
        data = f'{{"round": {round_}}}\n'.encode() * (round_ + 1)
        write_swapped(path, data)
        assert Path(path).read_bytes() == data
        inodes.append(os.stat(path).st_ino)
    # two files take turns: the one a write replaced is the next write's spare (no new file per write)
    assert len(set(inodes[1:])) == 2 and inodes[1] == inodes[3] == inodes[5] and inodes[2] == inodes[4]
    assert names_in(folder) == sorted([os.path.basename(spare), "state.json"])
    assert not os.path.exists(prior)
    assert os.stat(spare).st_nlink == 1 and os.stat(path).st_nlink == 1


def test_a_shorter_document_after_a_longer_one_keeps_no_old_bytes(folder: Path) -> None:
    path = str(folder / "projects.json")
    for data in (b"x" * 9000, b"y" * 10, b"z" * 5000, b"w" * 3, b""):
        write_swapped(path, data)
        assert Path(path).read_bytes() == data


def test_a_reader_that_opened_the_document_keeps_what_it_opened_through_later_writes(folder: Path) -> None:
    """The replaced file becomes the next spare: it is written into only when nobody has it open any more."""
    path = str(folder / "state.json")
    write_swapped(path, b"first\n")
    write_swapped(path, b"second\n")
    with open(path, "rb") as reader:
        for data in (b"third, longer than the others\n", b"4\n", b"fifth\n"):
            write_swapped(path, data)
            assert Path(path).read_bytes() == data
        assert reader.read() == b"second\n"
    write_swapped(path, b"sixth\n")
    assert Path(path).read_bytes() == b"sixth\n"


def test_a_reader_in_another_process_keeps_its_bytes(folder: Path) -> None:
    path = str(folder / "projects.json")
    write_swapped(path, b"one\n")
    write_swapped(path, b"two\n")
    reader = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        with open({path!r}, "rb") as held:
            print("open", flush=True)
            sys.stdin.readline()
            print(held.read().decode(), end="", flush=True)
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert reader.stdin is not None and reader.stdout is not None
    assert reader.stdout.readline() == "open\n"
    for data in (b"three\n", b"four, longer\n", b"five\n", b"six\n"):
        write_swapped(path, data)
    reader.stdin.write("go\n")
    reader.stdin.flush()
    assert reader.stdout.read() == "two\n"
    assert reader.wait(timeout=30) == 0
    assert Path(path).read_bytes() == b"six\n"


def test_the_documents_follow_the_umask_of_each_write(folder: Path) -> None:
    """As a new temp file would: the reused files get the mode of the writer's umask, whichever made them."""
    path = str(folder / "state.json")
    old = os.umask(0o077)
    try:
        for data in (b"one", b"two", b"three"):
            write_swapped(path, data)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        os.umask(0o022)
        for data in (b"four", b"five"):
            write_swapped(path, data)
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
        os.umask(0o027)
        write_swapped(path, b"six")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    finally:
        os.umask(old)


@pytest.mark.parametrize("planted", ["hard link", "symlink", "fifo", "folder", "symlink at prior",
                                     "symlink at the document"])
def test_nothing_planted_at_the_spare_names_is_written_through(tmp_path: Path, planted: str) -> None:
    """A file outside that a second name, a link or a FIFO at the spare's names leads to stays as it was."""
    store = tmp_path / "store"
    store.mkdir()
    victim = tmp_path / "victim"
    victim.write_bytes(b"not yours\n")
    path = str(store / "state.json")
    write_swapped(path, b"before\n")
    write_swapped(path, b"before, again\n")
    spare, prior = spare_names(path)
    os.unlink(spare)
    if planted == "hard link":
        os.link(victim, spare)
    elif planted == "symlink":
        os.symlink(victim, spare)
    elif planted == "fifo":
        os.mkfifo(spare)
    elif planted == "folder":
        os.mkdir(spare)
    elif planted == "symlink at prior":
        os.symlink(victim, prior)
    else:  # replaced, not written through, and never kept as the next spare (`verify` refuses links in the store)
        os.unlink(path)
        os.symlink(victim, path)
    for round_ in range(3):
        data = f"after {round_}\n".encode()
        write_swapped(path, data)
        assert Path(path).read_bytes() == data
        assert stat.S_ISREG(os.lstat(path).st_mode) and os.stat(path).st_nlink == 1
        assert not os.path.islink(spare) and not os.path.islink(prior)  # no link left in the store for `verify`
    assert victim.read_bytes() == b"not yours\n" and os.stat(victim).st_nlink == 1
    if planted == "folder":  # never removed (it could hold anything): the plain rename each time
        assert os.path.isdir(spare)
    else:
        assert stat.S_ISREG(os.lstat(spare).st_mode) and os.stat(spare).st_nlink == 1
        assert not os.path.lexists(prior)


def test_a_document_with_a_second_name_is_never_written_into_through_it(folder: Path) -> None:
    """A user who hard-links state.json somewhere keeps the bytes it had, as with a plain rename."""
    path = str(folder / "state.json")
    write_swapped(path, b"one\n")
    os.link(path, folder / "mine.json")
    for data in (b"two\n", b"three\n", b"four\n"):
        write_swapped(path, data)
        assert Path(path).read_bytes() == data
    assert (folder / "mine.json").read_bytes() == b"one\n"


@pytest.mark.parametrize("left", ["prior only", "prior and spare", "spare written half"])
def test_what_a_killed_writer_leaves_is_taken_up_by_the_next_write(folder: Path, left: str) -> None:
    """The states a SIGKILL can leave between the steps (checked one by one; the kill loop below hits them too)."""
    path = str(folder / "state.json")
    write_swapped(path, b"one\n")
    write_swapped(path, b"two\n")
    spare, prior = spare_names(path)
    if left == "prior only":  # killed after the rename over the document, before the kept file became the spare
        os.rename(spare, prior)
    elif left == "prior and spare":  # killed after the hard link, before the rename
        os.link(path, prior)
    else:  # killed while writing the spare
        Path(spare).write_bytes(b"{half")
    assert Path(path).read_bytes() == b"two\n"
    write_swapped(path, b"three\n")
    assert Path(path).read_bytes() == b"three\n"
    write_swapped(path, b"four\n")
    assert Path(path).read_bytes() == b"four\n"
    assert names_in(folder) == sorted([os.path.basename(spare), "state.json"])


def test_without_hard_links_each_write_is_a_plain_rename(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file system without hard links (FAT, some network mounts) cannot be had here: `osfs.link` is made to fail
    as it does there (EPERM), and each write still replaces the document whole."""
    def no_links(source: str, target: str) -> None:
        raise PermissionError(1, "Operation not permitted", source)

    monkeypatch.setattr(osfs, "link", no_links)
    path = str(folder / "state.json")
    for round_ in range(4):
        data = f"round {round_}\n".encode()
        write_swapped(path, data)
        assert Path(path).read_bytes() == data
    assert names_in(folder) == ["state.json"]  # the spare, renamed over the document each time


def test_a_full_disk_names_the_document_and_leaves_it_whole(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(folder / "state.json")
    write_swapped(path, b"kept\n")
    write_swapped(path, b"kept too\n")

    def full(fd: int, data: bytes, offset: int) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(osfs, "pwrite", full)
    with pytest.raises(OSError) as raised:
        write_swapped(path, b"new\n")
    assert raised.value.errno == 28 and raised.value.filename == path
    assert Path(path).read_bytes() == b"kept too\n"


def test_write_if_changed_swaps_only_when_asked(folder: Path) -> None:
    path = str(folder / "doc.json")
    assert write_if_changed(path, b"1", within=str(folder))
    assert write_if_changed(path, b"2", within=str(folder))
    assert names_in(folder) == ["doc.json"]
    assert write_if_changed(path, b"3", within=str(folder), swap=True)
    assert not write_if_changed(path, b"3", within=str(folder), swap=True)
    assert Path(path).read_bytes() == b"3" and len(names_in(folder)) == 2


def test_a_catch_up_without_the_folder_lock_writes_the_plain_way(project: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The spare is shared: a catch-up that could not take the folder's lock (another process held it past the
    wait) must not write into it, and still writes both documents."""
    from continuity.cli import main
    from continuity.core.store import find_store
    from continuity.readside import writers

    store = find_store()
    folder = Path(store.path)
    for message in ("one", "one again"):
        assert main(["log", "-m", message]) == 0
        writers.refresh(store)
    spares = {os.path.basename(spare_names(str(folder / name))[0]) for name in ("state.json", "projects.json")}
    assert spares <= set(os.listdir(folder))
    for name in spares:
        os.unlink(folder / name)
    monkeypatch.setattr(writers, "DOCUMENT_LOCK_SECONDS", 0.05)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import fcntl, os, time
        fd = os.open({str(folder)!r}, os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX)
        print("held", flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        before = (folder / "state.json").read_bytes()
        assert main(["log", "-m", "two"]) == 0
        assert writers.refresh(store).folded == 1
        assert spares.isdisjoint(os.listdir(folder))
        assert (folder / "state.json").read_bytes() != before
        newest = json.loads((folder / "projects.json").read_bytes())["last_event"]
        assert json.loads((folder / "state.json").read_bytes())["latest_event"].endswith(newest)
    finally:
        holder.kill()
        holder.wait()
    assert main(["log", "-m", "three"]) == 0
    writers.refresh(store)
    assert spares <= set(os.listdir(folder))


WRITER = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, sys.argv[1])
    from continuity.core.fsio import folder_locked, write_swapped
    folder, who, rounds = sys.argv[2], sys.argv[3], int(sys.argv[4])
    path = os.path.join(folder, "state.json")
    for round_ in range(rounds):
        body = (who * (1 + (round_ * 37) % 9000)).encode()
        with folder_locked(folder, 5.0) as held:
            assert held
            write_swapped(path, b"<" + body + b">")
        if round_ == 0 and rounds > 10**6:
            print("writing", flush=True)
""")


def complete(data: bytes) -> bool:
    """One version, whole: `<` + one letter repeated + `>`."""
    return len(data) >= 3 and data[:1] == b"<" and data[-1:] == b">" and len(set(data[1:-1])) == 1


def test_concurrent_writers_and_a_reader_only_ever_see_whole_documents(folder: Path) -> None:
    """Three processes rewrite one document under the folder's lock while this one reads it in a loop."""
    path = folder / "state.json"
    path.write_bytes(b"<s>")
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(ROOT), str(folder), letter, "400"])
               for letter in "abc"]
    reads = 0
    try:
        while any(writer.poll() is None for writer in writers) or reads < 50:
            data = path.read_bytes()
            assert complete(data), data[:40]
            reads += 1
    finally:
        for writer in writers:
            assert writer.wait(timeout=120) == 0
    assert complete(path.read_bytes()) and reads >= 50
    assert set(os.listdir(folder)) == {"state.json", os.path.basename(spare_names(str(path))[0])}


@pytest.mark.stress
def test_kill9_of_writers_never_leaves_a_cut_document(folder: Path) -> None:
    """80 writers killed at random points: the document is always one whole version, and the next write cleans up."""
    path = folder / "state.json"
    path.write_bytes(b"<s>")
    for kill in range(80):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(ROOT), str(folder), "abcdefgh"[kill % 8],
                                   str(10**7)], stdout=subprocess.PIPE, text=True)
        assert writer.stdout is not None
        writer.stdout.readline()  # importing done, writing
        time.sleep(0.001 * (kill % 13))
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        assert complete(path.read_bytes())
    with folder_locked(str(folder)) as held:
        assert held
        write_swapped(str(path), b"<z>")
    assert path.read_bytes() == b"<z>"
    assert set(os.listdir(folder)) == {"state.json", os.path.basename(spare_names(str(path))[0])}


def test_git_ignores_the_spare_files_in_a_store(project: Path) -> None:
    """The store's own .gitignore (older stores' too: `*.tmp`) keeps them out of a commit of the store."""
    from continuity.cli import main
    from continuity.core.store import find_store
    from continuity.readside import writers

    store = find_store()
    assert main(["log", "-m", "one"]) == 0
    writers.refresh(store)
    assert main(["log", "-m", "two"]) == 0
    writers.refresh(store)
    leftovers = [name for name in os.listdir(store.path) if name.endswith(fsio.SPARE_SUFFIXES)]
    assert sorted(leftovers) == [".projects.json.spare.tmp", ".state.json.spare.tmp"]
    (project / ".gitignore").write_text("")  # a project that commits its store
    git = ["git", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    shown = subprocess.run([*git, "status", "--porcelain", "--untracked-files=all", "--ignored=no", "."],
                           cwd=store.path, check=True, capture_output=True, text=True).stdout
    assert "spare" not in shown and "state.json" not in shown and "events/" in shown


def test_a_lease_another_program_holds_on_the_spare_is_not_waited_for(folder: Path) -> None:
    """Opening a file to write breaks a lease on it and waits for its holder (45 s, fs.lease-break-time): a Samba
    server's oplock, say. The spare is opened without waiting, and the plain way taken."""
    path = str(folder / "state.json")
    for data in (b"one\n", b"two\n"):
        write_swapped(path, data)
    spare = spare_names(path)[0]
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import fcntl, os, signal, time
        signal.signal(signal.SIGUSR1, lambda *_: None)
        fd = os.open({spare!r}, os.O_RDONLY)
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGUSR1)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
        print("leased", flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "leased\n"
        started = time.monotonic()
        write_swapped(path, b"three\n")
        assert time.monotonic() - started < 5
        assert Path(path).read_bytes() == b"three\n"
    finally:
        holder.kill()
        holder.wait()


def test_without_leases_no_spare_is_made(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """macOS and Windows have no leases to tell a reader by: each write is a plain temp file and rename, with no
    spare made and removed on the way. (This Linux has leases: the switch is turned off as those systems have it.)"""
    monkeypatch.setattr(osfs, "LEASES", False)
    path = str(folder / "state.json")
    made = []
    real_open = os.open

    def recording(name: str, *args: int) -> int:
        made.append(os.path.basename(name))
        return real_open(name, *args)

    monkeypatch.setattr(os, "open", recording)
    for data in (b"one", b"two", b"three"):
        write_swapped(path, data)
    assert Path(path).read_bytes() == b"three" and names_in(folder) == ["state.json"]
    assert not any(name.endswith(fsio.SPARE_SUFFIXES) for name in made)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop capabilities with setpriv")
def test_a_folder_that_takes_no_renames_is_named_by_the_document(folder: Path) -> None:
    """A store folder the writer may not change (mode 0555, no capabilities): the error names state.json, as the
    plain way's does, not the spare."""
    path = str(folder / "state.json")
    for data in (b"one\n", b"two\n"):
        write_swapped(path, data)
    os.chmod(folder, 0o555)
    try:
        done = subprocess.run(["setpriv", "--bounding-set=-all", "--inh-caps=-all", sys.executable, "-c",
                               textwrap.dedent(f"""
            import sys
            sys.path.insert(0, {str(ROOT)!r})
            from continuity.core.fsio import write_swapped
            try:
                write_swapped({path!r}, b"three\\n")
            except OSError as error:
                print(error.filename, error.strerror)
        """)], capture_output=True, text=True, timeout=60)
    finally:
        os.chmod(folder, 0o755)
    assert done.stdout.strip() == f"{path} Permission denied", done.stderr
    assert Path(path).read_bytes() == b"two\n"


def test_a_spare_that_cannot_be_used_now_is_kept_not_made_again(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the lease cannot be had (a reader holds the spare; a file system that cannot tell, as some network and
    container mounts: made so here by turning the check off, a stand-in for such a mount), each write is a plain
    temp file and rename, and the spare is kept for later instead of made and removed at every write."""
    path = str(folder / "state.json")
    for data in (b"one", b"two"):
        write_swapped(path, data)
    spare = spare_names(path)[0]
    kept = os.stat(spare).st_ino
    monkeypatch.setattr(osfs, "open_nowhere_else", lambda fd: False)
    for data in (b"three", b"four", b"five"):
        write_swapped(path, data)
        assert Path(path).read_bytes() == data and os.stat(spare).st_ino == kept
    monkeypatch.undo()
    write_swapped(path, b"six")
    assert Path(path).read_bytes() == b"six" and os.stat(path).st_ino == kept  # used again once it can be


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the spare to another user")
def test_another_users_spare_is_replaced_by_ones_own(folder: Path) -> None:
    """A spare another user made (a lease on it cannot be had, nor its mode set) is removed, not kept for good."""
    path = str(folder / "state.json")
    for data in (b"one", b"two"):
        write_swapped(path, data)
    spare = spare_names(path)[0]
    os.chown(spare, 65534, 65534)
    for data in (b"three", b"four"):
        write_swapped(path, data)
        assert Path(path).read_bytes() == data
    assert os.stat(spare).st_uid == os.geteuid() and os.stat(path).st_uid == os.geteuid()
