"""Two clones that each synthesized a memory for the same run offline agree on one winner after `sync`.

Real git: a bare remote in a temp folder, two `clone-store` clones, the CLI as processes.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from continuity.core.store import Store
from continuity.tasks.service import tasks_state
from tests.helpers import cli_process

STORE = Path(".agent", "runtime-continuity")
GIT_ENV = {"GIT_AUTHOR_NAME": "Tess Ter", "GIT_AUTHOR_EMAIL": "tess@example.invalid",
           "GIT_COMMITTER_NAME": "Tess Ter", "GIT_COMMITTER_EMAIL": "tess@example.invalid",
           "GIT_CONFIG_NOSYSTEM": "1"}
ONE_PER_RUN = ("task_outcome", "blocker_resolution", "session_summary")


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd`; its stdout (fails the test when git fails)."""
    result = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True,
                            env={**os.environ, **GIT_ENV, "LC_ALL": "C"})
    assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
    return result.stdout


def ok(root: Path, *args: str, session: str = "s1") -> str:
    """stdout of `continuity ARGS` run as a new process in `root`, which must succeed."""
    done = cli_process(*args, cwd=root, env={**GIT_ENV, "HOME": os.environ["HOME"], "CONTINUITY_SESSION_ID": session})
    assert done.returncode == 0, f"{args}: {done.stderr}"
    return done.stdout.strip()


def as_json(root: Path, *args: str) -> Any:
    return json.loads(ok(root, *args, "--json"))


def memory_files(root: Path) -> dict[str, bytes]:
    folder = root / STORE / "memories"
    return {path.name: path.read_bytes() for path in sorted(folder.glob("*.md"))}


def event_names(root: Path) -> list[str]:
    return sorted(path.name for path in (root / STORE / "events").glob("*/*.json"))


@pytest.fixture
def shared(tmp_path: Path) -> dict[str, Any]:
    """A bare remote holding the code and a store with one task and an open run on it; two fresh clones."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    origin = tmp_path / "origin"
    git(tmp_path, "clone", "-q", str(remote), str(origin))
    (origin / "README.md").write_text("the code\n")
    ok(origin, "init", "--project", "demo")
    git(origin, "add", "README.md", ".gitignore")
    git(origin, "commit", "-q", "-m", "code")
    git(origin, "push", "-q", "origin", "main")
    task = ok(origin, "task", "create", "--title", "Fix the auth flow", "--description", "login regression")
    run_id = ok(origin, "run", "start", "--task", task, "--role", "software_engineer")
    ok(origin, "log", "-m", "edited", "--file", "src/auth.py")
    ok(origin, "sync")
    clones = []
    for name in ("one", "two"):
        path = tmp_path / name
        git(tmp_path, "clone", "-q", str(remote), str(path))
        assert as_json(path, "clone-store", "origin")["project"] == "demo"
        clones.append(path)
    return {"task": task, "run": run_id, "one": clones[0], "two": clones[1]}


@pytest.mark.parametrize("second", ["completed", "blocked"])
def test_offline_syntheses_of_one_run_converge_on_the_first_in_log_order(shared: dict[str, Any], second: str) -> None:
    """Each clone finishes the same run offline (each sees its own memory); after syncs both keep the first."""
    one, two, task, run_id = shared["one"], shared["two"], shared["task"], shared["run"]
    updates = {}
    for root, status, summary in ((one, "completed", "fixed on one"), (two, second, "tried on two")):
        ok(root, "log", "-m", f"work on {root.name}", "--file", f"src/{root.name}.py", "--run", run_id)
        extra = ["--note", "needs the API key policy"] if status == "blocked" else []
        updates[root.name] = as_json(root, "task", "update", task, "--status", status, "--run", run_id,
                                     *extra)["event_ids"][0]
        ok(root, "run", "complete", run_id, "--output-summary", summary)
        [own] = as_json(root, "memory", "list")["memories"]
        assert own["event_id"] == updates[root.name] and own["run_id"] == run_id
    # `two` pushes first; `one` then fetches events after its own; `two` gets `one`'s, which sort before its own.
    for root in (two, one, two, one):
        ok(root, "sync")
    assert event_names(one) == event_names(two)
    listed = [as_json(root, "memory", "list") for root in (one, two)]
    assert listed[0] == listed[1]
    [winner] = [m for m in listed[0]["memories"] if m["kind"] in ONE_PER_RUN]
    assert winner["event_id"] == min(updates.values()) == updates["one"]
    assert winner["kind"] == "task_outcome" and winner["run_id"] == run_id
    assert winner["files_touched"] == ["src/auth.py", "src/one.py"]  # as the log stood at the winning update
    for root in (one, two):
        state, _, _ = tasks_state(Store(root), "demo")
        [lost] = [s for s in state.book.skipped if s.run_id == run_id]
        assert lost.event_id == updates["two"] and lost.reason.startswith("run already has task_outcome")
        assert state.runs[run_id].output_summary == "fixed on one"  # the first completion counts
    assert memory_files(one) == memory_files(two) and list(memory_files(one)) == [f"{winner['memory_id']}.md"]
    for root in (one, two):
        ok(root, "rebuild")
        assert as_json(root, "memory", "list") == listed[0]
        assert list(memory_files(root)) == [f"{winner['memory_id']}.md"]
    assert as_json(one, "task", "show", task) == as_json(two, "task", "show", task)


def test_conflicting_task_and_run_edits_merged_by_sync_are_reported_until_settled(shared: dict[str, Any]) -> None:
    """Two clones change one task and complete one run differently; after sync verify and task show name both."""
    one, two, task, run_id = shared["one"], shared["two"], shared["task"], shared["run"]
    ok(one, "task", "update", task, "--status", "completed")
    ok(one, "run", "complete", run_id, "--output-summary", "fixed on one")
    ok(two, "task", "update", task, "--status", "cancelled")
    ok(two, "run", "complete", run_id, "--output-summary", "given up on two")
    for root in (one, two, one):
        ok(root, "sync")
    for root in (one, two):
        done = cli_process("verify", "--json", cwd=root, env={"HOME": os.environ["HOME"]})
        assert done.returncode == 1, done.stdout
        problems = json.loads(done.stdout)["task_problems"]
        assert any(p.startswith(f"task {task}: queued -> ") and "recorded while it was" in p for p in problems)
        assert any(p.startswith(f"run {run_id} of task {task}: completed twice") for p in problems), problems
        shown = as_json(root, "task", "show", task)
        assert shown["problems"] == problems and as_json(root, "task", "list")["problems"] == problems
        listed = cli_process("task", "list", cwd=root, env={"HOME": os.environ["HOME"]})  # stdout: one line a task
        assert listed.returncode == 0 and listed.stdout.splitlines() == [line for line in listed.stdout.splitlines()
                                                                         if line.startswith(f"{task} [")]
        assert [line for line in listed.stderr.splitlines() if "PROBLEM: " in line] == [
            f"continuity: warning: PROBLEM: {problem}" for problem in problems]
    # a decision taken on the merged state settles them
    ok(one, "task", "update", task, "--note", "kept as merged")
    assert as_json(one, "task", "show", task)["problems"] == []
    assert cli_process("verify", cwd=one, env={"HOME": os.environ["HOME"]}).returncode == 0


@pytest.mark.parametrize("planted", [None, "symlink", "hardlink", "fifo", "folder", "full folder"])
def test_a_decision_in_flight_is_taken_again_after_a_sync_lands_events_that_sort_before_its_state(
        shared: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, planted: str | None) -> None:
    """Clone two finishes the task and pushes; clone one logs later (its head now sorts after two's update) and
    decides to block the task. Between its catch-up and its append a real `sync` lands two's update: it sorts
    before the head the decision was taken at, so the check under the lock (the head unchanged) let the stale
    decision through and the merged log held `blocked` over `completed`. The landing is seen and the decision is
    taken again from the merged state, where the task is finished: refused, nothing written. With a symlink, a FIFO
    or an empty folder planted where the token lives, the landing could not write it and the decision went through
    stale; the landing replaces what is there (never writing through the link)."""
    from continuity.core.errors import ContinuityError
    from continuity.core.identity import Identity
    from continuity.tasks import decide, service

    one, two, task = shared["one"], shared["two"], shared["task"]
    ok(two, "task", "update", task, "--status", "completed")
    ok(two, "sync")
    ok(one, "log", "-m", "later than two's update")
    token, outside = one / STORE / "local" / "landed", tmp_path / "outside"
    outside.write_bytes(b"not yours\n")
    if planted == "symlink":
        token.unlink(missing_ok=True)
        token.symlink_to(outside)
    elif planted == "fifo":
        token.unlink(missing_ok=True)
        os.mkfifo(token)
    elif planted == "hardlink":
        token.unlink(missing_ok=True)
        os.link(outside, token)
    elif planted in ("folder", "full folder"):
        token.unlink(missing_ok=True)
        token.mkdir()
        if planted == "full folder":
            (token / "notes.txt").write_text("a file a tool left\n")
    monkeypatch.setenv("HOME", os.environ["HOME"])
    who = Identity(project="demo", host="test")
    request = decide.TaskUpdate(task_id=task, status="blocked", note="waiting on review")
    found: list[str] = []

    def deciding(state: Any) -> list[Any]:
        found.append(state.tasks[task].status)
        if len(found) == 1:  # a real sync, in its own process, after the catch-up and before the append
            ok(one, "sync")
        return decide.decide_update_task(state, who, request)

    before = event_names(one)
    with pytest.raises(ContinuityError, match="needs --reopen"):
        service.record(Store(str(one)), who, deciding)
    assert found[0] != "completed" and found[-1] == "completed"
    assert outside.read_bytes() == b"not yours\n" and token.is_file() and not token.is_symlink()
    if planted == "full folder":  # kept beside it
        [aside] = token.parent.glob("landed.aside-*")
        assert (aside / "notes.txt").read_text() == "a file a tool left\n"
    landed = set(event_names(one)) - set(before)
    assert len(landed) == 1  # two's update, nothing of ours
    shown = as_json(one, "task", "show", task)
    assert shown["task"]["status"] == "completed" and shown["problems"] == []
    done = cli_process("verify", cwd=one, env={"HOME": os.environ["HOME"]})
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_run_another_clone_completed_is_no_longer_this_clones_current_run(shared: dict[str, Any]) -> None:
    """Clone one starts a run (its session's current run: a machine-local hint); clone two completes it and pushes.
    After one's sync its entries were still filed under the completed run (the hint is read by the plain `log` and
    hook paths, which fold nothing); the sync forgets a hint naming a run it finds completed."""
    one, two = shared["one"], shared["two"]
    task = ok(one, "task", "create", "--title", "Review the parser")
    run_id = ok(one, "run", "start", "--task", task)
    ok(one, "log", "-m", "in the run")
    assert as_json(one, "events", "list", "--last", "1")["events"][0]["run_id"] == run_id
    ok(one, "sync")
    ok(two, "sync")
    ok(two, "run", "complete", run_id, "--output-summary", "finished on two", session="s2")
    ok(two, "sync")
    ok(one, "sync")
    ok(one, "log", "-m", "after the run")
    [event] = as_json(one, "events", "list", "--last", "1")["events"]
    assert event["message"] == "after the run" and event["run_id"] is None and event["task_id"] is None, event
