"""`python -m continuity.adapters.mcp [--root DIR]`: serve MCP over stdio."""

from __future__ import annotations

import argparse
import contextlib


def main(argv: list[str] | None = None) -> int:
    """Parse --root and serve until the client closes stdin."""
    try:
        from continuity.adapters.mcp.server import serve
    except ImportError as error:  # a dependency uninstalled: the line `continuity mcp` gives, not a traceback
        import sys

        from continuity.core.guard import broken_install

        sys.stderr.write(f"continuity: error: {broken_install(error)}\n")
        return 70
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
