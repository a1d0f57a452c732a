"""`continuity work export|import|reconnect`: offline transfer of the continuity branch (seed 002)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

from continuity.cli.common import Output, open_store


def register(sub: Any, both: list[argparse.ArgumentParser]) -> None:
    """Add `work export`, `work import` and `work reconnect`."""
    export = sub.add_parser("export", help="bundle the continuity branch and a manifest for an offline move",
                            parents=[both[0]], description="Record local events on the continuity branch, refuse "
                            "(exit 12) when a file on it is not regular UTF-8 text, is bigger than any event (1 MiB), "
                            "is not the event its name says (its hash, id and time) or holds secret-like material "
                            "(its strings as they read: the file is named, never the secret; the local events "
                            "recorded before stay on the branch), and write "
                            "context.bundle plus manifest.json (identity, branch, HEAD, provenance, byte length, "
                            "SHA-256, cursor summary) into .ai-bridge/context-transfer/ (git-ignored) or --out DIR.")
    export.add_argument("--out", metavar="DIR", help="the folder to write (default: .ai-bridge/context-transfer)")
    export.set_defaults(handler=_export)
    imp = sub.add_parser("import", help="take in an exported bundle and mark the store offline-imported",
                         parents=[both[0]], description="Verify the manifest's shape, the identity (project, "
                         "repository id, root commits), the bundle's size and SHA-256, `git bundle verify` and "
                         "its HEAD; refused (exit 12, nothing changed) on any mismatch or when the branch here "
                         "has diverged. Then write its events into the store (created if missing) and mark it "
                         "offline-imported: start, status and checkpoint keep working with no remote.")
    imp.add_argument("folder", metavar="DIR", help="the folder export wrote")
    imp.set_defaults(handler=_import)
    reconnect = sub.add_parser("reconnect", help="leave offline mode: push or fast-forward by ancestry only",
                               parents=[both[0]], description="Record local events, fetch the remote's branch, "
                               "then: remote behind -> push (no force); local behind -> fast-forward; both "
                               "advanced -> refused (exit 12), both histories and the offline marker kept, unless "
                               "--union. Never rebases, resets or force-pushes, and merges only when asked. A remote "
                               "URL with credentials is refused (exit 2) without printing them.")
    reconnect.add_argument("--remote", metavar="NAME", help="git remote (default: sync_remote, else origin)")
    reconnect.add_argument("--union", action="store_true",
                           help="when both advanced, unite the histories as `continuity sync` unites clones (a merge "
                           "commit, pushed without force): every event of both is kept, none rewritten")
    reconnect.set_defaults(handler=_reconnect)


@contextlib.contextmanager
def _file_errors(action: str) -> Iterator[None]:
    """A file-system error of a transfer (a folder or FIFO standing where a file goes): exit 5, one line
    naming the path, never an internal error."""
    from events.errors import WriteFailed

    try:
        yield
    except OSError as error:
        where = error.filename2 or error.filename or "a file"
        raise WriteFailed(f"{action} failed: {where}: {error.strerror or error}") from None


def _export(args: argparse.Namespace, out: Output) -> int:
    from continuity.sync.transfer import export

    if args.out == "":  # `--out "$DIR"` with DIR unset: said, not the default folder written in its place
        from continuity.core.errors import UsageError

        raise UsageError("--out is empty: name the folder, or leave --out out for .ai-bridge/context-transfer")
    with _file_errors("export"):  # a file, a FIFO or a folder standing where the transfer goes
        result = export(open_store(args), args.out)
    manifest = result["manifest"]
    out.emit(result, f"exported {manifest['events']} files of branch {manifest['branch']} "
                     f"({manifest['bundle']['bytes']} bytes, sha256 {manifest['bundle']['sha256'][:12]}) to "
                     f"{result['folder']}")
    return 0


def _import(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.cli.sync_cmd import root_to_fill
    from continuity.sync.transfer import import_transfer

    root = root_to_fill(args)
    with _file_errors("import"):
        result = import_transfer(root, args.folder)
    warn(result["warnings"])
    out.emit(result, f"imported {result['added']} event(s) at {result['head'][:12]} of branch {result['branch']}: "
                     "OFFLINE_IMPORTED_CONTEXT (leave it with `continuity work reconnect`)")
    return 0


def _reconnect(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.sync.transfer import reconnect

    with _file_errors("reconnect"):
        result = reconnect(open_store(args), args.remote, union=args.union)
    warn(result["warnings"])
    out.emit(result, f"reconnected to {result['remote']}/{result['branch']}: {result['result']}")
    return 0
