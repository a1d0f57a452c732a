"""`continuity hook claude-code|codex|cursor|gemini`: the command harness hooks run (stdin JSON in)."""

from __future__ import annotations

import argparse
from typing import Any

from continuity.cli.common import Output


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `hook`."""
    parser = commands.add_parser(
        "hook", help="handle a harness hook (JSON on stdin); exits 0 for any payload", parents=[common],
        description="Read a Claude Code, Codex, Cursor or Gemini CLI hook's JSON from stdin, record what it says "
        "as events, and for the session start print the resume brief where the harness injects context "
        "(hookSpecificOutput.additionalContext; Cursor: additional_context). Never blocks the agent: exits 0 "
        "whatever the payload or the store; problems go to local/hooks.log in the store and one stderr line. "
        "A harness name it does not know is a usage error (exit 2).",
    )
    from continuity.adapters.hook_dialects import HARNESSES

    parser.add_argument("harness", choices=HARNESSES, help="which harness is calling")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace, out: Output) -> int:
    from continuity.adapters.hook_fast import handle

    return handle(args.harness, getattr(args, "root", None))
