"""`continuity recall QUERY`: rank every event's text with BM25 (docs/recall.md)."""

from __future__ import annotations

import argparse
from typing import Any

from continuity.cli.common import Output, add_time_window, bounded_int, open_store
from continuity.recall.plain import LIMIT_MAX


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `recall`."""
    parser = commands.add_parser(
        "recall", help="search everything agents logged, decided and handed off (BM25)", parents=[common],
        description="Rank every event's text (messages, checkpoints, decisions, next steps, blockers, archives, "
        "snapshots, tasks, workstream items, handoffs) against QUERY with BM25. All the query's words must "
        "match; --match takes FTS5 syntax instead (AND, OR, NOT, NEAR, \"phrases\", prefix*). The index is "
        "local/recall.sqlite3, caught up first (docs/recall.md).",
    )
    parser.add_argument("query", metavar="QUERY", help="words to search for (quote the whole query)")
    parser.add_argument("--kind", action="append", metavar="K",
                        help="only events of this kind (work.logged) or family (handoff); repeatable")
    parser.add_argument("--agent", metavar="A", help="only events written by this agent")
    add_time_window(parser)
    parser.add_argument("--limit", type=bounded_int(1, LIMIT_MAX), default=10, metavar="N",
                        help="at most N results (default 10)")
    parser.add_argument("--project", help="search this project (default: the store's, from config.json)")
    parser.add_argument("--match", action="store_true",
                        help="QUERY is FTS5 syntax (operators, phrases, prefix*), not plain words")
    parser.add_argument("--as-of", metavar="EVENT_ID|ISO_TIME",
                        help="search the log as it stood at this point (scores as they were then)")
    parser.set_defaults(handler=_recall)


def _recall(args: argparse.Namespace, out: Output) -> int:

    from continuity.cli.output import warn
    from continuity.core.kinds import kinds_for
    from continuity.recall import service
    from continuity.recall.plain import answer, lines_of
    from continuity.recall.search import Filters, hits_json

    store = open_store(args)
    warnings: list[str] = []
    project = args.project
    if project is None:
        project, warnings = store.reading_project()
    since, until = service.time_window(args.since, args.until, service.now_at(store, args.as_of))
    filters = Filters(project=project, kinds=kinds_for(args.kind), agent=args.agent, since=since, until=until)
    from continuity.cli.progress import for_output

    progress = for_output("indexing for recall", as_json=out.as_json)
    try:
        found = service.recall(store, args.query, filters, limit=args.limit, operators=args.match, as_of=args.as_of,
                               progress=progress)
    finally:
        if progress is not None:
            progress.close()
    warnings.extend(found.warnings)
    warn(warnings)
    hits = hits_json(found.hits)
    out.emit(answer(project, found.query, found.as_of, hits, given=args.query, indexed=found.indexed,
                    rebuilt=found.rebuilt, warnings=warnings), lines_of(hits))
    return 0
