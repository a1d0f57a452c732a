"""`runtime-continuity <mode> ...`: seed 004's CLI contract over continuity's log and projections.

Every mode prints one pretty JSON object on stdout. Failures are
`{"ok": false, "error": <code>, "message": <text>}` with exit 2; no traceback ever
reaches the user. Agents and hooks written for seed 004's CLI switch without a change.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from continuity.adapters.compat import assess, contexts, reads, writes
from continuity.adapters.compat.args import Args, parse
from continuity.adapters.compat.common import PROGRAM, Failure, warn

EXIT_FAILURE = 2
GATES = ("user", "agent")

Handler = Callable[[Args, str | None], dict[str, Any]]

MODES: dict[str, Handler] = {
    "warm": writes.warm,
    "status": reads.status,
    "log": partial(writes.work, checkpoint=False),
    "checkpoint": partial(writes.work, checkpoint=True),
    "archive": writes.archive,
    "host-switch": writes.host_switch,
    "restore": reads.restore,
    "resume-bundle": reads.resume_bundle,
    "list-contexts": contexts.list_contexts,
    "assess": assess.assess,
}

#: The contract's code when continuity refuses a write (a secret, an invalid field, a full
#: disk). Seed 004 names codes for archive and host-switch only; `write_failed` is ours for
#: log, checkpoint and warm --auto, and reads that cannot answer say `read_failed`.
WRITE_FAILURES = {
    "log": "write_failed",
    "checkpoint": "write_failed",
    "warm": "write_failed",
    "archive": "archive_failed",
    "host-switch": "host_switch_archive_failed",
}


def _needs_project(mode: str, args: Args) -> bool:
    return not (mode == "list-contexts" or (mode == "warm" and not args.switch("auto")))


def _needs_gate(mode: str, args: Args) -> bool:
    if mode == "restore":
        return not (args.switch("auto") or args.switch("list"))
    return mode in ("log", "checkpoint", "archive", "host-switch", "assess")


def _check_project(project: str) -> None:
    from continuity.core.errors import UsageError
    from continuity.core.store import check_project_name

    try:
        check_project_name(project)
    except UsageError as error:
        raise Failure("invalid_arguments", str(error).replace("project name", "--project")) from None


def dispatch(args: Args) -> dict[str, Any]:
    """Apply the contract's checks in its order (project, mode, gate), then run the mode."""
    mode = args.mode or ""
    project = args.given("project")
    if _needs_project(mode, args):
        if project is None:
            raise Failure("missing_project", "--project is required")
        _check_project(project)
    if mode not in MODES:
        raise Failure("unknown_command", f"unknown command {mode!r}; use one of: {', '.join(MODES)}")
    if _needs_gate(mode, args) and args.given("gate") not in GATES:
        raise Failure("workflow_gate_required", f"--gate must be one of: {', '.join(GATES)}")
    return MODES[mode](args, project)


def usage() -> dict[str, Any]:
    """`--help`: the modes and the flags every mode shares."""
    return {"ok": True, "action": "help", "usage": f"{PROGRAM} <mode> --project <name> [--gate user|agent] ...",
            "modes": list(MODES)}


def _emit(data: dict[str, Any]) -> None:
    import orjson

    try:
        payload = orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"
    except TypeError:  # text orjson refuses (lone surrogates): escape it rather than fail
        payload = (json.dumps(data, indent=2, ensure_ascii=True, default=str) + "\n").encode()
    sys.stdout.buffer.write(payload)
    sys.stdout.flush()


def _failure(code: str, message: str) -> int:
    _emit({"ok": False, "error": code, "message": " ".join(message.split())})
    return EXIT_FAILURE


def main(argv: Sequence[str] | None = None) -> int:
    """Run one mode; returns the exit code (0, or 2 on any failure)."""
    from continuity.core.errors import UsageError
    from continuity.core.guard import first_non_utf8, guarded
    from events.errors import ContinuityError

    argv_list = list(sys.argv[1:] if argv is None else argv)
    modes = [""]

    def body() -> int:
        try:
            bad = first_non_utf8(argv_list)
            if bad is not None:
                raise Failure("invalid_arguments", f"argument {bad} is not valid UTF-8")
            args = parse(argv_list)
            modes.append(args.mode or "")
            if args.switch("help") or modes[-1] == "help":
                _emit(usage())
                return 0
            warn([f"ignoring unknown argument {item}" for item in args.unknown])
            _emit(dispatch(args))
            return 0
        except Failure as failure:
            return _failure(failure.code, failure.message)

    def on_error(error: ContinuityError) -> int:
        if modes[-1] in WRITE_FAILURES:
            return _failure(WRITE_FAILURES[modes[-1]], str(error))
        return _failure("invalid_arguments" if isinstance(error, UsageError) else "read_failed", str(error))

    def on_internal(error: Exception) -> int:  # a JSON failure, never a traceback
        return _failure("internal_error", f"{type(error).__name__}: {error}")

    return guarded(body, on_error=on_error, on_internal=on_internal)


def run() -> None:
    """Console-script entry point."""
    from continuity.core.guard import exit_with

    exit_with(main)


if __name__ == "__main__":
    run()
