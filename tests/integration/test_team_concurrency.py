"""Eight real processes running the newer write commands on one store at once.

Each process is an agent working through overlapping tasks and roles: task updates, runs
started and completed, role claims and releases, park, snapshots, archives, host
switches and workstream validations, each command run through `continuity.cli.main` in
that process. Every command must exit 0 or with a code docs/cli.md gives for it, each
event a command reported must be in the log, the log must verify, and the next catch-up
must leave every derived file and read model as a full rebuild makes them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from continuity.core.errors import EXIT_ROLE_CONFLICT, EXIT_USAGE
from continuity.core.store import find_store
from continuity.readside.writers import refresh
from events import names
from projections.registry import REGISTRY
from tests.helpers import REPO
from tests.injected import event_files, identity, run, stale_after_catch_up
from tests.integration.test_catchup_property import saved_states
from tests.workstream_docs import tracked

AGENT = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    from tests.injected import run
    root, who, go, out = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4]
    tasks, roles, rounds = sys.argv[5].split(","), sys.argv[6].split(","), int(sys.argv[7])
    n = int(who[1:])
    os.chdir(root)
    os.environ.update(CONTINUITY_AGENT=who, CONTINUITY_SESSION_ID="s-" + who, CONTINUITY_HOST="claude-code")
    while not go.exists():
        time.sleep(0.001)
    results = []
    def do(name, *argv):
        code, stdout, stderr = run(["--json", *argv])
        results.append({"command": name, "code": code, "stdout": stdout, "stderr": stderr})
        try:
            return json.loads(stdout)
        except ValueError:
            return {}
    for i in range(rounds):
        task, role = tasks[(n + i) % len(tasks)], roles[(n + i) % len(roles)]
        do("task-update", "task", "update", task, "--status", ("in_progress", "blocked", "completed")[(n + i) % 3],
           "--note", f"{who} {i}")
        started = do("run-start", "run", "start", "--task", task)
        if "run_id" in started:
            do("run-complete", "run", "complete", started["run_id"], "--output-summary", f"{who} did {i}")
        do("role-claim", "role", "claim", "core", role, "--agent", who)
        do("park", "park", "core", "--agent", who, "--next", f"next {who} {i}")
        do("snapshot", "snapshot", "core", who, f"t{i % 2}", "--objective", f"objective {who} {i}")
        do("role-release", "role", "release", "core", role, "--agent", who)
        if i % 2 == n % 2:
            do("archive", "archive", "--reason", f"{who} {i}")
        if i % 4 == 3 and n % 4 == 0:
            do("host-switch", "host-switch", "--from-host", "claude-code", "--to-host", "codex")
        do("work-validate", "work", "validate", "--id", f"V-{who}-{i}", "--kind", "unit-tests", "--result", "PASS",
           "--scope", "all", "--summary", "pytest -q", "--repository", "repo-a")
    Path(out).write_text(json.dumps(results))
    """
)

#: The exit codes docs/cli.md gives each command for what a race can cause, besides 0.
ALLOWED = {
    "task-update": {EXIT_USAGE},  # a transition another agent's update made impossible (completed -> blocked)
    "run-start": {EXIT_USAGE},  # the task completed meanwhile
    "run-complete": set(),
    "role-claim": {EXIT_ROLE_CONFLICT},  # held under another agent's fresh lease
    "role-release": {EXIT_ROLE_CONFLICT},  # not held by this agent (its claim was refused)
    "park": {EXIT_USAGE},  # nothing held: seed 000's rc 2
    "snapshot": set(),
    "archive": set(),
    "host-switch": set(),
    "work-validate": set(),
}


def reported_events(found: Any) -> set[str]:
    """Every event id a command's JSON result names."""
    ids: set[str] = set()
    if isinstance(found, dict):
        for key, value in found.items():
            if key == "event_id" and isinstance(value, str):
                ids.add(value)
            elif key == "event_ids" and isinstance(value, list):
                ids.update(value)
            else:
                ids |= reported_events(value)
    elif isinstance(found, list):
        for value in found:
            ids |= reported_events(value)
    return ids


def test_eight_agents_racing_on_tasks_roles_and_workstreams(project: Path, tmp_path: Path) -> None:
    """8 processes x 4 rounds of every newer write command: documented codes, nothing lost, verify, rebuild equal."""
    race(project, tmp_path, rounds=4)


@pytest.mark.stress
def test_eight_agents_racing_for_twenty_rounds(project: Path, tmp_path: Path) -> None:
    """The same race, 20 rounds per agent (about 1,400 commands)."""
    race(project, tmp_path, rounds=20)


def race(project: Path, tmp_path: Path, *, rounds: int) -> None:
    """Run the agents against `project` and check what they leave."""
    with identity():
        tasks = [json.loads(run(["--json", "task", "create", "--title", f"task {n}"])[1])["task_id"]
                 for n in range(3)]
        for role in ("rev", "ops", "lead"):
            assert run(["role", "create", "core", role])[0] == 0
        (project / ".ai-bridge").mkdir()
        (project / ".ai-bridge" / "context-checkpoint.json").write_text(json.dumps(tracked("WS-1")))
        assert run(["work", "checkpoint"])[0] == 0
    go = tmp_path / "go"
    agents = [
        subprocess.Popen([sys.executable, "-c", AGENT, str(project), f"a{n}", str(go), str(tmp_path / f"a{n}.json"),
                          ",".join(tasks), "rev,ops,lead", str(rounds)], cwd=REPO)
        for n in range(8)
    ]
    go.touch()
    assert [agent.wait(timeout=120) for agent in agents] == [0] * 8

    results = [result for n in range(8) for result in json.loads((tmp_path / f"a{n}.json").read_text())]
    reported: set[str] = set()
    for result in results:
        code, stderr = result["code"], result["stderr"]
        assert code == 0 or code in ALLOWED[result["command"]], result
        assert "Traceback" not in stderr, result
        if code != 0:
            assert len([line for line in stderr.splitlines() if "warning:" not in line]) == 1, result
        else:
            reported |= reported_events(json.loads(result["stdout"]))
    succeeded = {result["command"] for result in results if result["code"] == 0}
    assert succeeded >= set(ALLOWED) - {"role-release"}, "a command never succeeded: the race tested little"
    stored = {names.id_of_name(name) for name in event_files(project)}
    assert reported <= stored, "an event a command reported is not in the log"
    assert len(reported) > 25 * rounds

    code, out, err = run(["verify"])
    assert code == 0, out + err
    refresh(find_store(root=str(project)), tuple(REGISTRY))
    caught_up = saved_states(project)
    assert stale_after_catch_up(project, tmp_path / "home") == []  # rebuilds after checking the files
    assert saved_states(project) == caught_up
