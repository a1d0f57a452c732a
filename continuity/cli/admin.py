"""`continuity init` and `continuity verify`."""

from __future__ import annotations

import argparse
import os
from typing import Any

from continuity.cli.common import Output, open_store


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `init` or `verify`."""
    if name == "verify":
        _register_verify(commands, common)
        return
    parser = commands.add_parser(
        "init", help="create the store here (idempotent)", parents=[common],
        description="Create .agent/runtime-continuity in the project root (the working "
        "directory, or --root): config.json, README.md, .gitignore, event.schema.json. "
        "Running it again keeps the config and refreshes the generated files.",
    )
    parser.add_argument("--project", help="project name (default: the folder's name)")
    parser.add_argument("--language", choices=["en", "zh"], help="language of Markdown archives")
    parser.set_defaults(handler=_init)


def _register_verify(commands: Any, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "verify", help="check the whole log's integrity", parents=[common],
        description="Recompute every event's hash and the prev chain. Prints counts, forks "
        "(merges) and the first broken event with the reason; exits 1 on any integrity failure.",
    )
    parser.set_defaults(handler=_verify)


def _init(args: argparse.Namespace, out: Output) -> int:
    from continuity.core.initialize import init_store

    root = os.path.abspath(getattr(args, "root", None) or os.getcwd())
    store, created = init_store(root, project=args.project, language=args.language)
    out.emit(
        {"ok": True, "action": "init", "created": created, "store": str(store.path),
         "project": store.project},
        f"{'initialized' if created else 'already initialized'}: {store.path} (project {store.project})",
    )
    return 0


def _verify(args: argparse.Namespace, out: Output) -> int:
    import msgspec

    from continuity.core.errors import EXIT_INTEGRITY

    store = open_store(args)
    report = store.open_reader().verify()
    data = msgspec.to_builtins(report)
    data["ok"] = report.ok
    data["first_problem"] = msgspec.to_builtins(report.first_problem)
    lines = [
        f"events: {report.events}  nodes: {len(report.nodes)}  roots: {report.roots}  "
        f"forks (merges): {len(report.forks)}",
    ]
    for fork in report.forks[:10]:
        lines.append(f"fork: {fork.parent} -> {', '.join(fork.children)}")
    if report.ok:
        lines.append("ok: the log is intact")
    else:
        first = report.problems[0]
        lines.append(f"BROKEN: {len(report.problems)} problem(s); first: {first.name}: {first.reason}")
        lines.extend(f"  {p.name}: {p.reason}" for p in report.problems[1:20])
    out.emit(data, "\n".join(lines))
    return 0 if report.ok else EXIT_INTEGRITY
