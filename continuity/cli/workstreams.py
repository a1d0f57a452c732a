"""`continuity work checkpoint|validate|resolve|item add|set|show|cursor set`: tracked workstreams (seed 002).

The lifecycle actions (start, status, audit) are in work_lifecycle.py."""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Any

from continuity.cli.common import Output, Parser, open_store, project_to_read
from continuity.core.text import one_line

ITEM_STATUSES = ("PENDING", "IN_PROGRESS", "BLOCKED", "COMPLETED", "CANCELLED", "SUPERSEDED")
PRIORITIES = ("CRITICAL", "HIGH", "MEDIUM", "LOW")
RESULTS = ("PASS", "FAIL", "INCONCLUSIVE", "SKIPPED")
#: flag -> item field, for the repeatable list flags of `item add` and `item set`.
LIST_FLAGS = {"scope": "scope", "accept": "acceptance_criteria", "depends_on": "depends_on",
              "blocked_by": "blocked_by", "requires": "validation_requirements", "note": "notes"}


def register(commands: Any, name: str, *, common: argparse.ArgumentParser,
             identity: argparse.ArgumentParser) -> None:
    """Add `work`."""
    parser = commands.add_parser("work", help="tracked workstreams: checkpoint documents, items, cursor (seed 002)",
                                 parents=[common], description="Tracked workstreams (docs/workstreams.md): work "
                                 "items with stable ids, an execution cursor and fail-closed invariants.")
    sub = parser.add_subparsers(title="work commands", metavar="ACTION", parser_class=Parser)
    both = [common, identity]
    checkpoint = sub.add_parser("checkpoint", help="record a seed-002 checkpoint document", parents=both,
                                description="Validate a checkpoint document (schemaVersion 2; 1 is read when it "
                                "cannot erase tracked work), refuse it when an invariant fails (exit 12, nothing "
                                "written), else record the changes it describes and remove the file.")
    checkpoint.add_argument("--file", metavar="PATH",
                            help="the document (default: .ai-bridge/context-checkpoint.json in the project root)")
    checkpoint.add_argument("--keep", action="store_true", help="keep the document after recording it")
    checkpoint.add_argument("--redact", action="store_true",
                            help="store secret-like text as [REDACTED:<rule>] instead of refusing")
    checkpoint.set_defaults(handler=_checkpoint)
    validate = sub.add_parser("validate", help="record a validation actually run, bound to HEAD and the worktree",
                              parents=both, description="Append an immutable validation ledger entry for a gate "
                              "actually run; the event records git HEAD and the worktree fingerprint, so `work "
                              "status` shows the entry STALE once either changes.")
    validate.add_argument("--id", required=True, dest="validation_id", metavar="ID", help="a new, immutable id")
    validate.add_argument("--kind", required=True, help="what kind of gate, e.g. unit-tests, lint")
    validate.add_argument("--result", required=True, choices=RESULTS, help="the outcome")
    validate.add_argument("--scope", required=True, help="what was validated")
    validate.add_argument("--summary", required=True, help="what happened, in a line")
    validate.add_argument("--command", dest="ran", metavar="COMMAND", help="the command run")
    validate.add_argument("--evidence", action="append", default=[], metavar="REF",
                          help="a log, report or artifact (repeatable)")
    validate.add_argument("--repository", metavar="ID", help="default: the newest checkpoint's repository")
    validate.add_argument("--redact", action="store_true",
                          help="store secret-like text as [REDACTED:<rule>] instead of refusing")
    validate.set_defaults(handler=_validate)
    resolve = sub.add_parser("resolve", help="resolve conflicts a merge recorded, saying why", parents=both,
                             description="Resolve recorded merge conflicts (a validation id reused, a workstream "
                             "or item added twice, a status changed from a stale status) by their ids, as `work "
                             "status` lists them: an event records who resolved what and why; `work status` and "
                             "`verify` stop failing on them and still show them, resolved. A broken state (two "
                             "active workstreams, a cycle, work left in an ended workstream) has no id: fix the "
                             "state. A tracked checkpoint resolves its workstream's recorded conflicts too.")
    resolve.add_argument("problem_ids", nargs="*", metavar="PROBLEM", help="a problem id (P-...)")
    resolve.add_argument("--all", action="store_true", dest="every", help="every open recorded conflict")
    resolve.add_argument("--workstream", metavar="ID", help="with --all: only this workstream's")
    resolve.add_argument("--reason", required=True, help="why they are resolved (recorded)")
    resolve.set_defaults(handler=_resolve)
    _register_item(sub, both)
    from continuity.cli import work_lifecycle, work_transfer

    work_lifecycle.register(sub, both)
    work_transfer.register(sub, both)
    cursor = sub.add_parser("cursor", help="move the execution cursor", parents=[common])
    cursor_sub = cursor.add_subparsers(title="cursor commands", metavar="ACTION", parser_class=Parser)
    cursor_set = cursor_sub.add_parser("set", help="set cursor fields (others stay; \"\" clears one)", parents=both,
                                       description="Move the active workstream's cursor. Fields not given stay as "
                                       "they are; an empty value clears a field (not the next action).")
    cursor_set.add_argument("--next-action", metavar="TEXT", help="the exact next action")
    cursor_set.add_argument("--current-item", metavar="ITEM", help="the item being worked on")
    cursor_set.add_argument("--last-completed-item", metavar="ITEM", help="the item completed last")
    cursor_set.add_argument("--phase", metavar="TEXT", help="the phase of the work")
    cursor_set.add_argument("--last-completed-action", metavar="TEXT", help="the action completed last")
    cursor_set.add_argument("--workstream", metavar="ID", help="the workstream (default: the active one)")
    cursor_set.set_defaults(handler=_cursor_set)
    cursor.set_defaults(handler=lambda args, out: _missing("work cursor", "set"))
    parser.set_defaults(handler=lambda args, out: _missing(
        "work", "start, status, checkpoint, audit, export, import, reconnect, validate, resolve, item or cursor"))


def _register_item(sub: Any, both: list[argparse.ArgumentParser]) -> None:
    item = sub.add_parser("item", help="add, change and show work items", parents=[both[0]])
    item_sub = item.add_subparsers(title="item commands", metavar="ACTION", parser_class=Parser)
    add = item_sub.add_parser("add", help="add a work item to the active workstream", parents=both,
                              description="Add a work item; refused (exit 12) when it would break an invariant.")
    add.add_argument("item_id", metavar="ITEM")
    add.add_argument("--title", required=True, help="one line saying what the item is")
    add.add_argument("--status", choices=ITEM_STATUSES, default="PENDING", help="default PENDING")
    add.add_argument("--priority", choices=PRIORITIES, default="MEDIUM", help="default MEDIUM")
    _list_flags(add, replaces=False)
    set_ = item_sub.add_parser("set", help="change a work item's status or fields", parents=both,
                               description="Change a work item. Terminal items (COMPLETED, CANCELLED, SUPERSEDED) "
                               "are reopened only with --reopen. A list flag replaces that list.")
    set_.add_argument("item_id", metavar="ITEM")
    set_.add_argument("--status", choices=ITEM_STATUSES, help="the new status")
    set_.add_argument("--reopen", action="store_true", help="reopen a terminal item to --status")
    set_.add_argument("--title", help="a new title")
    set_.add_argument("--priority", choices=PRIORITIES, help="a new priority")
    _list_flags(set_, replaces=True)
    show = item_sub.add_parser("show", help="one work item, whole", parents=both)
    show.add_argument("item_id", metavar="ITEM")
    show.add_argument("--workstream", metavar="ID", help="the workstream (default: the active one)")
    show.add_argument("--as-of", metavar="EVENT_ID|ISO_TIME", help="as the log stood at this point")
    show.set_defaults(handler=_item_show)
    add.set_defaults(handler=_item_add)
    set_.set_defaults(handler=_item_set)
    item.set_defaults(handler=lambda args, out: _missing("work item", "add, set or show"))


def _list_flags(parser: argparse.ArgumentParser, *, replaces: bool) -> None:
    suffix = ' (repeatable; replaces the list; "" alone clears it)' if replaces else " (repeatable)"
    parser.add_argument("--scope", action="append", metavar="TEXT", help="what the item covers" + suffix)
    parser.add_argument("--accept", action="append", metavar="TEXT", help="an acceptance criterion" + suffix)
    parser.add_argument("--depends-on", action="append", metavar="ITEM", help="an item this one needs first" + suffix)
    parser.add_argument("--blocked-by", action="append", metavar="ITEM", help="an item blocking this one" + suffix)
    parser.add_argument("--requires", action="append", metavar="TEXT", help="a validation requirement" + suffix)
    parser.add_argument("--note", action="append", metavar="TEXT", help="a note" + suffix)
    parser.add_argument("--workstream", metavar="ID", help="the workstream (default: the active one)")
    parser.add_argument("--redact", action="store_true",
                        help="store secret-like text as [REDACTED:<rule>] instead of refusing")


def _missing(command: str, actions: str) -> int:
    from continuity.core.errors import UsageError

    raise UsageError(f"{command}: choose an action: {actions} (see --help)")


def _who(args: argparse.Namespace, store: Any) -> Any:
    from continuity.cli.common import identity_from

    return identity_from(args, store)


def _written(out: Output, store: Any, action: str, stored: list[Any], data: dict[str, Any], text: str,
             warnings: list[str]) -> int:
    from continuity.cli.output import warn
    from continuity.workstreams.service import after_write

    warnings = warnings + after_write(store)
    warn(warnings)
    out.emit({"ok": True, "action": action, **data, "events": [item.event.kind for item in stored],
              "event_ids": [item.event_id for item in stored], "warnings": warnings}, text)
    return 0


def _checkpoint(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.workstreams import decide, document, service

    if args.file == "":  # `--file "$DOC"` with DOC unset: never the default document, read and then removed
        from continuity.core.errors import UsageError

        raise UsageError("--file is empty: name the checkpoint document, or leave --file out for "
                         f"{document.DEFAULT_PATH}")
    store = open_store(args)
    if args.file:  # a path the user named: theirs to point anywhere
        path = os.path.abspath(args.file)
    else:  # read, then removed: never through a link planted in the project (.ai-bridge -> elsewhere)
        from continuity.core.fsio import check_folder

        root = os.path.realpath(store.root)  # the root may be reached through the user's own link
        path = os.path.join(root, *document.DEFAULT_PATH.split("/"))
        check_folder(root, os.path.dirname(path))
    raw = document.read_bytes(path, follow=bool(args.file))
    doc = document.parse(raw, f"checkpoint document {path}")
    who = _who(args, store)
    facts = service.checkpoint_facts(store, bind=bool(getattr(getattr(doc, "continuity", None),
                                                              "validation_ledger", ())),
                                     leaving=None if args.keep else path)
    stored, warnings = service.record(store, who, lambda state: decide.decide_checkpoint(state, who, doc, facts),
                                      redact=args.redact, facts=facts)
    removed = None
    if not args.keep:
        try:
            removed = _remove_recorded(path, raw, follow=bool(args.file))
        except _Changed:  # rewritten while this one was recorded: the new one is the next checkpoint
            warn([f"checkpoint recorded, but {path} changed meanwhile: it was left in place (record it with "
                  "`continuity work checkpoint`)"])
        except OSError as error:
            warn([f"checkpoint recorded, but {path} was not removed: {error.strerror or error}"])
    ws_id = getattr(stored[-1].event, "workstream_id", None)
    kinds = [item.event.kind for item in stored]
    text = f"checkpoint recorded{f' for workstream {ws_id}' if ws_id else ''}: {len(stored)} event(s) " \
           f"({', '.join(dict.fromkeys(kinds))})"
    acknowledged = list(getattr(stored[-1].event, "acknowledged", ()))
    if acknowledged:
        text += f"; it resolves the merge problem(s) of {ws_id} it was decided with: {', '.join(acknowledged)}"
    return _written(out, store, "work-checkpoint", stored, {"workstream_id": ws_id, "removed": removed,
                                                            "resolved": acknowledged}, text, warnings)


class _Changed(Exception):
    """The document was rewritten after it was read: it is not the one recorded."""


def _remove_recorded(path: str, raw: bytes, *, follow: bool) -> str | None:
    """Remove the document if it still holds `raw` (the bytes recorded); its path, or None when it is gone.

    It is moved aside first, then compared: a document the agent writes meanwhile lands at the path
    and is never the one removed. One that differs is put back (unless a newer one is there already).
    """
    from continuity.core.fsio import move_aside
    from events import osfs

    aside = move_aside(path)  # a link the user named (--file) moves as a link, and is removed as before
    if aside is None:
        return None
    try:
        same = osfs.read_regular(aside, follow=follow, limit=len(raw) + 1) == raw
    except OSError:
        same = False
    if same:
        os.unlink(aside)
        return path
    with contextlib.suppress(FileExistsError):  # back, unless a newer document took the name meanwhile
        osfs.link(aside, path)
    os.unlink(aside)
    raise _Changed


def _validate(args: argparse.Namespace, out: Output) -> int:
    from continuity.core.store import now_us
    from continuity.workstreams import decide, service
    from events import clock
    from events.workstream import ValidationEntry

    store = open_store(args)
    who = _who(args, store)
    entry = ValidationEntry(id=args.validation_id, kind=args.kind, result=args.result,
                            repository=args.repository or "", scope=args.scope, summary=args.summary,
                            timestamp=clock.iso(now_us()), command=args.ran, evidence_refs=tuple(args.evidence))
    facts = service.checkpoint_facts(store, bind=True)  # HEAD, fingerprint and membership
    stored, warnings = service.record(store, who, lambda state: decide.decide_validate(state, who, entry, facts),
                                      redact=args.redact, facts=facts)
    event: Any = stored[0].event
    if facts.fingerprint is None:
        warnings = [*warnings, f"{facts.worktree_problem or 'not in a git worktree'}: the entry is not bound to a "
                    "HEAD or fingerprint (UNBOUND)"]
    elif event.fingerprint is None:
        warnings = [*warnings, f"evidence about repository {event.entries[0].repository}, not this clone's "
                    f"({facts.repository}): recorded unbound; its freshness is judged in that repository's clone"]
    return _written(out, store, "work-validate", stored, {"validation_id": args.validation_id, "head": event.head,
                                                          "fingerprint": event.fingerprint},
                    f"{args.validation_id}: {args.result} recorded at {(event.head or '-')[:12]}", warnings)


def _resolve(args: argparse.Namespace, out: Output) -> int:
    from continuity.workstreams import decide, service

    store = open_store(args)
    who = _who(args, store)
    stored, warnings = service.record(store, who, lambda state: decide.decide_resolve(
        state, who, args.problem_ids, args.reason, every=args.every, workstream_id=args.workstream))
    resolved = [problem_id for item in stored for problem_id in getattr(item.event, "problem_ids", ())]
    return _written(out, store, "work-resolve", stored, {"resolved": resolved, "reason": args.reason},
                    f"resolved {len(resolved)} problem(s): {', '.join(resolved)}", warnings)


def _item_fields(args: argparse.Namespace, *, clears: bool = False) -> dict[str, Any]:
    """The list flags given; with `clears` (item set), a flag given once as "" sets an empty list."""
    from continuity.core.errors import UsageError

    fields: dict[str, Any] = {}
    for flag, field in LIST_FLAGS.items():
        values = getattr(args, flag)
        if values is None:
            continue
        if clears and "" in values:
            if len(values) > 1:
                raise UsageError(f"--{flag.replace('_', '-')} \"\" clears the list: give it alone")
            values = []
        fields[field] = tuple(values)
    return fields


def _item_add(args: argparse.Namespace, out: Output) -> int:
    from continuity.workstreams import decide, service
    from events.workstream import WorkItemData

    store = open_store(args)
    who = _who(args, store)
    item = WorkItemData(id=args.item_id, title=args.title, status=args.status, priority=args.priority,
                        **_item_fields(args))
    stored, warnings = service.record(
        store, who, lambda state: decide.decide_item_add(state, who, item, args.workstream), redact=args.redact)
    ws_id = getattr(stored[0].event, "workstream_id", None)
    return _written(out, store, "work-item-add", stored, {"workstream_id": ws_id, "item_id": args.item_id,
                                                          "status": args.status},
                    f"{args.item_id} added to {ws_id} [{args.status}]", warnings)


def _item_set(args: argparse.Namespace, out: Output) -> int:
    from continuity.workstreams import decide, service

    store = open_store(args)
    who = _who(args, store)
    request = decide.ItemSet(item_id=args.item_id, workstream_id=args.workstream, status=args.status,
                             reopen=args.reopen, title=args.title, priority=args.priority,
                             **_item_fields(args, clears=True))
    stored, warnings = service.record(store, who, lambda state: decide.decide_item_set(state, who, request),
                                      redact=args.redact)
    changes = [change for item in stored for change in getattr(item.event, "changes", ())]
    text = f"{args.item_id}: {changes[0].from_status} -> {changes[0].status}" if changes else f"{args.item_id}: updated"
    return _written(out, store, "work-item-set", stored,
                    {"workstream_id": getattr(stored[0].event, "workstream_id", None), "item_id": args.item_id},
                    text, warnings)


def _cursor_set(args: argparse.Namespace, out: Output) -> int:
    from continuity.workstreams import decide, service

    store = open_store(args)
    who = _who(args, store)
    request = decide.CursorSet(workstream_id=args.workstream, current_item_id=args.current_item,
                               last_completed_item_id=args.last_completed_item, phase=args.phase,
                               last_completed_action=args.last_completed_action, next_action=args.next_action)
    stored, warnings = service.record(store, who, lambda state: decide.decide_cursor_set(state, who, request))
    event: Any = stored[0].event
    return _written(out, store, "work-cursor-set", stored, {"workstream_id": event.workstream_id,
                                                            "cursor": _builtins(event.cursor)},
                    f"cursor of {event.workstream_id}: next {one_line(event.cursor.next_action)}", warnings)


def _builtins(value: Any) -> Any:
    import msgspec

    return msgspec.to_builtins(value)


def _read(args: argparse.Namespace) -> tuple[Any, str, Any, list[str]]:
    from continuity.cli.output import warn
    from continuity.workstreams.service import workstreams_state

    store = open_store(args)
    project, said = project_to_read(args, store)
    state, warnings, _ = workstreams_state(store, project, as_of=args.as_of)
    warnings = [*said, *warnings]
    warn(warnings)
    return store, project, state, warnings


def _item_show(args: argparse.Namespace, out: Output) -> int:
    from continuity.core.errors import WorkNotFound
    from continuity.workstreams.documents import item_document
    from projections.workstreams import active

    _, _, state, warnings = _read(args)
    ws = state.workstreams.get(args.workstream) if args.workstream else active(state)
    if ws is None:
        raise WorkNotFound(f"unknown workstream {args.workstream!r}" if args.workstream else "no active workstream")
    item = ws.items.get(args.item_id)
    if item is None:
        raise WorkNotFound(f"unknown work item {args.item_id!r} in workstream {ws.id}")
    data = item_document(item) | {"workstreamId": ws.id, "addedAt": item.added_at, "updatedAt": item.updated_at}
    lines = [f"{item.id} [{item.status}] ({item.priority}) {item.title}"]
    lines += [f"  {key}: {', '.join(value) if isinstance(value, list) else value}" for key, value in data.items()
              if key not in ("id", "status", "priority", "title") and value not in (None, "", [])]
    out.emit({"ok": True, "item": data, "warnings": warnings}, "\n".join(one_line(line) for line in lines))
    return 0
