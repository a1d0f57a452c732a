"""What every command shares: the parser, flag bundles and output."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from typing import Any

from continuity.cli.output import Output as Output  # re-exported for the command modules
from continuity.worklog.plain import EXIT_CODE_MAX as EXIT_CODE_MAX  # the bounds of a recorded exit code
from continuity.worklog.plain import EXIT_CODE_MIN as EXIT_CODE_MIN


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and a documented exit code."""

    def error(self, message: str) -> Any:
        """Raise instead of printing usage: the CLI prints one line."""
        from continuity.core.errors import UsageError

        # The line is printed after "continuity: error: "; a subcommand's name ("log: ...") says where.
        where = self.prog.removeprefix("continuity").strip()
        raise UsageError(f"{where + ': ' if where else ''}{message} (see --help)")

    def _parse_optional(self, arg_string: str) -> Any:
        # "-1h" (a negative duration) is a value, not an unknown flag: let it reach the checks
        # that give it the documented error. No flag of ours starts with a digit or a dot.
        if len(arg_string) > 1 and arg_string[0] == "-" and arg_string[1] in "0123456789.":
            return None
        return super()._parse_optional(arg_string)

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        # `--opt=--` gives `--` as the flag's value; argparse (3.11) takes that `--` for the end of the options,
        # strips it and hands the command an empty list, unchecked by the flag's type (an internal error later)
        if arg_strings == ["--"] and action.option_strings and action.nargs is None:
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse builds a formatter for every add_argument (to check metavars); without a
        # width it imports shutil to ask the terminal, which costs the hook path ~3 ms.
        # Only help text needs the real width (format_help asks for it).
        kind: Any = self.formatter_class
        formatter: argparse.HelpFormatter = kind(prog=self.prog, width=getattr(self, "_help_width", None) or 78)
        return formatter

    def format_help(self) -> str:
        """The help text at the terminal's width (COLUMNS wins, as in argparse)."""
        import shutil

        self._help_width = max(shutil.get_terminal_size().columns - 2, 11)
        return super().format_help()


#: The largest count any flag takes (--last, --limit, --lines): more than a log holds,
#: small enough for every C size the count reaches (a deque's maxlen is a ssize_t).
COUNT_MAX = 10**9


def out_of_range(text: str, low: int, high: int) -> str | None:
    """Why `text` is not an integer from `low` to `high` (one line), or None when it is one."""
    core = text.strip(" \t")
    digits = core[1:] if core.startswith("-") else core
    # ASCII digits only: not `٣`, `０`, `1_000` or `+5`, which int() takes too
    if digits.isascii() and digits.isdigit() and len(digits) <= 40 and low <= int(core) <= high:
        return None
    from events.problems import quoted

    return f"must be an integer from {low} to {high}, not {quoted(text, 32, redact=True)}"


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """An argparse `type`: an integer from `low` to `high`; anything else is a one-line usage error."""

    def parse(text: str) -> int:
        reason = out_of_range(text, low, high)
        if reason is not None:
            raise argparse.ArgumentTypeError(reason)
        return int(text.strip(" \t"))

    parse.__name__ = f"integer from {low} to {high}"
    return parse


def looked_up(what: str, *, name: bool = False) -> Callable[[str], str]:
    """An argparse `type` for the id of a `what` (task, run, memory) the command looks up: an id no event can carry
    (a path, a control character, too long) is a usage error (exit 2), any other is looked up (unknown: exit 7).
    `name`: the id goes into the event as a `Name` (a parent task or run), so it must be one."""
    from continuity.core.idfields import IDENT_RULE, is_ident, is_name
    from events.problems import NAME_RULE, quoted

    def parse(text: str) -> str:
        if not (is_name(text) if name else is_ident(text)):
            rule = NAME_RULE.removeprefix("is not a valid id: ") if name else IDENT_RULE
            raise argparse.ArgumentTypeError(f"{quoted(text, 40, redact=True)} is not a valid {what} id: {rule}")
        return text

    parse.__name__ = f"{what} id"
    return parse


def common_flags() -> argparse.ArgumentParser:
    """--json, --root and --debug, accepted before or after the command."""
    parent = Parser(add_help=False)
    parent.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print the result as JSON")
    parent.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS,
                        help="project root holding .agent/runtime-continuity (default: search upward)")
    parent.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show a traceback on internal errors")
    parent.add_argument("--log-level", choices=["debug", "info", "warning", "error"], default=argparse.SUPPRESS,
                        help="log to stderr at this level (human text on a terminal, JSON lines otherwise)")
    return parent


def add_time_window(parser: argparse.ArgumentParser) -> None:
    """--since and --until, as the commands that read a window of the log take them (recall.service.time_bound)."""
    parser.add_argument("--since", metavar="T", help="only events at or after T: an ISO time or a duration (7d, 12h)")
    parser.add_argument("--until", metavar="T", help="only events at or before T: an ISO time or a duration")


def identity_flags() -> argparse.ArgumentParser:
    """Who is writing: flags, else CONTINUITY_* environment variables."""
    parent = Parser(add_help=False)
    group = parent.add_argument_group("identity (flags override CONTINUITY_* environment)")
    group.add_argument("--project", help="project name (default: from config.json)")
    group.add_argument("--host", help="host tool: claude-code, codex, cursor, gemini, ... (env CONTINUITY_HOST)")
    group.add_argument("--agent", help="agent id (env CONTINUITY_AGENT)")
    group.add_argument("--session", help="session id (env CONTINUITY_SESSION_ID)")
    group.add_argument("--run", help="run id (env CONTINUITY_RUN_ID)")
    group.add_argument("--task", help="task id (env CONTINUITY_TASK_ID)")
    group.add_argument("--mission", help="mission id")
    return parent


def identity_from(args: argparse.Namespace, store: Any, project: str | None = None, *, names_only: bool = True,
                  current_run: bool = True) -> Any:
    """Identity from flags, else the CONTINUITY_* environment, else config.json's project.

    The store's project is read only when no --project is given (a broken config.json is
    then ConfigBroken); `project` overrides both (a read that already chose one). `current_run`: a session's
    current run fills in a run not named (not for a read as of a point: that hint is about now).
    """
    from continuity.core.identity import resolve_identity

    if args.project and not project:  # continuity's own names (runtime-continuity accepts more, contract I4)
        from continuity.core.store import check_project_name

        check_project_name(args.project)
    flags = {"project": project or args.project, "host": args.host, "agent_id": args.agent,
             "session_id": args.session, "run_id": args.run, "task_id": args.task, "mission_id": args.mission}
    from continuity.tasks.current import with_current_run

    who = resolve_identity("" if flags["project"] else store.project, flags, names_only=names_only)
    return with_current_run(who, store.local_dir) if current_run else who


#: command name -> module that registers it. Only the command being run is built, so a
#: hook's `continuity log` does not pay for every other command's flags.
COMMAND_MODULES: dict[str, str] = {
    "init": "continuity.cli.admin",
    "log": "continuity.cli.worklog",
    "checkpoint": "continuity.cli.worklog",
    "events": "continuity.cli.events_cmd",
    "verify": "continuity.cli.admin",
    "warm": "continuity.cli.sessions",
    "status": "continuity.cli.sessions",
    "archive": "continuity.cli.sessions",
    "host-switch": "continuity.cli.sessions",
    "restore": "continuity.cli.sessions",
    "resume-bundle": "continuity.cli.sessions",
    "rebuild": "continuity.cli.replay_cmd",
    "replay": "continuity.cli.replay_cmd",
    "hook": "continuity.cli.hook_cmd",
    "watch": "continuity.cli.watch_cmd",
    "install": "continuity.cli.install_cmd",
    "uninstall": "continuity.cli.install_cmd",
    "doctor": "continuity.cli.doctor_cmd",
    "mcp": "continuity.cli.mcp_cmd",
    "sync": "continuity.cli.sync_cmd",
    "clone-store": "continuity.cli.sync_cmd",
    "task": "continuity.cli.tasks",
    "run": "continuity.cli.tasks",
    "memory": "continuity.cli.memory",
    "snapshot": "continuity.cli.team",
    "resume": "continuity.cli.team",
    "role": "continuity.cli.roles",
    "park": "continuity.cli.park",
    "work": "continuity.cli.workstreams",
    "handoff": "continuity.cli.handoffs",
    "send": "continuity.cli.messages",
    "inbox": "continuity.cli.messages",
    "queue": "continuity.cli.messages",
    "beat": "continuity.cli.messages",
    "briefing": "continuity.cli.briefing",
    "health": "continuity.cli.briefing",
    "moments": "continuity.cli.moments",
    "recall": "continuity.cli.recall",
    "timeline": "continuity.cli.timeline",
}


class VersionAction(argparse.Action):
    """`--version`: the installed package's version, read only when asked for."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from continuity import package_version

        print(f"continuity {package_version()}")
        parser.exit()


#: The common flags that take a value in the next argument, and those that do not (argparse takes any unique
#: prefix of either: `--roo DIR`).
_VALUED = ("--root", "--log-level")
_UNVALUED = ("--json", "--debug", "--version", "--help")


def _takes_value(arg: str) -> bool:
    """Whether `arg` is a common flag (or a prefix argparse reads as one) whose value is the next argument."""
    if len(arg) < 3 or not arg.startswith("--") or "=" in arg:
        return False
    valued = [flag for flag in _VALUED if flag.startswith(arg)]
    return len(valued) == 1 and (arg in _VALUED or not any(flag.startswith(arg) for flag in _UNVALUED))


def _unvalued(argv: list[str]) -> Iterator[tuple[int, str]]:
    """(index, argument) of each argument that is no common flag's value (`--root work`: not `work`)."""
    value = False
    for at, arg in enumerate(argv):
        if not value:
            yield at, arg
        value = _takes_value(arg) and not value


def command_after_separator(argv: list[str]) -> list[str]:
    """`argv` without a `--` that stands where the command goes (`continuity -- status`, `continuity --root w --
    status`): the end of the program's own options, then the command, as POSIX reads it. Python's argparse took the
    `--` for the command's name ("invalid choice: '--'"); a `--` after the command is the command's own."""
    for at, arg in _unvalued(argv):
        if arg == "--":
            return argv[:at] + argv[at + 1:]
        if not arg.startswith("-"):
            break
    return argv


def build_parser(argv: list[str] | None = None) -> Parser:
    """The command tree: all of it, or just the command named first in `argv`."""
    import importlib

    common = common_flags()
    parser = Parser(
        prog="continuity",
        description="Keep an AI agent's working state alive across sessions, hosts and machines.",
        parents=[common],
    )
    parser.add_argument("--version", action=VersionAction, help="print `continuity <version>` and exit")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=Parser, prog="continuity")
    # the value of a flag given before the command (`--root work`) is no command
    words = [arg for _, arg in _unvalued(argv or []) if not arg.startswith("-")]
    wanted = words[0] if words else None
    names = [wanted] if wanted in COMMAND_MODULES else list(COMMAND_MODULES)
    identity = identity_flags()
    for name in names:
        module = importlib.import_module(COMMAND_MODULES[name])
        if name in getattr(module, "ACTIONS", {}):  # a family of actions: build only the one named, if any
            module.register(commands, name, common=common, identity=identity,
                            action=words[1] if len(names) == 1 and len(words) > 1 else None)
        else:
            module.register(commands, name, common=common, identity=identity)
    return parser


def project_to_read(args: argparse.Namespace, store: Any) -> tuple[str, list[str]]:
    """The project a read answers for: --project, else config.json's; when config.json cannot say, the guess and the
    warning that says so (dropped, a read answered for another clone's project without a word)."""
    given = getattr(args, "project", None)
    return (given, []) if given else store.reading_project()


def open_store(args: argparse.Namespace) -> Any:
    """The store named by --root, or found from the working directory upward."""
    from continuity.core.store import find_store

    return find_store(root=getattr(args, "root", None))
