"""Seed-002 checkpoint documents for tests: a valid tracked document, changed by small edits."""

from __future__ import annotations

import copy
from typing import Any


def item(item_id: str, status: str = "PENDING", **fields: Any) -> dict[str, Any]:
    """A work item in the document's shape."""
    base: dict[str, Any] = {"id": item_id, "title": f"Item {item_id}", "status": status, "priority": "MEDIUM",
                            "scope": [], "acceptanceCriteria": [], "dependsOn": [], "blockedBy": [],
                            "validationRequirements": [], "notes": []}
    base.update(fields)
    return base


def ledger_entry(entry_id: str, result: str = "PASS", **fields: Any) -> dict[str, Any]:
    """A validation ledger entry in the document's shape."""
    base: dict[str, Any] = {"id": entry_id, "kind": "unit-tests", "result": result, "repository": "repo-a",
                            "scope": "all", "summary": "pytest -q passed", "timestamp": "2026-01-01T00:00:00Z",
                            "command": "pytest -q", "evidenceRefs": []}
    base.update(fields)
    return base


def tracked(ws_id: str = "WS-1", items: list[dict[str, Any]] | None = None, *, status: str = "IN_PROGRESS",
            current: str | None = None, next_action: str = "write the failing test",
            ledger: list[dict[str, Any]] | None = None, **top: Any) -> dict[str, Any]:
    """A valid schemaVersion 2 tracked checkpoint document."""
    doc: dict[str, Any] = {
        "schemaVersion": 2, "repository": "repo-a", "scope": "auth", "status": "IN_PROGRESS",
        "objective": "Fix login", "confirmedFindings": [], "decisions": [], "rejectedApproaches": [],
        "validation": [], "openQuestions": [], "nextAction": next_action,
        "continuity": {"mode": "tracked", "validationLedger": ledger or [], "workstream": {
            "id": ws_id, "title": "Auth fixes", "status": status, "objective": "Fix login",
            "repositories": [{"repository": "repo-a", "role": "primary"}],
            "cursor": {"currentItemId": current, "lastCompletedItemId": None, "phase": None,
                       "lastCompletedAction": None, "nextAction": next_action},
            "items": items if items is not None else [item("A1", "IN_PROGRESS"), item("A2", dependsOn=["A1"])],
        }},
    }
    doc.update(top)
    return doc


def snapshot(**top: Any) -> dict[str, Any]:
    """A valid schemaVersion 2 snapshot checkpoint document."""
    doc = tracked(**top)
    doc["continuity"] = {"mode": "snapshot", "workstream": None, "validationLedger": []}
    return doc


def legacy(**top: Any) -> dict[str, Any]:
    """A valid schemaVersion 1 checkpoint document."""
    doc = tracked(**top)
    del doc["continuity"]
    doc["schemaVersion"] = 1
    return doc


def edited(doc: dict[str, Any], **workstream: Any) -> dict[str, Any]:
    """A copy of a tracked document with workstream fields replaced."""
    changed = copy.deepcopy(doc)
    changed["continuity"]["workstream"].update(workstream)
    return changed
