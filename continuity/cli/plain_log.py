"""`continuity log` and `continuity checkpoint` on the plain append path: no argparse, no msgspec.

`run(argv)` handles the argument vectors it reads exactly as argparse does (every flag
of cli/worklog.py spelled out in full, `--flag value` or `--flag=value`, at most one
positional text) and appends through events/plain.py. Anything else (an abbreviated
or unknown flag, `-mTEXT`, a value starting with `-`, `--note-json`, `--log-level`,
`--help`, an input the plain path cannot vouch for) returns None before anything is
written, and the argparse command runs and gives the answer of record. A Hypothesis
property holds the parse to argparse's and the written bytes to the msgspec path's.
"""

from __future__ import annotations

import sys

from continuity.worklog.plain import EXIT_CODE_MAX, EXIT_CODE_MIN, REQUEST_DEFAULTS, work_event

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SWITCHES = {"--json": "json", "--debug": "debug", "--redact": "redact"}
_SINGLE = {
    "--root": "root", "--project": "project", "--host": "host", "--agent": "agent", "--session": "session",
    "--run": "run", "--task": "task", "--mission": "mission", "-m": "message", "--message": "message",
    "--type": "type", "--phase": "phase", "--in-progress": "in_progress", "--command": "command",
    "--exit-code": "exit_code", "--command-summary": "command_summary",
}
_REPEATED = {"--done": "done", "--next": "next", "--blocker": "blocker", "--file": "file",
             "--artifact": "artifact", "--handoff": "handoff"}


def parse(argv: list[str]) -> dict[str, Any] | None:
    """The options of a `log`/`checkpoint` argument vector, as argparse's namespace would hold them; else None."""
    from continuity.cli.plain_args import read

    found = read(argv, ("log", "checkpoint"), _SWITCHES, _SINGLE, _REPEATED, _exit_code_value)
    if found is None:
        return None
    command, options, positionals = found
    if len(positionals) > 1:
        return None
    options["command_name"] = command
    options["text"] = positionals[0] if positionals else None
    if options["exit_code"] is not None:
        code = options["exit_code"]
        if not _is_ascii_int(code) or not EXIT_CODE_MIN <= int(code) <= EXIT_CODE_MAX:
            return None
        options["exit_code"] = int(code)
    return options


def _exit_code_value(flag: str, arg: str) -> bool:
    return flag == "--exit-code" and arg.startswith("-") and _is_ascii_int(arg)


def _is_ascii_int(text: str) -> bool:
    digits = text[1:] if text.startswith("-") else text
    return 0 < len(digits) <= 10 and digits.isascii() and digits.isdigit()


def run(argv: list[str]) -> int | None:
    """Append the entry `argv` asks for and print what was written; None when argparse must handle it.

    Errors of the append itself (the store not writable, unsafe, ...) are raised as the
    msgspec path raises them; the CLI's guard prints them.
    """
    try:
        decided = _decide(argv)
    except Exception:  # plain.Unsure, or anything unforeseen: the argparse path decides (nothing was written)
        return None
    if decided is None:
        return None
    options, store, tree = decided
    from continuity.core.store import now_us
    from events import plain

    sealed = plain.append(store.open_folder(), store.node(), now_us, [tree])[0]
    _report(options, sealed.name, sealed.tree)
    return 0


def _decide(argv: list[str]) -> tuple[dict[str, Any], Any, dict[str, Any]] | None:
    options = parse(argv)
    if options is None:
        return None
    if options["text"] is not None and options["message"] is not None:
        return None  # "give the message once": argparse's path says it
    request = dict(REQUEST_DEFAULTS)
    request.update(
        message=options["message"] if options["message"] is not None else (options["text"] or ""),
        type=options["type"], phase=options["phase"], done=tuple(options["done"]),
        in_progress=options["in_progress"], next=tuple(options["next"]), blockers=tuple(options["blocker"]),
        files=tuple(options["file"]), artifacts=tuple(options["artifact"]), handoffs=tuple(options["handoff"]),
        command=options["command"], exit_code=options["exit_code"], command_summary=options["command_summary"],
    )
    from continuity.core.idfields import resolve_fields
    from continuity.core.store import check_project_name, find_store
    from continuity.tasks.current import current_run_changes
    from events import plain

    store = find_store(root=options["root"])
    if request["files"]:  # from the project root, as a hook records them (hook_entries.project_paths)
        from continuity.adapters.hook_entries import project_paths, shell_folder

        request["files"] = project_paths(request["files"], store.root, shell_folder())
    if options["project"] is not None:  # `--project ""` refused as argparse's path refuses it
        check_project_name(options["project"])
    flags = {"project": options["project"], "host": options["host"], "agent_id": options["agent"],
             "session_id": options["session"], "run_id": options["run"], "task_id": options["task"],
             "mission_id": options["mission"]}
    who = resolve_fields("" if flags["project"] else store.project, flags)
    who.update(current_run_changes(who["run_id"], who["session_id"], who["task_id"], store.local_dir))
    tree = work_event(request, who, checkpoint=options["command_name"] == "checkpoint")
    return options, store, plain.prepare(tree)


def _report(options: dict[str, Any], name: str, event: dict[str, Any]) -> None:
    """Print what the append wrote, as cli/worklog.report_written does (nothing was redacted here)."""
    from continuity.core.paths import event_relpath

    action = options["command_name"]
    relative = event_relpath(name)
    if options["json"]:
        import orjson  # the same serializer as cli/output.Output.emit: the same bytes

        from continuity.core.text import escape_json_bytes

        data = {"ok": True, "action": action, "event_id": event["event_id"], "event_path": relative, "event": event}
        sys.stdout.buffer.write(escape_json_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2)) + b"\n")
    else:
        sys.stdout.write(f"{action}: {event['event_id']} -> {relative}\n")
    sys.stdout.flush()
