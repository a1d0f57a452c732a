"""The `runtime-continuity` console script speaks seed 004's CLI contract, run as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(sys.executable).parent / "runtime-continuity"
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "continuity.adapters.compat.runtime_continuity"]
GATED = ["log", "checkpoint", "archive", "host-switch", "restore", "assess"]
NEEDS_PROJECT = ["log", "checkpoint", "archive", "host-switch", "restore", "resume-bundle", "status", "assess"]
SWITCH = ["--gate", "user", "--from-host", "codex", "--to-host", "claude-code", "--reason", "switch tools"]
RC = Path(".agent") / "runtime-continuity"


class Result:
    """One run of the script: exit code, the parsed stdout object, stderr."""

    def __init__(self, done: subprocess.CompletedProcess[bytes]) -> None:
        self.code = done.returncode
        self.stderr = done.stderr.decode(errors="replace")
        assert "Traceback" not in self.stderr, self.stderr
        self.data: dict[str, Any] = json.loads(done.stdout)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def rc(cwd: Path, *args: str | bytes) -> Result:
    """Run the real console script in `cwd` with HOME in the test's temp folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    env["HOME"] = str(cwd.parent / "home")
    done = subprocess.run([*COMMAND, *args], cwd=cwd, env=env, capture_output=True, timeout=60)
    return Result(done)


def ok(cwd: Path, *args: str) -> dict[str, Any]:
    result = rc(cwd, *args)
    assert result.code == 0 and result.data["ok"] is True, result.data
    return result.data


def failed(result: Result, error: str) -> None:
    assert result.code == 2, result.data
    assert result.data["ok"] is False and result.data["error"] == error, result.data
    assert isinstance(result.data["message"], str) and result.data["message"]


def add_run(work: Path, name: str, status: str, events: list[Any] | None = None, age: int = 0) -> Path:
    runs = work / ".agent" / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    path = runs / f"{name}.json"
    path.write_text(json.dumps({"run_id": name, "status": status, "events": events or []}))
    stamp = 1_700_000_000 - age
    os.utime(path, (stamp, stamp))
    return path


def run_events(path: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads(path.read_text())["events"]
    return events


# -- log and checkpoint ----------------------------------------------------------------------
def test_log_writes_a_seed_004_event(work: Path) -> None:
    """log maps every flag to seed 004's fields: lists split on commas, commands[0], one-item blockers."""
    data = ok(work, "log", "--project", "demo", "--gate", "agent", "--host", "codex", "--agent-id", "codex-main",
              "--run-id", "R-T-RC02", "--session-id", "S-1", "--task-id", "T-RC02", "--mission-id", "M-1",
              "--type", "decision", "--phase", "editing", "--message", "CLI expanded", "--done", "added schema",
              "--in-progress", "implementing CLI", "--next", "sync templates", "--blockers", "waiting, on review",
              "--files", "a.py,b/c.py", "--artifacts", "out/state.json", "--handoffs", "h/H-1.json,h/H-2.json",
              "--command", "pytest -q", "--exit-code", "3", "--command-summary", "3 failed",
              "--note-json", '{"goal": "ship"}')
    assert data["action"] == "log" and data["project"] == "demo"
    event = data["event"]
    assert (work / data["event_path"]).is_file() and data["event_path"].startswith(".agent/runtime-continuity/")
    assert event["type"] == "decision" and event["phase"] == "editing" and event["message"] == "CLI expanded"
    assert event["summary"] == {"done": ["added schema"], "in_progress": "implementing CLI",
                                "next": ["sync templates"], "blockers": ["waiting, on review"]}
    assert event["refs"] == {"files": ["a.py", "b/c.py"], "artifacts": ["out/state.json"],
                             "handoffs": ["h/H-1.json", "h/H-2.json"],
                             "commands": [{"command": "pytest -q", "exit_code": 3, "summary": "3 failed"}]}
    assert (event["project"], event["host"], event["agent_id"], event["run_id"], event["session_id"],
            event["task_id"], event["mission_id"]) == ("demo", "codex", "codex-main", "R-T-RC02", "S-1",
                                                       "T-RC02", "M-1")
    assert event["note"] == {"goal": "ship"} and event["event_id"].startswith("RCE-")


def test_checkpoint_events_have_type_checkpoint(work: Path) -> None:
    """checkpoint writes a checkpoint event whose type is "checkpoint" whatever --type says."""
    data = ok(work, "checkpoint", "--project", "demo", "--gate", "user", "--message", "phase done",
              "--type", "decision")
    assert data["action"] == "checkpoint" and data["project"] == "demo"
    assert data["event"]["type"] == "checkpoint" and data["event"]["kind"] == "checkpoint.recorded"
    assert data["event"]["summary"]["done"] == [] and data["event"]["refs"]["files"] == []


def test_first_write_creates_the_store_and_reads_never_do(work: Path) -> None:
    """There is no init step: reads leave the folder alone, the first write creates the store here."""
    for args in (["status", "--project", "demo"], ["resume-bundle", "--project", "demo"],
                 ["restore", "--project", "demo", "--auto"], ["warm"], ["list-contexts"]):
        rc(work, *args)
    assert not (work / ".agent").exists()
    ok(work, "log", "--project", "demo", "--gate", "agent", "--message", "first")
    assert (work / RC / "config.json").is_file() and (work / RC / "events").is_dir()


# -- archive ---------------------------------------------------------------------------------
def test_archive_writes_json_markdown_and_a_latest_symlink(work: Path, home: Path) -> None:
    """archive writes RC-<stamp>.json, latest.json and ctx_<stamp>.md with latest.md linking to it."""
    note = {"done": "wrote CLI", "next": ["add tests", "sync docs"], "blockers": "", "blocked": "review",
            "goal": "Runtime Continuity v2"}
    data = ok(work, "archive", "--project", "demo", "--gate", "user", "--full", "--host", "codex",
              "--to-host", "cursor", "--reason", "end of day", "--note-json", json.dumps(note))
    assert data["action"] == "archive" and data["project"] == "demo"
    assert set(data) >= {"archivePath", "latestPath", "stamp", "archive", "archiveJsonPath", "latestJsonPath"}
    stamp = data["stamp"]
    assert data["archiveJsonPath"] == str(work / RC / "archives" / f"RC-{stamp}.json")
    assert data["latestJsonPath"] == str(work / RC / "archives" / "latest.json")
    assert data["archivePath"] == str(home / ".agent" / "contexts" / "demo" / f"ctx_{stamp}.md")
    latest = Path(data["latestPath"])
    assert latest == home / ".agent" / "contexts" / "demo" / "latest.md"
    assert latest.is_symlink() and latest.resolve() == Path(data["archivePath"]).resolve()
    assert json.loads(Path(data["archiveJsonPath"]).read_text())["archive_id"] == f"RC-{stamp}"
    assert json.loads(Path(data["latestJsonPath"]).read_text())["archive_id"] == f"RC-{stamp}"
    archive = data["archive"]
    assert archive["state"] == {"current_goal": "Runtime Continuity v2", "done": ["wrote CLI"],
                                "in_progress": "review", "next": ["add tests", "sync docs"], "blockers": []}
    assert (archive["source_host"], archive["target_host"], archive["reason"], archive["full"]) == (
        "codex", "cursor", "end of day", True)


def test_archive_restore_command_prints_this_projects_resume_bundle(work: Path) -> None:
    """The archive's restore.commands[0] is a command that prints the resume bundle of its project."""
    data = ok(work, "archive", "--project", "demo", "--gate", "user", "--note-json", '{"next": "step one"}')
    command = data["archive"]["restore"]["commands"][0]
    assert command.endswith("resume-bundle --project demo")
    program, *args = command.split()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")} | {"HOME": str(work.parent / "home")}
    done = subprocess.run([str(Path(sys.executable).parent / program), *args], cwd=work, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "demo" in done.stdout and "step one" in done.stdout


def test_archives_status_and_restore_are_per_project(work: Path) -> None:
    """Two projects in one store: each has its own archives, status and restore."""
    ok(work, "archive", "--project", "alpha", "--gate", "user", "--note-json", '{"next": "alpha next"}')
    assert ok(work, "status", "--project", "alpha")["exists"] is True
    assert ok(work, "status", "--project", "beta")["exists"] is False
    none = rc(work, "restore", "--project", "beta", "--auto")
    assert none.code == 0 and none.data["error"] == "no_archive_for_project"
    assert ok(work, "restore", "--project", "alpha", "--auto")["archive"]["project"] == "alpha"


# -- restore ---------------------------------------------------------------------------------
def test_restore_list_names_the_markdown_contexts(work: Path) -> None:
    """restore --list (no gate) lists ctx_ files newest first with mtime and which one is latest."""
    first = ok(work, "archive", "--project", "demo", "--gate", "user")
    second = ok(work, "archive", "--project", "demo", "--gate", "agent")
    data = ok(work, "restore", "--project", "demo", "--list")
    assert data["action"] == "restore"
    names = [Path(second["archivePath"]).name, Path(first["archivePath"]).name]
    assert [c["name"] for c in data["contexts"]] == names
    assert [c["isLatest"] for c in data["contexts"]] == [True, False]
    assert all(set(c) == {"name", "mtime", "isLatest"} and c["mtime"] for c in data["contexts"])


def test_restore_auto_returns_the_newest_archive(work: Path) -> None:
    """restore --auto (no gate) returns the newest archive, its paths and the resume-bundle command."""
    archived = ok(work, "archive", "--project", "demo", "--gate", "user")
    data = ok(work, "restore", "--project", "demo", "--auto")
    assert (data["action"], data["mode"]) == ("restore", "auto")
    assert data["markdown_path"] == archived["archivePath"]
    assert data["archive_json_path"] == archived["archiveJsonPath"]
    assert data["archive"] == archived["archive"]
    assert data["resume_bundle_command"] == "runtime-continuity resume-bundle --project demo"


def test_restore_load_prints_latest_md(work: Path) -> None:
    """restore in load mode (gate required) prints latest.md: path, size, mtime and body."""
    archived = ok(work, "archive", "--project", "demo", "--gate", "user", "--note-json", '{"next": "go on"}')
    data = ok(work, "restore", "--project", "demo", "--gate", "agent")
    assert data["action"] == "restore" and data["path"] == archived["latestPath"]
    body = Path(archived["archivePath"]).read_text()
    assert data["body"] == body and data["size"] == len(body.encode()) and "go on" in body
    assert data["mtime"]
    assert ok(work, "restore", "--project", "demo", "--gate", "agent", "--load", "latest")["body"] == body


@pytest.mark.parametrize("mode", [["--auto"], ["--gate", "user"], ["--gate", "user", "--load", "latest"]])
def test_restore_without_an_archive_is_not_a_failure(work: Path, mode: list[str]) -> None:
    """restore with nothing archived for the project says no_archive_for_project and exits 0."""
    result = rc(work, "restore", "--project", "demo", *mode)
    assert result.code == 0
    assert result.data["ok"] is False and result.data["error"] == "no_archive_for_project"


# -- resume-bundle and status ----------------------------------------------------------------
def test_resume_bundle_has_seed_004_fields(work: Path) -> None:
    """resume-bundle returns every seed 004 field; runs lists run files; next_action is the archive's."""
    add_run(work, "R-1", "running")
    ok(work, "checkpoint", "--project", "demo", "--gate", "agent", "--next", "later step")
    ok(work, "archive", "--project", "demo", "--gate", "user", "--note-json", '{"next": ["first", "second"]}')
    data = ok(work, "resume-bundle", "--project", "demo")
    assert data["action"] == "resume-bundle" and data["project"] == "demo"
    assert set(data) >= {"generated_at", "latest_archive", "latest_markdown_archive", "archive", "runtime_events",
                         "runs", "sessions", "pending_handoffs", "artifact_states", "git", "read_first",
                         "next_action", "recommended_commands"}
    assert data["runs"] == [{"path": ".agent/runs/R-1.json", "status": "running"}]
    assert set(data["git"]) >= {"branch", "head", "status_short"}
    assert data["next_action"] == "first"
    assert data["latest_archive"].endswith(f"{data['archive']['archive_id']}.json")
    assert data["latest_markdown_archive"].endswith("latest.md")
    assert data["recommended_commands"][0] == "runtime-continuity resume-bundle --project demo"


def test_status_reports_no_archive_then_the_latest(work: Path) -> None:
    """status (no gate) says exists false before any archive, then latest, mtime, age and count."""
    assert ok(work, "status", "--project", "demo") == {"ok": True, "action": "status", "project": "demo",
                                                      "exists": False}
    ok(work, "archive", "--project", "demo", "--gate", "user")
    archived = ok(work, "archive", "--project", "demo", "--gate", "user")
    data = ok(work, "status", "--project", "demo")
    assert data["action"] == "status" and data["exists"] is True
    assert data["latest"] == archived["archive"]["archive_id"] and data["count"] == 2
    assert data["mtime"] == archived["archive"]["created_at"]
    assert data["age_hours"] < 1 and data["stale_recommendation"] == "ok"


def test_status_recommends_archiving_after_two_hours(work: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """An archive older than 2 h makes status recommend archive_now (in-process, with an old clock)."""
    import continuity.core.store
    import continuity.sessions.service  # binds the real clock for "now"; only the log's clock goes back
    from continuity.adapters.compat.runtime_continuity import main

    monkeypatch.chdir(work)
    real_clock = continuity.core.store.now_us
    three_hours_ago = real_clock() - 3 * 3_600_000_000
    monkeypatch.setattr(continuity.core.store, "now_us", lambda: three_hours_ago)
    assert main(["archive", "--project", "demo", "--gate", "user"]) == 0
    monkeypatch.setattr(continuity.core.store, "now_us", real_clock)
    capsys.readouterr()
    assert main(["status", "--project", "demo"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["stale_recommendation"] == "archive_now" and data["age_hours"] > 2


# -- warm ------------------------------------------------------------------------------------
def test_warm_prints_the_rhythm_without_side_effects(work: Path) -> None:
    """warm without --auto needs no project, writes nothing and has no auto_init key."""
    data = ok(work, "warm")
    assert data["action"] == "warm" and data["duration_hours"] == 5 and data["checkpoint_reminder_hours"] == 4
    assert "5 小时计时窗口" in data["prompt_for_host_paste"] and "auto_init" not in data
    assert "auto_init" not in ok(work, "warm", "--project", "demo")
    assert not (work / ".agent").exists()


def test_warm_auto_records_a_session_start(work: Path) -> None:
    """warm --auto --project records a session.started event and returns auto_init true."""
    run = add_run(work, "R-1", "running")
    data = ok(work, "warm", "--auto", "--project", "demo", "--host", "codex", "--session-id", "S-9")
    assert data["auto_init"] is True and "5 小时计时窗口" in data["prompt_for_host_paste"]
    bundle = ok(work, "resume-bundle", "--project", "demo")
    assert bundle["runtime_events"][0]["kind"] == "session.started"
    assert bundle["sessions"]["active"][0]["session_id"] == "S-9"
    assert run_events(run)[-1] | {"created_at": None} == {
        "type": "session_started", "via": "warm_auto_init", "project": "demo", "created_at": None,
        "event_id": data["event_id"]}


# -- host-switch -----------------------------------------------------------------------------
def test_host_switch_archives_and_writes_the_session_file(work: Path) -> None:
    """host-switch archives, writes .agent/sessions/S-<project>-<stamp>.json and gives 4 next steps."""
    data = ok(work, "host-switch", "--project", "demo", *SWITCH, "--note-json", '{"next": "finish CLI"}')
    assert (data["action"], data["from_host"], data["to_host"]) == ("host-switch", "codex", "claude-code")
    archive = data["archive"]
    assert Path(archive["archivePath"]).is_file() and Path(archive["archiveJsonPath"]).is_file()
    assert archive["archive"]["source_host"] == "codex" and archive["archive"]["target_host"] == "claude-code"
    session_path = work / ".agent" / "sessions" / f"S-demo-{archive['stamp']}.json"
    session = json.loads(session_path.read_text())
    assert session["last_host"] == "claude-code" and session["last_switch_at"]
    assert data["session"]["path"] == str(session_path) and data["session"]["last_host"] == "claude-code"
    assert len(data["next_steps_for_new_host"]) == 4
    assert ok(work, "status", "--project", "demo")["last_host"] == "claude-code"


# -- list-contexts and assess ----------------------------------------------------------------
def test_list_contexts_counts_archives_per_project(work: Path) -> None:
    """list-contexts (no project, no gate) counts each project's archives; --format table adds a table."""
    ok(work, "archive", "--project", "alpha", "--gate", "user")
    ok(work, "archive", "--project", "alpha", "--gate", "user")
    ok(work, "archive", "--project", "beta", "--gate", "user")
    data = ok(work, "list-contexts")
    assert data["action"] == "list-contexts" and data["count"] == 2
    counts = {p["project"]: (p["total_archives"], p["recent_archives"]) for p in data["projects"]}
    assert counts == {"alpha": (2, 2), "beta": (1, 1)}
    table = ok(work, "list-contexts", "--format", "table")
    assert table["format"] == "table" and table["table"].startswith("project\tarchives")
    assert ok(work, "list-contexts", "--since", "2999-01-01T00:00:00Z")["count"] == 0


def test_assess_rates_long_tasks_high_risk(work: Path) -> None:
    """assess: a short task is low risk in one phase; over 200 words is high risk with at least 2 phases."""
    short = ok(work, "assess", "--project", "demo", "--gate", "agent", "--task-description", "fix a typo")
    assert (short["action"], short["risk"], short["phases"]) == ("assess", "low", 1)
    long = ok(work, "assess", "--project", "demo", "--gate", "agent", "--task-description", " ".join(["word"] * 201))
    assert long["risk"] == "high" and long["phases"] >= 2
    assert not (work / ".agent").exists()


# -- failures --------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", NEEDS_PROJECT)
def test_modes_need_a_project(work: Path, mode: str) -> None:
    """Every mode but warm (without --auto) and list-contexts fails with missing_project."""
    failed(rc(work, mode, "--gate", "user"), "missing_project")


def test_warm_auto_needs_a_project(work: Path) -> None:
    """warm --auto without --project is missing_project and writes nothing."""
    failed(rc(work, "warm", "--auto"), "missing_project")
    assert not (work / ".agent").exists()


@pytest.mark.parametrize("mode", GATED)
@pytest.mark.parametrize("gate", [None, "", "admin"])
def test_gated_modes_need_user_or_agent(work: Path, mode: str, gate: str | None) -> None:
    """log, checkpoint, archive, host-switch, restore (load) and assess need --gate user|agent."""
    gate_args = [] if gate is None else ["--gate", gate]
    result = rc(work, mode, "--project", "demo", *gate_args)
    failed(result, "workflow_gate_required")
    assert result.data["message"] == "--gate must be one of: user, agent"
    assert not (work / ".agent").exists()


@pytest.mark.parametrize("args", [["restore", "--auto"], ["restore", "--list"], ["resume-bundle"], ["status"],
                                  ["warm"], ["list-contexts"]])
def test_ungated_modes_run_without_a_gate(work: Path, args: list[str]) -> None:
    """restore --auto/--list, resume-bundle, status, warm and list-contexts need no gate."""
    assert rc(work, *args, "--project", "demo").code == 0


def test_missing_project_is_reported_before_a_missing_gate(work: Path) -> None:
    """With neither --project nor --gate the error is missing_project."""
    for mode in GATED:
        failed(rc(work, mode), "missing_project")


def test_unknown_mode_with_a_project_is_unknown_command(work: Path) -> None:
    """An unknown mode is unknown_command when a project is given, else missing_project."""
    failed(rc(work, "frobnicate", "--project", "demo", "--gate", "user"), "unknown_command")
    failed(rc(work, "frobnicate"), "missing_project")
    failed(rc(work, "--project", "demo"), "unknown_command")


def test_archive_failure_writes_nothing(work: Path) -> None:
    """A refused archive (secret-like reason) is archive_failed, exit 2, and takes no archive."""
    failed(rc(work, "archive", "--project", "demo", "--gate", "user", "--reason",
              "token ghp_" + "a" * 36), "archive_failed")
    failed(rc(work, "archive", "--project", "demo", "--gate", "user", "--note-json", "{not json"),
           "archive_failed")
    assert ok(work, "status", "--project", "demo")["exists"] is False


def test_host_switch_failure_writes_no_session(work: Path) -> None:
    """A refused host-switch (secret-like reason, or no --to-host) is host_switch_archive_failed."""
    secret = "sk-ant-api03-" + "a" * 40
    failed(rc(work, "host-switch", "--project", "demo", "--gate", "user", "--from-host", "codex",
              "--to-host", "cursor", "--reason", secret), "host_switch_archive_failed")
    failed(rc(work, "host-switch", "--project", "demo", "--gate", "user", "--from-host", "codex"),
           "host_switch_archive_failed")
    assert not (work / ".agent" / "sessions").exists()


def test_log_failure_is_write_failed(work: Path) -> None:
    """log/checkpoint refused by continuity (a secret, a bad field) fail with write_failed, exit 2."""
    failed(rc(work, "log", "--project", "demo", "--gate", "agent", "--message", "key AKIAIOSFODNN7EXAMPLE"),
           "write_failed")
    failed(rc(work, "checkpoint", "--project", "demo", "--gate", "agent", "--exit-code", "zero",
              "--command", "make"), "write_failed")
    failed(rc(work, "log", "--project", "demo", "--gate", "agent", "--host", "bad host"), "write_failed")
    redacted = ok(work, "log", "--project", "demo", "--gate", "agent", "--message", "key AKIAIOSFODNN7EXAMPLE",
                  "--redact")
    assert "AKIAIOSFODNN7EXAMPLE" not in json.dumps(redacted)


def test_bad_arguments_fail_as_json_never_a_traceback(work: Path) -> None:
    """Invalid project names, dates and bytes fail as invalid_arguments JSON with exit 2."""
    failed(rc(work, "status", "--project", "../escape"), "invalid_arguments")
    failed(rc(work, "list-contexts", "--since", "yesterday"), "invalid_arguments")
    failed(rc(work, "log", "--project", "demo", "--gate", "agent", "--message", b"\xff\xfe"), "invalid_arguments")
    assert not (work / ".agent").exists()


# -- run records -----------------------------------------------------------------------------
def test_write_modes_mirror_run_events_into_the_active_run(work: Path) -> None:
    """Each write mode appends its run event to the newest running or queued run file only."""
    add_run(work, "R-old", "running", age=100)
    done = add_run(work, "R-done", "done", age=0)
    active = add_run(work, "R-1", "queued", age=10)
    ok(work, "log", "--project", "demo", "--gate", "agent", "--message", "one")
    ok(work, "checkpoint", "--project", "demo", "--gate", "agent", "--message", "two")
    archived = ok(work, "archive", "--project", "demo", "--gate", "user")
    ok(work, "warm", "--auto", "--project", "demo")
    ok(work, "host-switch", "--project", "demo", *SWITCH)
    events = run_events(active)
    assert [e["type"] for e in events] == ["runtime_log", "runtime_checkpoint", "session_archived",
                                           "session_started", "host_switch_initiated"]
    assert events[2]["project"] == "demo" and events[2]["archive_path"] == archived["archivePath"]
    assert events[3]["via"] == "warm_auto_init" and events[3]["project"] == "demo"
    assert (events[4]["from_host"], events[4]["to_host"]) == ("codex", "claude-code")
    assert run_events(done) == [] and run_events(work / ".agent" / "runs" / "R-old.json") == []


def test_run_mirror_keeps_the_last_200_events(work: Path) -> None:
    """A run file with 200 events keeps the newest 200 after another write."""
    active = add_run(work, "R-1", "running", events=[{"type": "old", "n": n} for n in range(200)])
    ok(work, "log", "--project", "demo", "--gate", "agent", "--message", "newest")
    events = run_events(active)
    assert len(events) == 200 and events[0]["n"] == 1 and events[-1]["type"] == "runtime_log"
    assert not [p for p in active.parent.iterdir() if p.name.endswith(".tmp")]


def test_run_mirror_failure_never_fails_the_command(work: Path) -> None:
    """A run file the mirror cannot update leaves the write's result and exit code alone."""
    active = add_run(work, "R-1", "running")
    active.write_text(json.dumps({"status": "running", "events": "not a list"}))
    result = rc(work, "log", "--project", "demo", "--gate", "agent", "--message", "still written")
    assert result.code == 0 and result.data["ok"] is True and "not mirrored" in result.stderr
    assert json.loads(active.read_text())["events"] == "not a list"
