"""`continuity timeline`: one static HTML page of who did what, when, on which host (docs/recall.md)."""

from __future__ import annotations

import argparse
from typing import Any

from continuity.cli.common import Output, add_time_window, open_store


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `timeline`."""
    parser = commands.add_parser(
        "timeline", help="write the project's history as one static HTML page (lanes per agent and host)",
        parents=[common],
        description="Write one self-contained HTML page (no network, no scripts or fonts from elsewhere): a lane "
        "per agent and host, sessions as bars, marks for checkpoints, archives, host switches, handoffs, "
        "snapshots, task transitions, decisions, session starts and ends and work-log lines; the message on "
        "hover, the whole event on click, a filter box and a day axis. Past 5,000 marks (or about 1.2 MB of them) "
        "the page shows one mark per session-hour (then per lane and hour, day, week, four weeks, or one per lane), "
        "so it stays under 2 MB. Default page: "
        ".agent/runtime-continuity/local/timeline.html (docs/recall.md).",
    )
    parser.add_argument("--out", metavar="FILE", help="write the page here instead (replaced whole); `-`: to stdout, "
                        "the summary line then on stderr")
    add_time_window(parser)
    parser.add_argument("--project", help="this project's events (default: the store's, from config.json)")
    parser.set_defaults(handler=_timeline)


def _to_stdout(page: bytes) -> None:
    """`--out -`: the page on stdout (a reader that left, `| head`, took what it read); one that takes nothing is
    WriteFailed."""
    import sys

    from continuity.cli.output import reader_may_leave
    from events.errors import WriteFailed

    try:
        with reader_may_leave():
            sys.stdout.flush()
            sys.stdout.buffer.write(page)
            sys.stdout.flush()
    except OSError as error:
        raise WriteFailed(f"timeline not written: stdout: {error.strerror or error}") from None


def _timeline(args: argparse.Namespace, out: Output) -> int:
    import msgspec

    from continuity.cli.output import warn
    from continuity.cli.progress import for_output
    from continuity.core.text import one_line
    from continuity.recall.service import now, time_window
    from continuity.timeline.service import timeline

    if args.out == "-" and out.as_json:
        from continuity.core.errors import UsageError

        raise UsageError("--out - prints the page on stdout: leave --json out (the summary is then on stderr)")
    store = open_store(args)
    warnings: list[str] = []
    project = args.project
    if project is None:
        project, warnings = store.reading_project()
    since, until = time_window(args.since, args.until, now())
    progress = for_output("reading the log for the timeline", as_json=out.as_json)
    try:
        written = timeline(store, project, out=args.out, since=since, until=until, progress=progress,
                           send=_to_stdout if args.out == "-" else None)
    finally:
        if progress is not None:
            progress.close()
    warnings.extend(written.warnings)
    if args.project is not None and not written.events and since is None and until is None:  # a misspelt name
        from events.problems import quoted

        warnings.append(f"the store holds no event of project {quoted(project, redact=True)}: the page is empty")
    warn(warnings)
    shown = f"one mark per {written.summarized}" if written.summarized else "one mark per event"
    said = (f"timeline of {written.events} events ({written.marks} marks, {shown}; {written.lanes} lanes, "
            f"{written.sessions} sessions) written to ")
    if args.out == "-":  # stdout holds the page: the summary goes to stderr
        import contextlib
        import sys

        with contextlib.suppress(OSError):
            sys.stderr.write(said + "stdout\n")
        return 0
    out.emit({"ok": True, "action": "timeline", "project": project, "since": since, "until": until,
              **msgspec.to_builtins(written), "warnings": warnings}, said + one_line(written.path))
    return 0
