"""`continuity hook claude-code|codex`: the command harness hooks run (stdin JSON in)."""

from __future__ import annotations

import argparse
from typing import Any

from continuity.cli.common import Output


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `hook`."""
    parser = commands.add_parser(
        "hook", help="handle a harness hook (JSON on stdin); always exits 0", parents=[common],
        description="Read a Claude Code or Codex hook's JSON from stdin, record what it says as events, and "
        "for SessionStart print the resume brief as additionalContext. Never blocks the agent: exits 0 "
        "whatever happens; problems go to local/hooks.log in the store and one stderr line.",
    )
    parser.add_argument("harness", choices=["claude-code", "codex"], help="which harness is calling")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace, out: Output) -> int:
    from continuity.adapters.hook_fast import handle

    return handle(args.harness, getattr(args, "root", None))
