"""The application's errors and the exit-code table (docs/cli.md mirrors it).

The tree is rooted in `events.errors.ContinuityError`; the log's own errors live there
because `events` may not import `continuity`. Only the CLI maps errors to exit codes.
"""

from __future__ import annotations

from contextvars import ContextVar

from events.errors import (
    ContinuityError,
    EventInvalid,
    EventNotFound,
    EventUndecodable,
    SecretRefused,
    StoreUnsafe,
    WriteFailed,
)

EXIT_OK = 0
EXIT_INTEGRITY = 1
EXIT_USAGE = 2
EXIT_NO_STORE = 3
EXIT_SECRET = 4
EXIT_WRITE_FAILED = 5
EXIT_UNSAFE_STORE = 6
EXIT_NOT_FOUND = 7
EXIT_REMOTE = 8
EXIT_CONFIG = 9
EXIT_SYNC_GAVE_UP = 10
EXIT_VERSION_CONFLICT = 11
EXIT_INVARIANT = 12  # seed 002's lifecycle exits 12 on any refusal
EXIT_ROLE_CONFLICT = 13
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130  # continuity/core/guard.py returns it (the hook path does not load this module)

#: code -> meaning, one line each; docs/cli.md is checked against this table.
EXIT_CODES: dict[int, str] = {
    EXIT_OK: "success",
    EXIT_INTEGRITY: "integrity failure: verify found a broken event, an event cannot be read, "
    "sync found one event name with two contents, `work status` (or verify) found a workstream invariant a merge "
    "broke, verify found task or run edits a merge left in conflict, or "
    "`doctor` found a problem with the installed hooks",
    EXIT_USAGE: "bad input: unknown flag, invalid name or value, oversized field, invalid UTF-8, a recall query "
    "that is empty, too long or (with --match) not valid search syntax",
    EXIT_NO_STORE: "no store found from the working directory upward (run `continuity init`)",
    EXIT_SECRET: "refused: a field looks like a secret (nothing written; see --redact)",
    EXIT_WRITE_FAILED: "write failed: the store is not writable, the disk is full or failing, or this user may not "
                       "read the newest event or `local/node` (a teammate's, under a strict umask: the line names "
                       "it; nothing written); "
                       "or stdout took no more output: a full disk, or a file size limit (`ulimit -f`) that cut it "
                       "short (what was stored stays); or the system gave the process no more open files "
                       "(`ulimit -n`) or memory (the command stopped; nothing is half-written)",
    EXIT_UNSAFE_STORE: ("unsafe store: the store or one of its folders is a symlink or not a folder, a file "
                        "install or uninstall would write is a symlink into the store, the newest event, as "
                        "its day is listed, was edited by hand, or the newest event this store wrote is gone from a "
                        "store that has synced (nothing written; the line says the way back; an edit the head hint "
                        "does not see is written past, chained to the bytes as they were written, and `verify` "
                        "names it); or a lookup (a task, run, memory, role or handoff by its id) that read nothing, "
                        "the store or its events folder being a symlink or not a folder (a listing answers empty, "
                        "with a warning)"),
    EXIT_NOT_FOUND: "not found: no event, task, run, role, handoff, message, workstream, work item or archive "
    "with that id or name, or `restore --load` names an archive whose file cannot be read (not a regular file, "
    "a link out of the store, more than 4 MiB, not an archive)",
    EXIT_REMOTE: "remote unavailable: git could not fetch from or push to the remote (nothing lost locally; "
    "sync again)",
    EXIT_CONFIG: "broken config: config.json is missing, empty, not JSON or names no valid project "
    "(nothing written; run `continuity init --repair`)",
    EXIT_SYNC_GAVE_UP: "sync gave up: the remote was reachable but kept refusing or moving for the whole retry "
    "time (`sync_retry_seconds`); the events are safe locally and the next sync carries them",
    EXIT_VERSION_CONFLICT: "version conflict: the task changed since the --expected-version given (nothing written)",
    EXIT_INVARIANT: "refused: the change would break a workstream invariant (lost or reopened work items, "
    "a dependency cycle, a blocked item without a blocker, a reused validation id, an unterminated active "
    "workstream, an unregistered repository), or an offline transfer refused (export, import, reconnect); "
    "nothing written (an import whose later batch of events is refused keeps the batches it wrote before, each "
    "checked against its name, and says so)",
    EXIT_ROLE_CONFLICT: "role conflict: the role is held under another agent's fresh lease, is not held by "
    "this agent, or already exists (nothing written)",
    EXIT_INTERNAL: "internal error: a bug; rerun with --debug and report it; or an installation missing a module it "
    "needs (a dependency uninstalled, files of two versions, a Python built without `sqlite3`): the line names the "
    "module and the way back",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C, SIGINT): the command stopped; the events it wrote stay and none is "
    "half-written (`mcp` stops once the call in progress is answered; `watch` and `events tail -f` end with 0, "
    "as Ctrl-C is how they stop), whenever it comes, also while the modules load (only within Python's own start, "
    "its first 10-20 ms, can Python still print a traceback)",
}


#: The reads of the running command that found nothing to read because the store or its events
#: folder is unsafe (they answer as for an empty log, with a warning): a lookup that then finds nothing is that,
#: exit 6, not an unknown id, exit 7. None outside a command: nothing is noted.
_UNREAD: ContextVar[list[str] | None] = ContextVar("continuity_unread", default=None)


def noting_unread() -> list[str]:
    """From now on in this context, note the reads that found the store unsafe and read nothing; the list."""
    found: list[str] = []
    _UNREAD.set(found)
    return found


def note_unread(reason: str) -> None:
    """A read found the store (or its events folder) unsafe and read nothing: `reason`, its warning."""
    found = _UNREAD.get()
    if found is not None:
        found[:] = [reason]  # the newest only: a long-lived process (`continuity mcp`) reads on and on


def unread_instead(error: ContinuityError, found: list[str]) -> ContinuityError:
    """A not-found error raised after a read that read nothing (the store unsafe) is the unsafe store's: said so,
    exit 6 (a script told "unknown task" would take an existing task for a missing one)."""
    if error.exit_code != EXIT_NOT_FOUND or not found:
        return error
    return StoreUnsafe(f"{error}: nothing was read ({found[-1]})")


class UsageError(ContinuityError):
    """Raised when arguments are missing, malformed or contradictory."""

    exit_code = EXIT_USAGE


class QueryError(UsageError):
    """Raised when a recall query is empty, too long, has no words, or (with --match) is not valid FTS5 syntax."""


class StoreNotFound(ContinuityError):
    """Raised when no store exists from the working directory upward."""

    exit_code = EXIT_NO_STORE


class RemoteUnreachable(ContinuityError):
    """Raised when sync cannot fetch from or push to the git remote (events stay safe locally)."""

    exit_code = EXIT_REMOTE


class SyncGaveUp(ContinuityError):
    """Raised when pushes kept being refused (ref-lock contention, a moving remote, a declining
    hook) until the retry time ran out; the events are safe locally and the next sync carries them."""

    exit_code = EXIT_SYNC_GAVE_UP


class EventConflict(ContinuityError):
    """Raised when sync finds one event file name with two different contents; nothing is changed."""

    exit_code = EXIT_INTEGRITY


class VersionConflict(ContinuityError):
    """Raised when a task update's expected version is not the task's version under the lock; nothing written."""

    exit_code = EXIT_VERSION_CONFLICT


class TaskNotFound(ContinuityError):
    """Raised when a task or run id names no task or run this project knows; nothing written."""

    exit_code = EXIT_NOT_FOUND


class RoleNotFound(ContinuityError):
    """Raised when a team has no role by that name (create it with `continuity role create`); nothing written."""

    exit_code = EXIT_NOT_FOUND


class HandoffNotFound(ContinuityError):
    """Raised when no handoff has the id given; nothing written."""

    exit_code = EXIT_NOT_FOUND


class MessageNotFound(ContinuityError):
    """Raised when an agent acknowledges a message that is not in its inbox; nothing written."""

    exit_code = EXIT_NOT_FOUND


class ArchiveNotFound(ContinuityError):
    """Raised when `restore --load` names an archive the project does not have."""

    exit_code = EXIT_NOT_FOUND


class ArchiveUnreadable(ContinuityError):
    """Raised when `restore --load` finds the archive's file but cannot take it (a FIFO, a device, a link out
    of the store, more than 4 MiB, not an archive); nothing is read from it."""

    exit_code = EXIT_NOT_FOUND


class RoleConflict(ContinuityError):
    """Raised when a role is held under another agent's fresh lease, is not held by the agent acting
    on it, or already exists; nothing written."""

    exit_code = EXIT_ROLE_CONFLICT


class InvalidTransition(UsageError):
    """Raised when a task or run change is not allowed from its current state; nothing written."""


class ConfigBroken(ContinuityError):
    """Raised when a write needs the project name and config.json is missing, empty or invalid."""

    exit_code = EXIT_CONFIG


class WorkNotFound(ContinuityError):
    """Raised when a workstream or work item id names none this project knows (or none is active)."""

    exit_code = EXIT_NOT_FOUND


class InvariantRefused(ContinuityError):
    """Raised when a workstream change would break a continuity invariant (seed 002); nothing written."""

    exit_code = EXIT_INVARIANT


#: Every error class the program raises on purpose (a test checks each code is in the table).
ERROR_CLASSES: tuple[type[ContinuityError], ...] = (
    SecretRefused, EventInvalid, WriteFailed, EventNotFound, EventUndecodable,
    UsageError, StoreNotFound, StoreUnsafe, RemoteUnreachable, SyncGaveUp, EventConflict, ConfigBroken,
    VersionConflict, TaskNotFound, InvalidTransition, RoleNotFound, RoleConflict, InvariantRefused,
    WorkNotFound, HandoffNotFound, MessageNotFound, QueryError, ArchiveNotFound, ArchiveUnreadable,
)


class TransferRefused(ContinuityError):
    """Raised when an offline transfer (export, import, reconnect) is refused: an unfit tracked file, a
    bundle that does not match its manifest or this repository, diverged histories; nothing changed."""

    exit_code = EXIT_INVARIANT
