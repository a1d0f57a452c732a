"""`python -m continuity.adapters.mcp [--root DIR]`: serve MCP over stdio."""

from __future__ import annotations

import argparse
import contextlib


def main(argv: list[str] | None = None) -> int:
    """Parse --root and serve until the client closes stdin."""
    from continuity.adapters.mcp.server import serve

    parser = argparse.ArgumentParser(prog="python -m continuity.adapters.mcp",
                                     description="Serve continuity's commands as MCP tools over stdio.")
    parser.add_argument("--root", metavar="DIR",
                        help="project root holding .agent/runtime-continuity (default: search upward)")
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        serve(args.root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
