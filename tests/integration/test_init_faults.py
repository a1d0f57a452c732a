"""`init` failing at any disk-changing call (a full disk, an I/O error; tests/injected.py).

It said "store not initialized" and left a half-made store (config.json without its schemas, no
`.gitignore` entry) that the next `log` wrote into, events and all, as if it were whole; and an
append to the user's `.gitignore` cut short left half a line in it. Now a store init made is
taken away whole when init cannot finish it, and `.gitignore` keeps its own bytes or gains the
whole entry.
"""

from __future__ import annotations

import errno
import subprocess
from pathlib import Path

import pytest

from tests.injected import SyscallFaults, run

USERS_OWN = b"# my project\nnode_modules/\n*.log"  # no final line break: ours starts with one


def _calls(argv: list[str]) -> int:
    counter = SyscallFaults(errno.ENOSPC)
    assert run(argv, counter)[0] == 0
    return counter.calls


@pytest.mark.parametrize("error, persistent", [(errno.ENOSPC, True), (errno.EIO, False)], ids=["ENOSPC", "EIO"])
def test_a_new_store_is_whole_or_not_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: int,
                                           persistent: bool) -> None:
    scratch = tmp_path / "counting"
    scratch.mkdir()
    monkeypatch.chdir(scratch)
    subprocess.run(["git", "init", "-q"], check=True)
    (scratch / ".gitignore").write_bytes(USERS_OWN)
    total = _calls(["init", "--project", "demo"])
    assert total > 10
    for at in range(total):
        project = tmp_path / f"p{at}"
        project.mkdir()
        monkeypatch.chdir(project)
        subprocess.run(["git", "init", "-q"], check=True)
        (project / ".gitignore").write_bytes(USERS_OWN)
        code, _, err = run(["init", "--project", "demo"], SyscallFaults(error, at=at, persistent=persistent))
        assert "Traceback" not in err
        ignore = (project / ".gitignore").read_bytes()
        if code == 0:
            assert (project / ".agent" / "runtime-continuity" / "config.json").is_file()
            assert ignore.startswith(USERS_OWN + b"\n") and ignore.endswith(b".agent/runtime-continuity/\n")
        else:
            assert code == 5 and err.count("\n") == 1, (at, err)
            assert ignore == USERS_OWN, (at, ignore)
            if "store initialized, but" in err:  # the store is whole; only its line in .gitignore failed, and says so
                assert "is not git-ignored" in err
                assert run(["log", "-m", "into a whole store"])[0] == 0
            else:
                assert not (project / ".agent").exists(), (at, sorted(p.name for p in project.rglob("*")))
                assert run(["log", "-m", "after a failed init"])[0] == 3  # no store: nothing to write into
        assert run(["init", "--project", "demo"])[0] == 0
        assert (project / ".gitignore").read_bytes().count(b".agent/runtime-continuity/") == 1


def test_an_existing_store_is_kept_and_gitignore_is_never_left_with_half_a_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    subprocess.run(["git", "init", "-q"], check=True)
    assert run(["init", "--project", "demo"])[0] == 0
    assert run(["log", "-m", "kept"])[0] == 0
    (project / ".gitignore").write_bytes(USERS_OWN)
    total = _calls(["init"])
    assert total >= 3
    for at in range(total):
        (project / ".gitignore").write_bytes(USERS_OWN)
        code, _, err = run(["init"], SyscallFaults(errno.ENOSPC, at=at, short=True))
        assert code in (0, 5) and "Traceback" not in err, (at, err)
        ignore = (project / ".gitignore").read_bytes()
        assert ignore == USERS_OWN or (
            ignore.startswith(USERS_OWN + b"\n") and ignore.endswith(b".agent/runtime-continuity/\n")), (at, ignore)
        assert (project / ".agent" / "runtime-continuity" / "config.json").is_file()
        code, out, _ = run(["events", "list"])
        assert code == 0 and "kept" in out


def test_gitignore_cut_short_by_the_file_size_limit_keeps_its_own_bytes(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A real short write: under RLIMIT_FSIZE the kernel writes what fits and fails the rest (EFBIG), as a disk
    filling up does. The append left `.agent/runtime-conti` without a line break in the user's file."""
    import os
    import resource
    import signal
    import sys

    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    subprocess.run(["git", "init", "-q"], check=True)
    assert run(["init", "--project", "demo"])[0] == 0
    (project / ".gitignore").write_bytes(USERS_OWN)

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (len(USERS_OWN) + 40, resource.RLIM_INFINITY))

    env = {key: value for key, value in os.environ.items() if not key.startswith("CONTINUITY_")}
    done = subprocess.run([sys.executable, "-m", "continuity", "init"], cwd=project, env=env, capture_output=True,
                          text=True, preexec_fn=limited, timeout=120)
    assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
    assert (project / ".gitignore").read_bytes() == USERS_OWN
    assert run(["init"])[0] == 0
    assert (project / ".gitignore").read_bytes().endswith(b"*.log\n# continuity's store: its events travel on the "
                                                          b"`continuity` git branch (continuity sync)\n"
                                                          b".agent/runtime-continuity/\n")


def test_a_dangling_gitignore_link_stays_a_link_when_the_append_fails(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A `.gitignore` that is a link to a file not made yet: the append makes the target, and a failed one removed
    the user's link instead, leaving the empty target. The link stays now, and the target is not left behind."""
    import os

    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    subprocess.run(["git", "init", "-q"], check=True)
    os.symlink("gitignore-target", project / ".gitignore")
    fails_on_write = SyscallFaults(errno.ENOSPC, match=lambda name, first: name == "write" and isinstance(first, int)
                                   and os.readlink(f"/proc/self/fd/{first}").endswith("gitignore-target"))
    code, _, err = run(["init", "--project", "demo"], fails_on_write)
    assert code == 5 and "is not git-ignored" in err, err
    assert os.readlink(project / ".gitignore") == "gitignore-target"
    assert not (project / "gitignore-target").exists()
    assert run(["init"])[0] == 0
    assert (project / "gitignore-target").read_bytes().endswith(b".agent/runtime-continuity/\n")


def test_a_store_finished_by_another_process_meanwhile_is_never_taken_back(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Init takes back only what it made: when another process finished the store and wrote an event into it while
    this init ran, a failure here leaves that store (and its event) alone."""
    from continuity.core import initialize

    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    real = initialize.missing_folders
    armed = []

    def meanwhile(path: str) -> list[str]:
        found = real(path)  # as this init saw it: no store yet
        monkeypatch.setattr(initialize, "missing_folders", real)  # the other process's init is an ordinary one
        assert run(["init", "--project", "demo"])[0] == 0  # then another init finishes one, and a log writes to it
        assert run(["log", "-m", "written meanwhile"])[0] == 0
        armed.append(True)  # and this init's next write fails
        return found

    monkeypatch.setattr(initialize, "missing_folders", meanwhile)
    code, _, err = run(["init", "--project", "demo", "--language", "zh"],
                       SyscallFaults(errno.ENOSPC, match=lambda name, first: bool(armed)))
    assert code == 5, err
    code, out, _ = run(["events", "list"])
    assert code == 0 and "written meanwhile" in out


def test_init_that_cannot_update_an_existing_store_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`init --language zh` on a store it cannot write (read-only) said "store not initialized", of a store that was
    initialized and stays so: it says the store was not updated, exit 5, and the store is as it was."""
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    assert run(["init", "--project", "demo"])[0] == 0
    assert run(["log", "-m", "kept"])[0] == 0
    config = project / ".agent" / "runtime-continuity" / "config.json"
    before = config.read_bytes()
    faults = SyscallFaults(errno.EROFS, match=lambda name, first: name in ("open", "replace", "rename") and
                           "config.json" in str(first))
    code, _, err = run(["init", "--language", "zh"], faults)
    assert faults.hits and code == 5, (faults.hits, err)
    assert err.startswith("continuity: error: store not updated (it was initialized before): Read-only file "), err
    assert config.read_bytes() == before
    code, out, _ = run(["events", "list"])
    assert code == 0 and "kept" in out
