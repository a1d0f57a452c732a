"""`continuity events list|show`."""

from __future__ import annotations

import argparse
from typing import Any

from continuity.cli.common import Output, Parser, open_store


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `events list` and `events show`."""
    parser = commands.add_parser(
        "events", help="list or show events", parents=[common],
        description="Read the event log (read-only).",
    )
    sub = parser.add_subparsers(title="events commands", metavar="ACTION", parser_class=Parser)
    listing = sub.add_parser("list", help="events in replay order", parents=[common],
                             description="Events in replay order, one line each.")
    listing.add_argument("--after", metavar="EVENT_ID", help="only events after this one")
    listing.add_argument("--kind", help="only events of this kind, e.g. checkpoint.recorded")
    listing.add_argument("--limit", type=int, metavar="N", help="at most N events (the first N)")
    listing.add_argument("--last", type=int, metavar="N", help="only the newest N events")
    listing.set_defaults(handler=_list)
    show = sub.add_parser("show", help="one event, whole", parents=[common],
                          description="Print one event as stored.")
    show.add_argument("event_id", metavar="EVENT_ID")
    show.set_defaults(handler=_show)
    parser.set_defaults(handler=lambda args, out: _missing_action(parser))


def _missing_action(parser: argparse.ArgumentParser) -> int:
    from continuity.errors import UsageError

    raise UsageError("events: choose an action: list or show (see --help)")


def _list(args: argparse.Namespace, out: Output) -> int:
    import collections

    import msgspec

    from continuity.errors import UsageError

    for flag in ("limit", "last"):
        value = getattr(args, flag)
        if value is not None and value < 0:
            raise UsageError(f"--{flag} must be 0 or more")
    log = open_store(args).open_reader()
    after = log.find(args.after).name if args.after else None
    warnings: list[str] = []
    events = (
        stored for stored in log.read(after, on_error=lambda name, error: warnings.append(f"{name}: {error}"))
        if args.kind is None or stored.event.kind == args.kind
    )
    selected: Any
    if args.last is not None:
        selected = collections.deque(events, maxlen=args.last)
    else:
        selected = []
        for stored in events:
            if args.limit is not None and len(selected) >= args.limit:
                break
            selected.append(stored)
    if out.as_json:
        out.emit({"ok": True, "count": len(selected), "warnings": warnings,
                  "events": [msgspec.to_builtins(s.event) for s in selected]})
    else:
        lines = [
            f"{s.event.event_id}  {s.event.kind:<20} {s.event.type}: {s.event.message}".rstrip()
            for s in selected
        ]
        lines.extend(f"warning: skipped unreadable event {w}" for w in warnings)
        out.emit(None, "\n".join(lines) if lines else "(no events)")
    return 0


def _show(args: argparse.Namespace, out: Output) -> int:
    import msgspec

    stored = open_store(args).open_reader().find(args.event_id)
    data = msgspec.to_builtins(stored.event)
    if out.as_json:
        out.emit(data)
    else:
        import orjson

        out.emit(None, f"# {stored.name}\n" + orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
    return 0
