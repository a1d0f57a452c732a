"""`continuity install` and `continuity uninstall`: hooks and instructions for a harness."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from continuity.cli.common import Output

HELP = {
    "install": "register continuity's hooks with Claude Code or Codex",
    "uninstall": "remove what `continuity install` added",
}
DESCRIPTION = {
    "install": "Merge continuity's hook entries into .claude/settings.json (claude-code) or .codex/hooks.json "
    "(codex), and add a marked block to CLAUDE.md or AGENTS.md telling the agent when to checkpoint. "
    "--scope user writes ~/.claude/ or ~/.codex/ instead. Every other entry and key is kept; a changed "
    "file is first copied to <file>.continuity-backup-<UTC stamp>; running it again changes nothing.",
    "uninstall": "Remove exactly what install added: hook entries whose command runs `continuity hook`, "
    "groups and events left empty by that, and the marked Markdown block. A file left empty is removed. "
    "A changed file is first copied to <file>.continuity-backup-<UTC stamp>.",
}


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `install` or `uninstall`."""
    parser = commands.add_parser(name, help=HELP[name], description=DESCRIPTION[name], parents=[common])
    parser.add_argument("harness", choices=["claude-code", "codex"], help="the agent harness")
    parser.add_argument("--scope", choices=["project", "user"], default="project",
                        help="project: files in the project root (default); user: files in the home folder")
    parser.add_argument("--dry-run", action="store_true", help="print a unified diff and change nothing")
    parser.set_defaults(handler=_run, install=name == "install")


def project_root(args: argparse.Namespace) -> Path:
    """--root, else the folder holding the store found upward, else the working directory."""
    from continuity.core.errors import StoreNotFound
    from continuity.core.store import find_store

    root = getattr(args, "root", None)
    if root:
        return Path(os.path.abspath(root))
    try:
        return Path(find_store().root)
    except StoreNotFound:
        return Path(os.getcwd())


def _run(args: argparse.Namespace, out: Output) -> int:
    from datetime import UTC, datetime

    from continuity.adapters import install

    root, home = project_root(args), Path.home()
    if args.install:
        changes = install.plan_install(args.harness, args.scope, root, home, install.executable())
    else:
        changes = install.plan_uninstall(args.harness, args.scope, root, home)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    files, lines = [], []
    for change in changes:
        backup = None if args.dry_run else install.apply_change(change, stamp)
        entry: dict[str, Any] = {"path": str(change.path), "changed": change.changed,
                                 "backup": None if backup is None else str(backup), "status": change.status}
        status = change.status if not args.dry_run or not change.changed else f"would be {change.status}"
        line = f"{change.path}: {status}" + (f" (backup: {backup})" if backup else "")
        if args.dry_run:
            entry["diff"] = change.diff()
            lines.append(entry["diff"].rstrip("\n"))
        files.append(entry)
        lines.append(line)
    action = "install" if args.install else "uninstall"
    out.emit({"ok": True, "action": action, "harness": args.harness, "scope": args.scope,
              "dry_run": args.dry_run, "root": str(root), "files": files},
             "\n".join(line for line in lines if line))
    return 0
