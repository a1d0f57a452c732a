"""`warm`, `status`, `archive`, `host-switch`, `restore`, `resume-bundle`."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from continuity.cli.common import Output, bounded_int, open_store
from continuity.cli.output import warn
from continuity.core.store import check_project_name, check_project_to_read
from continuity.core.text import one_line
from continuity.sessions.archives import resume_command

WARM_PROMPT = (
    "continuity is on for this project. Work in windows of about 5 hours; checkpoint at least "
    "every 4 hours and before any switch: `continuity checkpoint -m \"<what changed>\" --next "
    "\"<next step>\"`. On a new session, start from `continuity resume-bundle`."
)

HELP = {
    "warm": "session start: print the working rhythm (--auto also records the session)",
    "status": "age of the newest archive, its next action, and whether to archive now (resume-bundle: what is "
              "next now)",
    "archive": "take an archive: JSON under archives/ and user-level Markdown",
    "host-switch": "archive and record that work moves to another host tool",
    "restore": "show the newest (or a named) archive, or list them",
    "resume-bundle": "everything a new session needs, within a size budget",
}


def register(commands: Any, name: str, *, common: argparse.ArgumentParser,
             identity: argparse.ArgumentParser) -> None:
    """Add one of the session commands."""
    parents = [common, identity] if name in ("warm", "archive", "host-switch", "resume-bundle") else [common]
    parser = commands.add_parser(name, help=HELP[name], description=HELP[name][0].upper() + HELP[name][1:] + ".",
                                 parents=parents)
    if name not in ("warm", "archive", "host-switch", "resume-bundle"):
        parser.add_argument("--project", help="project (default: from config.json)")
    if name in ("status", "restore", "resume-bundle"):
        parser.add_argument("--as-of", metavar="EVENT_ID|ISO_TIME",
                            help="answer as the log stood then (audit replay)")
    if name == "warm":
        parser.add_argument("--auto", action="store_true", help="also record a session start (one that cannot be "
                            "recorded is a warning: the rhythm is printed, exit 0)")
        parser.add_argument("--source", default="startup", help="what started the session (default: startup)")
        parser.set_defaults(records_start=True)  # --auto says a project it cannot record under in a warning
    if name in ("archive", "host-switch"):
        parser.add_argument("--gate", choices=["user", "agent"], help="who asked for the archive")
        parser.add_argument("--reason", help="why the archive is taken")
        parser.add_argument("--note-json", metavar="JSON",
                            help='override the archived state: {"goal", "done", "in_progress", "next", "blockers"} '
                                 '(seed 004\'s "current_goal", "blocked", "pitfalls" too; any other key is '
                                 'named in a warning)')
        parser.add_argument("--redact", action="store_true", help="redact secret-like text instead of refusing")
    if name == "archive":
        parser.add_argument("--full", action="store_true", help="record full structured refs (seed 004)")
        parser.add_argument("--from-host", help="the host work leaves (default: --host)")
        parser.add_argument("--to-host", help="the host work moves to")
    if name == "host-switch":
        parser.add_argument("--from-host", required=True, help="the host work leaves")
        parser.add_argument("--to-host", required=True, help="the host work moves to")
    if name == "restore":
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--auto", action="store_true", help="the newest archive and how to resume (default)")
        mode.add_argument("--load", metavar="latest|ARCHIVE_ID", help="print an archive's Markdown")
        mode.add_argument("--list", action="store_true", help="list the archives")
    if name == "resume-bundle":
        from continuity.sessions.brief import DEFAULT_MAX_CHARS, MAX_MAX_CHARS, MIN_MAX_CHARS

        parser.add_argument("--max-chars", type=bounded_int(MIN_MAX_CHARS, MAX_MAX_CHARS), default=DEFAULT_MAX_CHARS,
                            metavar="N", help="size budget of the Markdown brief (default 8000)")
        parser.add_argument("--format", choices=["md", "json"], default="md", help="md (default) or json")
        parser.add_argument("--record", action="store_true",
                            help="record what was served (a context.served event) for audits")
    parser.set_defaults(handler=HANDLERS[name])


def _identity(args: argparse.Namespace, store: Any, project: str | None = None, *, names_only: bool = True) -> Any:
    """Who this command writes as (flags, else environment, else config)."""
    from continuity.cli.common import identity_from

    identity = identity_from(args, store, project, names_only=names_only)
    check_project_name(identity.project)
    return identity


def _project(args: argparse.Namespace, store: Any) -> str:
    """The project a read answers for: --project, else config.json's, else (broken config) the log's."""
    project = getattr(args, "project", None)
    if not project:
        project, warnings = store.reading_project()
        warn(warnings)
    check_project_to_read(project)
    return str(project)


def _note(args: argparse.Namespace) -> dict[str, Any] | None:
    from continuity.cli.worklog import parse_note

    return parse_note(args.note_json)


def _warm(args: argparse.Namespace, out: Output) -> int:
    result: dict[str, Any] = {"ok": True, "action": "warm", "duration_hours": 5, "checkpoint_reminder_hours": 4,
                              "prompt_for_host_paste": WARM_PROMPT}
    if args.auto:  # session start: the rhythm is printed whatever happens to the record (as a brief is served)
        from continuity.sessions.decide import decide_session_start
        from events.errors import ContinuityError

        try:
            store = open_store(args)
            from continuity.facts import path_text

            try:
                cwd: str | None = path_text(os.getcwd())
            except FileNotFoundError:  # removed under this shell (--root found the store): the session has no folder
                cwd = None
            drafts = decide_session_start(_identity(args, store), source=args.source, cwd=cwd,
                                          message="session started")
            stored = store.open_log().append_many(drafts)[0]
        except ContinuityError as error:
            result |= {"auto_init": False, "warnings": [f"the session start is not recorded: {error}"]}
            warn(result["warnings"])
        else:
            result |= {"auto_init": True, "event_id": stored.event_id}
    recorded = f"\nrecorded: {result['event_id']}" if result.get("auto_init") else ""
    out.emit(result, WARM_PROMPT + recorded)
    return 0


def _status(args: argparse.Namespace, out: Output) -> int:
    from continuity.sessions.service import status

    store = open_store(args)
    result = status(store, _project(args, store), as_of=args.as_of)
    warn(result["warnings"])
    if not result["exists"]:
        text = f"{result['project']}: no archive yet ({result['events']} events); recommendation: " \
               f"{result['stale_recommendation']}"
    else:
        text = (f"{result['project']}: latest archive {result['latest']} ({result['age']}), "
                f"{result['count']} archive(s), {result['events']} events; recommendation: "
                f"{result['stale_recommendation']}\nnext action when archived: {one_line(result['next_action'])}")
    out.emit(result, text)
    return 0


def _archive(args: argparse.Namespace, out: Output) -> int:
    from continuity.sessions.decide import ArchiveRequest
    from continuity.sessions.service import archive, archive_paths, own_archive

    store = open_store(args)
    identity = _identity(args, store)
    switch = args.handler is _host_switch
    _hosts_are_names(args)
    request = ArchiveRequest(gate=args.gate, full=getattr(args, "full", False), reason=args.reason,
                             from_host=args.from_host, to_host=args.to_host, note=_note(args), switch=switch)
    stored, warnings = archive(store, identity, request, redact=args.redact)
    from continuity.sync import auto as autosync

    sync_warning = autosync.start(store, "archive")
    warnings = warnings + ([sync_warning] if sync_warning else [])
    warn(warnings)
    project = identity.project
    paths = archive_paths(store, None, project, own_archive(store, project, stored[0].event_id))
    result = {"ok": True, "action": "host-switch" if switch else "archive", "project": project,
              "event_ids": [s.event_id for s in stored], **paths, "warnings": warnings}
    if paths:
        next_action = one_line(paths['archive']['restore']['next_action'])
        # the places they go, when a write failed (warned above): said so, never as if written
        json_path, markdown = (_written_or_not(str(paths[key])) for key in ("archiveJsonPath", "archivePath"))
        text = (f"archived {paths.get('archive_id')}: {json_path}\n"
                f"markdown: {markdown}\nnext action: {next_action}")
    else:  # the event is durable; its documents come with the next catch-up that reaches it (warned above)
        text = f"archived: event {stored[0].event_id} (its documents are written once the projections reach it)"
    if switch:
        result |= {"from_host": args.from_host, "to_host": args.to_host,
                   "next_steps_for_new_host": next_steps(project, args.to_host)}
        text += f"\nswitch {args.from_host} -> {args.to_host} recorded; on {args.to_host} run: " \
                f"{resume_command(project)}"
    out.emit(result, text)
    return 0


def _written_or_not(path: str) -> str:
    """An archive document's path as a line says it: the path, or that it was not written there."""
    return one_line(path if os.path.isfile(path) else f"not written (it would be {path})")


def next_steps(project: str, host: str) -> list[str]:
    """What the new host should do first."""
    return [
        f"Open the project in {host}.",
        f"Run `{resume_command(project)}` and read it whole.",
        "Read the read-first files it lists, then check `git status` against its drift section.",
        "Continue from its next action; checkpoint when a step is done.",
    ]


def _host_switch(args: argparse.Namespace, out: Output) -> int:
    return _archive(args, out)


def _restore(args: argparse.Namespace, out: Output) -> int:
    from continuity.readside.query import current_view

    store = open_store(args)
    project = _project(args, store)
    view = current_view(store, ("archives",), as_of=args.as_of)
    warn(view.warnings)
    state = view.project(project)
    if args.list:
        import msgspec

        records = [msgspec.to_builtins(r) for r in reversed(state.archives)]
        lines = [f"{r['archive_id']}  {r['created_at']}  {one_line(r['reason'] or '')}".rstrip() for r in records]
        out.emit({"ok": True, "action": "restore", "mode": "list", "project": project, "archives": records,
                  "total": state.archives_total}, "\n".join(lines) or "(no archives)")
        if state.archives_total > len(records):  # the read model keeps the newest; the others stay in the log
            more = state.archives_total - len(records)
            out.note(f"… {more} older archive{'s' if more > 1 else ''} not listed: `continuity events list --kind "
                     "archive.created` names them all, `restore --load ID` loads any")
        return 0
    record = state.latest_archive()
    if args.load is not None and not args.load.strip():  # "" is no archive id (it read as the latest)
        from continuity.core.errors import UsageError

        raise UsageError("restore --load: give an archive id (RC-<stamp>), or `latest`")
    if args.load and args.load != "latest":
        record = next((r for r in state.archives if r.archive_id == args.load), None)
        if record is None:
            record = _archive_file(store, project, args.load)  # older than the few the fold keeps
            from events import clock

            if record is not None and args.as_of is not None and (  # as of a point: only one taken by then
                    view.at is None or clock.parse_iso(record.created_at) > clock.parse_iso(view.at)):
                record = None
    if record is None and args.load and args.load != "latest":  # an error like any id that names nothing
        from continuity.core.errors import ArchiveNotFound
        from events.problems import quoted

        raise ArchiveNotFound(f"no archive {quoted(args.load)} for project {quoted(project)}")
    if record is None:
        out.emit({"ok": False, "action": "restore", "project": project, "error": "no_archive_for_project"},
                 f"no archive for project {project}")
        return 0
    import msgspec

    from continuity.readside.writers import markdown_path
    from continuity.sessions.templates import render_archive_markdown

    body = render_archive_markdown(record, str(store.config.get("language") or "en"))
    result = {"ok": True, "action": "restore", "mode": "load" if args.load else "auto", "project": project,
              "archive_id": record.archive_id, "markdown_path": markdown_path(store, record),
              "archive_json_path": os.path.join(store.path, "archives", f"{record.archive_id}.json"),
              "archive": msgspec.to_builtins(record),
              "resume_bundle_command": resume_command(project)}
    if args.load:
        result["body"] = body
    out.emit(result, body)
    return 0


def _archive_file(store: Any, project: str, archive_id: str) -> Any:
    """An archive record read back from its JSON file (None when there is none for this project).

    ArchiveUnreadable when the file is there but cannot be taken: not a regular file, a link
    out of the store, bigger than ARCHIVE_FILE_BYTES, or not an archive.
    """
    import msgspec

    from continuity.sessions.archives import ArchiveRecord

    if not archive_id.startswith("RC-") or "/" in archive_id or "\x00" in archive_id:
        return None
    from continuity.core.errors import ArchiveUnreadable
    from continuity.core.text import one_line, shortened
    from continuity.sessions.archives import read_archive_file

    def shown(text: str, limit: int = 64) -> str:  # an id of 100,000 digits made a line of 200 kB
        return one_line(shortened(text, limit))

    folder = os.path.join(store.path, "archives")
    try:
        _, raw = read_archive_file(folder, f"{archive_id}.json")
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ArchiveUnreadable(f"archive {shown(archive_id)} cannot be read: {shown(str(error.filename or ''), 400)}: "
                                f"{error.strerror or error}") from None
    try:
        record = msgspec.json.decode(raw, type=ArchiveRecord)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as error:
        why = "nested too deeply" if isinstance(error, RecursionError) else error
        where = shown(os.path.join(folder, archive_id), 400)
        raise ArchiveUnreadable(f"archive {shown(archive_id)} cannot be read: {where}.json: not an archive ({why})"
                                ) from None
    return record if record.project == project else None


def _resume_bundle(args: argparse.Namespace, out: Output) -> int:
    from continuity import facts

    store = open_store(args)
    if args.as_of is None:  # git reads the work tree while the brief's modules load and the log catches up
        facts.start_git_facts(store.root)
    from continuity.core.errors import UsageError
    from continuity.sessions.service import resume_bundle

    if args.record and args.as_of is not None:  # a replay is never recorded: it said nothing and recorded nothing
        raise UsageError("--record records; it does not go with --as-of")
    fmt = "json" if out.as_json else args.format
    record = args.record and (args.project or store.config_problem is None)  # never record under a guess
    project = _project(args, store)
    not_recorded: list[str] = []
    from continuity.cli.common import identity_from

    now = args.as_of is None  # the session's current run is now's: as of a point, only a run asked for (--run)
    try:  # served to any project a read takes (a context.served can carry a runtime-continuity project, as MCP's)
        who = identity_from(args, store, project, current_run=now)
    except UsageError as error:  # an id no event may carry (from a flag or CONTINUITY_*): a read still answers
        who = identity_from(args, store, project, names_only=False, current_run=now)
        if record:
            record, not_recorded = False, [f"the brief is served but not recorded: {error}"]
    from continuity.core.identity import served_to

    who, record, left_out = served_to(who, record)
    not_recorded += left_out
    brief = resume_bundle(store, who, fmt=fmt, max_chars=args.max_chars, record=record, as_of=args.as_of)
    warn(not_recorded + brief.warnings)
    if brief.format == "json":  # the same JSON (a served brief's own format), no C1 or bidi control raw
        from continuity.core.text import escape_json

        sys.stdout.flush()
        sys.stdout.buffer.write(escape_json(brief.text).encode())  # JSON is UTF-8 whatever the locale, as emit's
    else:
        sys.stdout.write(brief.text)
    sys.stdout.flush()
    return 0


HANDLERS = {
    "warm": _warm,
    "status": _status,
    "archive": _archive,
    "host-switch": _host_switch,
    "restore": _restore,
    "resume-bundle": _resume_bundle,
}


def _hosts_are_names(args: argparse.Namespace) -> None:
    """--from-host and --to-host are ids, as --host is (the events take any host `runtime-continuity` is given,
    "Claude Code" too; continuity's own commands take ids: continuity/core/idfields.py)."""
    from continuity.core.errors import UsageError
    from continuity.core.idfields import is_name
    from events.problems import NAME_RULE, quoted

    for flag, value in (("--from-host", args.from_host), ("--to-host", args.to_host)):
        if value is not None and not is_name(value):
            raise UsageError(f"{flag} {quoted(str(value))} {NAME_RULE}")
