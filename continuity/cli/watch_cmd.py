"""`continuity watch`: a live view of events as they land, with projections kept current."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from continuity.cli.common import COUNT_MAX, Output, bounded_int, open_store
from continuity.cli.output import shown_raw, shown_text
from continuity.cli.output import warn as print_warnings
from continuity.core.text import escape_json_bytes, one_line


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `watch`."""
    parser = commands.add_parser(
        "watch", help="show events live as they land; keep projections current", parents=[common],
        description="Print one line per event as it lands (JSON lines with --json) and keep the projections "
        "current while running. Ctrl-C ends it.",
    )
    parser.add_argument("--last", type=bounded_int(0, COUNT_MAX), default=0, metavar="N",
                        help="first show the newest N events")
    parser.set_defaults(handler=_run)


def print_line(out: Output, stored: Any) -> None:
    """One event, as a line of text or JSON."""
    event = stored.event
    if out.as_json:
        # the stored canonical bytes, one JSON line, with what a terminal acts on as escapes (the same JSON)
        sys.stdout.buffer.write(escape_json_bytes(shown_raw(stored.raw)) + b"\n")
    else:
        line = (f"{event.created_at}  {event.event_id}  {event.kind:<20} {shown_text(event.type)}: "
                f"{shown_text(event.message)}")
        sys.stdout.write(one_line(line.rstrip()) + "\n")
    sys.stdout.flush()


def now_limit(log: Any) -> str:
    """The newest day folder that counts as now (`durable.counts_as_now`): following from an event stamped early,
    nothing appended after it (sorting before it) would ever show."""
    from continuity.core.store import now_us

    found: str = log.now_limit(now_us())
    return found


def now_head(log: Any) -> str | None:
    """The newest event that counts as now (None: none, or a day folder that cannot be listed)."""
    try:
        found: str | None = log.head_name(now_limit(log))
    except OSError:  # the newest day folder cannot be listed: the read says so, from the start
        return None
    return found


def start_after(log: Any, last: int) -> str | None:
    """The name to follow from so that the newest `last` events are shown first (only those are read): events that
    can be shown, as `events list --last` counts them (an unreadable or forged file is said, not counted)."""
    from events.errors import EventUndecodable
    from events.names import content_matches, twin

    if last <= 0:
        return now_head(log)

    def shown(name: str, raw: bytes) -> bool:
        if name.endswith("/"):
            return False
        try:
            event = log.codec.decode(raw)
        except EventUndecodable:
            return False
        return content_matches(name, event.event_id, event.created_at)

    kept: list[str] = []
    newer = None
    for name, raw in log.read_raw_newest_first(limit=now_limit(log)):
        if newer is not None and twin(newer, name) and kept and kept[-1] == newer:
            kept.pop()  # the file just counted is a second one of this event: no read shows it
        newer = name
        if shown(name, raw):
            kept.append(name)
            if len(kept) == last + 1:
                return kept[-1]
    return None


def _run(args: argparse.Namespace, out: Output) -> int:
    import contextlib

    from continuity.core.guard import serving

    serving()  # it keeps running: Python's own Ctrl-C (a KeyboardInterrupt that ends it with 0) and collector
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends a follower with 0 whenever it comes (was 130 early)
        _watch(args, out)
    return 0


def _watch(args: argparse.Namespace, out: Output) -> None:
    from continuity.adapters.watch import follow

    store = open_store(args)

    def warn(message: str) -> None:
        print_warnings([one_line(message)])

    def ready() -> None:
        sys.stderr.write(f"continuity: watching {one_line(store.events_dir)} (Ctrl-C to stop)\n")
        sys.stderr.flush()

    after = start_after(store.open_reader(), args.last)
    follow(store, lambda stored: print_line(out, stored), after=after, on_warning=warn,
           refresh_projections=True, on_ready=ready, reader_gone=stdout_closed)


def stdout_closed() -> bool:
    """Whether the reader of stdout's pipe has gone (`| head -1` done): a write would say so, but a follower that
    sees no new event writes nothing and would follow on for good. A terminal or a file is never closed so."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLERR)
        return bool(poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no fileno (a test's capture), no poll (Windows)
        return False
