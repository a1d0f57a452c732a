"""Past a read model's bounds, what someone still depends on is not forgotten: an open run, a session not ended,
and an agent's own work (never another's restated as its own). Each bound is made small here (monkeypatched:
the folds read it when they run); the real ones are in docs/projections.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from continuity.adapters.hooks import run_hook
from continuity.cli import main
from tests.helpers import all_event_files

Capture = pytest.CaptureFixture[str]


def run(capsys: Capture, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def stored(project: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_bytes()) for path in all_event_files(project)]


def test_an_open_run_outlives_a_thousand_finished_ones(project: Path, capsys: Capture,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Past RUNS_LIMIT (1,000; 3 here) the least recently touched run was forgotten open or not: `run complete`
    of a long run said "unknown run", and a subagent could not name it as its parent. Completed runs give way
    first; open ones stay up to OPEN_RUNS_LIMIT (2,000; 4 here), past which the oldest go whatever they are."""
    import projections.tasks

    monkeypatch.setattr(projections.tasks, "RUNS_LIMIT", 3)
    monkeypatch.setattr(projections.tasks, "OPEN_RUNS_LIMIT", 4)
    task = run(capsys, "task", "create", "--title", "long work")[1].strip()
    long_run = run(capsys, "run", "start", "--task", task)[1].strip()
    for _ in range(4):
        other = run(capsys, "run", "start", "--task", task)[1].strip()
        assert run(capsys, "run", "complete", other, "--output-summary", "quick")[0] == 0
    code, _, err = run(capsys, "run", "start", "--task", task, "--context", "subagent", "--parent-run", long_run)
    assert code == 0, err
    assert run(capsys, "run", "complete", long_run, "--output-summary", "done at last")[0] == 0
    opened = [run(capsys, "run", "start", "--task", task)[1].strip() for _ in range(5)]  # never completed
    assert run(capsys, "run", "show", opened[0])[0] == 7  # past the hard bound: the oldest went
    assert run(capsys, "run", "show", opened[-1])[0] == 0


def test_a_long_session_keeps_counting_its_compactions(project: Path, capsys: Capture,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Past SESSIONS_LIMIT (50; 2 here) a session quiet while others wrote was forgotten: its next compaction's
    brief said "compaction 1" again. A session not ended stays (up to OPEN_SESSIONS_LIMIT); ended ones give way."""
    import projections.sessions

    monkeypatch.setattr(projections.sessions, "SESSIONS_LIMIT", 2)

    def start(session: str, source: str = "startup") -> str:
        body = {"session_id": session, "cwd": str(project), "hook_event_name": "SessionStart", "source": source}
        result = run_hook("claude-code", json.dumps(body).encode(), root=str(project))
        return str(json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"])

    def end(session: str) -> None:
        body = {"session_id": session, "cwd": str(project), "hook_event_name": "SessionEnd", "reason": "exit"}
        run_hook("claude-code", json.dumps(body).encode(), root=str(project))

    start("long")
    assert "compaction 1 of this session" in start("long", "compact")
    for number in range(4):
        start(f"other-{number}")
        end(f"other-{number}")
    assert "compaction 2 of this session" in start("long", "compact")
    import continuity.sessions.brief
    from continuity.core.store import Store
    from continuity.readside.query import current_view

    monkeypatch.setattr(continuity.sessions.brief, "SESSIONS_LIMIT", 2)
    for number in range(3):
        start(f"open-{number}")  # never ended: kept by the model, beyond SESSIONS_LIMIT
    assert len(current_view(Store(project), ("sessions",)).models.project("demo").of("sessions").sessions) > 2
    capsys.readouterr()
    code, out, err = run(capsys, "resume-bundle", "--format", "json")
    listed = json.loads(out)["sessions"]
    assert code == 0 and len(listed["active"]) + len(listed["stale"]) == 2, err  # the brief shows the newest, as before


def test_an_agent_let_go_of_is_never_given_the_agentless_next_steps(project: Path, capsys: Capture,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Past AGENTS_LIMIT (200; 2 here) ann's own work was forgotten and her pre-compaction checkpoint restated
    what entries naming no agent stated ("an agentless next step") as hers, replacing the project's next steps."""
    import projections.agentwork

    monkeypatch.setattr(projections.agentwork, "AGENTS_LIMIT", 2)
    assert run(capsys, "log", "parser", "--agent", "ann", "--in-progress", "migrating the parser",
               "--next", "finish parser migration")[0] == 0
    run(capsys, "log", "other work", "--agent", "bo", "--next", "bo's step")
    run(capsys, "log", "old note", "--in-progress", "old agentless note", "--next", "an agentless next step")
    body = {"hook_event_name": "PreCompact", "session_id": "S1", "trigger": "auto", "agent_id": "ann",
            "cwd": str(project)}
    run_hook("claude-code", json.dumps(body).encode(), root=str(project))
    restated = [event for event in stored(project) if event["kind"] == "checkpoint.recorded"]
    assert restated and all("an agentless next step" not in json.dumps(event) for event in restated)


def test_a_pending_handoff_outlives_two_thousand_newer_ones(project: Path, capsys: Capture,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Past OPEN_LIMIT (2,000; 3 here) the oldest open handoff was forgotten: `handoff accept` said there is
    none while its document said pending. Taken (accepted) ones give way first; pending ones stay."""
    import projections.handoffs

    monkeypatch.setattr(projections.handoffs, "OPEN_LIMIT", 3)

    def create(to: str, message: str) -> str:
        code, out, err = run(capsys, "handoff", "create", "--agent", "alice", "--to", to, "--message", message,
                             "--json")
        assert code == 0, err
        return str(json.loads(out)["handoff_id"])

    waiting = create("bob", "please take the parser")
    taken = create("cy", "the lexer")
    assert run(capsys, "handoff", "accept", taken, "--agent", "cy")[0] == 0
    for number in range(3):
        create("dee", f"more work {number}")
    code, _, err = run(capsys, "handoff", "accept", waiting, "--agent", "bob")
    assert code == 0, err
    assert run(capsys, "handoff", "show", taken)[0] == 7  # the taken one gave way


def test_a_cancelled_parent_keeps_holding_its_subtasks_past_the_finished_bound(
        project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past TERMINAL_LIMIT (500; 2 here) a cancelled parent was forgotten and `task ready` offered its subtask (a
    cancelled parent holds its subtasks); `task update --reopen` of it said unknown task."""
    import projections.tasks

    monkeypatch.setattr(projections.tasks, "TERMINAL_LIMIT", 2)

    def create(*args: str) -> str:
        code, out, err = run(capsys, "task", "create", *args)
        assert code == 0, err
        return out.strip()

    parent = create("--title", "parser")
    lexer = create("--title", "subtask: lexer", "--parent", parent)
    other_parent = create("--title", "docs")
    create("--title", "subtask: guide", "--parent", other_parent)
    for held in (parent, other_parent):
        assert run(capsys, "task", "update", held, "--status", "cancelled")[0] == 0
    finished = []
    for number in range(3):
        finished.append(create("--title", f"other {number}"))
        assert run(capsys, "task", "update", finished[-1], "--status", "completed")[0] == 0
    ready = json.loads(run(capsys, "task", "ready", "--json")[1])
    assert not {"subtask: lexer", "subtask: guide"} & {task["title"] for task in ready["tasks"]}, ready
    # the held ones are outside the bound: the newest two finished are kept as ever, the oldest went
    assert [run(capsys, "task", "show", task_id)[0] for task_id in finished] == [7, 0, 0]
    assert run(capsys, "task", "update", parent, "--reopen", "--status", "queued")[0] == 0  # still known
    assert run(capsys, "task", "update", lexer, "--status", "completed")[0] == 0
    assert run(capsys, "task", "show", other_parent)[0] == 0  # still holding its subtask
