"""continuity/facts.py `GitCall`: git started now and read later, with a fake `git` on PATH (no real repository)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from continuity import facts
from continuity.facts import GitCall, GitUnavailable

FAKE_GIT = """#!/bin/sh
case "$FAKE_GIT_MODE" in
  big) head -c 3000000 /dev/zero | tr '\\0' 'o'; head -c 1000000 /dev/zero | tr '\\0' 'e' >&2 ;;
  fail) echo "fatal: not a git repository" >&2; exit 128 ;;
  hang) sleep 60 & echo $! > "$FAKE_GIT_CHILD"; sleep 60 ;;
esac
"""


@pytest.fixture
def fake_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A `git` first on PATH that behaves as FAKE_GIT_MODE says; the pid file of any child it leaves."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "git").write_text(FAKE_GIT)
    (folder / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    child = tmp_path / "child.pid"
    monkeypatch.setenv("FAKE_GIT_CHILD", str(child))
    yield child
    if child.exists():
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(child.read_text()), signal.SIGKILL)


def test_large_output_on_both_pipes_is_read_whole(fake_git: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Megabytes on stdout and stderr (100k untracked files) neither deadlock nor get cut."""
    monkeypatch.setenv("FAKE_GIT_MODE", "big")
    call = GitCall(str(fake_git.parent), "status")
    time.sleep(0.2)  # the pipes fill while the caller does other work
    assert call.output() == b"o" * 3_000_000


def test_a_failing_git_reports_as_before(fake_git: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A non-zero exit is "not a git work tree"; no git on PATH is "git is not installed"."""
    monkeypatch.setenv("FAKE_GIT_MODE", "fail")
    with pytest.raises(GitUnavailable, match=r"^not a git work tree$"):
        GitCall(str(fake_git.parent), "status").output()
    monkeypatch.setenv("PATH", str(fake_git.parent / "empty"))
    with pytest.raises(GitUnavailable, match=r"^git is not installed$"):
        GitCall(str(fake_git.parent), "status").output()


def test_a_git_that_does_not_answer_is_stopped_even_when_its_child_holds_the_pipes(
        fake_git: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past GIT_TIMEOUT git is killed and reaped and the call gives up at once, though a child git left
    (a submodule's, a hook's) still holds stdout and stderr open."""
    monkeypatch.setenv("FAKE_GIT_MODE", "hang")
    monkeypatch.setattr(facts, "GIT_TIMEOUT", 0.5)
    call = GitCall(str(fake_git.parent), "status")
    started = time.monotonic()
    with pytest.raises(GitUnavailable, match=r"^git did not answer \(TimeoutExpired\)$"):
        call.output()
    assert time.monotonic() - started < 20  # the child sleeps 60 s: waiting for its pipes would block that long
    assert call._process is not None and call._process.returncode is not None  # reaped: no zombie


def test_cancel_stops_a_running_call_without_waiting_for_its_children(
        fake_git: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cancel() kills and reaps git at once, whatever a child of it still holds."""
    monkeypatch.setenv("FAKE_GIT_MODE", "hang")
    call = GitCall(str(fake_git.parent), "status")
    deadline = time.monotonic() + 10
    while not fake_git.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    call.cancel()
    assert time.monotonic() - started < 20
    assert call._process is not None and call._process.returncode is not None
