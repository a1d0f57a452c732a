"""`continuity sync` and `continuity clone-store`: the history travels on a git branch."""

from __future__ import annotations

import argparse
import os
from typing import Any

from continuity.cli.common import Output, open_store
from continuity.cli.output import warn

SYNC_DESCRIPTION = (
    "Exchange events with a git remote through the continuity branch (default `continuity`, "
    "`sync_branch` in config.json), whose commits hold events/<YYYYMMDD>/<event file> (each commit "
    "the events it adds; `sync_layout: full`: the whole history), and one ref per "
    "clone beside it (refs/continuity/<branch>/nodes/<node>). Records local events not yet on the "
    "branch, fetches the remote's branch and the clones' refs, adds their events to the store "
    "(a name with two contents is refused, nothing changed), commits the union as a merge, pushes "
    "without force to this clone's ref (never contended) and to the branch (best effort: another "
    "clone may move it first) and catches the projections up. Only git plumbing is used: HEAD, "
    "the index and the stash are never touched; in the work tree the catch-up rewrites only "
    "continuity's own runtime files .ai-bridge/context-runtime.json and .md, when workstream events "
    "arrive, as any command's catch-up does."
)
CLONE_DESCRIPTION = (
    "On a fresh clone of the code: fetch the remote's continuity branch, create the store if "
    "missing (project name from the newest readable event that counts as now), write the branch's events "
    "into it and rebuild the projections, so `resume-bundle` works at once. A non-default --branch or remote is "
    "remembered in config.json for later syncs."
)


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `sync` or `clone-store`."""
    if name == "clone-store":
        parser = commands.add_parser("clone-store", help="bring a project's continuity history onto this clone",
                                     parents=[common], description=CLONE_DESCRIPTION)
        parser.add_argument("remote", help="git remote name or URL holding the continuity branch")
        parser.add_argument("--branch", help="the continuity branch (default: continuity)")
        parser.set_defaults(handler=_clone)
        return
    parser = commands.add_parser("sync", help="exchange events with a git remote (the continuity branch)",
                                 parents=[common], description=SYNC_DESCRIPTION)
    parser.add_argument("--remote", metavar="NAME",
                        help="git remote (default: sync_remote in config.json, else origin)")
    parser.add_argument("--no-push", action="store_true", help="record and fetch, but do not push")
    parser.add_argument("--allow-unrelated", action="store_true",
                        help="unite with a remote branch that shares no history with this clone's log, once it has "
                             "pushed it (refused otherwise: another project's log, or one started over)")
    parser.add_argument("--status", action="store_true",
                        help="show sync health without syncing: events waiting to be pushed, the last "
                             "successful sync and its remote, the last failure")
    parser.set_defaults(handler=_sync)


def _news(label: str, out: Output) -> Any:
    """Where sync's stages are told: a self-erasing line on a terminal; nothing with --json or when piped."""
    from continuity.cli.progress import for_output

    return for_output(label, as_json=out.as_json)


def _sync(args: argparse.Namespace, out: Output) -> int:
    import msgspec

    from continuity.sync.engine import sync
    from events.errors import ContinuityError

    store = open_store(args)
    if args.status:
        return _status(store, args, out)
    news = _news("sync", out)
    try:
        report = sync(store, remote=args.remote, push=not args.no_push, progress=news.message if news else None,
                      unrelated=args.allow_unrelated)
    except ContinuityError as error:
        warn(error.warnings)  # what the sync found before it failed
        raise
    finally:
        if news is not None:
            news.close()
    warn(report.warnings)
    if report.branch_updated:
        pushed = "pushed"
    elif report.pushed and report.branch_refused:
        pushed = "pushed to this clone's ref (the remote refused the shared branch: see the warning)"
    elif report.pushed:
        pushed = "pushed to this clone's ref (the shared branch moved meanwhile: a later sync brings it up to date)"
    else:
        pushed = "not pushed (--no-push)" if args.no_push else "nothing to push"
    forks = f", joined {report.forks} fork(s)" if report.forks else ""
    shared = (f", {report.added_branch} from the branch (synced by another store of this repository)"
              if report.added_branch else "")
    text = (f"synced {report.remote}/{report.branch}: recorded {report.added_local} local event(s), "
            f"added {report.added_remote} from the remote{forks}{shared}; {pushed}")
    out.emit(msgspec.to_builtins(report), text)
    return 0


def _status(store: Any, args: argparse.Namespace, out: Output) -> int:
    from continuity.sync import health
    from continuity.sync.credentials import mask_url
    from continuity.sync.settings import branch_of, remote_of

    remote = mask_url(remote_of(store, args.remote))
    result = health.report(store, health.read_node(store) or "", remote, branch_of(store))
    lines = [f"sync status for {result['remote']}/{result['branch']}:",
             f"  waiting to be pushed: {result['waiting']} event(s)"
             + (f", oldest {result['oldest_waiting_at']}" if result["oldest_waiting_at"] else "")]
    success, failure = result["last_success"], result["last_failure"]
    lines.append(f"  last successful sync: {success['at']} with {success['remote']}" if success
                 else "  last successful sync: never")
    if failure:
        lines.append(f"  last failure: {failure['at']} with {failure['remote']} (exit {failure.get('exit_code')}): "
                     f"{failure.get('error')}")
    out.emit(result, "\n".join(lines))
    return 0


def root_to_fill(args: argparse.Namespace) -> str:
    """The project root of a command that makes the store when there is none (`clone-store`, `work import`): the
    one `--root` (or CONTINUITY_ROOT) names; else the nearest store's from the working folder up, when it lies in
    this work tree (a project in a subfolder of the repository, as every other command finds it); else the work
    tree's top."""
    from continuity.core.errors import StoreNotFound
    from continuity.core.store import explicit_root, find_store, working_folder
    from continuity.sync.git import Repo

    root = explicit_root(getattr(args, "root", None))
    if root:
        return os.path.abspath(root)
    folder = working_folder()
    top = Repo(folder).toplevel
    try:
        found = find_store(folder).root
    except StoreNotFound:
        return top
    real_top = os.path.realpath(top)
    return found if os.path.commonpath([os.path.realpath(found), real_top]) == real_top else top


def _clone(args: argparse.Namespace, out: Output) -> int:
    from continuity.sync.clone import clone_store

    root = root_to_fill(args)
    news = _news("clone-store", out)
    try:
        result = clone_store(root, args.remote, branch=args.branch, progress=news.message if news else None)
    finally:
        if news is not None:
            news.close()
    warn(result["warnings"])
    if result["initialized"]:
        # the files that came (`events` is what the read models hold: a kind this release does not know is not)
        text = (f"cloned {result['added_remote']} events from {result['remote']}/{result['branch']} into "
                f"{result['store']} (project {result['project']})")
    else:  # into a store that was there: what came, and what the store holds now
        text = (f"brought {result['added_remote']} new event(s) from {result['remote']}/{result['branch']} into "
                f"the existing store {result['store']} (project {result['project']}; {result['events']} events in all)")
    out.emit(result, text)
    return 0
