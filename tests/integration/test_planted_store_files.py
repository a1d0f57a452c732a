"""A FIFO or a device where one of the store's own files belongs: no command blocks or reads without end.

The event files have their own test (test_planted_entries.py). Here the planted entry
stands for a file continuity reads on nearly every command: the head hint, a saved model,
config.json, the node id, the derived documents, sync's state, the memories mark. Each
command runs as a real process under a timeout (a hang fails the test); it must end
without a traceback, with an ordinary exit code, and a write refused where it cannot
proceed safely.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import cli_process

STORE = Path(".agent") / "runtime-continuity"
#: Store files read on most commands (relative to the project).
READ_ON_MOST = ["local/head", "local/models/overview.msgpack", "local/models/worklog.msgpack", "config.json",
                "local/node", "state.json", "projects.json", "local/sync-state.json", "local/sync.json",
                "local/memories-written"]
SESSION_START = json.dumps({"session_id": "s-1", "hook_event_name": "SessionStart", "source": "startup"})
#: The exit codes a refusal may end with (docs/cli.md): 9 is a broken config.json; never 70, the internal error.
ORDINARY = {0, 1, 2, 5, 6, 9}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    assert cli_process("init", "--project", "demo", cwd=root).returncode == 0
    assert cli_process("checkpoint", "-m", "parser done", "--next", "wire the CLI", cwd=root).returncode == 0
    assert cli_process("resume-bundle", cwd=root).returncode == 0  # the models and documents exist
    return root


def replace_with_fifo(path: Path) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


def run(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return cli_process(*args, cwd=root, env={"HOME": str(root.parent)}, stdin=stdin)


@pytest.mark.parametrize("relative", READ_ON_MOST)
def test_no_command_blocks_on_a_fifo_where_a_store_file_belongs(project: Path, relative: str) -> None:
    """log, the SessionStart hook, resume-bundle, status and task list each end, with no traceback."""
    replace_with_fifo(project / STORE / relative)
    for args, stdin in ((("log", "-m", "after"), None), (("hook", "claude-code"), SESSION_START),
                        (("resume-bundle",), None), (("status",), None), (("task", "list"), None)):
        done = run(project, *args, stdin=stdin)
        assert "Traceback" not in done.stderr, (args, done.stderr)
        assert done.returncode in ORDINARY, (args, done.returncode, done.stderr)
        if args[0] == "hook":
            assert done.returncode == 0  # a hook never blocks the agent


def test_a_device_link_for_config_is_refused_not_read(project: Path) -> None:
    """config.json as a symlink to /dev/zero: read as unreadable at once (a warning), never read without end."""
    config = project / STORE / "config.json"
    config.unlink()
    config.symlink_to("/dev/zero")
    done = run(project, "resume-bundle")
    assert done.returncode in ORDINARY and "Traceback" not in done.stderr
    assert "config.json" in done.stderr


def test_init_with_a_fifo_for_gitignore_says_so(tmp_path: Path) -> None:
    """init cannot read .gitignore (a FIFO): one line, write-failed exit code, the FIFO left as it is."""
    root = tmp_path / "fresh"
    root.mkdir()
    os.mkfifo(root / ".gitignore")
    done = run(root, "init", "--project", "demo")
    assert done.returncode == 5 and ".gitignore" in done.stderr and done.stderr.count("\n") == 1
    assert (root / ".gitignore").is_fifo()


@pytest.mark.parametrize("relative", ["state.json", "projects.json", "archives/latest.json"])
def test_a_derived_file_replaced_by_a_fifo_is_repaired(project: Path, relative: str) -> None:
    """Derived documents are continuity's own: the next write puts the document back in the FIFO's place."""
    assert run(project, "archive", "--gate", "agent", "--reason", "end of day").returncode == 0
    path = project / STORE / relative
    expected = path.read_bytes()
    replace_with_fifo(path)
    done = run(project, "rebuild")
    assert done.returncode == 0, done.stderr
    assert not path.is_fifo() and path.read_bytes() == expected
