"""Write docs/cli.md from the real `--help` output and the exit-code table.

Run after changing a command: `python scripts/gen_cli_docs.py`. A test fails when the
file and the CLI disagree.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HEADER = """# continuity CLI reference

Generated from `--help` by `scripts/gen_cli_docs.py`; `tests/cli/test_docs.py` fails when
this file and the CLI disagree. Every command takes `--json` (print the result as JSON;
on failure also a JSON object `{"ok": false, "exit_code", "message"}` on stdout),
`--root DIR` (the project root; default: search upward from the working directory, or
`CONTINUITY_ROOT`) and `--debug` (show a traceback on internal errors).

Errors are one line on stderr, `continuity: error: <message>`, and one of these exit codes:

## Exit codes

| code | meaning |
|---:|---|
"""


def command_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path in the parser tree, depth first."""
    paths: list[tuple[str, ...]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                paths.append((*prefix, name))
                paths.extend(command_paths(sub, (*prefix, name)))
    return paths


def help_text(argv: list[str]) -> str:
    """What `continuity ARGV --help` prints, at a fixed width."""
    from continuity.cli import main

    os.environ["COLUMNS"] = "100"
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        main([*argv, "--help"])
    return buffer.getvalue().rstrip() + "\n"


def render() -> str:
    """The whole of docs/cli.md."""
    from continuity.cli.common import build_parser
    from continuity.errors import EXIT_CODES

    parts = [HEADER]
    parts.extend(f"| {code} | {meaning} |\n" for code, meaning in EXIT_CODES.items())
    parts.append("\n## continuity\n\n```text\n" + help_text([]) + "```\n")
    for path in command_paths(build_parser()):
        parts.append(f"\n## continuity {' '.join(path)}\n\n```text\n{help_text(list(path))}```\n")
    return "".join(parts)


if __name__ == "__main__":
    (ROOT / "docs" / "cli.md").write_text(render())
    print("wrote docs/cli.md")
