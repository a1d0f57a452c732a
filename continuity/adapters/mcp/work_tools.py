"""The seed-002 tools: `work_checkpoint`, `work_status`, `work_validate`, `work_item_add`, `work_item_update`,
`work_cursor_set`, `work_resolve`.

Inputs come from the same Structs as the CLI's: the checkpoint document's own Structs
(continuity/workstreams/document.py, camelCase), the item and cursor requests of
continuity/workstreams/decide.py; each tool calls the same decisions and service.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from continuity.adapters.mcp.registry import pick, tool, tool_input
from continuity.adapters.mcp.tools import WriteOptions, asked_project, identity
from continuity.core.store import Store, now_us
from continuity.workstreams.decide import CursorSet, ItemSet
from continuity.workstreams.document import Checkpoint
from events.workstream import WorkItemData


class Who(msgspec.Struct, frozen=True, kw_only=True):
    """Who writes (defaults: the CONTINUITY_* environment, then the store's project)."""

    project: str | None = None
    host: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    mission_id: str | None = None


class CheckpointRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A seed-002 checkpoint document, as `.ai-bridge/context-checkpoint.json` holds it."""

    document: Checkpoint


class StatusRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Which point to answer for."""

    as_of: str | None = None


class ValidateRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A validation actually run."""

    validation_id: str
    kind: str
    result: Literal["PASS", "FAIL", "INCONCLUSIVE", "SKIPPED"]
    scope: str
    summary: str
    command_run: str | None = None
    evidence_refs: tuple[str, ...] = ()
    repository: str | None = None


class ItemInput(WorkItemData, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A work item as the tool takes it: an unknown key (`dependsOn` as a document spells it) is refused, never
    dropped (the event's own Struct reads past keys a newer writer added)."""


class ItemAddRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A work item to add, to the active workstream unless `workstream_id` names another."""

    item: ItemInput
    workstream_id: str | None = None


class ResolveRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Recorded merge conflicts to resolve: their ids, or all (of one workstream), and why."""

    problem_ids: tuple[str, ...] = ()
    all: bool = False
    workstream_id: str | None = None
    reason: str


CheckpointInput = tool_input("WorkCheckpointInput", "A checkpoint document to record.", CheckpointRequest, Who,
                             WriteOptions, help_for={"document": "the seed-002 checkpoint document (schemaVersion 2)"})
StatusInput = tool_input("WorkStatusInput", "The resume contract, now or as of a point.", StatusRequest, Who)
ValidateInput = tool_input("WorkValidateInput", "A validation ledger entry.", ValidateRequest, Who, WriteOptions,
                           help_for={"kind": "what kind of validation ran, e.g. unit-tests, lint, build"})
ItemAddInput = tool_input("WorkItemAddInput", "A work item to add.", ItemAddRequest, Who, WriteOptions)
ItemUpdateInput = tool_input("WorkItemUpdateInput", "A change to a work item (None: unchanged).", ItemSet, Who,
                             WriteOptions, help_for={"reopen": "reopen a terminal item to `status`"})
CursorInput = tool_input("WorkCursorInput", "Cursor fields to change (None: unchanged; \"\" clears).", CursorSet, Who)
ResolveInput = tool_input("WorkResolveInput", "Recorded merge conflicts to resolve.", ResolveRequest, Who,
                          help_for={"problem_ids": "ids as work_status lists them in problemDetails (P-...)",
                                    "all": "every open recorded conflict (of workstream_id when given)",
                                    "reason": "why they are resolved (recorded with the resolution)"})


def _record(request: Any, store: Store, decide: Any, facts: Any = None) -> dict[str, Any]:
    from continuity.workstreams import service

    who = identity(request, store)
    stored, warnings = service.record(store, who, lambda state: decide(state, who),
                                      redact=getattr(request, "redact", False), facts=facts)
    warnings = warnings + service.after_write(store)
    return {"ok": True, "events": [item.event.kind for item in stored],
            "event_ids": [item.event_id for item in stored], "warnings": warnings}


@tool("work_checkpoint", CheckpointInput, "Record a seed-002 checkpoint document (tracked workstream, items, cursor, "
      "ledger); refused when it would lose or reopen work, switch workstreams, or break an invariant.")
def work_checkpoint(request: Any, store: Store) -> dict[str, Any]:
    """The `work_checkpoint` tool."""
    from continuity.workstreams import decide, document
    from continuity.workstreams.service import checkpoint_facts

    doc = document.check(request.document)
    facts = checkpoint_facts(store, bind=True)
    return _record(request, store, lambda state, who: decide.decide_checkpoint(state, who, doc, facts), facts)


@tool("work_status", StatusInput, "The active workstream, cursor, unresolved items, validation ledger with live "
      "freshness, and problems. Read-only.")
def work_status(request: Any, store: Store) -> dict[str, Any]:
    """The `work_status` tool."""
    from continuity.core.errors import EXIT_INTEGRITY
    from continuity.workstreams.documents import runtime_document, unhealthy_line
    from continuity.workstreams.service import live_status, workstreams_state

    project = asked_project(request.project, store)
    state, warnings, _ = workstreams_state(store, project, as_of=request.as_of)
    doc = runtime_document(state, project)
    healthy = live_status(store, project, state, doc) if request.as_of is None else not doc["problems"]
    result = {"ok": healthy, "action": "work-status", "as_of": request.as_of, **doc, "warnings": warnings}
    if not healthy:  # a verdict, as `work status --json` gives it (exit 1): the report stays the answer
        result.update(exit_code=EXIT_INTEGRITY, message=unhealthy_line(doc))
    return result


@tool("work_validate", ValidateInput, "Record a validation actually run, bound to git HEAD and the worktree "
      "fingerprint; its id is immutable.")
def work_validate(request: Any, store: Store) -> dict[str, Any]:
    """The `work_validate` tool."""
    from continuity.workstreams import decide
    from continuity.workstreams.service import checkpoint_facts
    from events import clock
    from events.workstream import ValidationEntry

    entry = ValidationEntry(id=request.validation_id, kind=request.kind, result=request.result,
                            repository=request.repository or "", scope=request.scope, summary=request.summary,
                            timestamp=clock.iso(now_us()), command=request.command_run,
                            evidence_refs=request.evidence_refs)
    facts = checkpoint_facts(store, bind=True)  # HEAD, fingerprint and membership
    return _record(request, store, lambda state, who: decide.decide_validate(state, who, entry, facts), facts) | {
        "head": facts.head, "fingerprint": facts.fingerprint}


@tool("work_item_add", ItemAddInput, "Add a work item to the active workstream.")
def work_item_add(request: Any, store: Store) -> dict[str, Any]:
    """The `work_item_add` tool."""
    from continuity.workstreams import decide

    item = WorkItemData(**msgspec.structs.asdict(request.item))
    return _record(request, store, lambda state, who: decide.decide_item_add(state, who, item, request.workstream_id))


@tool("work_item_update", ItemUpdateInput, "Change a work item's status or fields; terminal items reopen only "
      "with reopen.")
def work_item_update(request: Any, store: Store) -> dict[str, Any]:
    """The `work_item_update` tool."""
    from continuity.workstreams import decide

    wanted = pick(ItemSet, request)
    return _record(request, store, lambda state, who: decide.decide_item_set(state, who, wanted))


@tool("work_cursor_set", CursorInput, "Move the active workstream's execution cursor.")
def work_cursor_set(request: Any, store: Store) -> dict[str, Any]:
    """The `work_cursor_set` tool."""
    from continuity.workstreams import decide

    wanted = pick(CursorSet, request)
    return _record(request, store, lambda state, who: decide.decide_cursor_set(state, who, wanted))


@tool("work_resolve", ResolveInput, "Resolve conflicts a merge of clones recorded (by id, or all), saying why; "
      "a broken state (two active workstreams, a cycle) clears only when fixed.")
def work_resolve(request: Any, store: Store) -> dict[str, Any]:
    """The `work_resolve` tool."""
    from continuity.workstreams import decide

    return _record(request, store, lambda state, who: decide.decide_resolve(
        state, who, request.problem_ids, request.reason, every=request.all, workstream_id=request.workstream_id))
