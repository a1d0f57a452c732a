"""`continuity work ...` in-process: each refusal (message, exit code, nothing written), bad input, the files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from continuity.core.errors import EXIT_INVARIANT, EXIT_NOT_FOUND, EXIT_SECRET, EXIT_USAGE
from tests.helpers import all_event_files
from tests.workstream_docs import edited, item, ledger_entry, legacy, snapshot, tracked

DOC = Path(".ai-bridge/context-checkpoint.json")


def write_doc(root: Path, doc: Any, name: str = str(DOC)) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(doc if isinstance(doc, bytes) else json.dumps(doc).encode())
    return path


def checkpoint(root: Path, doc: Any, *args: str) -> int:
    write_doc(root, doc)
    return main(["work", "checkpoint", *args])


def last_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert err, "no error line"
    assert err[-1].startswith("continuity: error: ")
    return err[-1].removeprefix("continuity: error: ")


def refuse(root: Path, capsys: pytest.CaptureFixture[str], doc: Any, code: int = EXIT_INVARIANT) -> str:
    """Check a refusal: the exit code, nothing written, the document kept; returns the message."""
    before = all_event_files(root)
    capsys.readouterr()
    assert checkpoint(root, doc) == code
    assert all_event_files(root) == before
    assert (root / DOC).exists(), "a refused document must stay for fixing"
    return last_error(capsys)


@pytest.fixture
def started(project: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A project whose active workstream WS-1 has A1 (IN_PROGRESS) and A2 (PENDING, after A1)."""
    assert checkpoint(project, tracked()) == 0
    capsys.readouterr()
    return project


def test_checkpoint_records_removes_the_file_and_writes_the_documents(project: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Success: events written, input removed, active/<id>.json and the runtime files in seed 002's shape."""
    assert checkpoint(project, tracked(), "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["events"] == ["workstream.started", "work_item.added", "context.checkpointed"]
    assert not (project / DOC).exists() and out["removed"] == str(project / DOC)
    store = project / ".agent/runtime-continuity"
    ws = json.loads((store / "workstreams/active/WS-1.json").read_text())
    assert ws["id"] == "WS-1" and [i["id"] for i in ws["items"]] == ["A1", "A2"]
    assert ws["items"][1]["dependsOn"] == ["A1"] and ws["cursor"]["nextAction"] == "write the failing test"
    runtime = json.loads((project / ".ai-bridge/context-runtime.json").read_text())
    assert runtime["activeWorkstream"]["id"] == "WS-1" and runtime["cursor"]["nextAction"] == "write the failing test"
    assert [i["id"] for i in runtime["unresolvedItems"]] == ["A1", "A2"]
    md = (project / ".ai-bridge/context-runtime.md").read_text()
    assert "## Active workstream WS-1 [IN_PROGRESS]" in md and "- [PENDING] A2 (MEDIUM): Item A2; depends on A1" in md


def test_refusal_losing_items(started: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`Checkpoint would lose existing work items: <ids>`."""
    message = refuse(started, capsys, edited(tracked(), items=[item("A1", "IN_PROGRESS")]))
    assert message == "Checkpoint would lose existing work items: A2"


def test_refusal_legacy_v1(started: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`Legacy schemaVersion 1 checkpoint would lose an active tracked workstream ...`."""
    assert refuse(started, capsys, legacy()).startswith(
        "Legacy schemaVersion 1 checkpoint would lose an active tracked workstream WS-1")


def test_refusal_snapshot(started: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`Snapshot checkpoint would lose an active tracked workstream ...`."""
    assert refuse(started, capsys, snapshot()).startswith(
        "Snapshot checkpoint would lose an active tracked workstream WS-1")


def test_refusal_dependency_cycle(started: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`... contains a dependency cycle at <id>`."""
    doc = edited(tracked(), items=[item("A1", "IN_PROGRESS", dependsOn=["A2"]), item("A2", dependsOn=["A1"])])
    assert refuse(started, capsys, doc) == "Workstream WS-1 contains a dependency cycle at A1"


def test_refusal_duplicate_validation_ids(started: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`Validation ledger entry ids are immutable and already exist: <ids>`."""
    assert checkpoint(started, tracked(ledger=[ledger_entry("V1")])) == 0
    message = refuse(started, capsys, tracked(ledger=[ledger_entry("V1", "FAIL")]))
    assert message == "Validation ledger entry ids are immutable and already exist: V1"


def test_refusal_invalid_transition_and_reopening(started: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A terminal item reopened by a document; a workstream going backwards."""
    assert checkpoint(started, edited(tracked(), items=[item("A1", "COMPLETED"), item("A2", dependsOn=["A1"])])) == 0
    message = refuse(started, capsys, edited(tracked(), items=[item("A1", "PENDING"), item("A2", dependsOn=["A1"])]))
    assert message.startswith("Work item A1 of workstream WS-1 is COMPLETED: reopening terminal work needs an "
                              "explicit reopen")
    message = refuse(started, capsys, edited(tracked(), status="PROPOSED",
                                             items=[item("A1", "COMPLETED"), item("A2", dependsOn=["A1"])]))
    assert message == "Invalid workstream status transition for WS-1: IN_PROGRESS -> PROPOSED"


def test_refusal_blocked_without_blocker(started: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A BLOCKED item whose blockedBy names nothing valid."""
    doc = edited(tracked(), items=[item("A1", "BLOCKED"), item("A2", dependsOn=["A1"])])
    assert refuse(started, capsys, doc).startswith("Work item A1 is BLOCKED without a valid blocker (blockedBy: none)")


def test_refusal_switching_the_active_workstream(started: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A different workstream id while WS-1 is unresolved."""
    assert refuse(started, capsys, tracked("WS-2")).startswith(
        "Active workstream WS-1 is IN_PROGRESS: terminate it")


@pytest.mark.parametrize(("doc", "expected"), [
    (tracked(extra=1), "Object contains unknown field `extra`"),
    (edited(tracked(), items=[item("A1", bogus=True)]), "unknown field `bogus`"),
    ({**tracked(), "status": "DONE"}, "Invalid enum value 'DONE' - at `$.status`"),
    (edited(tracked(), items=[item("A1", "DONE")]), "Invalid enum value 'DONE'"),
    (edited(tracked(), items=[item("A1", priority="URGENT")]), "Invalid enum value 'URGENT'"),
    (edited(tracked(), id="W" * 129), "…' is too long: at most 128 characters"),
    (edited(tracked(), id="../etc"), "continuity.workstream.id '../etc' is not a valid id: letters, digits and ._-"),
    (edited(tracked(), items=[item("A1\x00")]),
     "continuity.workstream.items[0].id 'A1\\u0000' is not a valid id"),
    (edited(tracked(), id="WS-1\n"), "continuity.workstream.id 'WS-1\\u000a' is not a valid id: letters, digits "
                                     "and ._-, starting with a letter or digit"),
    (edited(tracked(), items=[item("A1"), item("A2", dependsOn=["A1\n"])]),
     "continuity.workstream.items[1].dependsOn[0] 'A1\\u000a' is not a valid id"),
    (tracked(schemaVersion=3), "Invalid value 3 - at `$.schemaVersion`"),
    (tracked(nextAction=""), "nextAction must not be empty"),
    (edited(tracked(), title="Auth\x07fixes"),
     "continuity.workstream.title holds a control character (U+0007 at character 5); it is one line of text"),
    (tracked(next_action="next\x1bstep"), "nextAction holds a control character (U+001B at character 5)"),
    (edited(tracked(), items=[item("A1", title="It\x00em")]),
     "continuity.workstream.items[0].title holds a control character (U+0000 at character 3)"),
    (json.dumps(tracked()).replace('"schemaVersion": 2', '"schemaVersion": 2, "schemaVersion": 2').encode(),
     "an object gives the key 'schemaVersion' twice (keep one)"),
    (json.dumps(edited(tracked(), items=[item("A1")])).replace('"items": [', '"items": [], "items": [').encode(),
     "an object gives the key 'items' twice"),
    (tracked(decisions=["same", "same"]), "decisions lists 'same' twice"),
    (edited(tracked(), items=[item("A1"), item("A1")]), "workstream.items ids lists 'A1' twice"),
    ({k: v for k, v in tracked().items() if k != "continuity"}, "missing required field `continuity`"),
    (b"{not json", "not valid JSON"),
    (b"\xff\xfe", "not valid JSON"),
    (b"[]", "Expected `object`, got `array`"),
])
def test_bad_input_is_refused_with_nothing_written(project: Path, capsys: pytest.CaptureFixture[str], doc: Any,
                                                   expected: str) -> None:
    """Unknown keys, wrong enums, a 129-character id, hostile ids (a trailing newline too), bad versions or JSON."""
    message = refuse(project, capsys, doc, EXIT_USAGE)
    assert message.startswith("invalid checkpoint document") and expected in message, message


def test_a_ten_megabyte_objective_is_refused(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 10 MB field makes the document too large: refused before it is parsed."""
    message = refuse(project, capsys, tracked(objective="x" * 10_000_000), EXIT_USAGE)
    assert "more than the 4194304 allowed" in message


def test_a_large_objective_under_the_file_limit_is_refused_by_its_field(project: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A 1 MB objective: the field's own limit."""
    message = refuse(project, capsys, tracked(objective="x" * 1_000_000), EXIT_USAGE)
    assert "objective 'xxx" in message and message.endswith("…' is too long: at most 16384 characters")


def test_a_missing_file_and_a_folder(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No document: one line, exit 2, nothing written; a folder in its place likewise."""
    before = all_event_files(project)
    assert main(["work", "checkpoint"]) == EXIT_USAGE
    assert last_error(capsys).startswith("checkpoint document not found: ")
    (project / "dir.json").mkdir()
    assert main(["work", "checkpoint", "--file", "dir.json"]) == EXIT_USAGE
    assert "not a regular file" in last_error(capsys)
    assert all_event_files(project) == before


def test_a_secret_in_the_document_is_refused_or_redacted(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The secret guard covers every field of the events a document becomes; --redact stores the marker."""
    token = "ghp_" + "a1B2c3D4e5" * 4
    message = refuse(project, capsys, tracked(decisions=[f"use {token}"]), EXIT_SECRET)
    assert token not in message and "looks like a secret" in message
    assert checkpoint(project, tracked(decisions=[f"use {token}"]), "--redact") == 0
    assert token not in "".join(path.read_text() for path in all_event_files(project))


@pytest.mark.parametrize("before", [180, 190, 199, 280, 295])
def test_a_text_cut_for_a_message_keeps_no_part_of_a_token(project: Path, before: int) -> None:
    """With --redact, a next action or a decision holding a token near the message's cut (200 and 300 characters)
    left the token's first characters in the message (`next <180 characters> ghp_WSNEXT...`): too few for its rule,
    so stored. The cut now falls before the token."""
    token = "ghp_" + "Zq7Wm3Xk9P" * 4
    text = "x" * before + " " + token
    assert checkpoint(project, tracked(next_action=text, decisions=[text]), "--redact") == 0
    stored = "".join(path.read_text() for path in all_event_files(project))
    assert "ghp_" not in stored and "Zq7Wm3" not in stored


def test_file_flag_and_keep(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--file reads another path; --keep leaves it."""
    path = write_doc(project, tracked(), "elsewhere/doc.json")
    assert main(["work", "checkpoint", "--file", str(path), "--keep"]) == 0
    assert path.exists()


def test_granular_commands(started: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """item add, set (and refused reopen), show, cursor set; each refusal writes nothing."""
    assert main(["work", "item", "add", "A3", "--title", "Docs", "--depends-on", "A2", "--scope", "docs/"]) == 0
    assert main(["work", "item", "set", "A1", "--status", "COMPLETED"]) == 0
    before = all_event_files(started)
    capsys.readouterr()
    assert main(["work", "item", "set", "A1", "--status", "PENDING"]) == EXIT_INVARIANT
    assert "reopening terminal work needs an explicit reopen" in last_error(capsys)
    assert main(["work", "item", "add", "A4", "--title", "x", "--status", "BLOCKED"]) == EXIT_INVARIANT
    assert main(["work", "item", "set", "A2", "--depends-on", "A3"]) == EXIT_INVARIANT
    assert "dependency cycle" in last_error(capsys)
    assert main(["work", "cursor", "set", "--current-item", "ghost"]) == EXIT_INVARIANT
    assert main(["work", "item", "set", "ghost", "--status", "COMPLETED"]) == EXIT_NOT_FOUND
    assert main(["work", "item", "add", "../x", "--title", "x"]) == EXIT_USAGE
    # a reopen to the status it has (terminal, or not terminal at all) was recorded as a reopen of nothing
    assert main(["work", "item", "set", "A1", "--status", "COMPLETED", "--reopen"]) == EXIT_INVARIANT
    assert "a reopen needs an unresolved status" in last_error(capsys)
    assert main(["work", "item", "set", "A2", "--status", "PENDING", "--reopen"]) == EXIT_INVARIANT
    assert "PENDING, not terminal: nothing to reopen" in last_error(capsys)
    assert all_event_files(started) == before
    assert main(["work", "item", "set", "A1", "--status", "PENDING", "--reopen"]) == 0
    assert main(["work", "cursor", "set", "--current-item", "A3", "--next-action", "write docs"]) == 0
    capsys.readouterr()
    assert main(["work", "item", "show", "A3", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["item"]
    assert shown["dependsOn"] == ["A2"] and shown["scope"] == ["docs/"] and shown["workstreamId"] == "WS-1"
    runtime = json.loads((started / ".ai-bridge/context-runtime.json").read_text())
    assert runtime["cursor"]["currentItemId"] == "A3" and runtime["cursor"]["nextAction"] == "write docs"


def test_granular_commands_without_an_active_workstream(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No workstream yet: not found (exit 7), one line."""
    assert main(["work", "item", "add", "A1", "--title", "x"]) == EXIT_NOT_FOUND
    assert last_error(capsys).startswith("no active workstream")


def test_status_text_and_json(started: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """status prints the resume contract; healthy is exit 0."""
    assert main(["work", "status", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] and data["activeWorkstream"]["unresolved"] == 2 and data["problems"] == []
    assert main(["work", "status"]) == 0
    assert "## Cursor" in capsys.readouterr().out


def test_a_project_reached_through_the_users_own_link_gets_its_runtime_files(
        tmp_path: Path, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--root` through a symlink of the user's (not one planted inside the project) is not an unsafe store."""
    link = tmp_path / "link"
    link.symlink_to(project)
    write_doc(project, tracked())
    assert main(["work", "checkpoint", "--root", str(link)]) == 0
    assert "not written" not in capsys.readouterr().err
    runtime = json.loads((project / ".ai-bridge/context-runtime.json").read_text())
    assert runtime["activeWorkstream"]["id"] == "WS-1"


def test_runtime_files_never_follow_a_planted_bridge_link(tmp_path: Path, project: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`.ai-bridge` linked out of the project: the checkpoint is recorded, nothing is written through the link."""
    outside = tmp_path / "outside"
    outside.mkdir()
    write_doc(project, tracked(), "doc.json")
    (project / ".ai-bridge").symlink_to(outside)
    assert main(["work", "checkpoint", "--file", "doc.json"]) == 0
    assert "is a symlink" in capsys.readouterr().err
    assert list(outside.iterdir()) == []


def test_the_default_document_is_never_read_or_removed_through_a_planted_bridge_link(
        tmp_path: Path, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`.ai-bridge` linked out of the project: `work checkpoint` without --file refuses (exit 6, nothing
    written) instead of recording the file out there and deleting it (a write outside the project)."""
    from continuity.core.errors import EXIT_UNSAFE_STORE

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "context-checkpoint.json").write_text(json.dumps(tracked()))
    (project / ".ai-bridge").symlink_to(outside)
    before = all_event_files(project)
    assert main(["work", "checkpoint"]) == EXIT_UNSAFE_STORE
    assert "is a symlink" in last_error(capsys)
    assert all_event_files(project) == before
    assert (outside / "context-checkpoint.json").exists()
    assert main(["work", "checkpoint", "--file", str(outside / "context-checkpoint.json")]) == 0  # named: theirs


def test_the_default_document_is_never_read_or_removed_through_a_link_at_its_own_name(
        tmp_path: Path, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same with a real `.ai-bridge` folder and the document itself a link to a file outside: refused
    (exit 6, nothing written), the file out there neither recorded nor removed."""
    from continuity.core.errors import EXIT_UNSAFE_STORE

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "doc.json").write_text(json.dumps(tracked()))
    (project / ".ai-bridge").mkdir(exist_ok=True)
    (project / ".ai-bridge" / "context-checkpoint.json").symlink_to(outside / "doc.json")
    before = all_event_files(project)
    assert main(["work", "checkpoint"]) == EXIT_UNSAFE_STORE
    assert "is a symlink" in last_error(capsys)
    assert all_event_files(project) == before
    assert (outside / "doc.json").exists() and (project / ".ai-bridge" / "context-checkpoint.json").is_symlink()


@pytest.mark.parametrize("argv", [
    ["work", "item", "add", "Z3", "--title", "x", "--note", "a", "--note", "a"],
    ["work", "item", "add", "Z3", "--title", "x", "--scope", "s", "--scope", "s"],
    ["work", "item", "set", "A2", "--depends-on", "A1", "--depends-on", "A1"],
    ["work", "item", "set", "A2", "--accept", "x", "--accept", "x"],
])
def test_item_commands_refuse_a_list_naming_an_entry_twice(started: Path, argv: list[str],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The contract's lists hold unique entries: the granular commands refuse what the document path refuses
    (exit 2, nothing written), so a projected workstream always goes back in as a document."""
    before = all_event_files(started)
    capsys.readouterr()
    assert main(argv) == EXIT_USAGE
    assert "twice" in last_error(capsys)
    assert all_event_files(started) == before


def test_item_set_clears_a_list_with_one_empty_value(started: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`work item set A2 --depends-on ""` empties A2's dependencies (the flag replaces the list); "" with other
    values is refused (exit 2, nothing written); `item add` takes no empty entry."""
    def item_of(item_id: str) -> dict[str, Any]:
        capsys.readouterr()
        assert main(["--json", "work", "item", "show", item_id]) == 0
        shown: dict[str, Any] = json.loads(capsys.readouterr().out)
        return shown.get("item", shown)

    assert item_of("A2")["dependsOn"] == ["A1"]
    assert main(["work", "item", "set", "A2", "--depends-on", "", "--note", "n1"]) == 0
    assert item_of("A2")["dependsOn"] == [] and item_of("A2")["notes"] == ["n1"]
    assert main(["work", "item", "set", "A2", "--note", ""]) == 0
    assert item_of("A2")["notes"] == []
    before = all_event_files(started)
    for argv in (["work", "item", "set", "A2", "--depends-on", "", "--depends-on", "A1"],
                 ["work", "item", "add", "Z9", "--title", "z", "--scope", ""]):
        capsys.readouterr()
        assert main(argv) == EXIT_USAGE, argv
    assert all_event_files(started) == before


def test_work_resolve_refuses_with_one_line_and_writes_nothing(started: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`work resolve` with nothing open (exit 2), an unknown id (exit 7) or no reason (exit 2): one line, no event."""
    before = all_event_files(started)
    capsys.readouterr()
    assert main(["work", "resolve", "--all", "--reason", "tidy up"]) == EXIT_USAGE
    assert last_error(capsys) == "nothing to resolve: no open recorded problem"
    assert main(["work", "resolve", "P-0123456789ab", "--reason", "ghost"]) == EXIT_NOT_FOUND
    assert last_error(capsys).startswith("unknown problem 'P-0123456789ab'")
    assert main(["work", "resolve", "P-0123456789ab"]) == EXIT_USAGE
    assert "the following arguments are required: --reason" in last_error(capsys)
    assert all_event_files(started) == before


def test_a_document_rewritten_while_it_is_recorded_is_left_for_the_next_checkpoint(
        project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent writes its next document while `work checkpoint` records the last one: the file was removed
    anyway, so the new document's work was lost unread. Only the bytes that were recorded are removed."""
    from continuity.workstreams import service

    real_record = service.record
    newer = tracked(next_action="the next step, written meanwhile")

    def record_then_rewrite(*args: Any, **kwargs: Any) -> Any:
        stored = real_record(*args, **kwargs)
        write_doc(project, newer)  # the agent's next document lands before the recorded one is removed
        return stored

    monkeypatch.setattr(service, "record", record_then_rewrite)
    assert checkpoint(project, tracked()) == 0
    captured = capsys.readouterr()
    assert "changed meanwhile: it was left in place" in captured.err
    assert json.loads((project / DOC).read_text()) == newer
    monkeypatch.setattr(service, "record", real_record)
    assert main(["work", "checkpoint"]) == 0 and not (project / DOC).exists()


def test_evidence_listed_twice_is_refused_both_ways(started: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/workstreams.md: unique non-empty strings in every list; a ledger entry's evidenceRefs were not checked
    (`--evidence a --evidence a` stored ["a", "a"], and a document's ledger too)."""
    before = all_event_files(started)
    capsys.readouterr()
    assert main(["work", "validate", "--id", "V1", "--kind", "k", "--result", "PASS", "--scope", "s", "--summary",
                 "x", "--evidence", "log.txt", "--evidence", "log.txt"]) == EXIT_USAGE
    assert "evidenceRefs lists 'log.txt' twice" in last_error(capsys)
    write_doc(started, tracked(ledger=[ledger_entry("V2", evidenceRefs=["log.txt", "log.txt"])]))
    assert main(["work", "checkpoint"]) == EXIT_USAGE
    assert "validation ledger entry V2 evidenceRefs lists 'log.txt' twice" in last_error(capsys)
    assert all_event_files(started) == before


@pytest.mark.parametrize("argv", [["work", "item", "add", "Z2", "--title", "z", "--depends-on", ""],
                                  ["work", "item", "add", "Z2", "--title", "z", "--blocked-by", "x y"],
                                  ["work", "item", "set", "A2", "--depends-on", "x y"],
                                  ["work", "item", "set", "A2", "--blocked-by", "../A1"]])
def test_a_list_naming_no_item_id_is_bad_input_not_an_invariant(started: Path, capsys: pytest.CaptureFixture[str],
                                                                argv: list[str]) -> None:
    """`--depends-on "x y"` was refused as a dependency on an unknown item (exit 12); the document path calls the
    same id bad input (exit 2), and so do the granular commands now."""
    before = all_event_files(started)
    capsys.readouterr()
    assert main(argv) == EXIT_USAGE
    assert "which is no work item id" in last_error(capsys)
    assert all_event_files(started) == before


def test_long_evidence_lists_take_several_events_and_what_cannot_be_split_says_so(
        started: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """70 decisions of ~4,000 characters (within the document's limits) made one event over the size bound:
    "event too large" with nothing else said. They are recorded as several events now; open questions, which
    go in the checkpoint's own event, still cannot exceed one event, and the refusal says what to shorten."""
    decisions = [f"decision {n}: " + "d" * 3980 for n in range(70)]
    assert checkpoint(started, tracked(decisions=decisions)) == 0
    capsys.readouterr()
    assert main(["work", "status", "--json"]) == 0
    kinds = [json.loads(path.read_bytes())["kind"] for path in all_event_files(started)]
    assert kinds.count("decision.recorded") >= 2
    before = all_event_files(started)
    assert checkpoint(started, tracked(openQuestions=[f"q{n} " + "q" * 3990 for n in range(70)])) == EXIT_USAGE
    error = last_error(capsys)
    assert error.startswith("event too large")
    assert ": the checkpoint's openQuestions and validation notes must fit one event" in error
    assert all_event_files(started) == before
    # one item of 200 notes of 1,500 characters (each within its limit): the refusal names the item
    notes = [f"n{n} " + "n" * 1490 for n in range(200)]
    assert checkpoint(started, tracked(items=[item("A1", "IN_PROGRESS"), item("A2", notes=notes)])) == EXIT_USAGE
    error = last_error(capsys)
    assert ": work item A2 must fit one event" in error, error
    assert all_event_files(started) == before


def test_a_document_named_with_file_through_a_link_is_removed_as_a_link(
        project: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--file naming the user's own link: the link is removed once its document is recorded (as before), the
    file it points at is left, and nothing is left beside it."""
    real = tmp_path / "elsewhere.json"
    real.write_text(json.dumps(tracked()))
    link = project / "cp.json"
    link.symlink_to(real)
    assert main(["work", "checkpoint", "--file", str(link)]) == 0
    assert not os.path.lexists(link) and real.exists()
    assert sorted(path.name for path in project.iterdir() if path.name.startswith(".cp")) == []
