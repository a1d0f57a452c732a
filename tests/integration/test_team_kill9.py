"""kill -9 of a process running the newer write commands: the store verifies, the next command works.

A forked child runs task updates, runs, role claims and releases, park, snapshots,
archives and workstream validations through `continuity.cli.main` in a loop; the parent
kills it at random moments (as test_kill9.py does for bare appends). After each kill every
event decodes and every derived JSON document parses whole (old or new, never torn); every
few kills a command in the parent must succeed. At the end the log verifies and the next
catch-up leaves every derived file as a full rebuild writes it.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import time
from pathlib import Path

import pytest

from continuity.core.store import find_store
from tests.injected import identity, run, stale_after_catch_up
from tests.workstream_docs import tracked

#: write_atomic's temp file (`.<name>.<pid>.tmp`): a kill between its create and its rename leaves one.
TEMP = re.compile(r"(^|/)\.[^/]+\.\d+\.tmp$")


def prepare(root: Path) -> list[str]:
    """Tasks, roles and an active workstream for the child to work on: the task ids."""
    with identity():
        tasks = [json.loads(run(["--json", "task", "create", "--title", f"t{n}"])[1])["task_id"] for n in range(2)]
        for role in ("rev", "ops"):
            assert run(["role", "create", "core", role])[0] == 0
        (root / ".ai-bridge").mkdir()
        (root / ".ai-bridge" / "context-checkpoint.json").write_text(json.dumps(tracked("WS-1")))
        assert run(["work", "checkpoint"])[0] == 0
    return tasks


def work_forever(tasks: list[str], seed: int) -> None:
    """The child: every newer write command, round after round, until killed."""
    os.environ.update(CONTINUITY_AGENT="kid", CONTINUITY_SESSION_ID=f"k{seed}", CONTINUITY_HOST="claude-code")
    rng = random.Random(seed)
    i = 0
    while True:
        task, role = rng.choice(tasks), rng.choice(["rev", "ops"])
        run(["task", "update", task, "--status", rng.choice(["in_progress", "blocked"]), "--note", f"n{i}"])
        started = run(["--json", "run", "start", "--task", task])
        if started[0] == 0:
            run(["run", "complete", json.loads(started[1])["run_id"], "--output-summary", f"s{i}"])
        run(["role", "claim", "core", role, "--agent", "kid"])
        run(["park", "core", "--agent", "kid", "--next", f"next {i}"])
        run(["snapshot", "core", "kid", "t1", "--objective", f"o{i}"])
        run(["archive", "--reason", f"r{i}"])
        run(["work", "validate", "--id", f"V{seed}-{i}", "--kind", "unit-tests", "--result", "PASS", "--scope",
             "all", "--summary", "s", "--repository", "repo-a"])
        run(["role", "release", "core", role, "--agent", "kid"])
        i += 1


def derived_json(root: Path, home: Path) -> list[Path]:
    """Every derived JSON document (the store's, .ai-bridge's), temp files aside."""
    store = root / ".agent" / "runtime-continuity"
    found = [path for path in store.rglob("*.json")
             if path.relative_to(store).parts[0] not in ("events", "local") and not TEMP.search(str(path))]
    return found + [path for path in (root / ".ai-bridge").glob("*.json") if not TEMP.search(str(path))]


def kill_loop(root: Path, home: Path, kills: int, seed: int) -> None:
    """`kills` kill -9s of the child at random moments, checking the store after each."""
    tasks = prepare(root)
    rng = random.Random(seed)
    for n in range(kills):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns
            try:
                work_forever(tasks, seed * 1000 + n)
            finally:
                os._exit(1)
        time.sleep(rng.uniform(0.005, 0.25))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        store = find_store(root=str(root))
        list(store.open_reader().read())  # raises on an event that does not decode
        for path in derived_json(root, home):
            json.loads(path.read_bytes())  # never torn
        if n % 5 == 4:
            with identity("amy", "s-parent"):
                code, _, err = run(["snapshot", "core", "amy", "t9", "--objective", f"after kill {n}"])
                assert code == 0, err
                code, _, err = run(["task", "update", tasks[0], "--status", "in_progress", "--note", "parent"])
                assert code in (0, 2), err  # 2: the child left it in a state that refuses this move
                assert "Traceback" not in err
    code, out, err = run(["verify"])
    assert code == 0, out + err
    assert len(list(find_store(root=str(root)).open_reader().read())) > kills, "the child barely wrote anything"
    stale = [name for name in stale_after_catch_up(root, home) if not TEMP.search(name)]
    assert stale == []


def test_kill9_of_the_team_and_task_commands(project: Path, tmp_path: Path) -> None:
    """40 kill -9s of a process running the newer write commands: verify ok, documents whole, rebuild equal."""
    kill_loop(project, tmp_path / "home", kills=40, seed=7)


@pytest.mark.stress
def test_kill9_of_the_team_and_task_commands_stress(project: Path, tmp_path: Path) -> None:
    """The same, 150 kills."""
    kill_loop(project, tmp_path / "home", kills=150, seed=11)
