"""`continuity snapshot` on the plain append path: no argparse, no msgspec.

`run(argv)` handles the argument vectors it reads exactly as argparse does (every flag of
cli/team.py spelled out in full, `--flag value` or `--flag=value`, the three positionals),
appends through events/plain.py and writes the snapshot's documents as the team read model
would. Anything else (an abbreviated or unknown flag, a value starting with `-`, `--help`,
`--log-level`, an input the plain path cannot vouch for) returns None before anything is
written, and the argparse command gives the answer of record. When the team has a
checkpoint-channel config, the moment is emitted by the typed code (continuity/moments/).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SWITCHES = {"--json": "json", "--debug": "debug"}
_SINGLE = {"--root": "root", "--objective": "objective", "--context-percent": "context_percent",
           "--transcript": "transcript"}
_REPEATED = {"--decision": "decision", "--next": "next", "--open-question": "open_question",
             "--artifact": "artifact"}


def parse(argv: list[str]) -> dict[str, Any] | None:
    """The options of a `snapshot` argument vector, as argparse's namespace would hold them; else None."""
    from continuity.cli.plain_args import read

    found = read(argv, ("snapshot",), _SWITCHES, _SINGLE, _REPEATED)
    if found is None:
        return None
    _, options, positionals = found
    if len(positionals) != 3 or options["objective"] is None:
        return None
    options["team"], options["agent"], options["task"] = positionals
    percent = options["context_percent"]
    if percent is not None:
        if not (0 < len(percent) <= 3 and percent.isascii() and percent.isdigit() and int(percent) <= 100):
            return None
        options["context_percent"] = int(percent)
    return options


def run(argv: list[str]) -> int | None:
    """Append the snapshot `argv` asks for, write its documents, print as `snapshot` does; None: argparse decides.

    Errors of the append itself are raised as the msgspec path raises them, except a failed
    write, which says nothing was saved with seed 000's exit code, as cli/team.py does.
    """
    try:
        decided = _decide(argv)
    except Exception:  # plain.Unsure, or anything unforeseen: the argparse path decides (nothing was written)
        return None
    if decided is None:
        return None
    options, store, tree, who = decided
    from continuity.core.store import now_us
    from events import plain
    from events.errors import ContinuityError, StoreUnsafe, WriteFailed

    try:
        sealed = plain.append(store.open_folder(), store.node(), now_us, [tree])[0]
    except (WriteFailed, StoreUnsafe) as error:  # seed 000: a snapshot that cannot be made durable is exit 3
        from continuity.cli.output import Output

        Output(as_json=options["json"]).error(f"snapshot: nothing was saved ({error})", 3)
        return 3
    event = sealed.tree
    warnings = []
    try:
        from continuity.team.plain import write_documents

        write_documents(store.path, event)
    except (OSError, ValueError, ContinuityError) as error:  # a derived file (an unsafe folder too): the next
        # read writes it (fail open); the snapshot is saved, so this is a warning and exit 0, as the typed path says
        from continuity.core.fsio import reason_of

        warnings.append(f"team documents not written: {reason_of(error, store.path)}")
    warnings.extend(_emit(store, who, sealed))
    if warnings:
        from continuity.cli.output import warn

        warn(warnings)
    _report(options, event)
    return 0


def _decide(argv: list[str]) -> tuple[dict[str, Any], Any, dict[str, Any], dict[str, Any]] | None:
    options = parse(argv)
    if options is None:
        return None
    from continuity.core.idfields import resolve_fields
    from continuity.core.store import find_store, now_us
    from continuity.team.plain import snapshot_event
    from events import plain

    store = find_store(root=options["root"])
    who = resolve_fields(store.project, {"agent_id": options["agent"]})
    request = {"team": options["team"], "agent": options["agent"], "task": options["task"],
               "objective": options["objective"], "decisions": tuple(options["decision"]),
               "next_actions": tuple(options["next"]), "open_questions": tuple(options["open_question"]),
               "artifacts": tuple(options["artifact"]), "context_used_percent": options["context_percent"],
               "transcript_path": options["transcript"]}
    return options, store, plain.prepare(snapshot_event(request, who, now_us())), who


def _emit(store: Any, who: dict[str, Any], sealed: Any) -> list[str]:
    """The checkpoint moment: nothing to do (and nothing imported) unless the team's channel config exists."""
    from continuity.moments.paths import config_relpath

    path = store.path
    for part in config_relpath(sealed.tree["team"]).split("/"):
        path = os.path.join(path, part)
        if os.path.islink(path):  # a link on the way, dangling or not: the channel's reader says it is unreadable
            break
        if not os.path.lexists(path):
            return []
    from continuity.core.identity import Identity
    from continuity.moments.deliver import emit_after_save
    from events.sealing import StoredEvent

    stored = StoredEvent(sealed.name, sealed.raw, store.open_log().codec.decode(sealed.raw))
    return emit_after_save(store, Identity(**who), [stored])


def _report(options: dict[str, Any], event: dict[str, Any]) -> None:
    """Print what `snapshot` prints (cli/team.py), as text or JSON."""
    from continuity.team.plain import checkpoint_id, snapshot_relpath

    if options["json"]:
        import orjson  # the same serializer as cli/output.Output.emit: the same bytes

        from continuity.core.text import escape_json_bytes

        data = {"ok": True, "action": "snapshot", "checkpoint_id": checkpoint_id(event),
                "event_id": event["event_id"], "path": snapshot_relpath(event["team"], event["agent"], event["task"])}
        sys.stdout.buffer.write(escape_json_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2)) + b"\n")
    else:
        sys.stdout.write(f"snapshot {checkpoint_id(event)}\n")
    sys.stdout.flush()
