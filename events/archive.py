"""Archive events: `continuity archive` and `host-switch` (seed 004).

An archive event carries every outside fact its archive needs (git root, branch, HEAD,
short status, dirty files; the state decided when it was taken), so replay never runs git.
"""

from typing import Annotated

import msgspec

from events.base import Event, Ident, Label, NextItem, NextItems, PathRef, PathRefs, Text, Texts


class GitFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What git said when the archive was taken (all empty outside a git work tree)."""

    root: PathRef | None = None
    branch: Text | None = None
    head: Text | None = None
    status_short: Annotated[str, msgspec.Meta(max_length=65536)] = ""
    dirty_files: PathRefs = ()


class ArchivedState(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 004's archive state: goal, done, in progress, next, blockers."""

    current_goal: Text | None = None
    done: Texts = ()
    in_progress: NextItem | None = None
    next: NextItems = ()
    blockers: Texts = ()


class CitedFiles(msgspec.Struct, frozen=True, kw_only=True):
    """What a seed-004 archive (`runtime-continuity archive`) cites, listed from the project when taken.

    Present only on archives taken through the compat CLI: their JSON and Markdown are
    rendered in seed 004's exact shape from these facts, so a rebuild writes the same bytes.
    """

    latest_events: PathRefs = ()
    runs: PathRefs = ()
    sessions: PathRefs = ()
    handoffs: PathRefs = ()
    artifacts: PathRefs = ()
    #: `git log --oneline -3`, trimmed (the Markdown's 最近提交).
    recent_commits: Annotated[str, msgspec.Meta(max_length=65536)] = ""
    #: `restore.next_action` when a note decided it (contract §9: the note's first next, else its
    #: `blocked`, else the default); None: it follows the archived state (I10).
    next_action: NextItem | None = None


class ArchiveCreated(Event, frozen=True, kw_only=True, tag="archive.created"):
    """A resumable snapshot of the work: state, git facts, and where to read first."""

    type: Label = "archive"
    gate: Label | None = None
    full: bool = False
    source_host: Ident | None = None
    target_host: Ident | None = None
    reason: Text | None = None
    git: GitFacts = msgspec.field(default_factory=GitFacts)
    state: ArchivedState = msgspec.field(default_factory=ArchivedState)
    read_first: PathRefs = ()
    cited: CitedFiles | None = None


class HostSwitched(Event, frozen=True, kw_only=True, tag="host.switched"):
    """Work moved from one host tool to another; its `prev` is the archive taken for it."""

    type: Label = "host_switch"
    from_host: Ident
    to_host: Ident
    reason: Text | None = None
