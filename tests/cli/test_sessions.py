"""The session commands through the CLI: archive, host-switch, status, restore, warm, resume-bundle."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from continuity.cli import main
from tests.helpers import all_event_files, cli_process

Capture = pytest.CaptureFixture[str]


def run(capsys: Capture, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys: Capture, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code, out, _ = run(capsys, *args, "--json")
    return code, json.loads(out)


@pytest.fixture
def repo(project: Path) -> Path:
    """The initialized project is also a git work tree with one commit."""
    for args in (["init", "-q"], ["config", "user.email", "t@example.invalid"], ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=project, check=True)
    (project / "AGENTS.md").write_text("rules\n")
    (project / "app.py").write_text("print(1)\n")
    subprocess.run(["git", "add", "AGENTS.md", "app.py"], cwd=project, check=True)
    subprocess.run(["git", "commit", "-qm", "start"], cwd=project, check=True)
    return project


def work(capsys: Capture) -> None:
    run(capsys, "checkpoint", "-m", "totals fixed", "--done", "fix rounding", "--in-progress", "refunds",
        "--next", "add refund tests", "--next", "update docs", "--blocker", "waiting on API keys policy",
        "--session", "S1", "--host", "claude-code", "--handoff", ".agent/handoffs/H-1.json")
    run(capsys, "log", "use integer cents", "--type", "decision")
    run(capsys, "log", "should refunds be partial?", "--type", "question")


def test_archive_writes_seed_004_json_and_markdown(repo: Path, capsys: Capture) -> None:
    """archive writes RC-*.json and latest.json with every seed-004 field, plus ctx_*.md and latest.md."""
    work(capsys)
    (repo / "app.py").write_text("print(2)\n")
    code, data = run_json(capsys, "archive", "--gate", "user", "--reason", "end of day", "--full",
                          "--to-host", "codex", "--host", "claude-code")
    assert code == 0 and data["action"] == "archive"
    archive = json.loads(Path(data["archiveJsonPath"]).read_text())
    assert json.loads(Path(data["latestJsonPath"]).read_text()) == archive
    assert SEED_ARCHIVE_SHAPE.keys() <= archive.keys()
    for block, fields in SEED_ARCHIVE_SHAPE.items():
        if fields:
            assert set(fields) <= set(archive[block]), block
    assert archive["git"]["head"] and archive["git"]["branch"] and archive["git"]["root"] == str(repo)
    assert "app.py" in archive["refs"]["dirty_files"] and "M app.py" in archive["git"]["status_short"]
    assert archive["state"]["next"] == ["add refund tests", "update docs"]
    assert archive["state"]["blockers"] == ["waiting on API keys policy"]
    assert archive["restore"]["next_action"] == "add refund tests"
    assert archive["restore"]["read_first"][0] == "AGENTS.md"
    assert archive["restore"]["commands"] == ["continuity resume-bundle --project demo"]
    assert (archive["source_host"], archive["target_host"], archive["reason"]) == ("claude-code", "codex", "end of day")
    markdown = Path(data["archivePath"])
    assert markdown.read_text().startswith("# Work archive: demo")
    latest = Path(data["latestPath"])
    assert latest.is_symlink() and latest.read_text() == markdown.read_text()
    assert str(markdown).startswith(os.environ["HOME"])


SEED_ARCHIVE_SHAPE = {
    "archive_id": None, "project": None, "created_at": None, "source_host": None, "target_host": None,
    "reason": None, "git": ("root", "branch", "head", "status_short"),
    "state": ("current_goal", "done", "in_progress", "next", "blockers"),
    "refs": ("latest_events", "runs", "sessions", "handoffs", "artifacts", "dirty_files"),
    "restore": ("read_first", "commands", "next_action"),
}


def test_an_untracked_file_named_like_a_token_never_stops_an_archive(repo: Path, capsys: Capture) -> None:
    """git's status names an untracked file that looks like a token: `continuity archive` refused (exit 4, "pass
    --redact") until it was renamed. What the archive observes is stored redacted now, with a warning naming the
    field; a secret the user passes is still refused (exit 4)."""
    token = "ghp_" + "A1b2C3d4" * 5
    (repo / f"{token}.txt").write_text("x\n")
    code, out, err = run(capsys, "archive", "--json")
    assert code == 0, err
    assert "[REDACTED:github-token]" in json.dumps(json.loads(out)["archive"]["git"])
    assert err.startswith("continuity: warning: what the archive observed looks like a secret in git.status_short")
    assert token not in out + err
    assert not [path for path in all_event_files(repo) if token.encode() in path.read_bytes()]
    code, _, err = run(capsys, "archive", "--reason", f"key {token}")
    assert code == 4 and token not in err


def test_a_redacted_name_past_its_bounds_is_cut_and_never_newly_dirty_again(repo: Path, capsys: Capture) -> None:
    """`[REDACTED:<rule>]` is longer than what it replaces: a changed file whose 1,012-character path ends in a
    secret-like name went past the 1,024 a path holds, and the archive failed as an internal error (exit 70). It is
    cut to its bounds now; and a dirty file stored redacted is not "newly dirty" at the next brief (the brief
    compared the name as it is with the name as stored)."""
    part = "a" * 200
    folder = repo / part / part / part / part / ("b" * 190)
    folder.mkdir(parents=True)
    long_file = folder / "password=abcdef12"
    long_file.write_text("x\n")
    (repo / "password=abcdef34").write_text("y\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "files"], cwd=repo, check=True)
    long_file.write_text("changed\n")
    (repo / "password=abcdef34").write_text("changed\n")
    code, out, err = run(capsys, "archive", "--json")
    assert code == 0, err
    dirty = json.loads(out)["archive"]["refs"]["dirty_files"]
    assert len(dirty) == 2 and all("[REDACTED:" in path and len(path) <= 1024 for path in dirty), dirty
    code, out, _ = run(capsys, "resume-bundle", "--format", "json")
    assert code == 0 and json.loads(out)["git"]["new_dirty_files"] == []


def test_archive_note_json_overrides_the_state(project: Path, capsys: Capture) -> None:
    """--note-json sets goal/done/next/blockers; strings become one-item lists."""
    work(capsys)
    note = '{"goal": "ship refunds", "done": "all tests", "next": ["deploy"], "pitfalls": ""}'
    _, data = run_json(capsys, "archive", "--gate", "agent", "--note-json", note)
    state = data["archive"]["state"]
    assert (state["current_goal"], state["done"], state["next"], state["blockers"]) == (
        "ship refunds", ["all tests"], ["deploy"], [])


def test_an_archive_notes_keys_are_seed_004s_and_a_key_that_sets_nothing_is_named(project: Path,
                                                                                 capsys: Capture) -> None:
    """`current_goal` (seed 004's archive takes it beside `goal`) was dropped, and a misspelt key (`nxet`) too,
    without a word: the first sets the goal now, the second is named in a warning; the state is as if unsaid."""
    work(capsys)
    before = run_json(capsys, "resume-bundle", "--format", "json")[1]["work"]["next"]
    note = '{"current_goal": "ship refunds", "nxet": ["deploy"], "blocker": "x"}'
    code, out, err = run(capsys, "archive", "--gate", "agent", "--note-json", note, "--json")
    state = json.loads(out)["archive"]["state"]
    assert code == 0 and state["current_goal"] == "ship refunds" and state["next"] == before, state
    assert "note key(s) not part of the archived state, ignored: blocker, nxet (it takes goal, current_goal" in err
    code, out, err = run(capsys, "archive", "--gate", "agent", "--note-json", '{"goal": "g", "next": ["n"]}')
    assert code == 0 and "ignored" not in err, err
    for note, goal in (('{"goal": "", "current_goal": "ship"}', "ship"), ('{"goal": null, "current_goal": "ship"}',
                       "ship"), ('{"goal": "g", "current_goal": "ship"}', "g"), ('{"goal": ""}', None)):
        code, out, err = run(capsys, "archive", "--gate", "agent", "--note-json", note, "--json")
        assert code == 0 and json.loads(out)["archive"]["state"]["current_goal"] == goal, (note, out)


def test_host_switch_archives_and_records_the_switch(project: Path, capsys: Capture) -> None:
    """host-switch archives, records host.switched, and tells the new host what to do."""
    work(capsys)
    code, data = run_json(capsys, "host-switch", "--from-host", "claude-code", "--to-host", "codex",
                          "--reason", "quota", "--gate", "user", "--session", "S1")
    assert code == 0 and (data["from_host"], data["to_host"]) == ("claude-code", "codex")
    assert len(data["next_steps_for_new_host"]) == 4 and len(data["event_ids"]) == 2
    _, events = run_json(capsys, "events", "list", "--kind", "host.switched")
    assert events["events"][0]["to_host"] == "codex"
    _, status = run_json(capsys, "status")
    assert status["last_host"] == "codex" and status["exists"] is True


def test_status_before_and_after_an_archive(project: Path, capsys: Capture) -> None:
    """status says there is no archive, then names the newest one and its age."""
    code, data = run_json(capsys, "status")
    assert code == 0 and data["exists"] is False
    work(capsys)
    run(capsys, "archive", "--gate", "agent")
    _, data = run_json(capsys, "status")
    assert data["exists"] is True and data["age"] == "just now" and data["stale_recommendation"] == "ok"
    assert data["count"] == 1 and data["next_action"] == "add refund tests"
    run(capsys, "checkpoint", "-m", "refund tests added", "--next", "ship it")
    code, out, _ = run(capsys, "status")  # the archive's next action, said to be the archive's (it said "next action")
    assert code == 0 and out.splitlines()[1] == "next action when archived: add refund tests", out


def test_an_agent_whose_work_another_agent_replaced_sees_its_own_beside_it(project: Path, capsys: Capture) -> None:
    """The project's work state is whoever wrote last: bob's checkpoint replaced alice's next step and blocker in
    her brief, unsaid. Her brief names her own last word beside the project's (as served, so as replayed); a brief
    for the last writer, or for no agent, has no such section."""
    run(capsys, "checkpoint", "--agent", "alice", "-m", "cart drafted", "--next", "write cart tests", "--blocker",
        "payment API key missing")
    run(capsys, "checkpoint", "--agent", "bob", "-m", "checkout skeleton", "--next", "hook up payment stub")
    code, out, err = run(capsys, "resume-bundle", "--agent", "alice", "--record")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[lines.index("## Next action") + 1] == "hook up payment stub"
    at = next(i for i, line in enumerate(lines) if line.startswith("## Your own work (alice, "))
    assert lines[at].endswith("; the rest is the project's)")
    assert lines[at + 1:at + 4] == ["- next: write cart tests", "- blocker: payment API key missing", ""]
    _, data = run_json(capsys, "resume-bundle", "--agent", "alice", "--format", "json")
    assert {key: data["own_work"][key] for key in ("agent", "next", "in_progress", "blockers")} == {
        "agent": "alice", "next": ["write cart tests"], "in_progress": None, "blockers": ["payment API key missing"]}
    served = json.loads(all_event_files(project)[-1].read_bytes())
    assert served["kind"] == "context.served"
    code, replayed, err = run(capsys, "resume-bundle", "--as-of", served["event_id"])
    assert code == 0 and replayed == out and "does not match" not in err
    for agent in (["--agent", "bob"], []):
        code, out, _ = run(capsys, "resume-bundle", *agent)
        assert code == 0 and "## Your own work" not in out
    run(capsys, "checkpoint", "--agent", "alice", "-m", "taking the stub", "--next", "hook up payment stub")
    code, out, _ = run(capsys, "resume-bundle", "--agent", "alice")
    assert code == 0 and "## Your own work" not in out  # her word is the project's again


def test_restore_auto_load_and_list(project: Path, capsys: Capture) -> None:
    """restore lists archives, loads one's Markdown, and reports when there is none."""
    code, data = run_json(capsys, "restore")
    assert code == 0 and data["error"] == "no_archive_for_project"
    work(capsys)
    run(capsys, "archive", "--gate", "agent", "--reason", "first")
    run(capsys, "archive", "--gate", "agent", "--reason", "second")
    _, listing = run_json(capsys, "restore", "--list")
    assert [a["reason"] for a in listing["archives"]] == ["second", "first"]
    first_id = listing["archives"][1]["archive_id"]
    _, loaded = run_json(capsys, "restore", "--load", first_id)
    assert loaded["archive_id"] == first_id and loaded["body"].startswith("# Work archive: demo")
    _, auto = run_json(capsys, "restore", "--auto")
    assert auto["archive"]["reason"] == "second" and auto["resume_bundle_command"].startswith("continuity")
    code, out, err = run(capsys, "restore", "--load", "RC-nope")  # an error like any id naming nothing: stderr
    assert (code, out, err) == (7, "", "continuity: error: no archive 'RC-nope' for project 'demo'\n")
    code, data = run_json(capsys, "restore", "--load", "RC-nope")
    assert code == 7 and data == {"ok": False, "exit_code": 7, "message": "no archive 'RC-nope' for project 'demo'"}
    from projections.archives import ARCHIVES_LIMIT

    for i in range(ARCHIVES_LIMIT):
        run(capsys, "archive", "--gate", "agent", "--reason", f"later {i}")
    _, listing = run_json(capsys, "restore", "--list")
    assert first_id not in [a["archive_id"] for a in listing["archives"]] and listing["total"] == ARCHIVES_LIMIT + 2
    code, out, err = run(capsys, "restore", "--list")  # the text form says what it leaves out (it said nothing)
    assert code == 0 and len(out.splitlines()) == ARCHIVES_LIMIT
    assert err == ("… 2 older archives not listed: `continuity events list --kind archive.created` names them all, "
                   "`restore --load ID` loads any\n")
    _, loaded = run_json(capsys, "restore", "--load", first_id)
    assert loaded["archive"]["reason"] == "first"  # read back from archives/<id>.json


def test_warm_prints_the_rhythm_and_auto_records_a_session(project: Path, capsys: Capture) -> None:
    """warm has no side effects; warm --auto records a session start."""
    _, data = run_json(capsys, "warm")
    assert data["duration_hours"] == 5 and "auto_init" not in data
    assert all_event_files(project) == []
    _, data = run_json(capsys, "warm", "--auto", "--session", "S9", "--host", "codex")
    assert data["auto_init"] is True
    _, events = run_json(capsys, "events", "list")
    assert events["events"][0]["kind"] == "session.started" and events["events"][0]["session_id"] == "S9"


def test_resume_bundle_has_every_seed_field_and_more(repo: Path, capsys: Capture) -> None:
    """The JSON bundle has seed 004's fields, ages, and git drift since the archive."""
    work(capsys)
    run(capsys, "archive", "--gate", "agent")
    (repo / "app.py").write_text("print(3)\n")
    subprocess.run(["git", "commit", "-qam", "more"], cwd=repo, check=True)
    (repo / "new.py").write_text("x\n")
    code, data = run_json(capsys, "resume-bundle")
    assert code == 0
    for field in ("latest_archive", "latest_markdown_archive", "archive", "runtime_events", "runs", "sessions",
                  "pending_handoffs", "artifact_states", "git", "read_first", "next_action",
                  "recommended_commands", "generated_at", "archive_age"):
        assert field in data, field
    assert data["next_action"] == "add refund tests" and data["archive_age"] == "just now"
    assert data["git"]["head_moved"] is True and "app.py" in data["git"]["changed_since_archive"]
    assert "new.py" in data["git"]["new_dirty_files"]
    assert data["pending_handoffs"][0]["path"] == ".agent/handoffs/H-1.json"
    assert data["pending_handoffs"][0]["state"] == "missing"
    assert data["sessions"]["active"][0]["session_id"] == "S1"
    assert all("age" in event for event in data["runtime_events"])
    assert data["read_first"] == ["AGENTS.md", ".agent/runtime-continuity/archives/latest.json"]


def test_sessions_and_runs_show_as_objects_in_projects_json_and_the_bundle(repo: Path, capsys: Capture) -> None:
    """The sessions model saves its records as arrays; projects.json and the resume bundle still show each session and
    run as an object of its fields, in their order."""
    work(capsys)
    run(capsys, "log", "ran the suite", "--session", "S1", "--run", "R1", "--host", "codex")
    code, data = run_json(capsys, "resume-bundle")
    assert code == 0
    seen = data["runs"]["seen"][0]
    assert list(seen)[:3] == ["run_id", "task_id", "host"] and seen["run_id"] == "R1" and seen["events"] == 1
    session = data["sessions"]["active"][0]
    assert list(session)[:2] == ["session_id", "host"] and session["events"] == 2 and session["host"] == "codex"
    document = json.loads((repo / ".agent" / "runtime-continuity" / "projects.json").read_text())
    project = next(iter(document["projects"].values()))
    assert project["sessions"] == [{field: session[field] for field in session if field != "age"}]
    assert project["runs"] == [{field: seen[field] for field in seen if field != "age"}]


def test_pending_handoffs_follow_the_handoff_file(project: Path, capsys: Capture) -> None:
    """A handoff whose file says accepted is no longer pending."""
    handoff = project / ".agent" / "handoffs" / "H-1.json"
    handoff.parent.mkdir(parents=True)
    handoff.write_text('{"status": "pending"}')
    work(capsys)
    _, data = run_json(capsys, "resume-bundle")
    assert [h["state"] for h in data["pending_handoffs"]] == ["pending"]
    handoff.write_text('{"status": "accepted"}')
    _, data = run_json(capsys, "resume-bundle")
    assert data["pending_handoffs"] == []


def test_markdown_brief_is_prioritized_and_within_budget(project: Path, capsys: Capture) -> None:
    """The Markdown brief starts with the next action and fits --max-chars, cutting the least important."""
    work(capsys)
    for i in range(60):
        run(capsys, "log", f"decision number {i} " + "x" * 80, "--type", "decision")
    code, out, _ = run(capsys, "resume-bundle", "--max-chars", "2500")
    assert code == 0 and len(out) <= 2500
    assert out.index("## Next action\nadd refund tests") < out.index("## Blockers")
    assert "waiting on API keys policy" in out and "brief cut to fit" in out
    code, out, _ = run(capsys, "resume-bundle")
    assert len(out) <= 8000
    assert run(capsys, "resume-bundle", "--max-chars", "100")[0] == 2


def test_the_next_action_says_when_known_work_has_no_next_step(project: Path, capsys: Capture) -> None:
    """A checkpoint stating only what is done replaces the next steps too (seed 004's rule): the brief then says no
    next step is recorded and how to record one, not that nothing is known; before any work, that nothing is."""
    _, data = run_json(capsys, "resume-bundle", "--format", "json")
    assert data["next_action"] == "Record a checkpoint: nothing is known yet."
    run(capsys, "checkpoint", "-m", "start", "--next", "write parser", "--next", "wire CLI")
    assert run_json(capsys, "resume-bundle", "--format", "json")[1]["next_action"] == "write parser"
    run(capsys, "checkpoint", "-m", "parser written", "--done", "write parser")
    code, out, _ = run(capsys, "resume-bundle")
    assert code == 0 and "## Next action\nNo next step recorded: choose one from the work below and record it with " \
        "`continuity checkpoint --next \"<next step>\"`.\n" in out and "write parser" in out
    run(capsys, "checkpoint", "-m", "wiring", "--in-progress", "wire CLI")
    assert run_json(capsys, "resume-bundle", "--format", "json")[1]["next_action"] == "Continue: wire CLI"


def test_reads_never_write_events_unless_recording(project: Path, capsys: Capture) -> None:
    """resume-bundle, status and restore append nothing; --record appends one context.served."""
    work(capsys)
    before = all_event_files(project)
    for args in (["resume-bundle"], ["status"], ["restore"], ["resume-bundle", "--format", "json"]):
        assert run(capsys, *args)[0] == 0
    assert all_event_files(project) == before
    run(capsys, "resume-bundle", "--record", "--session", "S2")
    _, served = run_json(capsys, "events", "list", "--kind", "context.served")
    assert served["count"] == 1 and served["events"][0]["served_to"] == "S2"


def test_a_recorded_brief_is_reproduced_byte_for_byte(repo: Path, capsys: Capture) -> None:
    """--as-of <context.served> regenerates the exact brief, even after more events and git changes."""
    work(capsys)
    run(capsys, "archive", "--gate", "agent")
    (repo / "dirty.py").write_text("x\n")
    code, served_text, _ = run(capsys, "resume-bundle", "--record", "--session", "S1")
    assert code == 0
    _, served = run_json(capsys, "events", "list", "--kind", "context.served")
    event = served["events"][0]
    import hashlib

    assert event["brief_sha256"] == hashlib.sha256(served_text.encode()).hexdigest()
    run(capsys, "checkpoint", "-m", "later work", "--next", "something else entirely")
    run(capsys, "archive", "--gate", "agent", "--reason", "later")
    (repo / "dirty.py").unlink()
    code, replayed, err = run(capsys, "resume-bundle", "--as-of", event["event_id"])
    assert code == 0 and err == ""
    assert replayed == served_text
    now_text = run(capsys, "resume-bundle")[1]
    assert now_text != served_text


def test_as_of_answers_as_the_log_stood(project: Path, capsys: Capture) -> None:
    """status and resume-bundle --as-of an event id see only the events up to it."""
    run(capsys, "checkpoint", "-m", "one", "--next", "first next")
    _, first = run_json(capsys, "events", "list")
    point = first["events"][0]["event_id"]
    run(capsys, "checkpoint", "-m", "two", "--next", "second next")
    run(capsys, "archive", "--gate", "agent")
    _, data = run_json(capsys, "resume-bundle", "--as-of", point)
    assert data["next_action"] == "first next" and data["archive"] is None and data["as_of"] == point
    _, status = run_json(capsys, "status", "--as-of", point)
    assert status["exists"] is False and status["events"] == 1
    code, _, err = run(capsys, "status", "--as-of", "not-a-time")
    assert code == 2 and "--as-of" in err


def test_replay_until_materializes_projections(project: Path, tmp_path: Path, capsys: Capture) -> None:
    """replay --until writes state.json and the archives as of that point into a folder."""
    work(capsys)
    run(capsys, "archive", "--gate", "agent", "--reason", "first")
    _, listing = run_json(capsys, "events", "list")
    point = listing["events"][-1]["event_id"]
    run(capsys, "archive", "--gate", "agent", "--reason", "second")
    out = tmp_path / "audit"
    code, data = run_json(capsys, "replay", "--until", point, "--out", str(out))
    assert code == 0 and data["events"] == len(listing["events"])
    assert len(list((out / "archives").glob("RC-*.json"))) == 1
    assert json.loads((out / "archives" / "latest.json").read_text())["reason"] == "first"
    assert (out / "state.json").is_file() and list((out / "contexts" / "demo").glob("ctx_*.md"))


def test_rebuild_restores_deleted_derived_files(project: Path, capsys: Capture) -> None:
    """Deleting every derived file and running rebuild brings each back byte for byte."""
    work(capsys)
    run(capsys, "archive", "--gate", "agent")
    store = project / ".agent" / "runtime-continuity"
    before = {p: p.read_bytes() for p in [store / "state.json", *sorted((store / "archives").iterdir())]}
    for path in before:
        path.unlink()
    assert run(capsys, "rebuild")[0] == 0
    assert {p: p.read_bytes() for p in before} == before


def test_resume_bundle_fails_open(project: Path, capsys: Capture) -> None:
    """A corrupt event and a deleted projection: still a brief, exit 0, a warning line each."""
    work(capsys)
    run(capsys, "resume-bundle")
    victim = all_event_files(project)[1]
    victim.chmod(0o644)
    victim.write_bytes(b"{ corrupt")
    shutil.rmtree(project / ".agent" / "runtime-continuity" / "local" / "models")
    (project / ".agent" / "runtime-continuity" / "state.json").unlink()
    code, out, err = run(capsys, "resume-bundle")
    assert code == 0 and out.startswith("# Resume: demo")
    assert "continuity: warning: skipped 1 unreadable event" in err
    assert "projections rebuilt" in err
    assert "Traceback" not in err


def test_resume_bundle_without_git_on_path(repo: Path) -> None:
    """With no git binary: the brief still comes, with a warning line, exit 0."""
    env = {"PATH": "/nonexistent", "HOME": os.environ["HOME"]}
    cli_process("checkpoint", "-m", "x", "--next", "carry on", cwd=repo, env=env)
    result = cli_process("resume-bundle", cwd=repo, env=env)
    assert result.returncode == 0, result.stderr
    assert "git is not installed" in result.stderr and "## Next action\ncarry on" in result.stdout


def test_resume_bundle_on_a_read_only_projection(project: Path, capsys: Capture,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """When derived files cannot be written, the brief still answers with a warning."""
    work(capsys)
    import errno

    from continuity.readside import writers as derived

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(derived, "_write_documents", refuse)
    code, out, err = run(capsys, "resume-bundle")
    assert code == 0 and "## Next action" in out and "projections not saved" in err


@pytest.mark.parametrize("command", [("archive", "--reason", "eod"), ("host-switch", "--from-host", "claude-code",
                                                                        "--to-host", "codex")])
def test_a_projection_failure_after_a_durable_append_warns(project: Path, capsys: Capture,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           command: tuple[str, ...]) -> None:
    """Catch-up failing with EIO after the archive is written: exit 0, the events kept, one warning."""
    import errno

    from continuity.readside import catchup

    work(capsys)
    before = len(all_event_files(project))
    listing = catchup.Days.listing

    def failing(self: object, day: str) -> list[str]:
        if len(all_event_files(project)) == before:  # the read the archive is decided from
            return listing(self, day)  # type: ignore[arg-type]
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(catchup.Days, "listing", failing)
    code, _, err = run(capsys, *command)
    assert code == 0
    assert len(all_event_files(project)) == before + (2 if command[0] == "host-switch" else 1)
    assert "warning:" in err and "Input/output error" in err and "Traceback" not in err


@pytest.mark.parametrize("command", [("archive", "--reason", "eod"), ("host-switch", "--from-host", "claude-code",
                                                                        "--to-host", "codex")])
def test_an_archive_is_not_taken_from_a_read_that_stopped_short(project: Path, capsys: Capture,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 command: tuple[str, ...]) -> None:
    """A day folder that cannot be listed stops the catch-up there: the archive would restate a work state that
    leaves out its entries as the latest. Refused (exit 5, one line naming the folder), nothing written."""
    import errno

    from continuity.readside import catchup

    work(capsys)
    before = all_event_files(project)

    def failing(self: object, day: str) -> list[str]:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(catchup.Days, "listing", failing)
    code, _, err = run(capsys, *command)
    assert code == 5 and all_event_files(project) == before
    lines = [line for line in err.splitlines() if line.startswith("continuity: error:")]
    assert len(lines) == 1 and "cannot be read (Input/output error)" in lines[0] and "Traceback" not in err


def test_a_relative_contexts_dir_in_config_is_taken_from_the_project(project: Path, capsys: Capture,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`contexts_dir: "notes/contexts"`: an archive taken from a subfolder lands in the project's folder, and
    `restore` from the root finds it."""
    config = project / ".agent/runtime-continuity/config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "contexts_dir": "notes/contexts"}))
    (project / "src").mkdir()
    monkeypatch.chdir(project / "src")
    assert main(["archive", "--reason", "from a subfolder"]) == 0
    assert list((project / "notes/contexts/demo").glob("ctx_*.md"))
    assert not (project / "src/notes").exists()
    monkeypatch.chdir(project)
    capsys.readouterr()
    assert main(["restore", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["markdown_path"].startswith(str(project / "notes/contexts"))


@pytest.mark.parametrize("home", ["", "relative/home"])
def test_an_empty_or_relative_home_puts_archives_in_the_accounts_home(project: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      home: str) -> None:
    """HOME empty (Python reads it as `/`) or relative (read from the working folder): the Markdown archives go to
    the account's home folder (here a stand-in for the password database's entry), never under / or the cwd."""
    import pwd
    from types import SimpleNamespace

    from continuity.core.store import find_store
    from continuity.readside.writers import contexts_dir

    account = tmp_path / "account"
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: SimpleNamespace(pw_dir=str(account)))
    monkeypatch.setenv("HOME", home)
    store = find_store(root=str(project))
    assert contexts_dir(store) == str(account / ".agent" / "contexts")
    config = project / ".agent/runtime-continuity/config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "contexts_dir": "~/notes"}))
    assert contexts_dir(find_store(root=str(project))) == str(account / "notes")
    assert main(["archive", "--reason", "r"]) == 0
    assert list((account / ".agent").rglob("ctx_*.md")) == [] and list((account / "notes").rglob("ctx_*.md"))


def test_an_archive_of_a_thousand_changes_under_long_paths_is_written(repo: Path, capsys: Capture) -> None:
    """1,100 staged files under 240-character paths: the archive keeps the first whole paths that fit its
    event, and the next session is told from it (was exit 2, 'event too large', and no archive)."""
    folder = repo / "src" / ("a_package_with_a_long_name_" * 8)[:200]
    folder.mkdir(parents=True)
    for n in range(1100):
        (folder / f"module_for_the_refactor_{n:05d}.py").write_text("x\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, capture_output=True)
    code, data = run_json(capsys, "archive", "--reason", "end of day")
    assert code == 0, data
    latest = json.loads((repo / ".agent" / "runtime-continuity" / "archives" / "latest.json").read_text())
    dirty = latest["refs"]["dirty_files"]
    written = {str(path.relative_to(repo)) for path in folder.iterdir()} | {".gitignore"}
    assert 0 < len(dirty) < 1100 and set(dirty) <= written  # whole paths, never one cut short
    assert run(capsys, "resume-bundle")[0] == 0


@pytest.mark.parametrize("mark", ["\u2028", "\u2029", "\x85"])
def test_git_names_holding_a_unicode_line_break_stay_one_name(repo: Path, capsys: Capture, mark: str) -> None:
    """Under `core.quotePath false` git prints U+2028, U+2029 and U+0085 raw: a line of git's status ends at "\\n"
    only. Split at every Unicode break, one untracked file was listed as two, a name forged " M evil.py" (a file
    that does not exist) into the dirty files, and a branch was recorded cut short at the mark."""
    subprocess.run(["git", "config", "core.quotePath", "false"], cwd=repo, check=True)
    subprocess.run(["git", "checkout", "-qb", f"release{mark}-evil"], cwd=repo, check=True)
    untracked = f"notes{mark}? FORGED_backdoor.py"
    tracked = f"a{mark}1 .M N... 100644 100644 100644 0000 0000 evil.py"
    (repo / untracked).write_text("x\n")
    (repo / tracked).write_text("one\n")
    subprocess.run(["git", "add", tracked], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "tracked"], cwd=repo, check=True)
    (repo / tracked).write_text("two\n")
    code, data = run_json(capsys, "archive", "--reason", "end of day")
    assert code == 0, data
    latest = json.loads((repo / ".agent" / "runtime-continuity" / "archives" / "latest.json").read_text())
    assert latest["git"]["branch"] == f"release{mark}-evil"
    assert set(latest["refs"]["dirty_files"]) == {".gitignore", untracked, tracked}
    assert sorted(latest["git"]["status_short"].split("\n")) == sorted(["?? .gitignore", f"?? {untracked}",
                                                                        f" M {tracked}"])
    (repo / f"later{mark}? FORGED_two.py").write_text("x\n")
    code, out, _ = run(capsys, "resume-bundle")
    assert code == 0
    newly = [line for line in out.splitlines() if line.startswith("- newly dirty: ")]
    assert newly == ["- newly dirty: later\ufffd? FORGED_two.py"]  # one name, the break shown as a stand-in


def git_section(out: str) -> list[str]:
    """The brief's Git lines."""
    lines = out.split("## Git\n", 1)[1].split("\n\n", 1)[0].splitlines()
    return [line for line in lines if line.startswith("- ")]


def test_archived_paths_are_paths_whatever_core_quote_path_says(repo: Path, capsys: Capture) -> None:
    """Under git's default `core.quotePath` an archive recorded `"caf\\303\\251.txt"` (git's quoted form, quotes
    included) as a dirty file: the file was then "newly dirty" in every brief once the setting changed (and in a
    clone with the other setting), and a file named with a line break was shown as git's escapes."""
    (repo / "café.txt").write_text("x\n")
    (repo / "line\nbreak.txt").write_text("x\n")
    (repo / '"x\\ty"').write_text("x\n")  # a real name that reads like git's quoting of another
    code, data = run_json(capsys, "archive", "--reason", "end of day")
    assert code == 0, data
    latest = json.loads((repo / ".agent" / "runtime-continuity" / "archives" / "latest.json").read_text())
    assert {"café.txt", "line\nbreak.txt"} <= set(latest["refs"]["dirty_files"])
    assert {"?? café.txt", '?? "line\\nbreak.txt"'} <= set(latest["git"]["status_short"].split("\n"))
    for setting in ("true", "false"):
        subprocess.run(["git", "config", "core.quotePath", setting], cwd=repo, check=True)
        code, out, _ = run(capsys, "resume-bundle")
        assert code == 0
        assert not [line for line in git_section(out) if "newly dirty" in line], out


@pytest.mark.parametrize("control", ["\x1b", "\x7f", "\x01", "\x0b"])
def test_a_file_named_with_a_control_character_is_archived_as_its_picture(repo: Path, capsys: Capture,
                                                                          control: str) -> None:
    """One untracked file named with an escape sequence (`red<ESC>[31m.txt`) made every archive and host switch exit
    2 ("git.dirty_files[1] holds a control character") and skipped each SessionEnd archive while it was there. The
    name is archived with the control picture the brief shows (ESC as U+241B), and the next brief sees no drift."""
    picture = "\u2421" if control == "\x7f" else chr(0x2400 + ord(control))
    (repo / f"red{control}[31m.txt").write_text("x\n")
    (repo / f"sub{control}dir").mkdir()
    (repo / f"sub{control}dir" / "f").write_text("x\n")
    code, data = run_json(capsys, "archive", "--reason", "end of day")
    assert code == 0, data
    latest = json.loads((repo / ".agent" / "runtime-continuity" / "archives" / "latest.json").read_text())
    assert {f"red{picture}[31m.txt", f"sub{picture}dir/"} <= set(latest["refs"]["dirty_files"])
    status = latest["git"]["status_short"].split("\n")  # as git quotes it (`"red\\033[31m.txt"`, `\\v`)
    assert control not in "".join(status) and any(line.startswith('?? "red\\') for line in status), status
    assert run(capsys, "host-switch", "--from-host", "claude-code", "--to-host", "codex")[0] == 0
    code, out, _ = run(capsys, "resume-bundle")
    assert code == 0 and not [line for line in git_section(out) if "newly dirty" in line], out
    config = repo / ".agent" / "runtime-continuity" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "archive_on_session_end": True}))
    before = len(list((repo / ".agent" / "runtime-continuity" / "archives").glob("RC-*.json")))
    ended = cli_process("hook", "claude-code", cwd=repo, env={"HOME": os.environ["HOME"]},
                        stdin=json.dumps({"hook_event_name": "SessionEnd", "session_id": "s1", "reason": "exit"}))
    assert ended.returncode == 0 and "control character" not in ended.stderr, ended.stderr
    assert len(list((repo / ".agent" / "runtime-continuity" / "archives").glob("RC-*.json"))) == before + 1


def test_a_project_in_a_subfolder_names_each_file_from_the_repositorys_top(repo: Path, capsys: Capture,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A project in a subfolder of its repository: git's status named files from the subfolder (`a.py`) and its
    diff from the top (`web/a.py`), so one file was both "changed since" and "newly dirty" under two names."""
    web = repo / "web"
    web.mkdir()
    monkeypatch.chdir(web)
    assert run(capsys, "init", "--project", "web")[0] == 0
    (web / "a.py").write_text("one\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "web"], cwd=repo, check=True)
    (web / "a.py").write_text("two\n")
    assert run(capsys, "archive", "--reason", "end of day")[0] == 0
    latest = json.loads((web / ".agent" / "runtime-continuity" / "archives" / "latest.json").read_text())
    assert latest["refs"]["dirty_files"] == ["web/a.py"]
    subprocess.run(["git", "commit", "-qam", "two"], cwd=repo, check=True)
    (web / "a.py").write_text("three\n")
    for relative in ("false", "true"):  # `diff.relative` named changed files from the subfolder again
        subprocess.run(["git", "config", "diff.relative", relative], cwd=repo, check=True)
        code, out, _ = run(capsys, "resume-bundle")
        assert code == 0
        assert [line for line in git_section(out) if "changed since" in line or "dirty" in line] == [
            "- changed since: web/a.py"], out


def test_a_runtime_continuity_archive_is_read_without_false_drift(repo: Path, capsys: Capture) -> None:
    """runtime-continuity archives seed 004's `rev-parse --short HEAD` and its `diff --name-only HEAD` as git prints
    it (quoted under the default `core.quotePath`): every brief said HEAD had moved, and listed the files it had
    archived as newly dirty."""
    from continuity.adapters.compat.runtime_continuity import main as compat_main

    (repo / "app.py").write_text("print(2)\n")
    (repo / "café.py").write_text("x\n")
    subprocess.run(["git", "add", "café.py"], cwd=repo, check=True)
    assert compat_main(["archive", "--project", "demo", "--gate", "user"]) == 0
    capsys.readouterr()
    latest = json.loads((repo / ".agent" / "runtime-continuity" / "archives" / "latest.json").read_text())
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    assert latest["git"]["head"] != head and head.startswith(latest["git"]["head"])  # the short form
    code, out, _ = run(capsys, "resume-bundle")
    assert code == 0
    assert [line for line in git_section(out) if "moved" in line or "newly dirty" in line] == [
        "- newly dirty: .gitignore"], out  # untracked: seed 004's dirty files are those `git diff HEAD` names
    code, data = run_json(capsys, "resume-bundle")
    assert data["git"]["head_moved"] is False


def test_a_git_that_fails_is_not_taken_for_no_git(repo: Path, capsys: Capture, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """git refusing to work (here a broken config file; a repository owned by another user, a failing clean filter
    alike) was reported as "not a git work tree": `work validate` warned it was outside git, the brief's Git
    section said "no commit yet", and sync told the user to run it inside a clone of the project."""
    broken = tmp_path / "broken.gitconfig"
    broken.write_text("[core\n broken = \n")
    assert run(capsys, "install", "ai-context", "--repository", "repo-a")[0] == 0
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(broken))
    code, out, err = run(capsys, "work", "validate", "--id", "V1", "--kind", "test", "--result", "PASS",
                         "--scope", "all", "--summary", "ok")
    assert code == 0
    assert "git failed: fatal: bad config line 1" in err and "not in a git worktree" not in err, err
    code, out, err = run(capsys, "resume-bundle")
    assert code == 0
    assert "## Git" not in out and "no commit yet" not in out, out
    assert "git facts unavailable: git failed: fatal: bad config line 1" in out + err
    code, out, err = run(capsys, "sync")
    assert code == 2
    assert "bad config line 1" in err and "inside a clone" not in err, err


def test_files_changed_since_the_archive_are_named_whole(repo: Path, capsys: Capture) -> None:
    """The brief's "changed since" lines name each file committed since the archive whole: git's list was split at
    every space, so `my notes.txt` came as `my` and `notes.txt`, two files that do not exist."""
    assert run(capsys, "archive", "--reason", "end of day")[0] == 0
    (repo / "my notes.txt").write_text("x\n")
    (repo / "line\u2028break.txt").write_text("x\n")
    subprocess.run(["git", "config", "core.quotePath", "false"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "notes"], cwd=repo, check=True)
    code, out, _ = run(capsys, "resume-bundle")
    assert code == 0
    changed = sorted(line for line in out.splitlines() if line.startswith("- changed since: "))
    assert changed == ["- changed since: .gitignore", "- changed since: line\ufffdbreak.txt",
                       "- changed since: my notes.txt"]


def test_an_archive_of_thousands_of_changes_under_chinese_paths_is_written(repo: Path, capsys: Capture) -> None:
    """`core.quotePath false` and 3,000 changed files named in Chinese (three bytes a character): git's status
    is cut by its size in bytes, not characters, so the archive fits its event (was exit 2, 'event too large')."""
    subprocess.run(["git", "config", "core.quotePath", "false"], cwd=repo, check=True)
    names = [f"{'中文目录说明文件' * 7}{n:05d}.txt" for n in range(3000)]
    for name in names:
        (repo / name).write_text("one\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, capture_output=True)
    subprocess.run(["git", "commit", "-qm", "many"], cwd=repo, check=True)
    for name in names:
        (repo / name).write_text("two\n")
    code, data = run_json(capsys, "archive", "--reason", "end of day")
    assert code == 0, data
    latest = json.loads((repo / ".agent" / "runtime-continuity" / "archives" / "latest.json").read_text())
    status = latest["git"]["status_short"]
    assert 0 < len(status.encode()) <= 65536 and status.endswith(".txt")


def test_ages_count_from_the_writers_clock_after_a_teammates_fast_clock(project: Path, capsys: Capture,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """An event stamped two hours ahead (a teammate's fast clock, synced in) pushes every later stamp with it. An
    archive and a checkpoint taken here then read `age_hours: -2.0`, "just now" for hours, and `status` said `ok`
    long past the two hours after which it says `archive_now`. They count from the events' `written_at` now."""
    import continuity.core.store as store_module

    real = store_module.now_us
    with monkeypatch.context() as fast:
        fast.setattr(store_module, "now_us", lambda: real() + 2 * 3600 * 1_000_000)
        assert run(capsys, "log", "from the fast machine", "--host", "fast")[0] == 0
    assert run(capsys, "checkpoint", "-m", "here", "--next", "ship it")[0] == 0
    assert run(capsys, "archive", "--reason", "here", "--json")[0] == 0
    capsys.readouterr()
    status = json.loads(run(capsys, "status", "--json")[1])
    assert 0 <= status["age_hours"] < 0.1 and status["stale_recommendation"] == "ok"
    archived = max(all_event_files(project)).name  # an audit replay as of the archive's own event answers at it
    point = "RCE-" + archived[:31]
    replayed = json.loads(run(capsys, "status", "--json", "--as-of", point)[1])
    assert replayed["age_hours"] == 0 and replayed["stale_recommendation"] == "ok", replayed
    brief = json.loads(run(capsys, "resume-bundle", "--format", "json", "--as-of", point)[1])
    assert brief["archive_age"] == "just now", brief["archive_age"]
    from continuity.readside import query
    from continuity.sessions import service

    for module in (store_module, query, service):  # three hours on, by this machine's clock
        monkeypatch.setattr(module, "now_us", lambda: real() + 3 * 3600 * 1_000_000)
    status = json.loads(run(capsys, "status", "--json")[1])
    assert 2.9 < status["age_hours"] < 3.1 and status["stale_recommendation"] == "archive_now" and status["age"] == \
        "3h ago"
    bundle = json.loads(run(capsys, "resume-bundle", "--format", "json")[1])
    assert bundle["archive_age"] == "3h ago" and bundle["work"]["last_checkpoint_age"] == "3h ago"


def test_the_briefs_other_ages_count_from_the_writers_clock_too(project: Path, capsys: Capture,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """After a teammate's fast clock, a decision, a recent event and a handoff or artifact mention taken here showed
    their stamps' age ("59m ago" three hours on) beside the archive's and checkpoint's true one; they count from the
    writer's clock too, and the bundle's entries keep their shape (no `written_at` key)."""
    import continuity.core.store as store_module
    from continuity.readside import query
    from continuity.sessions import service

    real = store_module.now_us
    with monkeypatch.context() as fast:
        fast.setattr(store_module, "now_us", lambda: real() + 2 * 3600 * 1_000_000)
        assert run(capsys, "log", "from the fast machine", "--host", "fast")[0] == 0
    assert run(capsys, "log", "--type", "decision", "-m", "keep sqlite", "--handoff", "docs/handoff.md",
               "--artifact", "out/report.txt")[0] == 0
    assert run(capsys, "log", "--type", "question", "-m", "which index?")[0] == 0
    open_task = run(capsys, "task", "create", "--title", "open one")[1].strip()
    done_task = run(capsys, "task", "create", "--title", "done one")[1].strip()
    assert run(capsys, "run", "start", "--task", open_task)[0] == 0
    assert run(capsys, "task", "update", done_task, "--status", "completed")[0] == 0
    for module in (store_module, query, service):  # three hours on, by this machine's clock
        monkeypatch.setattr(module, "now_us", lambda: real() + 3 * 3600 * 1_000_000)
    bundle = json.loads(run(capsys, "resume-bundle", "--format", "json")[1])
    work = bundle["work"]
    mine = [e for e in bundle["runtime_events"] if e["message"] in ("keep sqlite", "which index?")]
    fast_one = [e for e in bundle["runtime_events"] if e["message"] == "from the fast machine"]
    listed = [*work["decisions"], *work["open_questions"], *mine]
    assert len(listed) == 4 and all(entry["age"] == "3h ago" for entry in listed), listed
    assert [e["age"] for e in fast_one] == ["1h ago"]  # its stamp is its writer's clock: no other time to go by
    mentioned = [*bundle["artifact_states"], *(h for h in bundle["pending_handoffs"])]
    assert [m["mentioned"] for m in mentioned] == ["3h ago", "3h ago"], mentioned
    assert not any("written_at" in entry for entry in [*listed, *mentioned, *bundle["runtime_events"]])
    assert set(work["decisions"][0]) == {"event_id", "created_at", "text", "age"}
    brief = run(capsys, "resume-bundle")[1]
    tasks = bundle["tasks"]
    ages = [*(t["updated"] for t in tasks["open_tasks"]), *(r["started"] for r in tasks["open_runs"]),
            *(([tasks["current_run"]["started"]]) if tasks["current_run"] else []),
            *(m["age"] for m in tasks["memories"])]
    assert len(ages) >= 3 and set(ages) == {"3h ago"}, tasks
    assert "- 3h ago: work.logged keep sqlite" in brief and "- 3h ago: work.logged which index?" in brief, brief
    assert "mentioned 3h ago" in brief and "mentioned 59m ago" not in brief, brief


def test_a_clock_gone_back_says_so_not_that_a_day_folder_vanished(project: Path, capsys: Capture,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine's clock set 40 days back (a dead battery before the time syncs): the day folders already read
    are past what it counts as now, so the models are read again without them. The warning said "a day folder
    vanished", which sent people looking for deleted files; it says the clock is behind the log."""
    import continuity.core.store as store_module

    assert run(capsys, "log", "before the clock went back")[0] == 0
    assert run(capsys, "status")[0] == 0
    real = store_module.now_us
    monkeypatch.setattr(store_module, "now_us", lambda: real() - 40 * 86_400 * 1_000_000)
    code, _, err = run(capsys, "status")
    assert code == 0 and "vanished" not in err, err
    assert "the clock is behind the log" in err and "rebuilt" in err, err


def test_a_repository_owned_by_another_user_is_named_with_gits_way_to_trust_it(tmp_path: Path) -> None:
    """git refuses a repository owned by another user ("dubious ownership") and says how to trust it on its next
    lines; sync kept only the first line, so the user was told git failed but not how to go on."""
    if os.geteuid() != 0:
        pytest.skip("making a repository owned by another user takes root (chown)")
    project = tmp_path / "theirs"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTINUITY_", "GIT_"))}
    env["HOME"] = str(tmp_path)
    assert subprocess.run([sys.executable, "-m", "continuity", "init", "--project", "demo"], cwd=project, env=env,
                          capture_output=True).returncode == 0
    subprocess.run(["chown", "-R", "54321:54321", str(project)], check=True)
    done = subprocess.run([sys.executable, "-m", "continuity", "sync"], cwd=project, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert "dubious ownership" in done.stderr
    assert f"(to trust it: git config --global --add safe.directory {project})" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
