"""The `continuity` command line: parse, call, print. `main(argv) -> int` runs in-process."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence

from continuity.cli.output import Output


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code and never lets a traceback reach the user."""
    from continuity.core.errors import EXIT_INTERNAL, EXIT_USAGE, UsageError, exit_code_of
    from events.errors import ContinuityError

    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    as_json = "--json" in args_list
    out = Output(as_json=as_json)
    try:
        for index, arg in enumerate(args_list):
            try:
                arg.encode("utf-8")
            except UnicodeEncodeError:
                raise UsageError(f"argument {index + 1} is not valid UTF-8") from None
        fast = _hook_fast_path(args_list)
        if fast is not None:
            return fast
        from continuity.cli.common import build_parser

        parser = build_parser(args_list)
        try:
            args = parser.parse_args(args_list)
        except SystemExit as stop:  # --help, --version
            return stop.code if isinstance(stop.code, int) else EXIT_USAGE
        out = Output(as_json=bool(getattr(args, "json", False)))
        level = getattr(args, "log_level", None)
        if level:
            from continuity.core.logs import configure

            configure(level)
        handler = getattr(args, "handler", None)
        if handler is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        code: int = handler(args, out)
        return code
    except ContinuityError as error:
        code = exit_code_of(error)
        out.error(str(error), code)
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as error:  # the last line of defence: one line, not a traceback
        if debug:
            raise
        out.error(f"internal error: {type(error).__name__}: {error} (rerun with --debug)", EXIT_INTERNAL)
        return EXIT_INTERNAL


def _hook_fast_path(args: list[str]) -> int | None:
    """`hook <harness> [--root DIR]` runs many times a session: skip argparse (and what it imports)."""
    if len(args) not in (2, 4) or args[0] != "hook" or args[1] not in ("claude-code", "codex"):
        return None
    root = None
    if len(args) == 4:
        if args[2] != "--root":
            return None
        root = args[3]
    from continuity.adapters.hooks import handle

    return handle(args[1], root)


def run() -> None:
    """Console-script entry point."""
    code = main()
    with contextlib.suppress(BrokenPipeError):
        sys.stdout.flush()
    sys.exit(code)
