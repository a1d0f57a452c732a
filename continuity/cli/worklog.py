"""`continuity log` and `continuity checkpoint`."""

from __future__ import annotations

import argparse
from typing import Any

from continuity.cli.common import EXIT_CODE_MAX, EXIT_CODE_MIN, Output, bounded_int, identity_from, open_store

SUMMARIES = {
    "log": "record a portable work-log entry",
    "checkpoint": "record a phase checkpoint to resume from",
}


def register(commands: Any, name: str, *, common: argparse.ArgumentParser,
             identity: argparse.ArgumentParser) -> None:
    """Add `log` or `checkpoint`."""
    summary = SUMMARIES[name]
    parser = commands.add_parser(
        name, help=summary, description=summary[0].upper() + summary[1:] + ".",
        parents=[common, identity],
    )
    parser.add_argument("text", nargs="?", help="the message (same as --message)")
    parser.add_argument("-m", "--message", help="what happened, in one line or a few")
    parser.add_argument("--type", help=f"work-log category (default: {name})")
    parser.add_argument("--phase", help="phase of the work, e.g. planning, editing, testing")
    parser.add_argument("--done", action="append", default=[], metavar="ITEM",
                        help="a finished item (repeatable)")
    parser.add_argument("--in-progress", metavar="TEXT", help="what is under way")
    parser.add_argument("--next", action="append", default=[], metavar="ITEM",
                        help="a next step (repeatable)")
    parser.add_argument("--blocker", action="append", default=[], metavar="ITEM",
                        help="a blocker (repeatable)")
    parser.add_argument("--file", action="append", default=[], metavar="PATH",
                        help="a file touched (repeatable); one inside the project is recorded from its root")
    parser.add_argument("--artifact", action="append", default=[], metavar="PATH",
                        help="an artifact produced (repeatable)")
    parser.add_argument("--handoff", action="append", default=[], metavar="PATH",
                        help="a handoff file (repeatable)")
    parser.add_argument("--command", metavar="CMD", help="a command that was run")
    parser.add_argument("--exit-code", type=bounded_int(EXIT_CODE_MIN, EXIT_CODE_MAX), metavar="N",
                        help="its exit code")
    parser.add_argument("--command-summary", metavar="TEXT", help="what it showed")
    parser.add_argument("--note-json", metavar="JSON", help="extra structured note (a JSON object)")
    parser.add_argument("--redact", action="store_true",
                        help="store secret-like text as [REDACTED:<rule>] instead of refusing")
    if name == "checkpoint":
        role = parser.add_argument_group("role form (seed 000): continuity checkpoint <team> --role R [--ref PATH]")
        role.add_argument("--role", help="get (or with --ref set) the team role's resume point; the positional "
                          "argument is then the team")
        role.add_argument("--ref", metavar="PATH", help="the snapshot the role resumes from (with --role)")
    parser.set_defaults(handler=_run, checkpoint=name == "checkpoint")


def parse_note(text: str | None) -> dict[str, Any] | None:
    """The --note-json object (UsageError unless it is a JSON object)."""
    if text is None:
        return None
    import msgspec

    from continuity.core.errors import UsageError

    try:  # msgspec, not orjson: orjson reads an integer beyond 64 bits as a float (10**20 became 1e+20)
        note = msgspec.json.decode(text)
    except msgspec.DecodeError as error:
        raise UsageError(f"--note-json is not valid JSON ({error})") from None
    except RecursionError:
        raise UsageError("--note-json is not valid JSON (nested too deeply)") from None
    if not isinstance(note, dict):
        raise UsageError("--note-json must be a JSON object")
    return note


def _run(args: argparse.Namespace, out: Output) -> int:
    from continuity.core.errors import UsageError
    from continuity.worklog.decide import WorkRequest, decide_checkpoint, decide_log

    if getattr(args, "role", None) is not None:
        from continuity.cli.roles import checkpoint_role

        return checkpoint_role(args, out)
    if getattr(args, "ref", None) is not None:
        raise UsageError("checkpoint: --ref goes with --role (continuity checkpoint <team> --role R --ref PATH)")
    if args.text is not None and args.message is not None:
        raise UsageError("give the message once: as text or with --message")
    request = WorkRequest(
        message=args.message if args.message is not None else (args.text or ""),
        type=args.type,
        phase=args.phase,
        done=tuple(args.done),
        in_progress=args.in_progress,
        next=tuple(args.next),
        blockers=tuple(args.blocker),
        files=tuple(args.file),
        artifacts=tuple(args.artifact),
        handoffs=tuple(args.handoff),
        command=args.command,
        exit_code=args.exit_code,
        command_summary=args.command_summary,
        note=parse_note(args.note_json),
    )
    store = open_store(args)
    if request.files:  # from the project root, as a hook records them (hook_entries.project_paths)
        import msgspec

        from continuity.adapters.hook_entries import project_paths, shell_folder

        request = msgspec.structs.replace(request, files=project_paths(request.files, store.root, shell_folder()))
    decide = decide_checkpoint if args.checkpoint else decide_log
    drafts = decide(identity_from(args, store), request)
    stored = store.open_log().append_many(drafts, redact=args.redact)[0]
    return report_written(out, store, stored, "checkpoint" if args.checkpoint else "log")


def report_written(out: Output, store: Any, stored: Any, action: str) -> int:
    """Print what an append wrote."""
    import msgspec

    from continuity.core.paths import event_relpath

    relative = event_relpath(stored.name)
    redacted = f" (redacted: {', '.join(stored.event.redacted)})" if stored.event.redacted else ""
    out.emit(
        {
            "ok": True,
            "action": action,
            "event_id": stored.event_id,
            "event_path": relative,
            "event": msgspec.to_builtins(stored.event),
        },
        f"{action}: {stored.event_id} -> {relative}{redacted}",
    )
    return 0
