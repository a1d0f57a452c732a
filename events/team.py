"""Team continuity events (seed 000): structured snapshots of an agent's work on a task.

A snapshot carries everything its document holds, so the documents under `team/` are
projections: rebuilt byte for byte from the log, and the newest one is decided by log
order on every replica.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from events.base import Event, Label, Name, PathRef, Text, Texts


class SnapshotTaken(Event, frozen=True, kw_only=True, tag="snapshot.taken"):
    """An agent's snapshot of one task: objective, decisions, next actions, questions, artifacts."""

    type: Label = "snapshot"
    team: Name
    agent: Name
    task: Name
    objective: Text
    decisions: Texts = ()
    next_actions: Texts = ()
    open_questions: Texts = ()
    artifacts: Texts = ()
    context_used_percent: Annotated[int, msgspec.Meta(ge=0, le=100)] | None = None
    transcript_path: PathRef | None = None
