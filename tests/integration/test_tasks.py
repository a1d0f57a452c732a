"""Tasks, runs and memories through the real CLI: processes, races, bad input, rebuild and `--as-of`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from continuity.core.errors import EXIT_NOT_FOUND, EXIT_SECRET, EXIT_UNSAFE_STORE, EXIT_USAGE, EXIT_VERSION_CONFLICT
from continuity.core.initialize import init_store
from continuity.core.store import Store
from tests.helpers import all_event_files, cli_process

SESSION = {"CONTINUITY_SESSION_ID": "s1"}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A fresh project with a store for project `demo`."""
    project = tmp_path / "proj"
    project.mkdir()
    init_store(project, project="demo", language=None)
    return project


def run(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`continuity ARGS` as a new process in the project."""
    return cli_process(*args, cwd=root, env={**SESSION, **(env or {})})


def ok(root: Path, *args: str) -> str:
    """The stdout of a command that must succeed."""
    done = run(root, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def as_json(root: Path, *args: str) -> Any:
    """A successful command's --json output."""
    return json.loads(ok(root, *args, "--json"))


def together(root: Path, commands: list[list[str]]) -> list[subprocess.CompletedProcess[str]]:
    """Start every command as its own process at once; wait for all."""
    env = {key: value for key, value in __import__("os").environ.items() if not key.startswith("CONTINUITY_")}
    env.update(SESSION)
    procs = [subprocess.Popen([sys.executable, "-m", "continuity", *cmd], cwd=root, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for cmd in commands]
    results = []
    for proc, cmd in zip(procs, commands, strict=True):
        out, err = proc.communicate(timeout=60)
        results.append(subprocess.CompletedProcess(cmd, proc.returncode, out, err))
    return results


def test_lifecycle_attributes_logged_files_to_the_current_run(root: Path) -> None:
    """create -> run start -> `log --file` and a PostToolUse hook -> completed: the outcome lists both files."""
    task = ok(root, "task", "create", "--title", "Fix auth", "--description", "login regression")
    run_id = ok(root, "run", "start", "--task", task, "--role", "software_engineer")
    ok(root, "log", "--file", "src/auth.py", "-m", "edited")
    hook = {"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Edit",
            "tool_input": {"file_path": "src/token.py"}, "tool_response": {}}
    assert cli_process("hook", "claude-code", cwd=root, stdin=json.dumps(hook)).returncode == 0
    assert as_json(root, "task", "update", task, "--status", "completed")["version"] == 2
    ok(root, "run", "complete", run_id, "--output-summary", "fixed refresh")
    [memory] = as_json(root, "memory", "list")["memories"]
    assert memory["kind"] == "task_outcome" and memory["run_id"] == run_id
    assert memory["files_touched"] == ["src/auth.py", "src/token.py"]
    assert (root / ".agent/runtime-continuity/memories" / f"{memory['memory_id']}.md").read_text().startswith(
        "# Task complete: Fix auth")
    assert as_json(root, "run", "show", run_id)["run"]["completed_at"]


def test_a_file_edited_by_a_harness_and_logged_by_hand_counts_once(root: Path) -> None:
    """The harness names the file absolutely, `log --file` from the root: the memory listed both and counted two."""
    task = ok(root, "task", "create", "--title", "paths")
    ok(root, "run", "start", "--task", task)
    hook = {"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Edit", "cwd": str(root),
            "tool_input": {"file_path": str(root / "x.py")}, "tool_response": {}}
    assert cli_process("hook", "claude-code", cwd=root, stdin=json.dumps(hook)).returncode == 0
    ok(root, "log", "--file", "x.py", "-m", "edited x.py")
    as_json(root, "task", "update", task, "--status", "completed")
    [memory] = as_json(root, "memory", "list")["memories"]
    assert memory["files_touched"] == ["x.py"] and "Files touched: 1" in memory["summary"]

def test_a_run_started_where_no_session_is_known_takes_the_hooks_edits(root: Path) -> None:
    """The shell pattern of docs/tasks.md (and the MCP server) knows no harness session: its run's hint is the
    no-session one, and the PostToolUse hook (which knows its session) found no hint of its own, so the outcome
    said `Files touched: 0`. A session without a run of its own takes the no-session run; one with its own keeps
    it."""
    no_session = {"CONTINUITY_SESSION_ID": ""}
    task = ok(root, "task", "create", "--title", "Fix auth")
    started = run(root, "run", "start", "--task", task, env=no_session)
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()
    other_task = ok(root, "task", "create", "--title", "Other work")
    other_run = run(root, "run", "start", "--task", other_task, env={"CONTINUITY_SESSION_ID": "cc-2"}).stdout.strip()
    for session, path in (("cc-1", "src/auth.py"), ("cc-2", "src/other.py")):
        hook = {"session_id": session, "hook_event_name": "PostToolUse", "tool_name": "Edit",
                "tool_input": {"file_path": path}, "tool_response": {}}
        assert cli_process("hook", "claude-code", cwd=root, stdin=json.dumps(hook)).returncode == 0
    assert run(root, "task", "update", task, "--status", "completed", env=no_session).returncode == 0
    assert run(root, "run", "complete", run_id, "--output-summary", "fixed", env=no_session).returncode == 0
    [memory] = as_json(root, "memory", "list")["memories"]
    assert memory["run_id"] == run_id and memory["files_touched"] == ["src/auth.py"]
    assert run(root, "task", "update", other_task, "--status", "completed",
               env={"CONTINUITY_SESSION_ID": "cc-2"}).returncode == 0
    outcome = next(m for m in as_json(root, "memory", "list")["memories"] if m["run_id"] == other_run)
    assert outcome["files_touched"] == ["src/other.py"]


def test_when_a_subagents_run_completes_its_parent_is_the_sessions_current_run_again(root: Path) -> None:
    """docs/tasks.md's subagent pattern: a run started under the session's run, then completed. The session's later
    edits were attributed to no run (the hint was only removed), while its brief named the parent as the current
    run. The open parent is current again."""
    session = {"CONTINUITY_SESSION_ID": "cc-a"}
    task = ok(root, "task", "create", "--title", "Fix auth")
    parent = run(root, "run", "start", "--task", task, env=session).stdout.strip()
    child = run(root, "run", "start", "--task", task, "--context", "subagent", "--parent-run", parent,
                env=session).stdout.strip()
    assert run(root, "run", "complete", child, "--output-summary", "looked", env=session).returncode == 0
    body = {"session_id": "cc-a", "hook_event_name": "PostToolUse", "tool_name": "Edit",
            "tool_input": {"file_path": "after.py"}, "tool_response": {}}
    assert cli_process("hook", "claude-code", cwd=root, stdin=json.dumps(body)).returncode == 0
    assert as_json(root, "run", "show", parent)["run"]["files"] == ["after.py"]
    assert run(root, "run", "complete", parent, "--output-summary", "done", env=session).returncode == 0
    assert cli_process("hook", "claude-code", cwd=root, stdin=json.dumps(body)).returncode == 0
    last = json.loads(all_event_files(root)[-1].read_bytes())
    assert last["kind"] == "work.logged" and last.get("run_id") is None  # no run open: none current
    # the MCP tools the same (their runs are the no-session one's)
    from continuity.adapters.mcp import task_tools  # noqa: F401  (registers the tools)
    from continuity.adapters.mcp.registry import call
    from continuity.tasks.current import read_current

    parent = call("start_agent_run", {"task_id": task}, root=str(root))["run_id"]
    child = call("start_agent_run", {"task_id": task, "context": "subagent", "parent_run_id": parent},
                 root=str(root))["run_id"]
    local = str(root / ".agent" / "runtime-continuity" / "local")
    assert read_current(local, None) == (child, task)
    call("complete_agent_run", {"run_id": child, "output_summary": "looked"}, root=str(root))
    assert read_current(local, None) == (parent, task)


def test_a_parent_completed_while_its_subagent_completes_is_not_left_current(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's completion decides to make its open parent current again; the parent's own completion lands
    before that hint is written (its clearing finds nothing to clear). The hint then named a completed run, and the
    session's next edit carried it. Asked again once written, the completed parent is cleared."""
    from continuity.tasks import current

    monkeypatch.setenv("CONTINUITY_SESSION_ID", SESSION["CONTINUITY_SESSION_ID"])  # the session `run` gives
    monkeypatch.chdir(root)
    task = ok(root, "task", "create", "--title", "Fix auth")
    parent = ok(root, "run", "start", "--task", task)
    child = ok(root, "run", "start", "--task", task, "--context", "subagent", "--parent-run", parent)
    clear = current.clear_current

    def parent_completes_first(local_dir: str, run_id: str, resume: Any = None) -> None:
        if resume is not None:  # between the decision and the hint: the parent completed by another process
            assert run(root, "run", "complete", parent, "--output-summary", "done").returncode == 0
        clear(local_dir, run_id, resume)

    monkeypatch.setattr(current, "clear_current", parent_completes_first)
    assert main(["run", "complete", child, "--output-summary", "looked"]) == 0
    local = str(root / ".agent" / "runtime-continuity" / "local")
    assert current.read_current(local, SESSION["CONTINUITY_SESSION_ID"]) is None


@pytest.mark.parametrize("hint", ["\x1b[31mevil task-x", "../../etc task-x", "run-ok task\u202ex", "a b c"])
def test_a_current_run_hint_no_event_can_carry_is_no_run(root: Path, hint: str) -> None:
    """The session's current-run hint (a local file) holding an id no event may carry: it is no run, and every
    write goes on (each failed with exit 2 naming a run id nobody gave, the hooks recorded nothing)."""
    runs = root / ".agent/runtime-continuity/local/runs"
    runs.mkdir(parents=True, exist_ok=True)
    (runs / f"current-{SESSION['CONTINUITY_SESSION_ID']}").write_text(hint + "\n")
    task = ok(root, "task", "create", "--title", "h")
    ok(root, "log", "-m", "hello")
    ok(root, "checkpoint", "-m", "x", "--next", "y")
    ok(root, "task", "update", task, "--status", "completed")
    hook = {"session_id": SESSION["CONTINUITY_SESSION_ID"], "hook_event_name": "PostToolUse", "tool_name": "Edit",
            "tool_input": {"file_path": "src/token.py"}, "tool_response": {}}
    before = len(all_event_files(root))
    assert cli_process("hook", "claude-code", cwd=root, stdin=json.dumps(hook)).returncode == 0
    assert len(all_event_files(root)) == before + 1
    assert all(event.get("run_id") is None for event in (json.loads(path.read_bytes())
                                                         for path in all_event_files(root)))


@pytest.mark.parametrize(("argv", "what"), [(["task", "list", "--status", "failed"], "tasks"),
                                            (["task", "ready"], "tasks"), (["memory", "list"], "memories")])
def test_an_empty_listing_leaves_stdout_empty(root: Path, argv: list[str], what: str) -> None:
    """stdout holds one line per entry (docs/tasks.md), so none when there are none: `no tasks` goes to stderr (a
    script reading ids read `no` as one)."""
    done = run(root, *argv)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == f"no {what}\n", done


def test_views_read_between_events_the_tasks_model_passes_over(root: Path) -> None:
    """Events of no run (a `log`, a served brief) only move the tasks model's counters: `task list`, `memory list`
    and the brief read its views after them, and a memory made later is still written to its file."""
    task = ok(root, "task", "create", "--title", "Fix auth")
    assert task in ok(root, "task", "list")
    ok(root, "log", "-m", "looked around")
    assert task in ok(root, "task", "list")
    ok(root, "resume-bundle", "--record")
    assert as_json(root, "memory", "list")["memories"] == []
    run_id = ok(root, "run", "start", "--task", task)
    ok(root, "log", "-m", "still no file")
    assert task in ok(root, "task", "list")
    ok(root, "task", "update", task, "--status", "completed")
    ok(root, "log", "-m", "after the task")
    ok(root, "run", "complete", run_id, "--output-summary", "fixed")
    assert task in ok(root, "task", "list")
    [memory] = as_json(root, "memory", "list")["memories"]
    assert (root / ".agent/runtime-continuity/memories" / f"{memory['memory_id']}.md").is_file()
    ok(root, "verify")


def test_in_the_seeds_order_a_blocker_resolution_names_the_runs_summary_too(root: Path) -> None:
    """The seed's catch (`update_task` blocked) then finally (`complete_agent_run`): the blocker_resolution never
    named the run's output summary, in `memory list` or its file; it does, its blocker line kept, after a rebuild
    too."""
    task = ok(root, "task", "create", "--title", "Fix auth", "--done-criteria", "tests pass")
    run_id = ok(root, "run", "start", "--task", task)
    ok(root, "log", "--file", "src/a.py", "-m", "edited")
    ok(root, "task", "update", task, "--status", "blocked", "--note", "tests fail: see log")
    ok(root, "run", "complete", run_id, "--output-summary", "fixed token refresh")
    [memory] = as_json(root, "memory", "list")["memories"]
    assert memory["summary"] == ("Fix auth\nGoal: tests pass\nBlocker: tests fail: see log\nRun: fixed token refresh\n"
                                 "Files touched: 1")
    path = root / ".agent/runtime-continuity/memories" / f"{memory['memory_id']}.md"
    assert "Run: fixed token refresh" in path.read_text() and "Blocker: tests fail" in path.read_text()
    ok(root, "rebuild")
    assert as_json(root, "memory", "list")["memories"] == [memory] and "Run: fixed" in path.read_text()


def test_in_the_seeds_order_the_outcome_names_the_runs_summary_once_the_run_completes(root: Path) -> None:
    """Seed 003's pattern updates the task (completed: the memory is made) and then completes the run in a
    `finally`: the memory's summary lacked the run's output summary for good. It names it once the run completes,
    in `memory list`, its file and after a rebuild; files logged under the run after that are not the run's."""
    task = ok(root, "task", "create", "--title", "Fix auth", "--description", "login regression")
    run_id = ok(root, "run", "start", "--task", task)
    ok(root, "log", "--file", "src/auth.py", "-m", "edited")
    ok(root, "task", "update", task, "--status", "completed")
    [before] = as_json(root, "memory", "list")["memories"]
    assert "Run:" not in before["summary"]
    ok(root, "run", "complete", run_id, "--output-summary", "fixed token refresh")
    ok(root, "log", "--file", "src/late.py", "-m", "after the run", "--run", run_id)
    [memory] = as_json(root, "memory", "list")["memories"]
    assert memory["summary"] == "Fix auth\nGoal: login regression\nRun: fixed token refresh\nFiles touched: 1"
    assert memory["memory_id"] == before["memory_id"] and memory["files_touched"] == ["src/auth.py"]
    path = root / ".agent/runtime-continuity/memories" / f"{memory['memory_id']}.md"
    assert "Run: fixed token refresh" in path.read_text()
    assert as_json(root, "run", "show", run_id)["run"]["files"] == ["src/auth.py"]
    ok(root, "rebuild")
    assert as_json(root, "memory", "list")["memories"] == [memory] and "Run: fixed" in path.read_text()


def test_an_update_of_fields_only_reports_the_status_it_leaves_and_an_empty_one_is_refused(root: Path) -> None:
    """`task update T --title x` answered "status": null (CLI and MCP); an update that changes nothing (`--note
    ''`) was recorded and raised the version, so every other writer then met a version conflict."""
    from continuity.adapters.mcp import task_tools  # noqa: F401  (registers the tools)
    from continuity.adapters.mcp.registry import call
    from continuity.core.errors import UsageError

    task = ok(root, "task", "create", "--title", "t")
    ok(root, "task", "update", task, "--status", "in_progress")
    answer = as_json(root, "task", "update", task, "--title", "new")
    assert answer["status"] == "in_progress" and answer["version"] == 3
    assert call("update_task", {"task_id": task, "priority": 3}, root=str(root))["status"] == "in_progress"
    done = run(root, "task", "update", task, "--note", "")
    assert done.returncode == EXIT_USAGE and "nothing to update" in done.stderr
    with pytest.raises(UsageError, match="nothing to update"):
        call("update_task", {"task_id": task, "note": ""}, root=str(root))
    assert as_json(root, "task", "show", task)["task"]["version"] == 4


def test_a_blocker_is_the_blocking_updates_note_not_an_older_one(root: Path) -> None:
    """blocked without a note: the memory says "(no note)", not the progress note an earlier update gave."""
    task = ok(root, "task", "create", "--title", "Ship")
    ok(root, "run", "start", "--task", task)
    ok(root, "task", "update", task, "--status", "in_progress", "--note", "starting: reading the auth module")
    ok(root, "task", "update", task, "--status", "blocked")
    [memory] = as_json(root, "memory", "list")["memories"]
    assert "Blocker: (no note)" in memory["summary"] and "reading the auth module" not in memory["summary"]
    assert memory["provenance"] == {"hook_point": "update_task:blocked", "run_id": memory["run_id"],
                                    "files_touched": []}  # the contract's keys, no others


def test_a_run_records_the_git_branch_and_commit_it_started_at(root: Path) -> None:
    """run start records the branch name and the full commit hash (not the branch twice); detached: no branch."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                              text=True).stdout.strip()

    git("init", "-q", "-b", "trunk")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "first")
    head = git("rev-parse", "HEAD")
    task = ok(root, "task", "create", "--title", "Fix auth")
    started = as_json(root, "run", "start", "--task", task)
    assert (started["git_branch"], started["git_commit"]) == ("trunk", head)
    assert as_json(root, "run", "show", started["run_id"])["run"]["git_commit"] == head
    git("checkout", "-q", "--detach")
    detached = as_json(root, "run", "start", "--task", task)
    assert (detached["git_branch"], detached["git_commit"]) == (None, head)


def test_start_agent_run_takes_the_seed_argument_names(root: Path) -> None:
    """The MCP start_agent_run accepts seed 003's agent_role and context_type (as role and context); both names
    given must agree."""
    from continuity.adapters.mcp import task_tools  # noqa: F401  (registers the tools)
    from continuity.adapters.mcp.registry import call
    from continuity.core.errors import UsageError

    task = call("create_task", {"title": "Fix the auth flow regression", "description": "token refresh",
                                "done_criteria": "tests pass"}, root=str(root))["task_id"]
    parent = call("start_agent_run", {"task_id": task, "agent_role": "software_engineer",
                                      "context_type": "primary"}, root=str(root))["run_id"]
    child = call("start_agent_run", {"task_id": task, "agent_role": "reviewer", "context_type": "subagent",
                                     "parent_run_id": parent}, root=str(root))["run_id"]
    shown = [as_json(root, "run", "show", run_id)["run"] for run_id in (parent, child)]
    assert [(run["role"], run["context"]) for run in shown] == [("software_engineer", "primary"),
                                                                ("reviewer", "subagent")]
    with pytest.raises(UsageError, match="role and agent_role differ"):
        call("start_agent_run", {"task_id": task, "role": "a", "agent_role": "b"}, root=str(root))
    with pytest.raises(UsageError, match="context and context_type differ"):
        call("start_agent_run", {"task_id": task, "context": "subagent", "context_type": "primary"}, root=str(root))
    with pytest.raises(UsageError, match="context and context_type differ"):  # "primary" given is not the default
        call("start_agent_run", {"task_id": task, "context": "primary", "context_type": "subagent"}, root=str(root))
    plain = call("start_agent_run", {"task_id": task}, root=str(root))["run_id"]
    assert as_json(root, "run", "show", plain)["run"]["context"] == "primary"


def test_a_branch_named_like_a_secret_is_stored_redacted_and_the_run_starts(root: Path) -> None:
    """The branch is a fact run start gathers, not one the user typed: one named like a token (here an AWS
    key id shape) was refused (exit 4) with no way around it; it is stored redacted and the run starts."""
    git = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_NOSYSTEM": "1"}
    branch = "AKIA" + "IOSFODNN7EXAMPLE"
    for args in (["init", "-q", "-b", branch], ["commit", "-q", "--allow-empty", "-m", "c"]):
        subprocess.run(["git", *args], cwd=root, env={**__import__("os").environ, **git}, check=True)
    task = ok(root, "task", "create", "--title", "br")
    started = as_json(root, "run", "start", "--task", task)
    assert started["git_branch"].startswith("[REDACTED:") and branch not in json.dumps(started)
    assert not any(branch.encode() in path.read_bytes() for path in all_event_files(root))


def test_in_a_repository_without_commits_a_run_records_the_unborn_branch(root: Path) -> None:
    """`git init` and no commit yet: the branch HEAD names is known (the run recorded none)."""
    subprocess.run(["git", "init", "-q", "-b", "trunk"], cwd=root, check=True)
    task = ok(root, "task", "create", "--title", "t")
    started = as_json(root, "run", "start", "--task", task)
    assert started["git_branch"] == "trunk" and started["git_commit"] is None


def test_a_secret_in_a_title_is_refused_naming_the_title_and_memory_files_read_as_text(root: Path) -> None:
    """The refusal named `message` (made from the title); a memory file's provenance showed `run_id: None` and
    `['a.py']`, Python's spellings."""
    done = run(root, "task", "create", "--title", "deploy with ghp_" + "a1B2c3D4e5" * 4)
    assert done.returncode == EXIT_SECRET and "field title looks like a secret" in done.stderr
    task = ok(root, "task", "create", "--title", "t")
    ok(root, "log", "-m", "x", "--file", "a.py", "--task", task)
    ok(root, "task", "update", task, "--status", "completed")
    [memory] = as_json(root, "memory", "list")["memories"]
    text = (root / ".agent/runtime-continuity/memories" / f"{memory['memory_id']}.md").read_text()
    assert "- run_id: none\n" in text and "- files_touched: none\n" in text and "None" not in text
    assert "['" not in text


def test_a_planted_runs_folder_is_never_read_written_or_swept_through(root: Path, tmp_path: Path) -> None:
    """local/runs a link to a folder outside: run start records the run and warns that it is not the session's
    current run (it said "nothing written" after writing the event); `log` takes no attribution from the hint
    outside; run complete removes nothing there."""
    outside = tmp_path / "outside"
    outside.mkdir()
    runs = root / ".agent/runtime-continuity/local/runs"
    if runs.exists():
        runs.rmdir()
    runs.symlink_to(outside, target_is_directory=True)
    task = ok(root, "task", "create", "--title", "t")
    done = run(root, "run", "start", "--task", task)
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip()
    assert "not made the session's current run" in done.stderr and "is a symlink" in done.stderr
    assert as_json(root, "task", "show", task)["task"]["runs"] == [run_id]
    (outside / "current-s1").write_text("run-evil task-evil\n")
    ok(root, "log", "-m", "x", "--file", "q.py")
    newest = json.loads(all_event_files(root)[-1].read_bytes())
    assert newest["message"] == "x" and newest["run_id"] is None and newest["task_id"] is None
    (outside / "current-s1").write_text(f"{run_id} {task}\n")
    ok(root, "run", "complete", run_id, "--output-summary", "x")
    assert (outside / "current-s1").read_text() == f"{run_id} {task}\n"


def test_four_processes_completing_one_run_give_one_task_outcome_also_after_rebuild(root: Path) -> None:
    """Four simultaneous `completed` updates all succeed; exactly one task_outcome, the same after a rebuild."""
    task = ok(root, "task", "create", "--title", "Race")
    run_id = ok(root, "run", "start", "--task", task)
    results = together(root, [["task", "update", task, "--status", "completed", "--run", run_id]] * 4)
    assert [r.returncode for r in results] == [0, 0, 0, 0], [r.stderr for r in results]
    before = as_json(root, "memory", "list", "--kind", "task_outcome")["memories"]
    assert len(before) == 1
    ok(root, "rebuild")
    assert as_json(root, "memory", "list", "--kind", "task_outcome")["memories"] == before
    assert len(list((root / ".agent/runtime-continuity/memories").iterdir())) == 1


def test_four_processes_completing_one_run_record_one_completion(root: Path) -> None:
    """Four simultaneous `run complete`: one wins, three are refused (exit 2), one run.completed event."""
    task = ok(root, "task", "create", "--title", "Race")
    run_id = ok(root, "run", "start", "--task", task)
    results = together(root, [["run", "complete", run_id, "--output-summary", f"p{n}"] for n in range(4)])
    assert sorted(r.returncode for r in results) == [0, EXIT_USAGE, EXIT_USAGE, EXIT_USAGE]
    assert all("already completed" in r.stderr for r in results if r.returncode)
    kinds = [json.loads(path.read_bytes())["kind"] for path in all_event_files(root)]
    assert kinds.count("run.completed") == 1


@pytest.mark.parametrize("round_", range(3))
def test_expected_version_race_between_two_processes(root: Path, round_: int) -> None:
    """Two processes update with --expected-version 1 at once: one wins, one gets the conflict and exit 11."""
    task = ok(root, "task", "create", "--title", f"Versioned {round_}")
    results = together(root, [["task", "update", task, "--status", status, "--expected-version", "1"]
                              for status in ("in_progress", "blocked")])
    codes = sorted(r.returncode for r in results)
    assert codes == [0, EXIT_VERSION_CONFLICT], [r.stderr for r in results]
    loser = next(r for r in results if r.returncode)
    assert "Version conflict: expected 1, got 2" in loser.stderr
    assert as_json(root, "task", "show", task)["task"]["version"] == 2


def test_the_version_check_runs_under_the_lock(root: Path) -> None:
    """An update landing between deciding and appending is seen under the lock: conflict, nothing written."""
    from continuity.core.errors import VersionConflict
    from continuity.core.identity import Identity
    from continuity.tasks import decide, service

    store = Store(root)
    who = Identity(project="demo")
    task = "task-x"
    service.record(store, who, lambda state: decide.decide_create_task(state, who, decide.TaskCreate(title="t"), task))
    sneaked: list[int] = []

    def stale_then_real(state: Any) -> list[Any]:
        if not sneaked:  # another writer updates the task after we read the state
            sneaked.append(1)
            other = decide.decide_update_task(state, who, decide.TaskUpdate(task_id=task, note="other"))
            store.open_log().append_many(other)
        return decide.decide_update_task(state, who, decide.TaskUpdate(task_id=task, status="in_progress",
                                                                       expected_version=1))

    count = len(all_event_files(root))
    with pytest.raises(VersionConflict, match="Version conflict: expected 1, got 2"):
        service.record(store, who, stale_then_real)
    assert len(all_event_files(root)) == count + 1  # only the other writer's update


def test_a_moved_decision_is_taken_again(root: Path) -> None:
    """Without an expected version, an update that lands meanwhile makes the decision be taken again, not lost."""
    from continuity.core.identity import Identity
    from continuity.tasks import decide, service

    store = Store(root)
    who = Identity(project="demo")
    service.record(store, who, lambda state: decide.decide_create_task(state, who, decide.TaskCreate(title="t"), "t1"))
    calls: list[int] = []

    def racing(state: Any) -> list[Any]:
        if not calls:
            store.open_log().append_many(decide.decide_update_task(state, who, decide.TaskUpdate(task_id="t1",
                                                                                                 note="x")))
        calls.append(1)
        return decide.decide_update_task(state, who, decide.TaskUpdate(task_id="t1", status="in_progress"))

    stored, _ = service.record(store, who, racing)
    assert stored[0].event.version == 3 and len(calls) >= 2


def _unchanged(root: Path, args: list[str], code: int, words: str) -> None:
    before = all_event_files(root)
    done = run(root, *args)
    assert done.returncode == code, done.stderr
    assert words in done.stderr and "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    assert all_event_files(root) == before


def test_bad_input_is_one_clear_line_and_writes_nothing(root: Path) -> None:
    """Unknown ids, a bad status, an invalid transition, an empty title, a secret: one line, exit code, no event."""
    task = ok(root, "task", "create", "--title", "Real")
    ok(root, "task", "update", task, "--status", "completed")
    _unchanged(root, ["task", "update", "task-nope", "--status", "completed"], EXIT_NOT_FOUND, "unknown task")
    _unchanged(root, ["run", "complete", "run-nope"], EXIT_NOT_FOUND, "unknown run")
    _unchanged(root, ["run", "start", "--task", "task-nope"], EXIT_NOT_FOUND, "unknown task")
    _unchanged(root, ["task", "update", task, "--status", "done"], EXIT_USAGE, "invalid choice")
    _unchanged(root, ["task", "update", task, "--status", "in_progress"], EXIT_USAGE, "needs --reopen")
    _unchanged(root, ["task", "create", "--title", "   "], EXIT_USAGE, "needs a title")
    _unchanged(root, ["task", "create", "--title", "\u200b\u200b"], EXIT_USAGE, "shows nothing")
    for title, code in (("bad\x01title", "U+0001 at character 4"), ("two\nlines", "U+000A at character 4"),
                        ("esc\x1b[31m", "U+001B at character 4")):  # named as the title, never as `message`
        _unchanged(root, ["task", "create", "--title", title], EXIT_USAGE, f"title holds a control character ({code}")
        _unchanged(root, ["task", "update", task, "--title", title], EXIT_USAGE, "title holds a control character")
    _unchanged(root, ["task", "create", "--title", "ok", "--assign", "a b"], EXIT_USAGE,
               "assigned_to 'a b' is not a valid id: letters, digits")
    _unchanged(root, ["task", "create", "--title", "x", "--description",
                      "token ghp_" + "a1B2c3D4e5" * 4], EXIT_SECRET, "looks like a secret")
    ok(root, "task", "update", task, "--reopen")
    assert as_json(root, "task", "show", task)["task"]["status"] == "queued"


def test_a_ten_megabyte_description_is_refused(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 10 MB description (too big for argv, so in-process) is refused with one line; nothing written."""
    before = all_event_files(root)
    code = main(["--root", str(root), "task", "create", "--title", "big", "--description", "d" * 10_000_000])
    assert code == EXIT_USAGE and all_event_files(root) == before
    assert capsys.readouterr().err.count("\n") == 1


def test_rebuild_identity_and_as_of(root: Path) -> None:
    """A rebuild gives the same tasks, memories and memory files; --as-of answers as the log stood then."""
    task = ok(root, "task", "create", "--title", "Audit me")
    created = as_json(root, "task", "show", task)["task"]["created_at"]
    parent = ok(root, "run", "start", "--task", task)
    child_task = ok(root, "task", "create", "--title", "Sub", "--parent", task)
    child = ok(root, "run", "start", "--task", child_task, "--context", "subagent", "--parent-run", parent)
    ok(root, "run", "complete", child, "--output-summary", "looked", "--artifact", "notes.md")
    ok(root, "task", "update", task, "--status", "blocked", "--note", "needs review")
    tasks_before, memories_before = as_json(root, "task", "list"), as_json(root, "memory", "list")
    folder = root / ".agent/runtime-continuity/memories"
    files_before = {path.name: path.read_bytes() for path in folder.iterdir()}
    assert {m["kind"] for m in memories_before["memories"]} == {"delegation_summary", "blocker_resolution"}
    for path in folder.iterdir():
        path.unlink()
    ok(root, "rebuild")
    assert as_json(root, "task", "list") == tasks_before and as_json(root, "memory", "list") == memories_before
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == files_before
    then = as_json(root, "task", "show", task, "--as-of", created)["task"]
    assert then["status"] == "queued" and then["version"] == 1
    assert as_json(root, "memory", "list", "--as-of", created)["memories"] == []


def test_ready_queue_and_filters(root: Path) -> None:
    """`task ready` lists queued tasks free to start, most urgent first; `task list` filters by status and assignee."""
    low = ok(root, "task", "create", "--title", "low", "--priority", "5", "--assign", "ann")
    high = ok(root, "task", "create", "--title", "high", "--priority", "1")
    epic = ok(root, "task", "create", "--title", "epic")
    ok(root, "task", "create", "--title", "child", "--parent", epic)
    ok(root, "task", "update", epic, "--status", "in_progress")
    ids = [t["task_id"] for t in as_json(root, "task", "ready")["tasks"]]
    assert ids[:2] == [high, low] and epic not in ids
    assert [t["task_id"] for t in as_json(root, "task", "list", "--assigned", "ann")["tasks"]] == [low]
    assert [t["task_id"] for t in as_json(root, "task", "list", "--status", "in_progress")["tasks"]] == [epic]


def test_a_rebuild_removes_memory_files_the_log_no_longer_makes(root: Path) -> None:
    """After a rebuild, a file of no kept memory goes unless it may be one the bounds aged out."""
    from events.task import TaskCreated, TaskUpdated
    from projections.memories import MEMORIES_LIMIT

    log = Store(root).open_log()
    drafts: list[Any] = []
    for index in range(MEMORIES_LIMIT + 5):
        drafts += [TaskCreated(project="demo", task_id=f"task-{index}", title=f"t{index}"),
                   TaskUpdated(project="demo", task_id=f"task-{index}", status="completed")]
    log.append_many(drafts)
    ok(root, "rebuild")
    folder = root / ".agent/runtime-continuity/memories"
    files = sorted(path.name for path in folder.glob("mem-*.md"))
    assert len(files) == MEMORIES_LIMIT + 5  # the five aged out of the model stay on disk for people
    kept = [m["memory_id"] for m in as_json(root, "memory", "list", "--all")["memories"]]
    assert len(kept) == MEMORIES_LIMIT and set(files[5:]) == {f"{memory_id}.md" for memory_id in kept}
    stale = folder / (max(kept) + "-lost.md")  # newer than the oldest kept, made by no kept memory
    stale.write_text("a synthesis a merge superseded\n")
    (folder / "notes.txt").write_text("not a memory file\n")
    ok(root, "rebuild")
    assert not stale.exists() and (folder / "notes.txt").exists()
    assert sorted(path.name for path in folder.glob("mem-*.md")) == files


def test_listings_page_the_newest_first(root: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`task list` shows the newest 30 and says on stderr how many more; --limit N, --all and --limit 0 widen it."""
    monkeypatch.chdir(root)

    def call(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    ids = [call("task", "create", "--title", f"t{index}", "--priority", str(index % 4))[1].strip()
           for index in range(35)]
    code, out, err = call("task", "list")
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == ids[::-1][:30]
    assert err == "… 5 more tasks: --limit N or --all\n"
    for wide in (["--all"], ["--limit", "0"], ["--limit", "35"]):
        code, out, err = call("task", "list", *wide)
        assert len(out.splitlines()) == 35 and err == ""
    data = json.loads(call("task", "list", "--limit", "3", "--json")[1])
    assert [t["task_id"] for t in data["tasks"]] == ids[::-1][:3] and (data["total"], data["more"]) == (35, 32)
    ready = json.loads(call("task", "ready", "--limit", "2", "--json")[1])
    assert [t["task_id"] for t in ready["tasks"]] == [ids[0], ids[4]] and ready["more"] == 33
    assert call("task", "list", "--all", "--limit", "3")[0] == EXIT_USAGE
    assert call("task", "list", "--limit", "-1")[0] == EXIT_USAGE
    for task in ids[:32]:
        call("task", "update", task, "--status", "completed")
    code, out, err = call("memory", "list")
    assert len(out.splitlines()) == 30 and err == "… 2 more memories: --limit N or --all\n"
    data = json.loads(call("memory", "list", "--all", "--json")[1])
    assert len(data["memories"]) == data["total"] == 32 and data["more"] == 0
    assert data["memories"][0]["task_id"] == ids[31]


def test_a_listing_decodes_only_what_it_reads_and_still_folds_what_is_new(root: Path) -> None:
    """Nothing new: `task list` gets only the tasks (a TaskList view); new events: the whole state, folded."""
    from continuity.tasks.service import tasks_state
    from events.task import TaskUpdated
    from projections.tasks import MemoryList, TaskList, TasksState

    store = Store(root)
    task = ok(root, "task", "create", "--title", "Viewed")
    tasks_state(store, "demo")
    listed, _, _ = tasks_state(store, "demo", view=TaskList)
    assert isinstance(listed, TaskList) and list(listed.tasks) == [task]
    store.open_log().append(TaskUpdated(project="demo", task_id=task, status="completed"))  # not caught up yet
    folded, _, _ = tasks_state(store, "demo", view=MemoryList)
    assert isinstance(folded, TasksState) and folded.tasks[task].status == "completed"
    [memory] = folded.book.memories
    assert (root / ".agent/runtime-continuity/memories" / f"{memory.memory_id}.md").exists()
    shelf, _, _ = tasks_state(store, "demo", view=MemoryList)
    assert isinstance(shelf, MemoryList) and [m.memory_id for m in shelf.book.memories] == [memory.memory_id]


def test_a_saved_state_that_does_not_decode_is_rebuilt(root: Path) -> None:
    """A framed, checksummed model file whose state is not a tasks state: rebuilt with a warning, answer right."""
    from continuity.readside.catchup import Saved, load, save
    from projections.readmodel import Projects
    from projections.tasks import MODEL

    task = ok(root, "task", "create", "--title", "Survives")
    store = Store(root)
    good = load(store, MODEL)
    assert good is not None
    save(store, MODEL, Saved(format=MODEL.format, last_read=good.last_read, days=good.days,
                             state=Projects(projects={"demo": {"tasks": 5}})))
    done = run(root, "task", "list", "--json")
    assert done.returncode == 0 and [t["task_id"] for t in json.loads(done.stdout)["tasks"]] == [task]
    assert "rebuilt" in done.stderr
    assert as_json(root, "task", "list")["warnings"] == []


@pytest.mark.parametrize("argv", [["task", "show"], ["memory", "show"], ["run", "show"],
                                  ["task", "update", "--status", "completed", "--expected-version", "1"]])
@pytest.mark.parametrize(("length", "code"), [(192, EXIT_NOT_FOUND), (193, EXIT_USAGE), (100_000, EXIT_USAGE)])
def test_an_unknown_id_of_any_length_is_named_in_one_short_line(root: Path, argv: list[str], length: int,
                                                                 code: int) -> None:
    """A long id that names nothing: one line cut to a readable length, not the whole id; exit 7 when an event could
    carry it (192 characters at most), else exit 2 (no such id can name anything)."""
    long_id = "a" * length
    args = [*argv[:2], long_id, *argv[2:]] if argv[0] == "task" and argv[1] == "update" else [*argv, long_id]
    done = run(root, *args)
    assert done.returncode == code, done.stderr
    assert done.stderr.count("\n") == 1 and len(done.stderr) < 300 and "…" in done.stderr


@pytest.mark.parametrize("bad", ["../x", "x\x01y", "a\nb", "[x]", ""])
@pytest.mark.parametrize("argv", [["task", "show", "{}"], ["task", "update", "{}", "--status", "failed"],
                                  ["run", "show", "{}"], ["run", "complete", "{}"], ["memory", "show", "{}"],
                                  ["task", "create", "--title", "t", "--parent", "{}"],
                                  ["run", "start", "--task", "{task}", "--parent-run", "{}"]])
def test_an_id_no_event_can_carry_is_a_usage_error(root: Path, argv: list[str], bad: str) -> None:
    """A task, run or memory id that no event can carry (a path, a control character, `..`, empty) is refused as
    invalid, exit 2 and one line naming the argument, as `run start --task` refuses it; nothing is written. An
    unknown id that could be one stays exit 7 (above)."""
    task = ok(root, "task", "create", "--title", "Parent")
    before = all_event_files(root)
    done = run(root, *[arg.replace("{task}", task).replace("{}", bad) for arg in argv])
    assert done.returncode == EXIT_USAGE, done.stderr
    assert done.stderr.count("\n") == 1 and "is not a valid" in done.stderr and "Traceback" not in done.stderr
    assert all_event_files(root) == before


def test_a_label_given_twice_is_one_label(root: Path) -> None:
    """`--label a --label a` stored ["a", "a"] (create and update): labels are each kept once, in the order given."""
    task = ok(root, "task", "create", "--title", "Fix auth", "--label", "ui", "--label", "auth", "--label", "ui")
    assert as_json(root, "task", "show", task)["task"]["labels"] == ["ui", "auth"]
    ok(root, "task", "update", task, "--label", "x", "--label", "x")
    assert as_json(root, "task", "show", task)["task"]["labels"] == ["x"]


def test_labels_and_the_assignee_can_be_cleared_and_stay_cleared_after_a_rebuild(root: Path) -> None:
    """`--no-labels` and `--unassign` leave the task without labels or assignee (before them, neither could be
    cleared); `--label`/`--assign` beside them is refused, writing nothing; the ready queue and `--assigned` follow."""
    task = ok(root, "task", "create", "--title", "Fix auth", "--label", "ui", "--assign", "ann")
    _unchanged(root, ["task", "update", task, "--unassign", "--assign", "bob"], EXIT_USAGE,
               "assign or unassign the task, not both")
    _unchanged(root, ["task", "update", task, "--no-labels", "--label", "x"], EXIT_USAGE,
               "labels or --no-labels, not both")
    assert [t["task_id"] for t in as_json(root, "task", "list", "--assigned", "ann")["tasks"]] == [task]
    ok(root, "task", "update", task, "--unassign")
    shown = as_json(root, "task", "show", task)["task"]
    assert shown["assigned_to"] is None and shown["labels"] == ["ui"] and shown["version"] == 2
    assert run(root, "task", "list", "--assigned", "ann").stdout == ""
    ok(root, "task", "update", task, "--no-labels")
    ok(root, "task", "update", task, "--title", "Fix auth flow")  # a later update of another field keeps both cleared
    ok(root, "rebuild")
    shown = as_json(root, "task", "show", task)["task"]
    assert (shown["assigned_to"], shown["labels"], shown["title"], shown["version"]) == (None, [], "Fix auth flow", 4)
    ok(root, "task", "update", task, "--assign", "bob", "--label", "api")
    shown = as_json(root, "task", "show", task)["task"]
    assert (shown["assigned_to"], shown["labels"]) == ("bob", ["api"])


@pytest.mark.parametrize("agent", ["../x", "a b", ""])
def test_list_refuses_an_assignee_no_task_can_have(root: Path, agent: str) -> None:
    """`task list --assigned` with an id `task create --assign` refuses: exit 2 naming it, not "no tasks"."""
    done = run(root, "task", "list", "--assigned", agent)
    assert done.returncode == 2 and done.stdout == "" and "task list --assigned: invalid agent name" in done.stderr


def test_the_memory_file_names_the_runs_summary_as_soon_as_the_run_completes(root: Path) -> None:
    """`run complete` of a primary run fills the task's memory in: its file is rewritten by that command (it waited
    for the next command that caught the model up; the MCP tool did it at once)."""
    task = ok(root, "task", "create", "--title", "file check", "--description", "goal")
    run_id = ok(root, "run", "start", "--task", task)
    ok(root, "task", "update", task, "--status", "completed")
    [path] = (root / ".agent/runtime-continuity/memories").glob("*.md")
    assert "Run: the run summary" not in path.read_text()
    ok(root, "run", "complete", run_id, "--output-summary", "the run summary")
    assert "Run: the run summary" in path.read_text()


def test_a_task_completed_after_its_subagent_run_gets_its_outcome(root: Path) -> None:
    """Seed 003's delegation: a subagent run on the task completes (a delegation_summary), then the task is
    completed in no run (the subagent's completion cleared the session's current run): the outcome is the
    primary run's, not skipped as the subagent's (the newest run of the task)."""
    task = ok(root, "task", "create", "--title", "deleg same task")
    parent = ok(root, "run", "start", "--task", task, "--role", "software_engineer")
    child = ok(root, "run", "start", "--task", task, "--context", "subagent", "--parent-run", parent)
    ok(root, "run", "complete", child, "--output-summary", "subagent found the bug")
    ok(root, "task", "update", task, "--status", "completed")
    ok(root, "run", "complete", parent, "--output-summary", "parent done")
    memories = {memory["kind"]: memory for memory in as_json(root, "memory", "list", "--all")["memories"]}
    assert set(memories) == {"delegation_summary", "task_outcome"}
    assert memories["task_outcome"]["run_id"] == parent and "Run: parent done" in memories["task_outcome"]["summary"]


def test_an_update_of_another_task_is_not_the_current_runs_work(root: Path) -> None:
    """The session's current run is on task A; `task update B` is not A's run's work: the event carries no run
    (it carried A's run id beside B's task id)."""
    first = ok(root, "task", "create", "--title", "A")
    second = ok(root, "task", "create", "--title", "B")
    run_a = ok(root, "run", "start", "--task", first)
    ok(root, "task", "update", second, "--status", "completed")
    [event] = as_json(root, "events", "list", "--last", "1")["events"]
    assert (event["kind"], event["task_id"], event["run_id"]) == ("task.updated", second, None)
    ok(root, "task", "update", first, "--note", "on it")
    [event] = as_json(root, "events", "list", "--last", "1")["events"]
    assert (event["task_id"], event["run_id"]) == (first, run_a)


def test_a_run_completed_from_another_session_is_no_longer_its_sessions_current_run(root: Path) -> None:
    """`run complete` removed only the completing session's hint: a run session s1 started and s2 completed stayed
    s1's current run, and s1's entries went on being filed under a completed run."""
    task = ok(root, "task", "create", "--title", "A")
    run_id = ok(root, "run", "start", "--task", task)
    done = run(root, "run", "complete", run_id, "--output-summary", "done", env={"CONTINUITY_SESSION_ID": "s2"})
    assert done.returncode == 0, done.stderr
    ok(root, "log", "-m", "later in s1")
    [event] = as_json(root, "events", "list", "--last", "1")["events"]
    assert event["message"] == "later in s1" and event["run_id"] is None, event


def test_a_run_started_while_another_completes_keeps_its_hint(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`run complete R1` read the session's current-run hint (R1) and removed it; a `run start` of the same session
    that wrote its hint (R2) in between lost it, and the session's later work was attributed to no run. The read and
    the removal hold the runs folder's lock, which the hint's write takes too: R2's hint is there at the end."""
    import os
    import time

    import continuity.tasks.current as current

    first, second = ok(root, "task", "create", "--title", "first"), ok(root, "task", "create", "--title", "second")
    run_one = ok(root, "run", "start", "--task", first)
    local = root / ".agent/runtime-continuity/local"
    hint = local / "runs" / f"current-{SESSION['CONTINUITY_SESSION_ID']}"
    real, clear = current.read_current, current.clear_current
    started: list[subprocess.Popen[str]] = []
    clearing: list[bool] = []

    def clearing_now(*args: Any) -> None:
        clearing.append(True)
        clear(*args)

    def racing(local_dir: str, session_id: str | None) -> Any:
        found = real(local_dir, session_id)
        if clearing and not started:  # the completion's read of the hint: a second process starts a run now
            env = {key: value for key, value in os.environ.items() if not key.startswith("CONTINUITY_")}
            events = len(all_event_files(root))
            started.append(subprocess.Popen([sys.executable, "-m", "continuity", "run", "start", "--task", second],
                                            cwd=root, env={**env, **SESSION}, text=True, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE))
            until = time.monotonic() + 30
            while len(all_event_files(root)) == events and time.monotonic() < until:  # its run.started is written
                time.sleep(0.01)
            time.sleep(0.3)  # and its hint, unless a lock holds it back
        return found

    monkeypatch.setattr(current, "read_current", racing)
    monkeypatch.setattr(current, "clear_current", clearing_now)
    monkeypatch.chdir(root)
    for key, value in SESSION.items():
        monkeypatch.setenv(key, value)
    assert main(["run", "complete", run_one]) == 0
    out, err = started[0].communicate(timeout=60)
    assert started[0].returncode == 0 and "not made the session's current run" not in err, err
    run_two = out.strip()
    assert hint.read_text().split() == [run_two, second]
    monkeypatch.undo()
    logged = as_json(root, "log", "-m", "edited", "--file", "src/p.py")
    assert as_json(root, "run", "show", run_two)["run"]["files"] == ["src/p.py"], logged


@pytest.mark.parametrize("linked", ["events", "store"])
def test_a_lookup_that_read_nothing_of_an_unsafe_store_is_exit_6_not_unknown(root: Path, tmp_path: Path,
                                                                              linked: str) -> None:
    """With the events folder (or the whole store) a symlink, reads answer as for an empty log with a warning; a
    lookup of a task, run, memory or role that exists then said "unknown ..." (exit 7), and a script took it for
    missing. It is the unsafe store's error now (exit 6, one line saying nothing was read); listings still answer
    empty with the warning (exit 0); once the folder is back, an unknown id is exit 7 again."""
    task = ok(root, "task", "create", "--title", "Exists")
    run_id = ok(root, "run", "start", "--task", task)
    ok(root, "task", "update", task, "--status", "completed")
    memory = as_json(root, "memory", "list")["memories"][0]["memory_id"]
    ok(root, "role", "create", "core", "ops")
    store = root / ".agent" / "runtime-continuity"
    moved = store / linked if linked == "events" else store
    aside = tmp_path / f"aside-{linked}"
    moved.rename(aside)
    moved.symlink_to(aside, target_is_directory=True)
    for args in (["task", "show", task], ["run", "show", run_id], ["memory", "show", memory],
                 ["role", "show", "core", "ops"]):
        done = run(root, *args)
        assert done.returncode == EXIT_UNSAFE_STORE, (args, done.stderr)
        error = done.stderr.splitlines()[-1]
        assert error.startswith("continuity: error: ") and "nothing was read" in error and "is a symlink" in error
        assert "Traceback" not in done.stderr
        shown = json.loads(run(root, *args, "--json").stdout)
        assert (shown["ok"], shown["exit_code"]) == (False, EXIT_UNSAFE_STORE)
    listed = run(root, "task", "list", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout)["tasks"] == [] and "is a symlink" in listed.stderr
    moved.unlink()
    aside.rename(moved)
    assert run(root, "task", "show", "task-nope").returncode == EXIT_NOT_FOUND
    assert run(root, "task", "show", task).returncode == 0
