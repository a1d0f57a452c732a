"""Clones that sync converge, and a merge that breaks a seed-002 invariant is reported, never hidden.

Real git: a bare remote and clones in temp folders (tests/integration/test_sync.py's World),
the CLI in-process per clone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from continuity.core.errors import EXIT_INTEGRITY
from tests.helpers import cli_process
from tests.integration.test_sync import World, cli
from tests.integration.test_sync import _git_identity as _git_identity  # autouse: a git identity
from tests.workstream_docs import item, tracked

DOC = Path(".ai-bridge/context-checkpoint.json")
STORE = Path(".agent/runtime-continuity")
RUNTIME = Path(".ai-bridge/context-runtime.json")


def checkpoint(root: Path, doc: dict[str, Any]) -> None:
    """Record a checkpoint document in the clone at `root`."""
    (root / DOC).parent.mkdir(exist_ok=True)
    (root / DOC).write_text(json.dumps(doc))
    code, out = cli("work", "checkpoint", "--root", str(root))
    assert code == 0, out


def sync_all(*roots: Path) -> None:
    """Each clone syncs in turn, then the first again: every clone holds every event."""
    for root in (*roots, roots[0]):
        code, out = cli("sync", "--root", str(root))
        assert code == 0, out


def test_an_item_added_on_one_clone_to_a_workstream_the_other_ended_is_reported(tmp_path: Path) -> None:
    """Clone a completes WS-1; clone b, not knowing, adds N1 to it. After sync, work status and verify exit 1
    naming N1 on both clones, and the runtime file says so: the archive does not swallow unresolved work."""
    world = World(tmp_path)
    a, b = world.a, world.b
    checkpoint(a, tracked("WS-1", [item("A1", "IN_PROGRESS")]))
    sync_all(a, b)
    checkpoint(a, tracked("WS-1", [item("A1", "COMPLETED")], status="COMPLETED"))
    code, out = cli("work", "item", "add", "N1", "--title", "found late", "--root", str(b))
    assert code == 0, out
    sync_all(a, b)
    expected = ("workstream WS-1 is COMPLETED (archived) while work items are unresolved: N1 "
                "(concurrent writers merged? carry them into an active workstream)")
    for root in (a, b):
        code, status = cli("work", "status", "--root", str(root))
        assert code == EXIT_INTEGRITY and status["problems"] == [expected], status
        assert status["activeWorkstream"] is None
        code, verified = cli("verify", "--root", str(root))
        assert code == EXIT_INTEGRITY and verified["workstream_problems"] == [expected]
        assert json.loads((root / RUNTIME).read_text())["problems"] == [expected]
        archived = json.loads((root / ".agent/runtime-continuity/workstreams/archive/WS-1.json").read_text())
        assert [(i["id"], i["status"]) for i in archived["items"]] == [("A1", "COMPLETED"), ("N1", "PENDING")]
        brief = cli_process("resume-bundle", cwd=root)
        assert brief.returncode == 0, brief.stderr
        warning = f"1 workstream problem(s) left by a merge (`continuity work status` lists them): {expected}"
        assert f"Warning: {warning[:200]}" in brief.stdout.splitlines()  # the header cuts each warning at 200


def test_the_brief_names_a_second_active_workstream_and_a_contested_task_after_a_merge(tmp_path: Path) -> None:
    """Two clones start different workstreams and settle one task differently offline: after sync the resume
    brief of each (which shows one workstream, and open tasks only) warns of both, as verify reports them."""
    world = World(tmp_path)
    a, b = world.a, world.b
    code, created = cli("task", "create", "--title", "Fix login", "--root", str(a))
    assert code == 0
    sync_all(a, b)
    for root, ws_id, status in ((a, "WS-A", "completed"), (b, "WS-B", "cancelled")):
        checkpoint(root, tracked(ws_id))
        assert cli("task", "update", created["task_id"], "--status", status, "--root", str(root))[0] == 0
    sync_all(a, b)
    briefs = []
    for root in (a, b):
        code, verified = cli("verify", "--root", str(root))
        assert code == EXIT_INTEGRITY
        [broken] = verified["workstream_problems"]
        [contested] = verified["task_problems"]
        assert "WS-B was started while WS-A was still active" in broken
        brief = cli_process("resume-bundle", cwd=root)
        assert brief.returncode == 0, brief.stderr
        lines = brief.stdout.splitlines()
        warnings = [f"1 workstream problem(s) left by a merge (`continuity work status` lists them): {broken}",
                    f"1 task conflict(s) left by a merge (`continuity verify` lists them): {contested}"]
        assert [f"Warning: {warning[:200]}" for warning in warnings] == lines[2:4]
        briefs.append(lines[2:4])
    assert briefs[0] == briefs[1]



def test_a_workstream_one_clone_started_ended_and_another_started_first_has_one_file(tmp_path: Path) -> None:
    """Clone a starts WS-1; clone b, offline, records WS-1 already COMPLETED. The first start wins (reported as
    started twice): after sync both clones hold WS-1 under active/ only, as a rebuild writes it, and no stale
    archive/ file of b's says it ended."""
    world = World(tmp_path)
    a, b = world.a, world.b
    checkpoint(a, tracked("WS-1", [item("A1", "IN_PROGRESS")]))
    checkpoint(b, tracked("WS-1", [item("A1", "COMPLETED")], status="COMPLETED"))
    assert (b / STORE / "workstreams/archive/WS-1.json").exists()
    sync_all(a, b)
    files = []
    for root in (a, b):
        code, status = cli("work", "status", "--root", str(root))
        assert code == EXIT_INTEGRITY and status["activeWorkstream"]["id"] == "WS-1"
        assert any("WS-1 was started twice" in problem for problem in status["problems"])
        folder = root / STORE / "workstreams"
        files.append({str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.json"))})
    assert list(files[1]) == ["active/WS-1.json"] and files[0] == files[1]

