"""`continuity events list|show`."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from continuity.cli.common import COUNT_MAX, Output, Parser, bounded_int, open_store
from continuity.cli.output import warn as print_warnings

if TYPE_CHECKING:
    from events.base import Event
    from events.filelog import FileEventLog
    from events.sealing import StoredEvent


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
    listing.add_argument("--kind", help="only events of this kind, e.g. checkpoint.recorded, or of this family, "
                         "e.g. checkpoint (an unknown kind is refused)")
    count = bounded_int(0, COUNT_MAX)
    which = listing.add_mutually_exclusive_group()  # `--last 3 --limit 1` printed 3: one of them was dropped
    which.add_argument("--limit", type=count, metavar="N", help="at most N events (the first N)")
    which.add_argument("--last", type=count, metavar="N", help="only the newest N events")
    listing.set_defaults(handler=_list)
    tail = sub.add_parser("tail", help="the newest events; --follow keeps printing new ones", parents=[common],
                          description="The newest events, one line each (JSON lines with --json); with --follow, "
                          "new events as they land until Ctrl-C.")
    tail.add_argument("-n", "--lines", type=count, default=10, metavar="N", help="how many to show first (default 10)")
    tail.add_argument("-f", "--follow", action="store_true", help="keep printing events as they land")
    tail.set_defaults(handler=_tail)
    show = sub.add_parser("show", help="one event, whole", parents=[common],
                          description="Print one event as stored.")
    show.add_argument("event_id", metavar="EVENT_ID")
    show.set_defaults(handler=_show)
    parser.set_defaults(handler=lambda args, out: _missing_action(parser))


def _missing_action(parser: argparse.ArgumentParser) -> int:
    from continuity.core.errors import UsageError

    raise UsageError("events: choose an action: list, show or tail (see --help)")


def _list(args: argparse.Namespace, out: Output) -> int:
    """Print the listing as it is read: the log is never held whole, and `--last` reads only its end."""
    import itertools

    import msgspec

    from continuity.core.text import one_line

    if args.after is not None and not args.after.strip():  # it listed the whole log, as if not given
        from continuity.core.errors import UsageError

        raise UsageError(f"--after: {args.after!r} is no event id (RCE-...)")
    log, warnings = open_store(args).open_events_reader()
    warnings += _left_out(log)
    if not out.as_json:  # with --json, the document's warnings
        print_warnings(warnings)
    after = log.find_raw(args.after)[0] if args.after else None  # an event that cannot be read is still a place

    def on_error(name: str, error: Exception) -> None:
        if out.as_json:  # the document's warnings, printed before the events: kept until the end
            warnings.append(f"{name}: {error}")
        else:
            print_warnings([f"skipped unreadable event {one_line(f'{name}: {error}')}"])

    from continuity.core.kinds import kinds_for

    kinds = frozenset(kinds_for([args.kind])) if args.kind is not None else None  # an unknown kind is refused

    def kept(event: Event) -> bool:
        return kinds is None or event.kind in kinds

    selected: Iterable[StoredEvent]
    if args.last is not None:
        selected = log.read_newest(args.last, after, keep=kept, on_error=on_error)
    else:
        selected = itertools.islice((s for s in log.read(after, on_error=on_error) if kept(s.event)), args.limit)
    if out.as_json:
        out.emit_listing((msgspec.to_builtins(s.event) for s in selected), "events",
                         lambda count: {"ok": True, "count": count, "warnings": warnings + _hours_left(log)})
        return 0
    out.emit_lines(_lines(selected), "(no events)")
    print_warnings(_hours_left(log))
    return 0


def _lines(selected: Iterable[StoredEvent]) -> Iterator[str]:
    """`events list`'s lines, each type and message redacted alone (a batch of lines checked at a time: shown_batch)."""
    from continuity.cli.output import LINES_BATCH_CHARS, shown_batch
    from continuity.core.text import one_line

    def lines(batch: list[tuple[str, str, str]]) -> Iterator[str]:
        shown = iter(shown_batch([text for _, kind_of, message in batch for text in (kind_of, message)]))
        for head, _, _ in batch:  # the type and the message redacted each alone (joined they say `type: message`)
            yield one_line(f"{head}{next(shown)}: {next(shown)}".rstrip())

    batch: list[tuple[str, str, str]] = []  # the line's fixed part, the type and the message: not the events
    size = 0
    for stored in selected:
        event = stored.event
        head = f"{event.event_id}  {event.kind:<20} "
        batch.append((head, event.type, event.message))
        size += len(head) + len(event.type) + len(event.message)
        if size >= LINES_BATCH_CHARS:
            yield from lines(batch)
            batch, size = [], 0
    yield from lines(batch)


def _left_out(log: FileEventLog) -> list[str]:
    from events.durable import left_out

    return left_out(log.events_dir)


def _hours_left(log: FileEventLog) -> list[str]:
    """The warning of a listing that met the first release's hour folders and could not move them all."""
    return [log.hours_left] if log.hours_left else []


def _show(args: argparse.Namespace, out: Output) -> int:
    import msgspec

    from events import names
    from events.errors import EventNotFound, EventUndecodable, UnknownEventType

    log, unsafe = open_store(args).open_events_reader()
    print_warnings(unsafe)
    try:
        name, raw = log.find_raw(args.event_id)
    except EventNotFound:
        print_warnings(_hours_left(log) + _left_out(log))
        raise
    try:
        event = log.codec.decode(raw)
    except UnknownEventType as error:  # a newer writer's kind or version: shown as stored, and said
        print_warnings([f"{name}: {error}"])
    except EventUndecodable:
        log.find(args.event_id)  # raises the one line that names the event and its file
        raise
    else:
        if not names.content_matches(name, event.event_id, event.created_at):
            print_warnings([f"{name}: {names.FORGED}"])  # shown, as asked for: what a forger wrote is evidence
    data = msgspec.json.decode(raw)  # as stored: fields a newer writer added kept, none filled in
    if out.as_json:
        out.emit(data)
    else:
        from continuity.cli.output import shown_data
        from continuity.core.text import one_line

        out.emit(None, f"# {one_line(name)}\n{shown_data(data)[1]}", shown=True)
    return 0


def _tail(args: argparse.Namespace, out: Output) -> int:
    if not args.follow:
        return _tail_from(args, out)
    import contextlib

    from continuity.core.guard import serving

    serving()  # it keeps running: Python's own Ctrl-C (a KeyboardInterrupt that ends it with 0) and collector
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends a follower with 0 whenever it comes (was 130 early)
        _tail_from(args, out)
    return 0


def _tail_from(args: argparse.Namespace, out: Output) -> int:
    import sys

    from continuity.cli.watch_cmd import print_line, start_after, stdout_closed
    from continuity.core.text import one_line

    store = open_store(args)
    log, unsafe = store.open_events_reader()
    print_warnings(unsafe + ([] if args.follow else _left_out(log)))  # a follower says so itself (adapters/watch.py)
    after = start_after(log, args.lines)

    def warn(message: str) -> None:
        print_warnings([one_line(message)])

    if not args.follow:
        for stored in log.read(after, on_error=lambda name, error: warn(f"skipped unreadable event {name}: {error}")):
            print_line(out, stored)
        print_warnings(_hours_left(log))
        return 0
    from continuity.adapters.watch import follow

    def ready() -> None:
        sys.stderr.write(f"continuity: following {one_line(store.events_dir)} (Ctrl-C to stop)\n")
        sys.stderr.flush()

    follow(store, lambda stored: print_line(out, stored), after=after, on_warning=warn, on_ready=ready,
           reader_gone=stdout_closed)
    return 0
