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
                "local/memories-written", "local/memories-unwritten"]
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


@pytest.mark.parametrize("target", ["outside", "made-by-init"])
def test_init_never_writes_through_a_gitignore_link_out_of_the_project(tmp_path: Path, target: str) -> None:
    """A `.gitignore` a cloned repository made a link out of the project: init appended the store's lines to the
    file it named (or made it, where nothing was), saying nothing. Now it says so, exit 5, the target untouched;
    a link to a file of the project is still followed."""
    root = tmp_path / "fresh"
    root.mkdir()
    (tmp_path / "outside").write_text("user-line\n")
    os.symlink(tmp_path / target, root / ".gitignore")
    done = run(root, "init", "--project", "demo")
    assert done.returncode == 5 and "a symlink out of the project" in done.stderr and done.stderr.count("\n") == 1
    assert (tmp_path / "outside").read_text() == "user-line\n" and not (tmp_path / "made-by-init").exists()
    assert os.path.islink(root / ".gitignore")
    (root / ".gitignore").unlink()
    (root / "shared.ignore").write_text("*.log\n")
    os.symlink("shared.ignore", root / ".gitignore")
    assert run(root, "init").returncode == 0
    assert (root / "shared.ignore").read_text().endswith(".agent/runtime-continuity/\n")


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


# -- files continuity appends to, and files too big to be ours -----------------------------------


def test_a_fifo_for_the_hook_log_does_not_hang_the_hook(project: Path) -> None:
    """A failing hook records its problem in local/hooks.log: a FIFO there is skipped, the hook still exits 0."""
    replace_with_fifo(project / STORE / "local" / "hooks.log")
    done = run(project, "hook", "claude-code", stdin="not json")
    assert done.returncode == 0 and "not valid JSON" in done.stderr and "Traceback" not in done.stderr
    assert (project / STORE / "local" / "hooks.log").is_fifo()


def test_a_fifo_for_the_background_sync_log_is_a_warning(project: Path) -> None:
    """`sync_after` starts a background sync logging to local/sync.log: a FIFO there is one warning line."""
    config = project / STORE / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "sync_after": ["archive"]}))
    replace_with_fifo(project / STORE / "local" / "sync.log")
    done = run(project, "archive", "--gate", "agent", "--reason", "end of day")
    assert done.returncode == 0, done.stderr
    assert "automatic sync not started (not a regular file" in done.stderr or \
        "automatic sync not started (No such device or address" in done.stderr, done.stderr


def plant_sparse(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(1 << 40)


@pytest.mark.parametrize("relative", ["local/sync-state.json", "local/node", "local/memories-written", "state.json"])
def test_a_huge_sparse_file_where_a_store_file_belongs_is_not_read(project: Path, relative: str) -> None:
    """A terabyte (sparse) where a small store file belongs: treated as unreadable at once, never read whole."""
    plant_sparse(project / STORE / relative)
    for args in (("status",), ("sync", "--status"), ("log", "-m", "after"), ("resume-bundle",)):
        done = run(project, *args)
        assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr, (args, done.stderr)
        assert done.returncode in ORDINARY, (args, done.returncode, done.stderr)


def test_a_config_bigger_than_its_bound_is_refused_for_writes(project: Path) -> None:
    """config.json of 2 MiB (its bound is 1 MiB): writes refuse it as a broken config (exit 9), reads warn."""
    config = project / STORE / "config.json"
    config.write_bytes(b" " * (2 << 20) + config.read_bytes())
    done = run(project, "checkpoint", "-m", "more")
    assert done.returncode == 9 and "config.json" in done.stderr and "Traceback" not in done.stderr
    done = run(project, "resume-bundle")
    assert done.returncode == 0 and "config.json" in done.stderr


def test_a_fifo_for_the_git_pointer_file_does_not_hang_work_status(project: Path) -> None:
    """A worktree's `.git` is a pointer file; a FIFO there is no git folder, read without blocking."""
    os.mkfifo(project / ".git")
    done = run(project, "work", "status", "--json")
    assert "Traceback" not in done.stderr and done.returncode in ORDINARY, done.stderr


def test_sync_with_huge_sparse_marks_files(project: Path, tmp_path: Path) -> None:
    """sync's own bookkeeping (local/sync.json, local/sync-nodes.json) a terabyte each: counted as lost, the
    sync goes on (a lost file costs a listing) and rewrites them."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    for args in (["init", "-q"], ["remote", "add", "origin", str(remote)]):
        subprocess.run(["git", "-C", str(project), *args], check=True)
    assert run(project, "sync").returncode == 0
    for name in ("sync.json", "sync-nodes.json"):
        plant_sparse(project / STORE / "local" / name)
    assert run(project, "log", "-m", "after").returncode == 0
    done = run(project, "sync", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added_local"] == 1
    for name in ("sync.json", "sync-nodes.json"):
        assert (project / STORE / "local" / name).stat().st_size < 1 << 20


@pytest.mark.parametrize("planted", ["symlink", "folder"])
def test_a_lock_file_replaced_by_a_link_or_a_folder_is_an_unsafe_store(project: Path, tmp_path: Path,
                                                                      planted: str) -> None:
    """`local/lock` planted as a symlink gave exit 5 ("store is not writable, disk full or failing") with "Too many
    levels of symbolic links": it is an unsafe store (exit 6) with a line naming the file, as for `local/tmp`."""
    lock = project / ".agent" / "runtime-continuity" / "local" / "lock"
    lock.unlink(missing_ok=True)
    if planted == "symlink":
        target = tmp_path / "elsewhere"
        target.write_text("")
        lock.symlink_to(target)
    else:
        lock.mkdir()
    for args in (("log", "-m", "plain"), ("checkpoint", "-m", "typed"), ("archive",)):
        done = cli_process(*args, cwd=project)
        assert done.returncode == 6, (args, done.returncode, done.stderr)
        assert "unsafe store:" in done.stderr and "local/lock" in done.stderr and done.stderr.count("\n") == 1
