"""`continuity mcp`: serve the commands as MCP tools over stdio."""

from __future__ import annotations

import argparse
from typing import Any

from continuity.cli.common import Output

SUMMARY = "serve the commands as MCP tools over stdio (for agent harnesses)"


def register(commands: Any, name: str, *, common: argparse.ArgumentParser,
             identity: argparse.ArgumentParser | None = None) -> None:
    """Add `mcp` (identity comes with each tool call, so it takes no identity flags)."""
    parser = commands.add_parser(
        name, help=SUMMARY, parents=[common],
        description="Serve log, checkpoint, archive, resume_bundle, status and events as MCP tools over "
        "stdin/stdout until the client closes stdin. The store is found like any command's: --root, "
        "else from the working directory upward, at each call. Tool errors come back as one-line tool "
        "error results; the server keeps serving.",
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace, out: Output) -> int:
    from continuity.adapters.mcp.server import serve
    from continuity.core.guard import serving

    serving()
    serve(getattr(args, "root", None))
    return 0
