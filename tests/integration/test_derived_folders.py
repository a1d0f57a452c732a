"""Derived folders, not only derived files: a long history past every bound gives the same folders.

Commands run in-process with small bounds (each model's limits patched down), with catch-ups
after many of them. Then the complete listing and bytes of every derived folder must be what
`continuity rebuild` writes in place, and what it writes after every derived file and saved
model is deleted (docs/projections.md, "Derived folders").
"""

from __future__ import annotations

import errno
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from continuity.core.store import find_store
from continuity.readside.writers import refresh
from projections.registry import REGISTRY
from tests.injected import SyscallFaults, stale_after_catch_up
from tests.integration.test_catchup_property import (
    S1,
    Driver,
    delete_derived,
    derived_files,
    init_with_channel,
    store_path,
)
from tests.workstream_docs import item, tracked

#: Every model's bounds, small enough for a few hundred commands to push each past its limit.
SMALL_BOUNDS = {
    "projections.workstreams": {"ARCHIVE_LIMIT": 2, "EVIDENCE_LIMIT": 3, "VALIDATIONS_LIMIT": 3, "RECORDED_LIMIT": 4,
                                "RETIRED_LIMIT": 4},
    "projections.tasks": {"OPEN_LIMIT": 4, "TERMINAL_LIMIT": 2, "RUNS_LIMIT": 3, "OPEN_RUNS_LIMIT": 4, "TASK_RUNS": 2},
    "projections.memories": {"MEMORIES_LIMIT": 3, "SYNTHESIZED_LIMIT": 4},
    "projections.team": {"TEAMS_LIMIT": 2, "AGENTS_LIMIT": 2, "TASKS_LIMIT": 2},
    "projections.roles": {"TEAMS_LIMIT": 2, "ROLES_LIMIT": 2, "HISTORY_LIMIT": 2},
    "projections.handoffs": {"OPEN_LIMIT": 2, "DONE_LIMIT": 2, "HISTORY_LIMIT": 2},
    "projections.archives": {"ARCHIVES_LIMIT": 2},
    "projections.sessions": {"SESSIONS_LIMIT": 2, "OPEN_SESSIONS_LIMIT": 3, "RUNS_LIMIT": 2},
    "projections.agentwork": {"AGENTS_LIMIT": 2},
    "projections.inbox": {"TEAMS_LIMIT": 2, "MEMBERS_LIMIT": 2, "AGENTS_LIMIT": 2, "UNREAD_LIMIT": 2, "READ_LIMIT": 2},
    "projections.moments": {"TEAMS_LIMIT": 2, "MOMENTS_LIMIT": 2},
    "projections.refs": {"REFS_LIMIT": 2},
}

TEAMS = ("core", "web", "ops")
AGENTS = ("amy", "bo", "cy")


@pytest.fixture
def small_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Patch every model's bounds down (the folds read them when they run)."""
    import importlib

    for module_name, bounds in SMALL_BOUNDS.items():
        module = importlib.import_module(module_name)
        for name, value in bounds.items():
            assert hasattr(module, name), (module_name, name)
            monkeypatch.setattr(module, name, value)


class LongDriver(Driver):
    """The property test's driver, with more workstreams, teams and roles than the bounds keep."""

    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        super().__init__(root, capsys)
        self.next_ws = 0

    def random_command(self, rng: random.Random) -> None:
        agent, other = rng.choice(AGENTS), rng.choice(AGENTS)
        team = rng.choice(TEAMS)
        text = rng.choice(["fix parser", "add tests", "ship"])
        kind = rng.randrange(13)
        if kind == 0:
            self.next_ws += 1
            ws_id = f"WS-{self.next_ws}"
            self.work_checkpoint(tracked(ws_id, next_action=text, items=[item("A1", "IN_PROGRESS")]))
            self.work_checkpoint(tracked(ws_id, status=rng.choice(["COMPLETED", "CANCELLED"]), next_action="none",
                                         items=[item("A1", "COMPLETED")]))
        elif kind == 1:
            found = self.cli("task", "create", "--title", text, "--assign", agent)
            if found:
                self.ids["task"].append(found["task_id"])
        elif kind == 2:  # a memory each time: the task's outcome, or its blocker
            found = self.cli("task", "create", "--title", text, "--assign", agent)
            if found:
                self.ids["task"].append(found["task_id"])
            self.run(("run-start", -1, agent, S1))
            self.run(("run-complete", -1, text))
            self.run(("task-update", -1, rng.choice(["completed", "blocked", "in_progress"])))
        elif kind == 3:
            self.cli("snapshot", team, agent, rng.choice(["build", "review", "deploy"]), "--objective", text)
        elif kind == 4:
            role = rng.choice(["rev", "ops", "qa"])
            self.cli("role", "create", team, role)
            self.cli("role", "claim", team, role, "--agent", agent)
        elif kind == 5:
            found = self.cli("handoff", "create", "--agent", agent, "--to", other, "--message", text)
            if found:
                self.ids["handoff"].append(found["handoff_id"])
                if rng.random() < 0.7:
                    self.cli("handoff", rng.choice(["accept", "close"]), found["handoff_id"], "--agent", other)
        elif kind == 6:
            self.cli("archive", "--gate", "agent", "--reason", text,
                     "--project", rng.choice(["demo", "demo", "other"]))
        elif kind == 7:
            self.run(("compat", rng.choice(["log", "archive"]), text))
        elif kind == 8:
            self.cli("send", team, "--agent", agent, "--to", other, "--message", text)
        elif kind == 9:
            self.cli("log", text, "--handoff", f".agent/handoffs/H-{rng.randrange(5)}.json",
                     session=rng.choice([S1, "s2", "s3"]))
        elif kind == 10:
            self.cli("checkpoint", text, f"--next={text}", session=rng.choice([S1, "s2", "s3"]))
        elif kind == 11:
            self.merge(text)  # an event from another clone, earlier than the newest: the next catch-up rebuilds
        else:
            self.run(("hook", rng.choice(["claude_session_start", "claude_session_end", "claude_stop"]), agent))


def start(root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> LongDriver:
    root.mkdir()
    monkeypatch.chdir(root)
    init_with_channel(root, capsys)
    return LongDriver(root, capsys)


def differences(before: dict[str, bytes], after: dict[str, bytes]) -> dict[str, Any]:
    """What differs between two listings: files only in one, files with other bytes."""
    return {"only_before": sorted(set(before) - set(after)), "only_after": sorted(set(after) - set(before)),
            "changed": sorted(name for name in set(before) & set(after) if before[name] != after[name])}


@pytest.mark.parametrize("seed", [1, 2])
def test_a_long_history_past_every_bound_leaves_the_folders_a_rebuild_writes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], small_bounds: None,
        seed: int) -> None:
    """Incremental catch-ups, a rebuild in place and a rebuild from nothing leave the same derived folders."""
    root = tmp_path / "proj"
    home = Path(os.environ["HOME"])
    driver = start(root, capsys, monkeypatch)
    store = find_store(root=str(root))
    rng = random.Random(seed)
    for _ in range(120):
        driver.random_command(rng)
        if rng.random() < 0.3:
            refresh(store, tuple(REGISTRY))
    refresh(store, tuple(REGISTRY))
    incremental = derived_files(root, home)

    assert main(["rebuild"]) == 0
    capsys.readouterr()
    in_place = derived_files(root, home)
    assert differences(incremental, in_place) == {"only_before": [], "only_after": [], "changed": []}

    delete_derived(root, home)
    assert main(["rebuild"]) == 0
    capsys.readouterr()
    assert differences(incremental, derived_files(root, home)) == {"only_before": [], "only_after": [], "changed": []}
    shutil.rmtree(home / ".agent", ignore_errors=True)
#: Files in the derived folders that no event makes: a seed-004 archive and a seed-000 role document written
#: before continuity arrived (the same names and shapes as continuity's own), and a user's notes.
FOREIGN = ("archives/RC-20200101_000000_001.json", "team/core/roles/gone.md", "handoffs/HO-gone.json",
           "workstreams/notes.txt")


def test_a_rebuild_never_deletes_a_file_no_event_makes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`rebuild` writes every derived file again and removes none it did not write: what seed 000's or 004's own
    tools wrote there (or a person) cannot be told from a stale file of continuity's, and is never lost."""
    root = tmp_path / "proj"
    driver = start(root, capsys, monkeypatch)
    rng = random.Random(3)
    for _ in range(20):
        driver.random_command(rng)
    store = store_path(root)
    for relative in FOREIGN:
        (store / relative).parent.mkdir(parents=True, exist_ok=True)
        (store / relative).write_text("written by hand\n")
    assert main(["rebuild"]) == 0
    capsys.readouterr()
    for relative in FOREIGN:
        assert (store / relative).read_text() == "written by hand\n", relative


def long_history(root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """120 random commands (small bounds in force), then every derived file and saved model deleted."""
    driver = start(root, capsys, monkeypatch)
    rng = random.Random(seed)
    for _ in range(120):
        driver.random_command(rng)
    delete_derived(root, Path(os.environ["HOME"]))


@pytest.mark.parametrize("error, persistent", [(errno.EIO, False), (errno.ENOSPC, True)], ids=["EIO", "ENOSPC"])
def test_a_catch_up_interrupted_between_two_derived_files_converges(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], small_bounds: None,
        error: int, persistent: bool) -> None:
    """A catch-up over a long history failing at a disk call between two documents: the next one equals a rebuild."""
    root = tmp_path / "proj"
    home = Path(os.environ["HOME"])
    long_history(root, capsys, monkeypatch, 4)
    store = find_store(root=str(root))
    counter = SyscallFaults(error, at=None)
    with counter:
        refresh(store, tuple(REGISTRY))
    assert counter.calls > 100
    for at in range(1, counter.calls, max(1, counter.calls // 12)):
        delete_derived(root, home)
        faults = SyscallFaults(error, at=at, persistent=persistent)
        with faults:
            outcome = refresh(store, tuple(REGISTRY))
        assert faults.hits and outcome.warnings, at
        assert stale_after_catch_up(root, home) == [], (at, faults.hits[:1])


KILLED = """
import importlib, os, sys, time
from tests.integration.test_derived_folders import SMALL_BOUNDS
for module, bounds in SMALL_BOUNDS.items():
    for name, value in bounds.items():
        setattr(importlib.import_module(module), name, value)
marker, stop_at = sys.argv[1], int(sys.argv[2])
replace, done = os.replace, [0]
def replace_then_stop(*args, **kwargs):  # the N-th document renamed into place, then wait for the kill
    replace(*args, **kwargs)
    done[0] += 1
    if done[0] == stop_at:
        open(marker, "w").close()
        time.sleep(600)
os.replace = replace_then_stop
from continuity.cli import main
sys.exit(main(sys.argv[3:]))
"""


@pytest.mark.parametrize("argv, stops", [(["rebuild"], (1, 10, 30, 60)), (["status"], (1, 10, 30)),
                                         (["work", "status"], (1, 5, 10)), (["task", "list"], (1, 3))])
def test_a_catch_up_killed_between_two_derived_files_converges(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], small_bounds: None,
        argv: list[str], stops: tuple[int, ...]) -> None:
    """kill -9 of a command catching up a long history right after its n-th document: the next catch-up converges."""
    root = tmp_path / "proj"
    home = Path(os.environ["HOME"])
    long_history(root, capsys, monkeypatch, 5)
    script, marker = tmp_path / "killed.py", tmp_path / "stopped"
    script.write_text(KILLED)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for stop_at in stops:
        delete_derived(root, home)
        marker.unlink(missing_ok=True)
        child = subprocess.Popen([sys.executable, str(script), str(marker), str(stop_at), *argv], cwd=root, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while child.poll() is None and not marker.exists():
            time.sleep(0.01)
        child.kill()
        child.wait()
        assert marker.exists(), f"{argv} wrote fewer than {stop_at} documents: the case tests nothing"
        assert stale_after_catch_up(root, home) == [], (argv, stop_at)


def test_a_rebuild_killed_over_current_models_converges(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        small_bounds: None) -> None:
    """kill -9 of `rebuild` over saved models that are current: a rebuild folds from nothing and rewrites each
    document as it folds, so the documents were left at an earlier point of the log (a role's checkpoint_ref, a
    snapshot's latest.json rolled back) under saved models past it, and no later command wrote them again."""
    root = tmp_path / "proj"
    home = Path(os.environ["HOME"])
    long_history(root, capsys, monkeypatch, 6)
    assert stale_after_catch_up(root, home) == []  # every model saved and current, every document written
    script, marker = tmp_path / "killed.py", tmp_path / "stopped"
    script.write_text(KILLED)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for stop_at in (6, 12, 24, 36):
        marker.unlink(missing_ok=True)
        child = subprocess.Popen([sys.executable, str(script), str(marker), str(stop_at), "rebuild"], cwd=root,
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while child.poll() is None and not marker.exists():
            time.sleep(0.01)
        child.kill()
        child.wait()
        assert marker.exists(), f"rebuild wrote fewer than {stop_at} documents: the case tests nothing"
        assert stale_after_catch_up(root, home) == [], stop_at  # leaves the models current for the next round
