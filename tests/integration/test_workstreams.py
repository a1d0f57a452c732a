"""Workstreams through real processes: racing writers, rebuild identity, `--as-of` and replay."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from continuity.core.errors import EXIT_INVARIANT
from continuity.core.initialize import init_store
from tests.helpers import all_event_files, cli_process
from tests.injected import log_only_runtime
from tests.workstream_docs import edited, item, ledger_entry, tracked

STORE = ".agent/runtime-continuity"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A fresh project with a store for project `demo`."""
    project = tmp_path / "proj"
    project.mkdir()
    init_store(project, project="demo", language=None)
    return project


def write_doc(root: Path, doc: dict[str, Any], name: str = ".ai-bridge/context-checkpoint.json") -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def ok(root: Path, *args: str) -> str:
    done = cli_process(*args, cwd=root)
    assert done.returncode == 0, done.stderr
    return done.stdout


def together(root: Path, commands: list[list[str]]) -> list[subprocess.CompletedProcess[str]]:
    """Start every command as its own process at once; wait for all."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("CONTINUITY_")}
    procs = [subprocess.Popen([sys.executable, "-m", "continuity", *cmd], cwd=root, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for cmd in commands]
    results = []
    for proc, cmd in zip(procs, commands, strict=True):
        out, err = proc.communicate(timeout=60)
        results.append(subprocess.CompletedProcess(cmd, proc.returncode, out, err))
    return results


def test_racing_checkpoints_of_different_workstreams_one_wins(root: Path) -> None:
    """Four processes each start another workstream on an empty store: one wins, three are refused under the lock."""
    commands = []
    for n in range(4):
        path = write_doc(root, tracked(f"WS-{n}"), f"doc{n}.json")
        commands.append(["work", "checkpoint", "--file", str(path)])
    results = together(root, commands)
    codes = sorted(result.returncode for result in results)
    assert codes == [0, EXIT_INVARIANT, EXIT_INVARIANT, EXIT_INVARIANT], [r.stderr for r in results]
    for result in results:
        if result.returncode:
            assert "terminate it (COMPLETED, CANCELLED or SUPERSEDED) before switching" in result.stderr
    status = json.loads(ok(root, "work", "status", "--json"))
    assert status["problems"] == [] and status["activeWorkstream"]["id"].startswith("WS-")
    started = [path for path in all_event_files(root) if "workstream.started" in path.read_text()]
    assert len(started) == 1


def test_two_changes_valid_alone_but_a_cycle_together_cannot_both_pass(root: Path) -> None:
    """A1 -> A3 and A3 -> A2 (A2 already needs A1): each alone is fine; under the lock the second is refused."""
    write_doc(root, tracked(items=[item("A1"), item("A2", dependsOn=["A1"]), item("A3")]))
    ok(root, "work", "checkpoint")
    for _ in range(3):
        results = together(root, [["work", "item", "set", "A1", "--depends-on", "A3"],
                                  ["work", "item", "set", "A3", "--depends-on", "A2"]])
        codes = sorted(result.returncode for result in results)
        assert codes == [0, EXIT_INVARIANT], [r.stderr for r in results]
        assert "contains a dependency cycle at" in next(r.stderr for r in results if r.returncode)
        status = json.loads(ok(root, "work", "status", "--json"))
        assert status["problems"] == []
        # back to the start for the next round: a document revising the dependencies
        write_doc(root, tracked(items=[item("A1"), item("A2", dependsOn=["A1"]), item("A3")]))
        ok(root, "work", "checkpoint")


def derived(root: Path) -> dict[str, bytes]:
    """Every workstream file: the store's workstreams/ and the project's runtime files."""
    found = {}
    for base in (root / STORE / "workstreams", root / ".ai-bridge"):
        for path in sorted(base.rglob("*")):
            if path.is_file() and "context-checkpoint" not in path.name:
                found[str(path.relative_to(root))] = path.read_bytes()
    return log_only_runtime(found)


def build_history(root: Path) -> list[str]:
    """A workstream started, changed, completed and a second one started; returns each step's last event id."""
    marks = []
    steps = [
        tracked(ledger=[ledger_entry("V1")], decisions=["d1"]),
        edited(tracked(decisions=["d1", "d2"]), items=[item("A1", "COMPLETED"), item("A2", "IN_PROGRESS",
                                                                                    dependsOn=["A1"]), item("A3")]),
        edited(tracked(), status="COMPLETED", items=[item("A1", "COMPLETED"), item("A2", "COMPLETED"),
                                                     item("A3", "SUPERSEDED")]),
        tracked("WS-2", items=[item("B1", "IN_PROGRESS")], current="B1"),
    ]
    for doc in steps:
        write_doc(root, doc)
        out = json.loads(ok(root, "work", "checkpoint", "--json"))
        marks.append(out["event_ids"][-1])
    ok(root, "work", "item", "add", "B2", "--title", "second", "--depends-on", "B1")
    ok(root, "work", "cursor", "set", "--next-action", "finish B1")
    return marks


def test_rebuild_writes_the_same_bytes_as_incremental_catch_up(root: Path) -> None:
    """Files written step by step equal those a full rebuild writes after deleting every derived file."""
    build_history(root)
    incremental = derived(root)
    assert f"{STORE}/workstreams/archive/WS-1.json" in incremental
    assert f"{STORE}/workstreams/active/WS-2.json" in incremental
    assert f"{STORE}/workstreams/active/WS-1.json" not in incremental, "a terminal workstream moves to the archive"
    shutil.rmtree(root / STORE / "workstreams")
    shutil.rmtree(root / STORE / "local" / "models")
    for path in (root / ".ai-bridge").glob("context-runtime.*"):
        path.unlink()
    ok(root, "rebuild")
    assert derived(root) == incremental


def test_a_failed_move_to_the_archive_is_made_by_the_next_read_of_workstreams(root: Path) -> None:
    """A completed workstream whose archive/ cannot be made keeps its active/ file; `log` (which reads no
    workstreams) leaves it, and the session-start read (`resume-bundle`) moves it as a rebuild would (and so would
    `status`, which reads the workstreams model for its merge warnings)."""
    folder = root / STORE / "workstreams"
    write_doc(root, tracked())
    ok(root, "work", "checkpoint")
    (folder / "archive").write_text("in the way")
    write_doc(root, edited(tracked(), status="COMPLETED", items=[item("A1", "COMPLETED"), item("A2", "COMPLETED")]))
    done = cli_process("work", "checkpoint", cwd=root)
    assert done.returncode == 0 and "workstream documents not written" in done.stderr
    assert (folder / "active" / "WS-1.json").is_file()
    (folder / "archive").unlink()
    ok(root, "log", "-m", "between")
    assert (folder / "active" / "WS-1.json").is_file() and not (folder / "archive").exists()
    ok(root, "resume-bundle")
    moved = derived(root)
    assert f"{STORE}/workstreams/archive/WS-1.json" in moved and f"{STORE}/workstreams/active/WS-1.json" not in moved
    shutil.rmtree(folder)
    shutil.rmtree(root / STORE / "local" / "models")
    ok(root, "rebuild")
    assert derived(root) == moved


def test_as_of_and_replay_show_the_past(root: Path) -> None:
    """status --as-of each step's event, and replay --until, show the workstream as it stood then."""
    marks = build_history(root)
    first = json.loads(ok(root, "work", "status", "--json", "--as-of", marks[0]))
    assert first["activeWorkstream"]["id"] == "WS-1" and [i["id"] for i in first["unresolvedItems"]] == ["A1", "A2"]
    assert [v["id"] for v in first["validationLedger"]] == ["V1"] and first["decisions"] == ["d1"]
    third = json.loads(ok(root, "work", "status", "--json", "--as-of", marks[2]))
    assert third["activeWorkstream"] is None and third["archivedWorkstreams"] == ["WS-1"]
    now = json.loads(ok(root, "work", "status", "--json"))
    assert now["cursor"]["nextAction"] == "finish B1" and [i["id"] for i in now["unresolvedItems"]] == ["B1", "B2"]
    shown = json.loads(ok(root, "work", "item", "show", "A2", "--workstream", "WS-1", "--json",
                          "--as-of", marks[1]))
    assert shown["item"]["status"] == "IN_PROGRESS"
    out = root.parent / "replayed"
    ok(root, "replay", "--until", marks[1], "--out", str(out))
    replayed = json.loads((out / "workstreams/active/WS-1.json").read_text())
    assert [i["status"] for i in replayed["items"]] == ["COMPLETED", "IN_PROGRESS", "PENDING"]
    assert json.loads((out / ".ai-bridge/context-runtime.json").read_text())["activeWorkstream"]["id"] == "WS-1"


def test_a_merge_that_breaks_an_invariant_is_reported_not_resolved(root: Path, tmp_path: Path) -> None:
    """Two clones start different workstreams offline; after the union, status names both and exits 1."""
    write_doc(root, tracked("WS-A"))
    ok(root, "work", "checkpoint")
    other = tmp_path / "other"
    shutil.copytree(root, other)
    shutil.rmtree(other / STORE / "local")
    write_doc(other, tracked("WS-B"))
    # the copy has WS-A too: finish it there, then start WS-B, as a second machine would
    write_doc(other, edited(tracked("WS-A"), status="CANCELLED", items=[item("A1", "CANCELLED"),
                                                                      item("A2", "CANCELLED")]))
    ok(other, "work", "checkpoint")
    write_doc(other, tracked("WS-B"))
    ok(other, "work", "checkpoint")
    write_doc(root, edited(tracked("WS-A"), items=[item("A1", "COMPLETED"), item("A2", dependsOn=["A1"])]))
    ok(root, "work", "checkpoint")
    for path in all_event_files(other):  # the union sync makes: every file of both clones
        target = root / path.relative_to(other)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    done = cli_process("work", "status", "--json", cwd=root)
    assert done.returncode == 1, done.stderr
    problems = json.loads(done.stdout)["problems"]
    assert any("A1 of WS-A: IN_PROGRESS -> CANCELLED recorded while it was COMPLETED" in p or
               "A1 of WS-A: IN_PROGRESS -> COMPLETED recorded while it was CANCELLED" in p for p in problems), problems



@pytest.mark.parametrize("extra", [{}, {"decisions": ["keep going"]}])
def test_a_document_that_restates_a_cycle_a_merge_left_is_refused(root: Path, tmp_path: Path,
                                                                   extra: dict[str, Any]) -> None:
    """Two clones each add one dependency (each valid alone); their union is a cycle, which status reports. A
    checkpoint document stating the workstream exactly as it now is, cycle included (alone or with new evidence),
    was accepted: the whole-document check ran only over what the document changed. Refused, nothing written."""
    items = [item("A1", "IN_PROGRESS"), item("A2"), item("A3")]
    write_doc(root, tracked("WS-A", items))
    ok(root, "work", "checkpoint")
    other = tmp_path / "other"
    shutil.copytree(root, other)
    shutil.rmtree(other / STORE / "local")
    ok(root, "work", "item", "set", "A1", "--depends-on", "A2")
    ok(other, "work", "item", "set", "A2", "--depends-on", "A1")
    for path in all_event_files(other):  # the union sync makes
        target = root / path.relative_to(other)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    status = cli_process("work", "status", "--json", cwd=root)
    assert status.returncode == 1 and any("cycle" in p for p in json.loads(status.stdout)["problems"]), status.stdout
    before = all_event_files(root)
    cycle = [item("A1", "IN_PROGRESS", dependsOn=["A2"]), item("A2", dependsOn=["A1"]), item("A3")]
    document = write_doc(root, {**tracked("WS-A", cycle), **extra})
    done = cli_process("work", "checkpoint", cwd=root)
    assert done.returncode == EXIT_INVARIANT, done.stderr
    assert "Workstream WS-A contains a dependency cycle at A" in done.stderr
    assert all_event_files(root) == before and document.exists()
    write_doc(root, tracked("WS-A", [item("A1", "IN_PROGRESS", dependsOn=["A2"]), item("A2"), item("A3")]))
    ok(root, "work", "checkpoint")  # a document that breaks the cycle is what resolves it
    assert json.loads(ok(root, "work", "status", "--json"))["problems"] == []


def test_a_big_workstream_leaves_room_for_the_blockers_and_says_how_much_is_unresolved(root: Path) -> None:
    """Items of 490-character titles and long dependency lists filled the brief before its blockers and in
    progress (the workstream section came first), and the `... N more unresolved` line was the first cut. The
    blockers come first now; titles and id lists are cut as task titles are; the heading counts what is open."""
    deps = [f"D{n:02d}" for n in range(30)]
    items = [item(f"D{n:02d}", "COMPLETED") for n in range(30)] + [
        item(f"I{n:03d}", title=f"item {n} " + "x" * 480, dependsOn=deps) for n in range(200)]
    write_doc(root, tracked(items=items, next_action="start I000"))
    ok(root, "work", "checkpoint")
    ok(root, "checkpoint", "-m", "x", "--blocker", "CI is red: do not merge", "--in-progress", "fixing CI")
    brief = ok(root, "resume-bundle")
    assert len(brief) <= 8000 and "CI is red: do not merge" in brief and "fixing CI" in brief
    assert "## Workstream WS-1 [IN_PROGRESS]: Auth fixes (200 unresolved)" in brief.splitlines()
    line = next(line for line in brief.splitlines() if line.startswith("- [PENDING] I000 "))
    assert len(line) < 250 and line.endswith("; depends on D00, D01, D02, D03, D04 (+25 more)"), line


def test_the_resume_bundle_shows_the_cursor_and_unresolved_items_inside_its_budget(root: Path) -> None:
    """The cursor's next action leads; unresolved items follow in order, at most 20, and the brief keeps its budget."""
    items = [item(f"I{n:02d}", "COMPLETED" if n < 5 else "PENDING") for n in range(40)]
    write_doc(root, tracked(items=items, current="I05", next_action="start I05"))
    ok(root, "work", "checkpoint")
    brief = ok(root, "resume-bundle", "--max-chars", "2500")
    assert len(brief) <= 2500
    lines = brief.splitlines()
    assert lines[lines.index("## Next action") + 1] == "start I05"
    assert "## Workstream WS-1 [IN_PROGRESS]: Auth fixes (35 unresolved)" in lines
    shown = [line for line in lines if line.startswith("- [PENDING] I")]
    assert shown and shown[0] == "- [PENDING] I05 (MEDIUM): Item I05" and "- [COMPLETED]" not in brief
    full = json.loads(ok(root, "resume-bundle", "--format", "json"))["workstream"]
    assert full["unresolved_total"] == 35 and len(full["unresolved"]) == 20
    assert "- ... 15 more unresolved: `continuity work status`" in ok(root, "resume-bundle")


def test_with_a_cursor_leading_every_next_step_of_the_work_log_is_listed(root: Path) -> None:
    """The cursor's next action leads the brief; the Markdown listed the work log's steps from its second on (the
    first was taken for the next action above), so the newest checkpoint's first `--next` was in no part of the
    brief but its JSON."""
    write_doc(root, tracked(items=[item("S1", "IN_PROGRESS")], current="S1", next_action="write search index"))
    ok(root, "work", "checkpoint")
    ok(root, "checkpoint", "-m", "payment stub wired", "--next", "add checkout e2e test", "--next", "update docs")
    lines = ok(root, "resume-bundle").splitlines()
    assert lines[lines.index("## Next action") + 1] == "write search index"
    at = lines.index("## Next steps")
    assert lines[at + 1:at + 3] == ["- add checkout e2e test", "- update docs"]
    assert json.loads(ok(root, "resume-bundle", "--format", "json"))["work"]["next"] == [
        "add checkout e2e test", "update docs"]
    ok(root, "checkpoint", "-m", "search index written", "--next", "add checkout e2e test")  # no cursor change:
    lines = ok(root, "resume-bundle").splitlines()  # the step is still listed once, under Next steps
    assert lines.count("- add checkout e2e test") == 1


@pytest.mark.parametrize(("failing", "said"), [
    ("replayed/.projects.json", "replay not written: No space left on device ({out}/projects.json)"),
    ("replayed/workstreams/", "replay failed: workstream documents not written: No space left on device"),
])
def test_a_replay_that_cannot_write_its_files_fails_and_leaves_none(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     failing: str, said: str) -> None:
    """A full disk under `replay --out` was called a failure of stdout ("output not written ...; what the command
    wrote to the store stays written"), and one under the workstream documents only a warning, exit 0, with the
    folder half written. Either fails the replay now (exit 5, the file named) and leaves none of its files."""
    import errno

    from tests.injected import SyscallFaults, path_contains, run

    marks = build_history(root)
    out = root.parent / "replayed"
    monkeypatch.chdir(root)
    code, _, err = run(["replay", "--until", marks[1], "--out", str(out)],
                       SyscallFaults(errno.ENOSPC, match=path_contains(failing)))
    assert code == 5 and said.format(out=out) in err and err.strip().endswith(f"nothing of it is left in {out}"), err
    assert "output not written" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()  # the folder it made (and its mark) went too: nothing of it is left
    out.mkdir()  # a folder given empty stays, empty
    code, _, err = run(["replay", "--until", marks[1], "--out", str(out)],
                       SyscallFaults(errno.ENOSPC, match=path_contains(failing)))
    assert code == 5 and list(out.iterdir()) == [], err
    assert run(["replay", "--until", marks[1], "--out", str(out)])[0] == 0  # the next one, with room, is whole
    assert json.loads((out / "workstreams/active/WS-1.json").read_text())["items"]
    code, _, err = run(["replay", "--until", marks[1], "--out", str(out)],  # an earlier replay's folder keeps
                       SyscallFaults(errno.ENOSPC, match=path_contains(failing)))  # its mark, for the next one
    assert code == 5 and [path.name for path in out.iterdir()] == [".continuity-replay"], err


def test_the_first_brief_after_a_workstream_arrives_lists_the_runtime_files_it_wrote_as_dirty(
        root: Path, tmp_path: Path) -> None:
    """The brief starts `git status` before it catches up; the catch-up that first folds a teammate's workstream
    writes `.ai-bridge/context-runtime.*` into the work tree, so that brief's git facts left them out and the next
    brief, with no event between, listed them. git is asked again once this process has written there."""
    for args in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "t"]):
        subprocess.run(["git", "-C", str(root), *args], check=True)
    (root / ".gitignore").write_text(".agent/\n")
    subprocess.run(["git", "-C", str(root), "add", ".gitignore"], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "start"], check=True)
    other = tmp_path / "teammate"
    other.mkdir()
    init_store(other, project="demo", language=None)
    write_doc(other, tracked(items=[item("A1", "IN_PROGRESS")], next_action="write the test"))
    ok(other, "work", "checkpoint")
    for path in all_event_files(other):  # as a union of the two logs brings them
        target = root / STORE / "events" / path.parent.name / path.name
        target.parent.mkdir(exist_ok=True)
        shutil.copy2(path, target)
    briefs = [json.loads(ok(root, "resume-bundle", "--format", "json"))["git"] for _ in range(2)]
    assert (root / ".ai-bridge" / "context-runtime.json").is_file()
    assert ".ai-bridge/" in briefs[0]["dirty_files"], briefs[0]
    assert briefs[0]["dirty_files"] == briefs[1]["dirty_files"]


def test_a_rebuild_that_cannot_write_the_projects_ai_bridge_warns_and_succeeds(root: Path) -> None:
    """`.ai-bridge/` is the project's, not the store's (a read-only project root, a file in its place): like the
    Markdown copies in a home, what cannot be written there is a warning; `rebuild` still succeeds, exit 0, and
    every later command reads the saved model without rebuilding it."""
    import shutil

    from tests.helpers import cli_process

    build_history(root)
    shutil.rmtree(root / ".ai-bridge")
    (root / ".ai-bridge").write_text("x")
    done = cli_process("rebuild", cwd=root)
    assert done.returncode == 0 and done.stdout.startswith("rebuilt from"), done.stderr
    assert "workstream runtime files (.ai-bridge/) not written" in done.stderr
    assert (root / ".agent" / "runtime-continuity" / "workstreams" / "active" / "WS-2.json").is_file()
    later = cli_process("work", "status", cwd=root)
    assert "rebuilt" not in later.stderr, later.stderr


def test_a_writer_that_got_in_first_makes_the_decision_taken_again(root: Path) -> None:
    """Between a `work item set`'s decision and its append another process sets the item BLOCKED: under the lock the
    decision is taken again from the state with that write, and found changed, so it is decided once more from a
    fresh catch-up. The first decision was compared with itself (one list, refilled), so a stale `IN_PROGRESS ->
    PENDING` was appended over BLOCKED and `work status` reported a conflict in one clone, with no merge."""
    from continuity.core.identity import Identity
    from continuity.core.store import Store
    from continuity.workstreams import decide, service

    write_doc(root, tracked(items=[item("A1", "IN_PROGRESS"), item("A2")]))
    ok(root, "work", "checkpoint")
    who = Identity(project="demo", host="test")
    calls: list[str] = []

    def deciding(state: Any) -> list[Any]:
        if not calls:  # a real second process writes after the first decision, before the append
            ok(root, "work", "item", "set", "A1", "--status", "BLOCKED", "--blocked-by", "A2")
        calls.append(state.workstreams["WS-1"].items["A1"].status if state is not None else "?")
        return decide.decide_item_set(state, who, decide.ItemSet(item_id="A1", status="PENDING"))

    service.record(Store(str(root)), who, deciding)
    assert calls == ["IN_PROGRESS", "BLOCKED", "BLOCKED"]  # decided, again under the lock, then from the fresh state
    status = json.loads(ok(root, "work", "status", "--json"))
    assert status["problems"] == [], status["problems"]
    assert '"status": "PENDING"' in ok(root, "work", "item", "show", "A1", "--json").replace('":"', '": "')


def test_a_workstream_at_the_most_unresolved_items_takes_no_more(root: Path) -> None:
    """`work item add` had no cap: past 5,000 unresolved items (what a document may list; a document need not list
    finished ones) the workstream could no longer be checkpointed from a document. Finished items do not count."""
    from events.workstream import MAX_ITEMS

    write_doc(root, tracked(items=[item(f"A{n}", "COMPLETED" if n < 2 else "PENDING") for n in range(MAX_ITEMS)]))
    ok(root, "work", "checkpoint")
    ok(root, "work", "item", "add", "B1", "--title", "one more")  # 4,999 unresolved before it
    ok(root, "work", "item", "add", "B2", "--title", "and another")
    done = cli_process("work", "item", "add", "EXTRA", "--title", "one too many", cwd=root)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().endswith(f"holds {MAX_ITEMS} unresolved work items, the most a checkpoint document "
                                        f"can list ({MAX_ITEMS}); end some first; nothing written"), done.stderr
    assert "EXTRA" not in "".join(path.read_text() for path in all_event_files(root))


@pytest.mark.parametrize(("path", "field"), [
    (("continuity", "validationLedger"), "validation_ledger"),
    (("continuity", "workstream", "items"), "items"),
    (("continuity", "workstream", "cursor", "currentItemId"), "current_item_id"),
    (("continuity", "workstream", "cursor", "phase"), "phase"),
    (("continuity", "validationLedger", 0, "evidenceRefs"), "evidence_refs"),
])
def test_a_document_without_a_key_seed_002_requires_is_refused(root: Path, path: tuple[Any, ...],
                                                                field: str) -> None:
    """The cursor's four fields (each given, null or not), the items, the ledger and an entry's evidenceRefs are
    required: left out, they were taken as empty (an agent leaving out `currentItemId` cleared the cursor)."""
    doc = tracked(items=[item("A1", "IN_PROGRESS")], current="A1", ledger=[ledger_entry("V1")])
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    write_doc(root, doc)
    done = cli_process("work", "checkpoint", cwd=root)
    assert done.returncode == 2, done.stderr
    camel = path[-1]
    assert f"missing required field `{camel}`" in done.stderr, done.stderr
    assert all_event_files(root) == []


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-be"])
def test_a_document_windows_powershell_wrote_is_read(root: Path, encoding: str) -> None:
    """Windows PowerShell 5 writes a byte order mark (`Set-Content -Encoding UTF8`: UTF-8's; `>` and `Out-File`:
    UTF-16's), and seed 002's members run the context.ps1 launcher: such a document was "not valid JSON"."""
    doc = tracked(items=[item("A1", "IN_PROGRESS", title="Connexion réparée")], current="A1")
    path = root / ".ai-bridge" / "context-checkpoint.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, ensure_ascii=False)
    path.write_bytes(text.encode(encoding) if encoding != "utf-16-be" else b"\xfe\xff" + text.encode("utf-16-be"))
    ok(root, "work", "checkpoint")
    assert "Connexion réparée" in ok(root, "work", "item", "show", "A1")


def test_a_document_whose_utf16_is_broken_is_refused_in_one_line(root: Path) -> None:
    path = root / ".ai-bridge" / "context-checkpoint.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\xff\xfe" + json.dumps(tracked()).encode("utf-16-le")[:-1])  # a byte short
    done = cli_process("work", "checkpoint", cwd=root)
    assert done.returncode == 2 and "not valid UTF-16-LE text after its byte order mark" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and all_event_files(root) == []


def test_an_empty_path_is_refused_never_taken_for_the_default(root: Path) -> None:
    """`work checkpoint --file "$DOC"` with DOC unset recorded the default document and removed it, a file the
    command never named; `work export --out ""` wrote the default folder, `replay --out ""` the working folder. Each
    is refused (exit 2), as every other empty value is; nothing is written, the document stays."""
    document = write_doc(root, tracked(items=[item("A1")]))
    for args, said in ((["work", "checkpoint", "--file", ""], "--file is empty"),
                       (["work", "export", "--out", ""], "--out is empty"),
                       (["replay", "--until", "2020-01-01T00:00:00Z", "--out", ""], "--out is empty")):
        done = cli_process(*args, cwd=root)
        assert done.returncode == 2 and said in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert document.exists() and all_event_files(root) == [] and not (root / "state.json").exists()
    assert not (root / ".ai-bridge" / "context-transfer").exists()
