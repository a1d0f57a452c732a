"""A store on a read-only file system (a real read-only bind mount): reads answer, writes say so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import REPO, all_event_files, make_read_only


def cli(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "continuity", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def read_only_project(tmp_path: Path) -> Iterator[Path]:
    """A project with some history whose store is then mounted read-only."""
    root = tmp_path / "proj"
    root.mkdir()
    for args in (["init", "--project", "demo"], ["checkpoint", "-m", "parser done", "--next", "wire the CLI"]):
        assert cli(*args, cwd=root).returncode == 0
    mounts = make_read_only(root / ".agent" / "runtime-continuity")
    try:
        yield root
    finally:
        for mount in mounts:
            subprocess.run(["umount", str(mount)], check=True)


def test_session_start_serves_the_brief_on_a_read_only_store(read_only_project: Path) -> None:
    """SessionStart: the brief is printed (exit 0) and one stderr line says the session was not recorded."""
    before = all_event_files(read_only_project)
    payload = json.dumps({"hook_event_name": "SessionStart", "session_id": "s1", "source": "startup",
                          "cwd": str(read_only_project)})
    result = cli("hook", "claude-code", cwd=read_only_project, stdin=payload)
    assert result.returncode == 0
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "wire the CLI" in context
    assert result.stderr.count("\n") == 1 and "not recorded" in result.stderr
    assert all_event_files(read_only_project) == before


def test_rebuild_that_cannot_save_fails(read_only_project: Path) -> None:
    """rebuild on a read-only store: exit 5 and one line saying it was not saved, not "rebuilt"."""
    result = cli("rebuild", cwd=read_only_project)
    assert result.returncode == 5, result.stdout + result.stderr
    assert "not saved" in result.stderr and "rebuilt from" not in result.stdout


def test_reads_answer_on_a_read_only_store(read_only_project: Path) -> None:
    """resume-bundle and status answer (exit 0) from the log when nothing can be saved."""
    for command in (["resume-bundle"], ["status"]):
        result = cli(*command, cwd=read_only_project)
        assert result.returncode == 0 and result.stdout, command
    assert "wire the CLI" in cli("resume-bundle", cwd=read_only_project).stdout
