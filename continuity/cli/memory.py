"""`continuity memory list|show`: memories synthesized from tasks, runs and sessions (seed 003)."""

from __future__ import annotations

import argparse
from typing import Any

from continuity.cli.common import Output, Parser, looked_up

KINDS = ("task_outcome", "blocker_resolution", "session_summary", "delegation_summary")


def register(commands: Any, name: str, *, common: argparse.ArgumentParser,
             identity: argparse.ArgumentParser) -> None:
    """Add `memory`."""
    parser = commands.add_parser("memory", help="list and show synthesized memories", parents=[common],
                                 description="Memories are synthesized from task, run and session events, never "
                                 "written by hand; each is also memories/<id>.md in the store (docs/tasks.md).")
    sub = parser.add_subparsers(title="memory commands", metavar="ACTION", parser_class=Parser)
    from continuity.cli.tasks import PAGING, paging_flags

    listing = sub.add_parser("list", help="memories, newest first", parents=[common, identity],
                             description="Memories, newest first (the newest 200 are kept; older ones stay as "
                             "memories/<id>.md)." + PAGING)
    listing.add_argument("--kind", choices=KINDS, help="only memories of this kind")
    paging_flags(listing, "memories")
    listing.add_argument("--as-of", metavar="EVENT_ID|ISO_TIME", help="as the log stood at this point")
    listing.set_defaults(handler=_list)
    show = sub.add_parser("show", help="one memory, whole", parents=[common, identity],
                          description="Show one memory: title, summary, files touched, provenance.")
    show.add_argument("memory_id", metavar="MEMORY", type=looked_up("memory"))
    show.add_argument("--as-of", metavar="EVENT_ID|ISO_TIME", help="as the log stood at this point")
    show.set_defaults(handler=_show)

    def missing(args: argparse.Namespace, out: Output) -> int:
        from continuity.core.errors import UsageError

        raise UsageError("memory: choose an action: list or show (see --help)")

    parser.set_defaults(handler=missing)


def _state(args: argparse.Namespace) -> tuple[Any, list[str]]:
    from continuity.cli.common import open_store, project_to_read
    from continuity.cli.output import warn
    from continuity.tasks import service

    store = open_store(args)
    project, said = project_to_read(args, store)
    from projections.tasks import MemoryList

    state, warnings, _ = service.tasks_state(store, project, as_of=args.as_of, view=MemoryList)
    warnings = [*said, *warnings]
    warn(warnings)
    return state, warnings


def _list(args: argparse.Namespace, out: Output) -> int:
    import msgspec

    from continuity.cli.tasks import emit_listing, limit_of
    from continuity.tasks.queries import memories, page

    limit = limit_of(args)
    state, warnings = _state(args)
    found = memories(state, args.kind, args.task)
    shown, more = page(found, limit)
    lines = [f"{m.memory_id} {m.kind} {m.title}" for m in shown]
    emit_listing(out, {"ok": True, "memories": msgspec.to_builtins(shown), "total": len(found), "more": more,
                       "warnings": warnings}, lines, more, "memories")
    return 0


def _show(args: argparse.Namespace, out: Output) -> int:
    import msgspec

    from continuity.core.errors import TaskNotFound
    from continuity.readside.memory_files import render
    from events.problems import quoted

    state, warnings = _state(args)
    found = next((m for m in state.book.memories if m.memory_id == args.memory_id), None)
    if found is None:
        raise TaskNotFound(f"unknown memory {quoted(args.memory_id, redact=True)} (or older than the newest kept)")
    out.emit({"ok": True, "memory": msgspec.to_builtins(found), "warnings": warnings}, render(found).decode())
    return 0
