"""Paths named by events are read only inside the project: nothing outside it reaches a brief or an event.

Handoff and artifact mentions, an archive's read-first list and the run records are paths
that any writer of the log, or a teammate through sync, chooses. The brief looks at them
(a JSON file's `status`, whether a file exists) and records what it saw in `context.served`,
which syncs back to the team: a path that leads out of the project must be neither read nor
looked up, whatever its spelling (absolute, `..`, a symlink inside the project).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from continuity.cli import main
from continuity.core.store import find_store
from events.archive import ArchiveCreated
from tests.helpers import all_event_files

Capture = pytest.CaptureFixture[str]
SECRET_STATUS = "status-from-outside-7f3a"


@pytest.fixture()
def outside(tmp_path: Path) -> Path:
    """A folder beside the project, with a JSON document and a plain file the project must not see."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "private.json").write_text(json.dumps({"status": SECRET_STATUS, "to": {"agent": "mallory"}}))
    (folder / "notes.txt").write_text("private\n")
    return folder


def brief(capsys: Capture) -> dict[str, object]:
    assert main(["resume-bundle", "--format", "json"]) == 0
    data: dict[str, object] = json.loads(capsys.readouterr().out)
    return data


def session_start(project: Path) -> str:
    """The SessionStart hook as a real process (it records the brief as `context.served`)."""
    payload = json.dumps({"session_id": "s-1", "cwd": str(project), "hook_event_name": "SessionStart",
                          "source": "startup"})
    env = {key: value for key, value in os.environ.items() if not key.startswith("CONTINUITY_")}
    done = subprocess.run([sys.executable, "-m", "continuity", "hook", "claude-code"], cwd=project, env=env,
                          input=payload, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    context: str = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    return context


def spellings(project: Path, outside: Path) -> dict[str, str]:
    """Every way an event can name the outside document, by what it is."""
    (project / "docs").mkdir(exist_ok=True)
    (project / "docs" / "linked.json").symlink_to(outside / "private.json")
    (project / "docs" / "dir-link").symlink_to(outside)
    return {
        "absolute": str(outside / "private.json"),
        "dotdot": "../outside/private.json",
        "inner dotdot": "docs/../../outside/private.json",
        "symlink": "docs/linked.json",
        "folder symlink": "docs/dir-link/private.json",
    }


def test_mentions_outside_the_project_are_never_read(project: Path, outside: Path, capsys: Capture) -> None:
    """Handoffs and artifacts named outside the project: state `outside`, their content nowhere."""
    names = spellings(project, outside)
    for path in names.values():
        assert main(["log", "-m", "see it", "--handoff", path, "--artifact", path]) == 0
    capsys.readouterr()
    data = brief(capsys)
    states = {item["path"]: item["state"] for item in data["pending_handoffs"]}  # type: ignore[attr-defined]
    assert states == {path: "outside" for path in names.values()}
    artifacts = {item["path"]: item["state"] for item in data["artifact_states"]}  # type: ignore[attr-defined]
    assert artifacts == {path: "outside" for path in names.values()}
    context = session_start(project)
    assert "(outside, mentioned" in context
    for text in (context, *(path.read_text() for path in all_event_files(project))):
        assert SECRET_STATUS not in text and "mallory" not in text


def test_outside_files_are_not_even_looked_up(project: Path, outside: Path, capsys: Capture) -> None:
    """A plain file outside: the same state whether it exists or not (no existence oracle)."""
    there, absent = str(outside / "notes.txt"), str(outside / "absent.txt")
    assert main(["log", "-m", "x", "--artifact", there, "--artifact", absent,
                 "--artifact", "../outside/notes.txt"]) == 0
    capsys.readouterr()
    artifacts = {item["path"]: item["state"] for item in brief(capsys)["artifact_states"]}  # type: ignore[attr-defined]
    assert artifacts == {there: "outside", absent: "outside", "../outside/notes.txt": "outside"}


def test_project_files_are_still_read(project: Path, capsys: Capture) -> None:
    """Inside the project (relative, absolute, through a symlink that stays inside): read as before."""
    (project / "handoffs").mkdir()
    (project / "handoffs" / "h.json").write_text(json.dumps({"status": "open", "to": {"agent": "bo"}}))
    (project / "handoffs" / "same.json").symlink_to("h.json")
    (project / "report.txt").write_text("done\n")
    for path in ("handoffs/h.json", str(project / "handoffs" / "h.json"), "handoffs/same.json"):
        assert main(["log", "-m", "x", "--handoff", path]) == 0
    assert main(["log", "-m", "x", "--artifact", "report.txt", "--artifact", "missing.txt"]) == 0
    capsys.readouterr()
    data = brief(capsys)
    states = {item["path"]: item["state"] for item in data["pending_handoffs"]}  # type: ignore[attr-defined]
    assert states == {"handoffs/h.json": "open", str(project / "handoffs" / "h.json"): "open",
                      "handoffs/same.json": "open"}
    artifacts = {item["path"]: item["state"] for item in data["artifact_states"]}  # type: ignore[attr-defined]
    assert artifacts == {"report.txt": "present", "missing.txt": "missing"}


def test_hostile_project_files_never_hang_or_load_without_bound(project: Path, capsys: Capture) -> None:
    """A FIFO, a device link or a huge file under a mentioned name: `unreadable`, at once."""
    os.mkfifo(project / "fifo.json")
    (project / "zero.json").symlink_to("/dev/zero")
    with open(project / "huge.json", "wb") as handle:
        handle.write(b'{"status": "big", "pad": "' + b"x" * 1_100_000 + b'"}')
    for name in ("fifo.json", "zero.json", "huge.json"):
        assert main(["log", "-m", "x", "--handoff", name]) == 0
    capsys.readouterr()
    states = {item["path"]: item["state"] for item in brief(capsys)["pending_handoffs"]}  # type: ignore[attr-defined]
    assert states == {"fifo.json": "unreadable", "zero.json": "outside", "huge.json": "unreadable"}
    assert "fifo.json" in session_start(project)  # the hook answered (a blocking read would time out)


def test_run_records_linked_out_of_the_project(project: Path, outside: Path, capsys: Capture) -> None:
    """`.agent/runs/*.json` that is a symlink out of the project: listed, its status `outside`."""
    runs = project / ".agent" / "runs"
    runs.mkdir(parents=True)
    (runs / "mine.json").write_text(json.dumps({"status": "running"}))
    (runs / "theirs.json").symlink_to(outside / "private.json")
    statuses = {run["path"]: run["status"] for run in brief(capsys)["runs"]["files"]}  # type: ignore[index]
    assert statuses == {".agent/runs/mine.json": "running", ".agent/runs/theirs.json": "outside"}


def test_archive_read_first_outside_the_project(project: Path, outside: Path, capsys: Capture) -> None:
    """An archive event whose read-first list names files outside: they are not offered (nor looked up)."""
    (project / "PLAN.md").write_text("plan\n")
    store = find_store(root=str(project))
    store.open_log().append_many([ArchiveCreated(
        project="demo", message="archived", read_first=("PLAN.md", str(outside / "notes.txt"), "../outside/notes.txt"),
    )])
    assert brief(capsys)["read_first"] == ["PLAN.md", ".agent/runtime-continuity/archives/latest.json"]
