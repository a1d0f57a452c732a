"""`continuity work start|status|audit`: seed 002's lifecycle actions (export/import/reconnect: work_transfer.py)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from continuity.cli.common import Output, open_store, project_to_read


def register(sub: Any, both: list[argparse.ArgumentParser]) -> None:
    """Add `work start`, `work status` and `work audit`."""
    start = sub.add_parser("start", help="before substantive work: check membership, fetch, refresh the runtime",
                           parents=both, description="Check that this repository is registered in "
                           "repositories/repositories.yaml (refused, exit 12, when it is not), bring in the "
                           "remote's continuity branch without pushing (skipped offline; an unreachable remote is "
                           "a warning), write .ai-bridge/context-runtime.json and .md, and print the resume "
                           "contract with the context state. Exit 1 when a merge left a problem.")
    start.add_argument("--no-fetch", action="store_true", help="do not contact the remote")
    start.set_defaults(handler=_start)
    status = sub.add_parser("status", help="the active workstream, cursor, unresolved items, freshness, membership",
                            parents=both, description="The resume contract: active workstream, cursor, unresolved "
                            "items, the validation ledger with live freshness, the context state "
                            "(CURRENT_OR_FETCHED, DIRTY_LOCAL_CONTEXT, STALE_LOCAL_CONTEXT, DIVERGED_LOCAL_CONTEXT, "
                            "OFFLINE_IMPORTED_CONTEXT) and membership. Read-only, never fetches. Exit 1 when a "
                            "merge broke an invariant or the repository is not registered.")
    status.add_argument("--as-of", metavar="EVENT_ID|ISO_TIME", help="as the log stood at this point")
    status.set_defaults(handler=_status)
    audit = sub.add_parser("audit", help="compare repositories/repositories.yaml with the git worktrees nearby",
                           parents=both, description="Read-only: report registered repositories that are "
                           "missing or configured as another id, this repository when it is not registered, and "
                           "sibling git worktrees of this project the registry does not list. Never registers "
                           "or changes anything. Exit 1 when it reports anything.")
    audit.set_defaults(handler=_audit)


def _runtime(store: Any, args: argparse.Namespace, as_of: str | None) -> tuple[dict[str, Any], bool, list[str]]:
    from continuity.cli.output import warn
    from continuity.workstreams.documents import runtime_document
    from continuity.workstreams.fingerprint import Observation
    from continuity.workstreams.service import live_status, workstreams_state

    # git stats the worktree while the state is caught up (a status of the live tree only).
    observation = Observation(store.root) if as_of is None else None
    try:
        project, said = project_to_read(args, store)
        state, warnings, _ = workstreams_state(store, project, as_of=as_of)
        warnings = [*said, *warnings]
        warn(warnings)
        doc = runtime_document(state, project)
        healthy = live_status(store, project, state, doc, observation) if observation is not None \
            else not doc["problems"]
    except BaseException:
        if observation is not None:  # no git left running behind an error
            observation.cancel()
        raise
    return doc, healthy, warnings


def _text(doc: dict[str, Any]) -> str:
    from continuity.workstreams.documents import runtime_markdown

    return runtime_markdown(doc)


def _status(args: argparse.Namespace, out: Output) -> int:
    from continuity.core.errors import EXIT_INTEGRITY
    from continuity.workstreams.documents import unhealthy_line

    store = open_store(args)
    doc, healthy, warnings = _runtime(store, args, args.as_of)
    return out.emit_report({"ok": healthy, "action": "work-status", "as_of": args.as_of, **doc, "warnings": warnings},
                           _text(doc), 0 if healthy else EXIT_INTEGRITY, unhealthy_line(doc))


def _start(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.core.errors import EXIT_INTEGRITY
    from continuity.sync.health import offline_marker
    from continuity.workstreams.decide import require_members
    from continuity.workstreams.documents import unhealthy_line
    from continuity.workstreams.membership import NO_REPOSITORY_ID, member_repository
    from continuity.workstreams.service import after_write, checkpoint_facts, membership_of, workstreams_state

    store = open_store(args)
    project = args.project or store.reading_project()[0]
    state, _, _ = workstreams_state(store, project)
    membership = membership_of(store, project, state)
    facts = checkpoint_facts(store, bind=False)
    if membership.managed and membership.repository is None:
        from continuity.workstreams.rules import refuse

        refuse(NO_REPOSITORY_ID)
    require_members(facts, [membership.repository] if membership.repository else [])
    fetched: str | None = None
    if not args.no_fetch and not os.path.exists(offline_marker(store)):
        fetched = _fetch(store)
    warnings = after_write(store, observe=False)
    if fetched:
        warnings.insert(0, fetched)
    warn(warnings)
    doc, healthy, more = _runtime(store, args, None)
    doc["memberConfig"] = member_repository(store.root) is not None
    failed = _write_runtime(store, project, doc)
    warn(failed)
    more += failed
    return out.emit_report({"ok": healthy, "action": "work-start", **doc, "warnings": warnings + more}, _text(doc),
                           0 if healthy else EXIT_INTEGRITY, unhealthy_line(doc))


def _write_runtime(store: Any, project: str, doc: dict[str, Any]) -> list[str]:
    """The runtime files with what start observed (freshness, context state, membership): seed 002's resume
    contract, read before substantive work. Written even when nothing changed since the last catch-up (a
    deleted file, a first start); the next change a catch-up folds writes them without the live views."""
    from continuity.workstreams.files import not_written, write_runtime_doc
    from events.errors import ContinuityError

    if project != store.reading_project()[0]:
        return []  # only the store's own project has files
    try:
        write_runtime_doc(store.root, doc)
    except (OSError, ContinuityError) as error:
        return [not_written(error)]
    return []


def _fetch(store: Any) -> str | None:
    """Bring in the remote's continuity branch without pushing; a warning instead of a failure."""
    from continuity.core.errors import UsageError
    from continuity.sync.engine import open_repo, tracking_ref
    from continuity.sync.settings import branch_of, remote_of
    from events.errors import ContinuityError

    try:
        repo = open_repo(store)
        remote, branch = remote_of(store), branch_of(store)
        try:  # a remote git knows by name, or a URL (as clone-store records it): sync takes both
            tracking_ref(repo, remote, branch)
        except UsageError:
            return None  # no such remote: nothing to bring in
        from continuity.sync.engine import sync

        sync(store, remote=remote, push=False, catch_up=False)
    except ContinuityError as error:
        return f"the remote's context was not fetched ({error}); the local context is shown"
    return None


def _audit(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.core.errors import EXIT_INTEGRITY
    from continuity.core.text import one_line
    from continuity.workstreams.audit import audit
    from continuity.workstreams.service import membership_of, workstreams_state

    store = open_store(args)
    project, said = project_to_read(args, store)
    warn(said)
    state, _, _ = workstreams_state(store, project)
    membership = membership_of(store, project, state)
    report = audit(store.root, project, membership)
    lines = [f"audit of {report['registry'] or 'no registry (repositories/repositories.yaml): membership not managed'}"]
    lines += [f"- {entry['id']} ({entry['role'] or '-'}): {entry['status']} at {entry['path']}"
              for entry in report["registered"]]
    lines += [f"finding: {finding}" for finding in report["findings"]] or ["no findings"]
    # roles and paths come from the registry, sibling names from the folder: one line each, no raw controls
    findings = report["findings"]
    why = one_line(f"work audit: {len(findings)} finding(s); first: {findings[0]}") if findings else ""
    return out.emit_report({"ok": not findings, "action": "work-audit", **report},
                           "\n".join(one_line(line) for line in lines), EXIT_INTEGRITY if findings else 0, why)
