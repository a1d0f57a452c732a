"""argparse's reading of an argument vector, for the plain paths: flags spelled in full only.

`read(argv, ...)` reads `[--json|--debug|--root DIR] COMMAND [flags and positionals]` as
argparse does when every flag is spelled out (`--flag value`, `--flag=value`) and every
value does not start with `-`; on anything else (an abbreviation, an unknown flag, `-mTEXT`,
a short flag with `=`, a value that looks like a flag) it returns None, and the argparse
command gives the answer of record. No argparse, no typing at run time: this is on the
hook path.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection
    from typing import Any


def read(argv: list[str], commands: Collection[str], switches: dict[str, str], single: dict[str, str],
         repeated: dict[str, str], value_ok: Callable[[str, str], bool] | None = None,
         ) -> tuple[str, dict[str, Any], list[str]] | None:
    """(the command, the options by destination, the positionals), or None when argparse must decide.

    `value_ok(flag, value)` admits a value starting with `-` that argparse takes for that flag.
    """
    options: dict[str, Any] = {**{name: False for name in switches.values()}, "root": None,
                               **{name: None for name in single.values()}, **{name: [] for name in repeated.values()}}
    command = None
    index = 0
    while index < len(argv) and command is None:  # the main parser's flags, then the command
        arg = argv[index]
        index += 1
        if arg in commands:
            command = arg
        elif arg in ("--json", "--debug"):
            options[arg[2:]] = True
        elif arg == "--root" and index < len(argv) and not argv[index].startswith("-"):
            options["root"] = argv[index]
            index += 1
        elif arg.startswith("--root=") and len(arg) > len("--root="):
            options["root"] = arg[len("--root="):]
        else:
            return None
    if command is None:
        return None
    positionals: list[str] = []
    while index < len(argv):
        arg = argv[index]
        index += 1
        if not arg.startswith("-"):
            positionals.append(arg)
            continue
        flag, equals, explicit = arg.partition("=")
        if flag in switches and not equals:
            options[switches[flag]] = True
            continue
        if flag not in single and flag not in repeated:
            return None
        if equals:
            if not explicit or not flag.startswith("--"):  # argparse reads `-m=x` as the value "=x"
                return None
            value = explicit
        else:
            if index >= len(argv) or not (not argv[index].startswith("-")
                                          or (value_ok is not None and value_ok(flag, argv[index]))):
                return None
            value = argv[index]
            index += 1
        if flag in repeated:
            options[repeated[flag]].append(value)
        else:
            options[single[flag]] = value
    return command, options, positionals
