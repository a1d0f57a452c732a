"""The workstream MCP tools, called by name through the tool registry against a real store."""

from __future__ import annotations

from pathlib import Path

import pytest

from continuity.adapters.mcp import work_tools  # noqa: F401  (registers the tools)
from continuity.adapters.mcp.registry import TOOLS, call, input_schema
from continuity.core.errors import InvariantRefused, UsageError
from continuity.core.initialize import init_store
from tests.helpers import all_event_files
from tests.workstream_docs import edited, item, tracked


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    init_store(project, project="demo", language=None)
    return project


def test_checkpoint_item_cursor_validate_and_status(root: Path) -> None:
    """The tools call the same decisions as the CLI and answer with what they wrote."""
    done = call("work_checkpoint", {"document": tracked()}, root=str(root))
    assert done["events"] == ["workstream.started", "work_item.added", "context.checkpointed"]
    call("work_item_add", {"item": {"id": "A3", "title": "Docs", "depends_on": ["A2"]}}, root=str(root))
    call("work_item_update", {"item_id": "A1", "status": "COMPLETED"}, root=str(root))
    call("work_cursor_set", {"current_item_id": "A2", "next_action": "fix A2"}, root=str(root))
    validated = call("work_validate", {"validation_id": "V1", "kind": "tests", "result": "PASS", "scope": "all",
                                       "summary": "ok"}, root=str(root))
    assert validated["events"] == ["validation.recorded"]
    status = call("work_status", {}, root=str(root))
    assert status["ok"] and status["cursor"]["nextAction"] == "fix A2"
    assert [i["id"] for i in status["unresolvedItems"]] == ["A2", "A3"]
    assert status["validationFreshness"]["entries"] == {"V1": "UNBOUND"}  # not a git worktree


def test_refusals_write_nothing(root: Path) -> None:
    """An invariant refusal and a malformed document: errors, and no event written."""
    call("work_checkpoint", {"document": tracked()}, root=str(root))
    before = all_event_files(root)
    with pytest.raises(InvariantRefused, match="Checkpoint would lose existing work items: A2"):
        call("work_checkpoint", {"document": edited(tracked(), items=[item("A1", "IN_PROGRESS")])}, root=str(root))
    with pytest.raises(UsageError, match="unknown field `extra`"):
        call("work_checkpoint", {"document": tracked(extra=1)}, root=str(root))
    with pytest.raises(UsageError, match="twice"):
        call("work_checkpoint", {"document": tracked(decisions=["d", "d"])}, root=str(root))
    assert all_event_files(root) == before


def test_a_work_item_with_a_key_the_tool_does_not_take_is_refused(root: Path) -> None:
    """`dependsOn` (as a checkpoint document spells it) was dropped and the item added without its dependencies,
    while `depends_on` naming an unknown item is refused: an unknown key is refused now, nothing written."""
    call("work_checkpoint", {"document": tracked()}, root=str(root))
    before = all_event_files(root)
    for bad in ({"dependsOn": ["ZZ"]}, {"blockedBy": ["A1"]}, {"bogus": 1}):
        with pytest.raises(UsageError, match="unknown field"):
            call("work_item_add", {"item": {"id": "A7", "title": "Seven", **bad}}, root=str(root))
    assert all_event_files(root) == before
    item_schema = input_schema(TOOLS["work_item_add"].input)["$defs"]["ItemInput"]
    assert item_schema["additionalProperties"] is False and "depends_on" in item_schema["properties"]
    kind = input_schema(TOOLS["work_validate"].input)["properties"]["kind"]
    assert "unit-tests" in kind["description"] and "checkpoint.recorded" not in kind["description"]


def test_schemas_come_from_the_document_structs() -> None:
    """The checkpoint tool's schema is the document's: camelCase keys, the exact enums."""
    schema = input_schema(TOOLS["work_checkpoint"].input)
    defs = schema["$defs"]
    assert set(defs["CheckpointV2"]["required"]) >= {"schemaVersion", "nextAction", "continuity"}
    assert sorted(defs["DocItem"]["properties"]["status"]["enum"]) == sorted(
        ["PENDING", "IN_PROGRESS", "BLOCKED", "COMPLETED", "CANCELLED", "SUPERSEDED"])
    assert "acceptanceCriteria" in defs["DocItem"]["properties"]


def test_work_resolve_calls_the_same_decision_as_the_cli(root: Path) -> None:
    """`work_resolve` with nothing open, or an id no merge recorded, is refused as `continuity work resolve` is."""
    from continuity.core.errors import WorkNotFound

    call("work_checkpoint", {"document": tracked()}, root=str(root))
    with pytest.raises(UsageError, match="nothing to resolve"):
        call("work_resolve", {"all": True, "reason": "clean up"}, root=str(root))
    with pytest.raises(WorkNotFound, match="unknown problem 'P-000000000000'"):
        call("work_resolve", {"problem_ids": ["P-000000000000"], "reason": "ghost"}, root=str(root))
    assert "reason" in input_schema(TOOLS["work_resolve"].input)["required"]
