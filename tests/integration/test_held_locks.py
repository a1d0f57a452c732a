"""A lock held by a process that stopped holding it up (Ctrl-Z mid-save, a hung mount): session start is never
blocked behind it. Real processes hold the locks (flock), and the commands run as new processes; the subprocess
timeouts catch a hang, they do not time anything."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import all_event_files, cli_process

ROOT = Path(__file__).resolve().parents[2]
STORE = Path(".agent", "runtime-continuity")
#: Well past every bounded wait (a model lock 1 s, a hook's append 5 s, a catch-up's documents 2 s): a command still
#: running then waits for the holder.
HANG = 40


@contextmanager
def held(path: Path) -> Iterator[None]:
    """Another process holds the exclusive lock on `path` (a file, or a folder as catch-ups lock one)."""
    code = textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from events import osfs
        path = {str(path)!r}
        fd = osfs.open_folder_lock(path) if os.path.isdir(path) else os.open(path, osfs.UPDATE, 0o644)
        osfs.lock(fd)
        print("held", flush=True)
        time.sleep(600)
    """)
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield
    finally:
        holder.kill()
        holder.wait()


def run(project: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "continuity", *args], cwd=project, input=stdin, text=True,
                          capture_output=True, timeout=HANG, env=_env())
    return done


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}


def start_payload(project: Path) -> str:
    return json.dumps({"session_id": "s1", "cwd": str(project), "hook_event_name": "SessionStart",
                       "source": "startup"})


def brief_of(stdout: str) -> str:
    return str(json.loads(stdout)["hookSpecificOutput"]["additionalContext"])


def test_a_held_model_lock_slows_a_read_and_never_blocks_it(project: Path) -> None:
    """A model file locked by a stopped saver: resume-bundle, status and the SessionStart brief come (the model
    folded from the log), and the save that could not happen is a warning naming the file."""
    assert cli_process("checkpoint", "-m", "parser done", "--next", "wire the CLI", cwd=project).returncode == 0
    assert cli_process("status", cwd=project).returncode == 0  # the models are saved
    models = project / STORE / "local" / "models"
    with held(models / "overview.msgpack"):
        done = run(project, "resume-bundle")
        assert done.returncode == 0 and "wire the CLI" in done.stdout
        assert "overview.msgpack is locked by another process" in done.stderr
        assert "the saved projection is locked by another process (waited 1 s): projections (overview) rebuilt" \
            in done.stderr
        assert run(project, "status").returncode == 0
        done = run(project, "hook", "claude-code", stdin=start_payload(project))
        assert done.returncode == 0 and "wire the CLI" in brief_of(done.stdout)


def test_a_held_append_lock_never_keeps_the_brief_from_a_session_start(project: Path) -> None:
    """The append lock held by a stopped writer: SessionStart serves the brief and says in one stderr line that the
    session was not recorded; a record-only hook gives up and says so; nothing is written meanwhile."""
    assert cli_process("checkpoint", "-m", "parser done", "--next", "wire the CLI", cwd=project).returncode == 0
    before = all_event_files(project)
    with held(project / STORE / "local" / "lock"):
        done = run(project, "hook", "claude-code", stdin=start_payload(project))
        assert done.returncode == 0 and "wire the CLI" in brief_of(done.stdout)
        assert "session not recorded (event not written: another process has held the append lock" in done.stderr
        assert "the brief is served anyway" in done.stderr
        tool = json.dumps({"session_id": "s1", "cwd": str(project), "hook_event_name": "PostToolUse",
                           "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_response": {"exit_code": 0}})
        done = run(project, "hook", "claude-code", stdin=tool)
        assert done.returncode == 0 and "another process has held the append lock" in done.stderr
        assert all_event_files(project) == before
    done = run(project, "hook", "claude-code", stdin=start_payload(project))  # the lock free again: recorded
    assert done.returncode == 0 and done.stderr == "" and len(all_event_files(project)) == len(before) + 2


def test_a_held_store_folder_lock_never_blocks_a_catch_up(project: Path) -> None:
    """The store folder's lock (the derived documents are compared and replaced under it) held: the catch-up writes
    them without it after a bounded wait, and the brief comes."""
    assert cli_process("checkpoint", "-m", "parser done", "--next", "wire the CLI", cwd=project).returncode == 0
    documents = project / STORE / "projects.json"
    assert not documents.exists()  # the plain path's checkpoint caught nothing up
    with held(project / STORE):
        done = run(project, "resume-bundle")
        assert done.returncode == 0 and "wire the CLI" in done.stdout
        assert json.loads(documents.read_text())["events_folded"] == 1


def test_a_brief_whose_record_fails_says_so_on_stderr(project: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The session recorded, then `context.served` refused by the disk (full by then): the brief is served, and
    stderr says it was not recorded (only local/hooks.log did, which a full disk takes nothing into either)."""
    from continuity.adapters.hooks import run_hook
    from events.errors import WriteFailed
    from events.filelog import FileEventLog

    assert cli_process("checkpoint", "-m", "parser done", "--next", "wire the CLI", cwd=project).returncode == 0
    real = FileEventLog.append_many

    def full_for_the_brief(self: FileEventLog, drafts: Any, **options: Any) -> Any:
        drafts = list(drafts)
        if any(draft.kind == "context.served" for draft in drafts):
            raise WriteFailed("event not written: No space left on device")
        return real(self, drafts, **options)

    monkeypatch.setattr(FileEventLog, "append_many", full_for_the_brief)
    result = run_hook("claude-code", start_payload(project).encode())
    err = capsys.readouterr().err
    assert "wire the CLI" in brief_of(result.stdout)
    assert "brief served but not recorded: event not written: No space left on device" in err
