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


def _repository(path: Path) -> Path:
    import subprocess

    path.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@x"}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    (path / "kept.txt").write_text("one\n")
    subprocess.run(["git", "-C", str(path), "add", "kept.txt"], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "first"], check=True, env=env)
    return path


def test_started_git_facts_are_the_facts_when_read(tmp_path: Path) -> None:
    """`start_git_facts` then `git_facts`: the started call is the one read (taken once), and what it
    reports is what a call made at the end reports; outside a work tree nothing is started."""
    repo = _repository(tmp_path / "repo")
    (repo / "kept.txt").write_text("two\n")
    (repo / "new.txt").write_text("new\n")
    facts.start_git_facts(str(repo))
    started = facts._started[str(repo)]
    warnings: list[str] = []
    found = facts.git_facts(str(repo), warnings)
    assert str(repo) not in facts._started and started._process is not None and started._process.returncode == 0
    assert found == facts.git_facts(str(repo), warnings) and not warnings
    assert found.dirty_files == ("kept.txt", "new.txt") and found.head and found.root == str(repo)
    plain = tmp_path / "plain"
    plain.mkdir()
    facts.start_git_facts(str(plain))
    assert str(plain) not in facts._started and facts.git_facts(str(plain), warnings).root is None


def test_a_started_call_that_fails_is_a_warning(fake_git: Path, monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    """A started git that fails reports as a call made later does: a warning, the facts without git's part."""
    (tmp_path / ".git").mkdir()
    monkeypatch.setenv("FAKE_GIT_MODE", "fail")
    facts.start_git_facts(str(tmp_path))
    warnings: list[str] = []
    found = facts.git_facts(str(tmp_path), warnings)
    assert found.root == str(tmp_path) and found.head is None
    assert warnings == ["git facts unavailable: not a git work tree"]
