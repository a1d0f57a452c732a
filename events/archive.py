"""Archive events: `continuity archive` and `host-switch` (seed 004).

An archive event carries every outside fact its archive needs (git root, branch, HEAD,
short status, dirty files; the state decided when it was taken), so replay never runs git.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from events.base import Event, Label, Name, NextItem, NextItems, PathRef, PathRefs, Text, Texts


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


class ArchiveCreated(Event, frozen=True, kw_only=True, tag="archive.created"):
    """A resumable snapshot of the work: state, git facts, and where to read first."""

    type: Label = "archive"
    gate: Label | None = None
    full: bool = False
    source_host: Name | None = None
    target_host: Name | None = None
    reason: Text | None = None
    git: GitFacts = msgspec.field(default_factory=GitFacts)
    state: ArchivedState = msgspec.field(default_factory=ArchivedState)
    read_first: PathRefs = ()


class HostSwitched(Event, frozen=True, kw_only=True, tag="host.switched"):
    """Work moved from one host tool to another; its `prev` is the archive taken for it."""

    type: Label = "host_switch"
    from_host: Name
    to_host: Name
    reason: Text | None = None
