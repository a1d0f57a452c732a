"""Clones that sync converge, and a merge that breaks a seed-002 invariant is reported, never hidden.

Real git: a bare remote and clones in temp folders (tests/integration/test_sync.py's World),
the CLI in-process per clone.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuity.core.errors import EXIT_INTEGRITY
from continuity.core.fsio import SPARE_SUFFIXES
from continuity.core.text import shortened
from tests.helpers import cli_process, set_config
from tests.integration.test_sync import World, cli, event_names
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
                "(concurrent writers merged? carry them into an active workstream, then `continuity work item set "
                "ID --workstream WS-1 --status SUPERSEDED`)")
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
        assert f"Warning: {shortened(warning, 200)}" in brief.stdout.splitlines()  # the header cuts each at 200
    # b carries N1 into a new workstream and settles it in the archived one: the state is whole again.
    checkpoint(b, tracked("WS-2", [item("N1", "PENDING")]))
    code, out = cli("work", "item", "set", "N1", "--workstream", "WS-1", "--status", "SUPERSEDED",
                    "--root", str(b))
    assert code == 0, out
    sync_all(a, b)
    for root in (a, b):
        code, verified = cli("verify", "--root", str(root))
        assert code == 0 and verified["workstream_problems"] == [], verified
        archived = json.loads((root / STORE / "workstreams/archive/WS-1.json").read_text())
        assert [(i["id"], i["status"]) for i in archived["items"]] == [("A1", "COMPLETED"), ("N1", "SUPERSEDED")]
        assert "Warning" not in cli_process("resume-bundle", cwd=root).stdout


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
        assert [f"Warning: {shortened(warning, 200)}" for warning in warnings] == lines[2:4]
        briefs.append(lines[2:4])
        code, status = cli("status", "--root", str(root))  # and status says so too
        assert code == 0 and status["warnings"][-2:] == warnings, status
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


# --- three clones doing random real commands, syncing in random order -----------------------------

CLONES = ("a", "b", "c")
#: Each clone's wall clock, off by this many seconds (a clone far ahead, one behind).
SKEWS = (0, 5400, -7200)
#: Files of a store that are this clone's alone (the node id, saved models, sync marks) or its input.
LOCAL = ("local", "events", "config.json")
#: The work item `item set` changes, by the step's text (its status comes from the step's pick).
TARGETS = {"add tests": "A2", "wire CLI": "N1"}


def document(pick: int, note: str) -> dict[str, Any]:
    """One of a few checkpoint documents: some fit the merged state, others are refused (exit 12)."""
    return [
        tracked("WS-1", [item("A1", "IN_PROGRESS"), item("A2", dependsOn=["A1"])], next_action=note),
        tracked("WS-1", [item("A1", "COMPLETED"), item("A2", "IN_PROGRESS", dependsOn=["A1"])],
                decisions=[note]),
        tracked("WS-1", [item("A1", "COMPLETED"), item("A2", "COMPLETED", dependsOn=["A1"])], status="COMPLETED"),
        tracked("WS-2", [item("B1", "PENDING")], next_action=note),
    ][pick]


class Clones:
    """Three clones of one bare remote, each with its own skewed clock; commands run in-process."""

    def __init__(self, world: World, monkeypatch: Any) -> None:
        import continuity.core.store as store_module
        import continuity.sessions.service as sessions_service

        self.roots = {"a": world.a, "b": world.b, "c": world.clone("c")}
        self.tasks: list[str] = []
        self.runs: list[str] = []
        self.codes: list[tuple[str, int]] = []
        self._patch = monkeypatch
        self._modules = (store_module, sessions_service)
        self._real = store_module.now_us

    def run(self, clone: str, *args: str) -> tuple[int, Any]:
        """`continuity ARGS` in `clone`, its clock skewed by SKEWS; a traceback (exit 70) fails the test."""
        skew = SKEWS[CLONES.index(clone)] * 1_000_000
        for module in self._modules:
            self._patch.setattr(module, "now_us", lambda: self._real() + skew)
        code, out = cli(*args, "--root", str(self.roots[clone]))
        assert code != 70, (clone, args, out)
        self.codes.append((args[0], code))
        return code, out

    def step(self, clone: str, action: str, pick: int, text: str) -> None:
        """One random real command in `clone` (ids picked among those any clone made: unknown here is exit 7)."""
        task = self.tasks[pick % len(self.tasks)] if self.tasks else "task-0000000000"
        run = self.runs[pick % len(self.runs)] if self.runs else "run-0000000000"
        agent = ("amy", "bo")[pick % 2]
        if action == "log":
            self.run(clone, "log", "-m", text, "--file", f"src/{clone}{pick}.py")
        elif action == "checkpoint":
            self.run(clone, "checkpoint", "-m", text, "--next", f"then {text}")
        elif action == "task create":
            code, out = self.run(clone, "task", "create", "--title", text)
            if code == 0:
                self.tasks.append(out["task_id"])
        elif action == "task update":
            status = ("in_progress", "completed", "blocked", "cancelled")[pick]
            self.run(clone, "task", "update", task, "--status", status, "--note", text)
        elif action == "run start":
            code, out = self.run(clone, "run", "start", "--task", task, "--agent", agent)
            if code == 0:
                self.runs.append(out["run_id"])
        elif action == "run complete":
            self.run(clone, "run", "complete", run, "--output-summary", text)
        elif action == "memory":
            self.run(clone, "memory", "list")
        elif action == "snapshot":
            self.run(clone, "snapshot", "core", agent, f"T{pick}", "--objective", text)
        elif action == "role":
            if self.run(clone, "role", "claim", "core", "rev", "--agent", agent)[0] == 7:
                self.run(clone, "role", "create", "core", "rev")
        elif action == "park":
            self.run(clone, "park", "core", "--agent", agent, "--objective", text)
        elif action == "work checkpoint":
            root = self.roots[clone]
            (root / DOC).parent.mkdir(exist_ok=True)
            (root / DOC).write_text(json.dumps(document(pick, text)))
            self.run(clone, "work", "checkpoint")
        elif action == "item add":
            self.run(clone, "work", "item", "add", f"N{pick}", "--title", text)
        elif action == "item set":
            status = ("IN_PROGRESS", "COMPLETED", "BLOCKED", "CANCELLED")[pick]
            blocker = ["--blocked-by", "A2"] if status == "BLOCKED" else []
            self.run(clone, "work", "item", "set", TARGETS.get(text, "A1"), "--status", status, *blocker)
        elif action == "validate":
            self.run(clone, "work", "validate", "--id", f"V{pick}", "--kind", "unit", "--result", "PASS",
                     "--scope", "all", "--summary", text)
        elif action == "archive":
            self.run(clone, "archive", "--reason", text)
        elif action == "host-switch":
            self.run(clone, "host-switch", "--from-host", "claude-code", "--to-host", "codex", "--reason", text)
        elif action == "handoff":
            self.run(clone, "handoff", "create", "--agent", agent, "--to", ("bo", "amy")[pick % 2], "--message", text)
        elif action == "send":
            self.run(clone, "send", "core", "--agent", agent, "--to", ("bo", "amy")[pick % 2], "--message", text)
        elif action == "sync":
            code, out = self.run(clone, "sync")
            assert code == 0, out

    def derived(self, clone: str) -> dict[str, bytes]:
        """Every derived file of a clone's store and its .ai-bridge runtime files, by relative path."""
        root = self.roots[clone]
        store = root / ".agent/runtime-continuity"
        files = {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*"))
                 if p.is_file() and p.relative_to(store).parts[0] not in LOCAL
                 and not p.name.endswith(SPARE_SUFFIXES)}  # the documents' spare files (fsio.write_swapped)
        for name in ("context-runtime.json", "context-runtime.md"):
            if (root / ".ai-bridge" / name).exists():
                files[f".ai-bridge/{name}"] = (root / ".ai-bridge" / name).read_bytes()
        return files


ACTIONS = ("log", "checkpoint", "task create", "task update", "run start", "run complete", "memory", "snapshot",
           "role", "park", "work checkpoint", "item add", "item set", "validate", "archive", "host-switch", "handoff",
           "send", "sync")
steps = st.lists(st.tuples(st.sampled_from(CLONES), st.sampled_from(ACTIONS), st.integers(0, 3),
                           st.sampled_from(["fix parser", "add tests", "wire CLI", "ship"])),
                 min_size=12, max_size=30)


#: Every feature on every clone, conflicting edits among them, syncs in between.
EVERY_FEATURE = [
    ("a", "task create", 0, "fix parser"), ("a", "work checkpoint", 0, "start"), ("a", "sync", 0, ""),
    ("b", "sync", 0, ""), ("c", "sync", 0, ""),
    ("b", "task update", 0, "on b"), ("c", "task update", 1, "on c"), ("b", "run start", 0, ""),
    ("c", "run start", 0, ""), ("b", "run complete", 0, "done on b"), ("b", "role", 1, ""), ("c", "role", 0, ""),
    ("a", "item set", 1, ""), ("b", "item set", 2, ""), ("a", "item set", 0, "wire CLI"),
    ("c", "item add", 1, "found late"),
    ("a", "validate", 1, "one"), ("c", "validate", 1, "other"), ("b", "snapshot", 1, "ship"),
    ("c", "log", 2, "edited"), ("a", "checkpoint", 0, "wire CLI"), ("b", "sync", 0, ""),
    ("a", "sync", 0, ""), ("a", "park", 1, "leaving"), ("c", "park", 0, "leaving"), ("a", "memory", 0, ""),
    ("c", "run complete", 1, "done on c"), ("c", "task update", 1, "again"), ("b", "work checkpoint", 3, "next"),
    ("c", "sync", 0, ""), ("a", "work checkpoint", 1, "on"), ("b", "memory", 0, ""), ("a", "archive", 0, "pause"),
    ("c", "handoff", 0, "take it"), ("b", "send", 1, "ping"), ("c", "archive", 0, "stop"),
    ("b", "host-switch", 0, "moving"), ("a", "sync", 0, ""), ("c", "sync", 0, ""), ("a", "archive", 0, "again"),
]


#: The workstreams' runtime files (.ai-bridge/): written with the live views of the worktree (head, fingerprint,
#: context state, membership) by the writes of the clone they are in, from the log alone after changes from
#: elsewhere. Only their log-alone form is the same on every clone (after a rebuild).
LIVE_VIEWS = (".ai-bridge/context-runtime.json", ".ai-bridge/context-runtime.md")


def converge(clones: Clones, plan: list[tuple[str, str, int, str]]) -> None:
    """Run the plan, a final sync round, then check that the clones agree with each other and with a rebuild."""
    clones.step("a", "role", 0, "")
    for clone, action, pick, text in plan:
        clones.step(clone, action, pick, text)
    for clone in ("a", "b", "c", "a", "b"):
        clones.step(clone, "sync", 0, "")
    names = {clone: event_names(clones.roots[clone]) for clone in CLONES}
    assert names["a"] == names["b"] == names["c"]
    derived = {clone: clones.derived(clone) for clone in CLONES}
    for clone in ("b", "c"):  # the runtime files of the clone that wrote last hold its worktree's live views
        assert derived[clone].keys() == derived["a"].keys()
        assert {k for k in derived["a"] if derived[clone][k] != derived["a"][k] and k not in LIVE_VIEWS} == set(), clone
    verdicts = []
    for clone in CLONES:
        code, report = clones.run(clone, "verify")
        assert report["first_problem"] is None and report["symlinks"] == []
        verdicts.append((code, report["workstream_problems"], report["task_problems"]))
    assert verdicts[0] == verdicts[1] == verdicts[2]
    first_rebuilt: dict[str, bytes] = {}
    for clone in CLONES:  # from scratch: every derived file and saved model gone, then `rebuild`
        store = clones.roots[clone] / ".agent/runtime-continuity"
        for path in list(store.iterdir()):
            if path.name not in LOCAL:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        shutil.rmtree(store / "local" / "models")
        for name in ("context-runtime.json", "context-runtime.md"):
            (clones.roots[clone] / ".ai-bridge" / name).unlink(missing_ok=True)
        assert clones.run(clone, "rebuild")[0] == 0
        rebuilt = clones.derived(clone)
        assert rebuilt.keys() == derived["a"].keys()
        assert {k for k in rebuilt if rebuilt[k] != derived["a"][k] and k not in LIVE_VIEWS} == set(), clone
        first_rebuilt = first_rebuilt if clone != "a" else rebuilt  # the runtime files from the log alone: as one
        assert {k for k in LIVE_VIEWS if rebuilt.get(k) != first_rebuilt.get(k)} == set(), clone


@pytest.mark.parametrize("layouts", ["delta delta delta", "delta full delta"])
def test_clones_using_every_feature_converge_on_one_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         layouts: str) -> None:
    """Three clones with skewed clocks use every feature, with conflicting edits, and sync: after a final
    round every clone holds the same events and the same derived files as a rebuild from scratch writes.
    Clones writing the two branch layouts (`sync_layout`) sync together."""
    clones = Clones(World(tmp_path), monkeypatch)
    for clone, layout in zip(CLONES, layouts.split(), strict=True):
        set_config(clones.roots[clone], sync_layout=layout)
    converge(clones, EVERY_FEATURE)
    used = {code for _, code in clones.codes}
    assert 0 in used and 70 not in used


@pytest.mark.stress
@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(plan=steps)
def test_three_clones_doing_anything_converge_on_one_state(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
        plan: list[tuple[str, str, int, str]]) -> None:
    """Random commands of every feature on three clones with skewed clocks, synced in random order: after a
    final round the clones agree with each other and with a rebuild from scratch, and verify gives one verdict."""
    converge(Clones(World(tmp_path_factory.mktemp("world")), monkeypatch), plan)


def test_a_clone_whose_clock_is_behind_wins_by_log_order_on_every_clone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Clone c's clock is two hours behind: its role claim and task update, made after a's in real time, are
    stamped just after the events it last saw, so they sort before a's. Every clone then picks the same
    winners by that order (c's claim holds the role; a's update, the later, stays), and says so."""
    clones = Clones(World(tmp_path), monkeypatch)
    clones.run("a", "role", "create", "core", "rev")
    task = clones.run("a", "task", "create", "--title", "Fix login")[1]["task_id"]
    for clone in ("a", "c"):
        assert clones.run(clone, "sync")[0] == 0
    claims = {}
    updates = {}
    for clone, agent, status in (("a", "amy", "completed"), ("c", "bo", "cancelled")):
        claims[agent] = clones.run(clone, "role", "claim", "core", "rev", "--agent", agent)[1]["event_id"]
        code, updated = clones.run(clone, "task", "update", task, "--status", status)
        assert code == 0
        updates[status] = updated["event_ids"][0]
    assert claims["bo"] < claims["amy"]  # c wrote later, but its clock put it first
    for clone in ("a", "c", "a", "b"):
        assert clones.run(clone, "sync")[0] == 0
    seen = []
    for clone in CLONES:
        role = clones.run(clone, "role", "show", "core", "rev")[1]
        shown = clones.run(clone, "task", "show", task)[1]
        assert role["holder"] == "bo" and shown["task"]["status"] == "completed", (clone, role, shown)
        assert [note["agent"] for note in role["history"] if note["action"] == "claim-lost"] == ["amy"]
        assert shown["problems"] == [f"task {task}: queued -> completed recorded while it was cancelled (update "
                                     f"{updates['completed']}; concurrent writers merged?; the later in log order "
                                     "stays)"]
        seen.append(clones.derived(clone))
    assert seen[0] == seen[1] == seen[2]


def test_conflicting_edits_of_two_clones_are_each_reported_after_sync_until_a_checkpoint_fixes_them(
        tmp_path: Path) -> None:
    """One validation id with two contents, dependency edges that close a cycle only together, and an item one
    clone completes while the other blocks it: after sync every clone's work status, verify and runtime file
    name all three. A note on another item is still accepted. A tracked checkpoint of WS-1 fixing the cycle clears
    it and resolves the two recorded conflicts it was decided with: after sync both clones verify clean and say
    what resolved them."""
    world = World(tmp_path)
    a, b = world.a, world.b
    items = [item("A1", "IN_PROGRESS"), item("A2"), item("A3", "IN_PROGRESS")]
    checkpoint(a, tracked("WS-1", items))
    sync_all(a, b)
    for root, summary, edge, a3 in ((a, "passed", ("A1", "A2"), ("COMPLETED",)),
                                    (b, "failed", ("A2", "A1"), ("BLOCKED", "--blocked-by", "A2"))):
        assert cli("work", "validate", "--id", "V1", "--kind", "unit", "--result", "PASS", "--scope", "all",
                   "--summary", summary, "--root", str(root))[0] == 0
        assert cli("work", "item", "set", edge[0], "--depends-on", edge[1], "--root", str(root))[0] == 0
        assert cli("work", "item", "set", "A3", "--status", *a3, "--root", str(root))[0] == 0
    sync_all(a, b)
    reported = []
    for root in (a, b):
        code, status = cli("work", "status", "--root", str(root))
        assert code == EXIT_INTEGRITY
        code, verified = cli("verify", "--root", str(root))
        assert code == EXIT_INTEGRITY and verified["workstream_problems"] == status["problems"]
        assert json.loads((root / RUNTIME).read_text())["problems"] == status["problems"]
        reported.append(status["problems"])
    assert reported[0] == reported[1]
    [reused, stale, cycle] = reported[0]
    assert reused.startswith("validation id V1 was recorded twice with different content")
    assert stale.startswith("work item A3 of WS-1: IN_PROGRESS -> ") and "recorded while it was" in stale
    assert cycle == "Workstream WS-1 contains a dependency cycle at A1"
    assert [(p["kind"], p["workstreamId"], p["ids"]) for p in status["problemDetails"]] == [
        ("validation_reused", "WS-1", ["V1"]), ("stale_item_status", "WS-1", ["A3"]),
        ("dependency_cycle", "WS-1", ["A1", "A2"])]
    code, out = cli("work", "item", "set", "A3", "--note", "unrelated to the cycle", "--root", str(b))
    assert code == 0, out  # a merge's cycle refuses only the edits that add to it
    fixed = [item("A1", "IN_PROGRESS", dependsOn=["A2"]), item("A2"), item("A3", "IN_PROGRESS")]
    checkpoint(a, tracked("WS-1", fixed))
    sync_all(a, b)
    for root in (a, b):
        code, status = cli("work", "status", "--root", str(root))
        assert code == 0 and status["problems"] == [], status
        assert [(p["text"], p["resolvedBy"]["by"]) for p in status["resolvedProblems"]] == [
            (reused, "checkpoint"), (stale, "checkpoint")]
        code, verified = cli("verify", "--root", str(root))
        assert code == 0 and verified["workstream_problems_resolved"] == status["resolvedProblems"]


def test_one_document_checkpointed_alike_on_two_clones_is_no_conflict(tmp_path: Path) -> None:
    """The same tracked document recorded on two clones offline starts one workstream with the same items:
    after sync nothing is reported; the same id started with other content still is."""
    world = World(tmp_path)
    a, b = world.a, world.b
    for root, ended in ((a, "CANCELLED"), (b, "COMPLETED")):
        checkpoint(root, tracked("WS-0", status=ended, items=[item("B1", ended)]))
        checkpoint(root, tracked("WS-1"))
    sync_all(a, b)
    for root in (a, b):
        code, status = cli("work", "status", "--root", str(root))
        assert code == EXIT_INTEGRITY and status["activeWorkstream"]["id"] == "WS-1"
        assert [problem.split(" (")[0] for problem in status["problems"]] == [
            "workstream WS-0 was started twice", "work item B1 of WS-0 was added twice"], status["problems"]


def test_after_a_merge_made_two_workstreams_active_either_can_be_ended_by_a_checkpoint(tmp_path: Path) -> None:
    """Clones a and b each started a workstream offline; after sync WS-A (the older) is shown active and both
    are reported. A checkpoint ending WS-B, the one the team drops, is accepted (it was refused as a switch
    away from WS-A), WS-A stays active, and the problem is gone: it held while two were active."""
    world = World(tmp_path)
    a, b = world.a, world.b
    checkpoint(a, tracked("WS-A"))
    checkpoint(b, tracked("WS-B"))
    sync_all(a, b)
    code, status = cli("work", "status", "--root", str(a))
    assert code == EXIT_INTEGRITY and status["activeWorkstream"]["id"] == "WS-A"
    checkpoint(a, tracked("WS-B", status="CANCELLED", items=[item("A1", "CANCELLED"), item("A2", "CANCELLED")]))
    code, status = cli("work", "status", "--root", str(a))
    assert status["activeWorkstream"]["id"] == "WS-A" and status["archivedWorkstreams"] == ["WS-B"]
    assert code == 0 and status["problems"] == [] and status["resolvedProblems"] == [], status


def test_conflicts_two_clones_recorded_are_resolved_by_work_resolve_and_every_clone_agrees(tmp_path: Path) -> None:
    """An item added on both clones with other titles and a validation id reused: after sync both are recorded
    with ids and work status, verify and the brief fail on them. Clone a resolves both, clone b one of them,
    offline: after sync every clone says the same (the earlier resolution in log order stands), verifies clean,
    briefs no warning, and `work status --as-of` before the resolutions still shows them open."""
    world = World(tmp_path)
    a, b = world.a, world.b
    checkpoint(a, tracked("WS-1", [item("A1", "IN_PROGRESS")]))
    sync_all(a, b)
    for root, text in ((a, "passed"), (b, "failed")):
        assert cli("work", "item", "add", "B1", "--title", f"from {text}", "--root", str(root))[0] == 0
        assert cli("work", "validate", "--id", "V1", "--kind", "unit", "--result", "PASS", "--scope", "all",
                   "--summary", text, "--root", str(root))[0] == 0
    sync_all(a, b)
    code, status = cli("work", "status", "--root", str(a))
    assert code == EXIT_INTEGRITY
    added, reused = status["problemDetails"]
    assert (added["kind"], added["ids"], reused["kind"], reused["ids"]) == (
        "item_added_twice", ["B1"], "validation_reused", ["V1"])
    before = status["lastEventId"]
    code, out = cli("work", "resolve", added["id"], reused["id"], "--reason", "kept the first B1 and V1",
                    "--agent", "amy", "--root", str(a))
    assert code == 0 and out["resolved"] == [added["id"], reused["id"]], out
    code, out = cli("work", "resolve", "--all", "--workstream", "WS-1", "--reason", "b's view", "--agent", "bob",
                    "--root", str(b))
    assert code == 0 and out["resolved"] == [added["id"], reused["id"]], out
    sync_all(a, b)
    seen = []
    for root in (a, b):
        code, status = cli("work", "status", "--root", str(root))
        assert code == 0 and status["problems"] == [] and status["problemDetails"] == [], status
        code, verified = cli("verify", "--root", str(root))
        assert code == 0 and verified["workstream_problems_resolved"] == status["resolvedProblems"]
        assert "Warning" not in cli_process("resume-bundle", cwd=root).stdout
        seen.append(status["resolvedProblems"])
    assert seen[0] == seen[1] and [p["id"] for p in seen[0]] == [added["id"], reused["id"]]
    assert {p["resolvedBy"]["agentId"] for p in seen[0]} in ({"amy"}, {"bob"})  # one resolution, the earlier
    assert all(p["resolvedBy"]["by"] == "resolve" for p in seen[0])
    code, then = cli("work", "status", "--as-of", before, "--root", str(a))
    assert code == EXIT_INTEGRITY and [p["id"] for p in then["problemDetails"]] == [added["id"], reused["id"]]


class _Counted:
    """Event files read back from disk (FileEventLog.read_files), by name."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from events.filelog import FileEventLog

        self.names: list[str] = []
        real = FileEventLog.read_files

        def counted(log: FileEventLog, day: str, wanted: list[str], **kw: Any) -> Any:
            for name, raw in real(log, day, wanted, **kw):
                self.names.append(name)
                yield name, raw

        monkeypatch.setattr(FileEventLog, "read_files", counted)


@pytest.mark.parametrize("case", ["all held", "some held", "a fold fails", "worker", "the worker stops"])
def test_clone_store_folding_batch_by_batch_writes_what_a_rebuild_writes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """clone-store folds the read models a restored batch at a time, from the bytes it just wrote: the first
    batch here, the rest in a worker process. Three clones use every feature over four days, then a fourth
    restores the history one day per batch: its derived files equal those of a clone that rebuilt from
    nothing. Events kept in memory are never read back; past the memory budget they are; a fold that fails
    mid-way, or a worker that stops, leaves the clone-store to rebuild from the files, with the same result."""
    import subprocess
    import sys

    import continuity.readside.writers as writers_module
    import continuity.sync.clone as clone_module
    import continuity.sync.engine as engine
    import tests.integration.test_converge as this

    world = World(tmp_path)
    clones = Clones(world, monkeypatch)
    # The clocks start in the past and days pass up to today: a later day would be stamped early for the worker
    # process, which reads the real clock (names.last_day).
    ahead = sum(number // 10 for number in range(len(EVERY_FEATURE))) + 1
    monkeypatch.setattr(this, "SKEWS", tuple(skew - ahead * 86400 for skew in SKEWS))
    clones.step("a", "role", 0, "")
    for number, step in enumerate(EVERY_FEATURE):  # a day passes every ten steps
        monkeypatch.setattr(this, "SKEWS", tuple(skew + number // 10 * 86400 for skew in SKEWS))
        clones.step(*step)
    for clone in ("a", "b", "c", "a"):
        clones.step(clone, "sync", 0, "")
    days = {path.parent.name for path in (clones.roots["a"] / STORE / "events").glob("*/*.json")}
    assert len(days) >= 3, days  # several batches below
    assert clones.run("a", "rebuild")[0] == 0
    expected = clones.derived("a")

    monkeypatch.setattr(engine, "RESTORE_BATCH", 1)  # a batch per day
    monkeypatch.setattr(clone_module.Folding, "keep", 3000 if case == "some held" else 10**9)
    if case not in ("worker", "the worker stops"):
        monkeypatch.setattr(clone_module.Folding, "here", 10**6)  # every batch in this process
    if case == "the worker stops":
        monkeypatch.setattr(clone_module, "_start_worker", lambda store: subprocess.Popen(
            [sys.executable, "-c", "import sys; sys.stdin.buffer.read(8); sys.exit(3)"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE))
    folds: list[bool] = []  # per refresh in this process: was it handed held bytes
    real = writers_module.refresh

    def refresh(*args: Any, **kw: Any) -> Any:
        folds.append(kw.get("held") is not None)
        if case == "a fold fails" and folds == [True, True]:
            raise OSError(5, "Input/output error")
        return real(*args, **kw)

    monkeypatch.setattr(writers_module, "refresh", refresh)
    fresh = world.clone("d", init=False)
    read = _Counted(monkeypatch)
    code, out = cli("clone-store", "origin", "--root", str(fresh))
    assert code == 0, out
    assert out["events"] == len(event_names(clones.roots["a"])) == len(event_names(fresh))
    clones.roots["d"] = fresh
    got = clones.derived("d")
    assert got.keys() == expected.keys()
    assert {k for k in got if got[k] != expected[k]} == set()
    if case == "all held":
        assert folds == [True] * len(days) + [False] and read.names == []
    elif case == "some held":
        assert folds == [True] * len(days) + [False] and 0 < len(read.names) < out["events"]
    elif case == "worker":  # the first day here, the others in the worker, which answered for all it folded
        assert folds == [True, False] and read.names == []
    else:  # the batches after the failure are not folded; the rebuild reads every event from its file
        assert folds == ([True, True, False] if case == "a fold fails" else [True, False])
        assert sorted(read.names) == sorted(event_names(fresh))
        failed = "OSError: [Errno 5] Input/output error" if case == "a fold fails" else "the fold worker stopped"
        assert out["warnings"][0] == ("the read models were rebuilt from the files after the restore: folding "
                                      f"them as the events landed failed ({failed})")
    code, report = cli("verify", "--root", str(fresh))  # exit 1 if the plan left workstream problems: as on a
    assert report["first_problem"] is None and code == cli("verify", "--root", str(clones.roots["a"]))[0]
