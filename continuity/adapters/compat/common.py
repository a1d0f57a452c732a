"""What the `runtime-continuity` modes share: the failure result, the store, identity, warnings."""

from __future__ import annotations

import os
from typing import Any

from continuity.adapters.compat.args import Args
from continuity.core.identity import Identity
from continuity.core.store import Store

#: The command every compat pointer tells agents to run (seed 004's resume entry point).
PROGRAM = "runtime-continuity"


class Failure(Exception):
    """A contract failure: printed as `{"ok": false, "error": code, "message": ...}` with exit 2.

    Not part of the continuity error tree: it is this adapter's output, not a domain error.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def warn(warnings: list[str]) -> None:
    """Warnings go to stderr: stdout holds exactly one JSON object."""
    from continuity.cli.output import warn as print_warnings

    print_warnings(warnings, PROGRAM)


def default_root() -> str:
    """Where a store is created, and harness files looked for, when none exists yet."""
    from continuity.core.store import explicit_root

    return os.path.abspath(explicit_root() or os.getcwd())


def existing_store() -> Store | None:
    """The store from the working directory upward (or CONTINUITY_ROOT); None when there is none."""
    from continuity.core.errors import StoreNotFound
    from continuity.core.store import find_store

    try:
        return find_store()
    except StoreNotFound:
        return None


def writable_store(project: str) -> Store:
    """The store to write to: the existing one, else a new one under the working directory.

    Seed 004 has no init step; `init_store` is idempotent, but it is only called for a new
    store so that writing another project's events never renames the store's own project.
    """
    store = existing_store()
    if store is not None:
        return store
    from continuity.core.initialize import init_store

    created, _ = init_store(default_root(), project=project, language=None)
    return created


def identity(args: Args, project: str) -> Identity:
    """Who writes: flags, else the CONTINUITY_* environment (the one resolver)."""
    from continuity.core.identity import resolve_identity

    flags = {field: args.given(flag) for field, flag in (
        ("host", "host"), ("agent_id", "agent-id"), ("session_id", "session-id"), ("run_id", "run-id"),
        ("task_id", "task-id"), ("mission_id", "mission-id"))}
    return resolve_identity(project, flags)


def note_of(args: Args) -> dict[str, Any] | None:
    """The --note-json object (UsageError unless it is a JSON object)."""
    from continuity.cli.worklog import parse_note

    return parse_note(args.given("note-json"))


def no_archive(project: str) -> dict[str, Any]:
    """`restore` with nothing archived for the project: not a failure (exit 0)."""
    return {"ok": False, "action": "restore", "project": project, "error": "no_archive_for_project",
            "message": f"no archive for project {project}"}
