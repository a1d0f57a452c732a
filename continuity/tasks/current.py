"""The current run of a session: a machine-local hint, so the hook path can attribute without folding.

`run start` writes ``local/runs/current-<session>`` (``<run> <task>``), `run complete`
removes it. The events stay the truth (the current run is the session's newest
`run.started` without a `run.completed`); the hint only saves the hook path a catch-up.
Imports nothing beyond `os`: `continuity log` and the PostToolUse hook read it.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat

from events import osfs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from continuity.core.identity import Identity

RUNS_DIR = "runs"


_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,127}")


def plain_id(text: str) -> bool:
    """Whether an id may name a file as it is, and stand as a shell word unquoted (letters, digits, `._:@+=-`)."""
    return bool(_SAFE.fullmatch(text)) and ".." not in text


def hint_path(local_dir: str, session_id: str | None) -> str:
    """Where the current-run hint of a session (or of no session) lives; ValueError for an unsafe id."""
    if session_id is not None and not plain_id(session_id):
        raise ValueError("session id unusable in a file name")
    return os.path.join(local_dir, RUNS_DIR, f"current-{session_id or '-'}")


def runs_folder_problem(local_dir: str) -> str | None:
    """What is wrong with `local/runs` (a symlink, not a folder), or None: no hint is read, written or removed
    through a link planted there (it would read attribution from outside, or delete a file there)."""
    path = os.path.join(local_dir, RUNS_DIR)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"{path} cannot be read ({error.strerror or error})"
    if stat.S_ISLNK(mode):
        return f"{path} is a symlink"
    return None if stat.S_ISDIR(mode) else f"{path} is not a folder"


def read_current(local_dir: str, session_id: str | None) -> tuple[str, str | None] | None:
    """(run id, task id) of the session's current run, or None (a missing or odd hint is no run)."""
    if runs_folder_problem(local_dir) is not None:
        return None
    try:
        parts = osfs.read_regular(hint_path(local_dir, session_id), follow=False, limit=400).decode(
            "utf-8", "replace").split()
    except (OSError, ValueError):
        return None
    if not parts or len(parts) > 2 or not all(plain_id(part) for part in parts):
        return None  # an id no event may carry (a control character, `..`): taken, it failed every write
    return parts[0], (parts[1] if len(parts) == 2 else None)


def write_current(store_path: str, local_dir: str, session_id: str | None, run_id: str,
                  task_id: str | None) -> str | None:
    """Make `run_id` the session's current run; a hint, so a failure is a warning (returned), never an error."""
    from continuity.core.fsio import ensure_folder, write_atomic
    from events.errors import ContinuityError

    problem = runs_folder_problem(local_dir)
    if problem is None:
        try:
            path = hint_path(local_dir, session_id)
            ensure_folder(store_path, os.path.dirname(path))
            with osfs.folder_lock(os.path.dirname(path), HINT_LOCK_S):  # one at a time with `clear_current`
                write_atomic(path, f"{run_id} {task_id or ''}".strip().encode() + b"\n", durable=False)
            return None
        except ValueError:  # a session id no file may be named after: no hint, as before
            return None
        except (OSError, ContinuityError) as error:
            problem = str(getattr(error, "strerror", None) or error)
    return (f"run {run_id} recorded, but not made the session's current run ({problem}): name it with --run "
            "on the commands that belong to it")


#: How long a hint's write or removal waits for another's (a holder stopped mid-way keeps the hint as it is).
HINT_LOCK_S = 2.0


def clear_current(local_dir: str, run_id: str, resume: tuple[str, str | None] | None = None) -> None:
    """Forget `run_id` as any session's current run (`run complete`): the run may have been started by another
    session than the one completing it, whose hint went on attributing entries to the completed run. `resume`:
    the (run, task) current again instead where it was (the open parent of a subagent's run: the session's work
    goes on in it, and its brief names it as the current run)."""
    forget_runs(local_dir, {run_id}.__contains__, resume)


def forget_runs(local_dir: str, ended: Callable[[str], bool], resume: tuple[str, str | None] | None = None) -> None:
    """Remove every session's hint that names a run `ended` says is over (a `run complete` here, or one a sync
    brought in from another clone). Read and removed under the runs folder's lock, which `write_current` takes too
    (a `run start` of the same session between the read and the removal lost its hint, and the session's work went
    unattributed); nothing is removed through a planted link, and a stopped holder leaves the hints as they are."""
    if runs_folder_problem(local_dir) is not None:
        return
    folder = os.path.join(local_dir, RUNS_DIR)
    with contextlib.suppress(OSError, ValueError), osfs.folder_lock(folder, HINT_LOCK_S):
        for name in os.listdir(folder):
            if not name.startswith("current-"):
                continue
            session = name[len("current-"):]
            found = read_current(local_dir, None if session == "-" else session)
            if found is not None and ended(found[0]):
                if resume is None:
                    os.unlink(os.path.join(folder, name))
                else:
                    from continuity.core.fsio import write_atomic

                    run, task = resume
                    write_atomic(os.path.join(folder, name), f"{run} {task or ''}".strip().encode() + b"\n",
                                 durable=False)


def with_current_run(identity: Identity, local_dir: str) -> Identity:
    """`identity` with the session's current run (and its task) filled in when it names no run."""
    import msgspec

    changes = current_run_changes(identity.run_id, identity.session_id, identity.task_id, local_dir)
    return msgspec.structs.replace(identity, **changes) if changes else identity


def current_run_changes(run_id: str | None, session_id: str | None, task_id: str | None,
                        local_dir: str) -> dict[str, str]:
    """The run (and task) ids to fill in for a writer that names no run: the session's current run, else the
    current run of no session (`run start` from a shell or the MCP server, which know no harness session), if any."""
    if run_id:
        return {}
    found = read_current(local_dir, session_id)
    if found is None and session_id:  # a run started where no session is known (a shell, the MCP server)
        found = read_current(local_dir, None)
    if found is None:
        return {}
    current, current_task = found
    if task_id and current_task and task_id != current_task:  # another task named: not this run's work
        return {}
    changes = {"run_id": current}
    task = task_id or current_task
    if task:
        changes["task_id"] = task
    return changes
