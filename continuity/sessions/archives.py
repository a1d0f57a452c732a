"""The archive view: seed 004's archive JSON, built from an archive entry of the read model.

Everything comes from the entry (the archive event's facts and the names it cited), so a
rebuild writes the same bytes. This is where paths and commands are added.
"""

from __future__ import annotations

import errno
import os

import msgspec

from continuity.core.paths import LATEST_ARCHIVE_REL, SEED_COMMAND, SEED_READ_FIRST, event_relpath, run_relpath
from events.base import MAX_EVENT_BYTES
from projections.archives import ArchiveEntry

#: The most `restore --load` reads of an archive file (4 MiB). Its writer renders one archive event,
#: sealed at MAX_EVENT_BYTES; indentation and the Markdown template make the file a few times that.
ARCHIVE_FILE_BYTES = 16 * MAX_EVENT_BYTES


def read_archive_file(folder: str, name: str) -> tuple[str, bytes]:
    """(its real path, its bytes) of the archive file `name` in `folder`; a link inside the folder is followed.

    OSError, its strerror saying why, when the file leads out of the folder, is not a regular
    file (a FIFO or a device: never waited on) or holds more than ARCHIVE_FILE_BYTES;
    FileNotFoundError when there is none.
    """
    from continuity.core.fsio import project_file
    from events.osfs import read_regular

    shown = os.path.join(folder, name)
    real = project_file(folder, name)
    if real is None:
        raise OSError(errno.EXDEV, f"a link out of {folder}", shown)
    try:  # the real path has no link left: one swapped in since is refused
        return real, read_regular(real, follow=False, limit=ARCHIVE_FILE_BYTES)
    except OSError as error:
        if error.errno == errno.EFBIG:
            raise OSError(errno.EFBIG, f"more than {ARCHIVE_FILE_BYTES} bytes", shown) from None
        if error.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "a symlink", shown) from None
        raise type(error)(error.errno, error.strerror, shown) from None


class ArchiveGit(msgspec.Struct, kw_only=True):
    """Seed 004's `git` block."""

    root: str | None = None
    branch: str | None = None
    head: str | None = None
    status_short: str = ""


class ArchiveState(msgspec.Struct, kw_only=True):
    """Seed 004's `state` block."""

    current_goal: str | None = None
    done: list[str] = msgspec.field(default_factory=list)
    in_progress: str | None = None
    next: list[str] = msgspec.field(default_factory=list)
    blockers: list[str] = msgspec.field(default_factory=list)


class ArchiveRefs(msgspec.Struct, kw_only=True):
    """Seed 004's `refs` block."""

    latest_events: list[str] = msgspec.field(default_factory=list)
    runs: list[str] = msgspec.field(default_factory=list)
    sessions: list[str] = msgspec.field(default_factory=list)
    handoffs: list[str] = msgspec.field(default_factory=list)
    artifacts: list[str] = msgspec.field(default_factory=list)
    dirty_files: list[str] = msgspec.field(default_factory=list)


class ArchiveRestore(msgspec.Struct, kw_only=True):
    """Seed 004's `restore` block: what to read first, what to run, what to do next."""

    read_first: list[str] = msgspec.field(default_factory=list)
    commands: list[str] = msgspec.field(default_factory=list)
    next_action: str = ""


class ArchiveRecord(msgspec.Struct, kw_only=True):
    """One archive, in seed 004's shape plus the event it came from."""

    archive_id: str
    project: str
    created_at: str
    source_host: str | None
    target_host: str | None
    reason: str | None
    git: ArchiveGit
    state: ArchiveState
    refs: ArchiveRefs
    restore: ArchiveRestore
    #: continuity's own keys, after seed 004's (contract I12).
    gate: str | None
    full: bool
    event_id: str


def next_action_of(state: ArchiveState) -> str:
    """The first next item, else a pointer at what was in progress."""
    if state.next:
        return state.next[0]
    if state.in_progress:
        return f"Continue: {state.in_progress}"
    return "Read the latest archive and choose the next step."


def resume_command(project: str) -> str:
    """The command an archive tells the next session to run: one a shell runs as it reads, whatever the project (one
    that starts with `-` joined to its flag, or argparse would take it for an option)."""
    joined = "=" if project.startswith("-") else " "
    return f"continuity resume-bundle --project{joined}{shell_word(project)}"


def shell_word(text: str) -> str:
    """`text` as one word of a POSIX shell: as it is when it is a Name (every continuity project is), else quoted as
    `shlex.quote` quotes (a `runtime-continuity` project such as `web app`), with no shlex import on the hook path."""
    from continuity.core.idfields import is_name

    return text if is_name(text) else "'" + text.replace("'", "'\"'\"'") + "'"


#: Seed 004's default next action of an archive (contract §9).
SEED_NEXT_ACTION = "Read the resume bundle and continue from the latest recorded state."


def record_of(project: str, entry: ArchiveEntry) -> ArchiveRecord:
    """The archive record of an entry of the archives read model."""
    if entry.cited is not None:
        return _seed_record(project, entry)
    archived = entry.state
    state = ArchiveState(
        current_goal=archived.current_goal,
        done=list(archived.done),
        in_progress=archived.in_progress,
        next=list(archived.next),
        blockers=list(archived.blockers),
    )
    git = entry.git
    return ArchiveRecord(
        archive_id=entry.archive_id,
        project=project,
        created_at=entry.created_at,
        source_host=entry.source_host,
        target_host=entry.target_host,
        reason=entry.reason,
        gate=entry.gate,
        full=entry.full,
        git=ArchiveGit(root=git.root, branch=git.branch, head=git.head, status_short=git.status_short),
        state=state,
        refs=ArchiveRefs(
            latest_events=[event_relpath(name) for name in entry.events],
            runs=[run_relpath(run_id) for run_id in entry.run_ids],
            sessions=list(entry.session_ids),
            handoffs=list(entry.handoffs),
            artifacts=list(entry.artifacts),
            dirty_files=list(git.dirty_files),
        ),
        restore=ArchiveRestore(
            read_first=[*entry.read_first, LATEST_ARCHIVE_REL],
            commands=[resume_command(project)],
            next_action=next_action_of(state),
        ),
        event_id=entry.event_id,
    )


def _seed_record(project: str, entry: ArchiveEntry) -> ArchiveRecord:
    """An archive taken through `runtime-continuity`: seed 004's refs, read-first, command and next action."""
    assert entry.cited is not None
    cited, git, archived = entry.cited, entry.git, entry.state
    state = ArchiveState(current_goal=archived.current_goal, done=list(archived.done),
                         in_progress=archived.in_progress, next=list(archived.next), blockers=list(archived.blockers))
    next_action = cited.next_action
    if next_action is None:
        next_action = state.next[0] if state.next else (state.in_progress or SEED_NEXT_ACTION)
    return ArchiveRecord(
        archive_id=entry.archive_id, project=project, created_at=entry.created_at[:23] + "Z",
        source_host=entry.source_host, target_host=entry.target_host, reason=entry.reason,
        git=ArchiveGit(root=git.root, branch=git.branch, head=git.head, status_short=git.status_short),
        state=state,
        refs=ArchiveRefs(latest_events=list(cited.latest_events), runs=list(cited.runs),
                         sessions=list(cited.sessions), handoffs=list(cited.handoffs),
                         artifacts=list(cited.artifacts), dirty_files=list(git.dirty_files)),
        restore=ArchiveRestore(read_first=list(SEED_READ_FIRST),
                               commands=[f"{SEED_COMMAND} resume-bundle --project {project}"],
                               next_action=next_action),
        gate=entry.gate, full=entry.full, event_id=entry.event_id,
    )


def archive_schema() -> bytes:
    """archive.schema.json, generated from the archive record Struct."""
    from continuity.core.fsio import schema_json

    return schema_json(ArchiveRecord, "continuity archive")
