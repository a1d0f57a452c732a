"""The `recall` tool: BM25 over every event's text, as `continuity recall` (docs/recall.md)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from continuity.adapters.mcp.registry import tool
from continuity.adapters.mcp.tools import read_project_of
from continuity.core.store import Store


class RecallInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What to search for, and where."""

    query: Annotated[str, msgspec.Meta(description="words to search for (all must match), or FTS5 syntax with match")]
    match: Annotated[bool, msgspec.Meta(description="the query is FTS5 syntax: AND, OR, NOT, NEAR, prefix*")] = False
    kinds: Annotated[list[str], msgspec.Meta(description="only these event kinds or families (e.g. handoff)")] = []
    agent: Annotated[str | None, msgspec.Meta(description="only events written by this agent")] = None
    since: Annotated[str | None, msgspec.Meta(description="only events at or after: ISO time or duration (7d)")] = None
    until: Annotated[str | None, msgspec.Meta(description="only events at or before: ISO time or duration")] = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000, description="at most this many hits")] = 10
    project: Annotated[str | None, msgspec.Meta(description="project name (default: the store's)")] = None
    as_of: Annotated[str | None, msgspec.Meta(description="the log as it stood at this EVENT_ID or ISO time")] = None


@tool("recall", RecallInput, "Did we already try this? Rank every event's text (messages, checkpoints, decisions, "
      "blockers, archives, snapshots, tasks, workstream items, handoffs) against a query, best first, with snippets.")
def recall(request: Any, store: Store) -> dict[str, Any]:
    """The `recall` tool."""
    from continuity.core.kinds import kinds_for
    from continuity.recall import service
    from continuity.recall.plain import answer
    from continuity.recall.search import Filters, hits_json

    said: list[str] = []
    project = read_project_of(request.project, store, said)
    since, until = service.time_window(request.since, request.until, service.now_at(store, request.as_of),
                                       ("since", "until"))
    filters = Filters(project=project, kinds=kinds_for(request.kinds), agent=request.agent, since=since, until=until)
    found = service.recall(store, request.query, filters, limit=request.limit, operators=request.match,
                           as_of=request.as_of)
    return answer(project, found.query, found.as_of, hits_json(found.hits), given=request.query, indexed=found.indexed,
                  rebuilt=found.rebuilt, warnings=[*said, *found.warnings])  # the CLI's `--json`, key for key
