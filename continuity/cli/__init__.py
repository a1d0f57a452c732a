"""The `continuity` command line: parse, call, print. `main(argv) -> int` runs in-process."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from continuity.cli.output import Output
from events.errors import ContinuityError, SecretRefused

#: The most arguments a command line may hold: twice the longest a command takes (a checkpoint with every list
#: full: three path lists of 1,024 and three text lists of 256, 7,683 arguments); argparse's time grows with the
#: square of the count (1.7 s at 16,000, a minute at 100,000).
MAX_ARGUMENTS = 16384


def _flag_given(args: list[str], flag: str, shortest: int) -> bool:
    """Whether `flag` is on the command line before any `--`, spelt whole or as the abbreviation argparse takes
    (`--jso`; `shortest`: the fewest characters no other option of any command shares), for errors met before the
    parser or inside it: `--jso` had JSON on success and a bare line on a usage error."""
    for arg in args:
        if arg == "--":
            return False
        if len(arg) >= shortest and flag.startswith(arg):
            return True
    return False


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code and never lets a traceback reach the user."""
    from continuity.core.errors import EXIT_INTERNAL, EXIT_USAGE, UsageError, noting_unread, unread_instead
    from continuity.core.guard import broken_install, first_non_utf8, guarded

    args_list = list(sys.argv[1:] if argv is None else argv)
    outputs = [Output(as_json=_flag_given(args_list, "--json", 3))]
    unread = noting_unread()

    def on_error(error: ContinuityError) -> int:
        error = unread_instead(error, unread)
        outputs[-1].error(str(error), error.exit_code)
        return error.exit_code

    def on_internal(error: Exception) -> int:
        outputs[-1].error(broken_install(error) or f"internal error: {type(error).__name__}: {error} (rerun with "
                          "--debug)", EXIT_INTERNAL)
        return EXIT_INTERNAL

    def body() -> int:
        bad = first_non_utf8(args_list)
        if bad is not None and args_list[:1] in (["briefing"], ["resume"]):
            # reads that fail open (briefing always exits 0): such a name is one no event holds, as `../x` is
            args_list[:] = [arg.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for arg in args_list]
        elif bad is not None:
            raise UsageError(f"argument {bad} is not valid UTF-8")
        if len(args_list) > MAX_ARGUMENTS and args_list[:1] != ["hook"]:  # a hook reads no argument past --root
            raise UsageError(f"{len(args_list)} arguments: at most {MAX_ARGUMENTS} (no command takes half as many)")
        if args_list == ["--version"]:  # asked by doctor and scripts: no command tree to build
            from continuity import package_version

            sys.stdout.write(f"continuity {package_version()}\n")
            return 0
        fast = _hook_fast_path(args_list)
        if fast is None:
            fast = _log_fast_path(args_list)
        if fast is None:
            fast = _snapshot_fast_path(args_list)
        if fast is None and "recall" in args_list:
            from continuity.recall.plain import run as recall_fast

            fast = recall_fast(args_list)
        if fast is not None:
            return fast
        from continuity.cli.common import build_parser, command_after_separator

        args_list[:] = command_after_separator(args_list)
        parser = build_parser(args_list)
        try:
            args = parser.parse_args(args_list)
        except SystemExit as stop:  # --help, --version
            return stop.code if isinstance(stop.code, int) else EXIT_USAGE
        out = Output(as_json=bool(getattr(args, "json", False)))
        outputs.append(out)
        level = getattr(args, "log_level", None)
        if level:
            from continuity.core.logs import configure

            configure(level)
        handler = getattr(args, "handler", None)
        if handler is None:  # one line, as every usage error (and the --json failure shape): not the whole help
            raise UsageError("choose a command (`continuity --help` lists them)")
        # a name no event can carry: refused, never an empty answer (but a session start's rhythm is printed
        # whatever happens to its record: `warm --auto` says that one in a warning). Reads take any project an event
        # can carry; a write refuses, as it resolves who writes, a name continuity's own writes do not take.
        if getattr(args, "project", None) is not None and not (
                getattr(args, "records_start", False) and getattr(args, "auto", False)):
            from continuity.core.store import check_project_to_read

            check_project_to_read(args.project)
        try:
            code: int = handler(args, out)
        except SecretRefused as error:
            if hasattr(args, "redact"):
                raise
            # the command has no --redact (team snapshots, park, roles, messages): never point at one
            raise SecretRefused(error.field, error.rule, redactable=error.redactable, redact_with=None) from None
        return code

    return guarded(body, on_error=on_error, on_internal=on_internal, debug=_flag_given(args_list, "--debug", 5))


def _hook_fast_path(args: list[str]) -> int | None:
    """`hook <harness> [--root DIR]` runs many times a session: skip argparse (and what it imports)."""
    if len(args) not in (2, 4) or args[0] != "hook":
        return None
    from continuity.adapters.hook_dialects import HARNESSES

    if args[1] not in HARNESSES:
        return None
    root = None
    if len(args) == 4:
        if args[2] != "--root":
            return None
        root = args[3]
    from continuity.adapters.hook_fast import handle

    return handle(args[1], root)


def _snapshot_fast_path(args: list[str]) -> int | None:
    """`snapshot` as agents and scripts call it: the plain append path, when it can vouch for it."""
    if "snapshot" not in args:
        return None
    from continuity.cli.plain_snapshot import run

    return run(args)


def _log_fast_path(args: list[str]) -> int | None:
    """`log` and `checkpoint` as hooks and scripts call them: the plain append path, when it can vouch for them."""
    if "log" not in args and "checkpoint" not in args:
        return None
    if args[0] not in ("log", "checkpoint") and not args[0].startswith("-"):  # `work checkpoint`, `events log`...
        return None
    from continuity.cli.plain_log import run

    return run(args)


def run() -> None:
    """Console-script entry point: runs the command and ends the process (`main` returns the exit code)."""
    from continuity.core.guard import exit_with

    exit_with(main)
