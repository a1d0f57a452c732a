"""Session lifecycle events: a harness session started or ended."""

from events.base import Event, Label, PathRef, Text


class SessionStarted(Event, frozen=True, kw_only=True, tag="session.started"):
    """An agent session began (startup, resume, clear, compact) on some host."""

    type: Label = "session_start"
    source: Label | None = None
    model: Label | None = None
    transcript_path: PathRef | None = None
    cwd: PathRef | None = None


class SessionEnded(Event, frozen=True, kw_only=True, tag="session.ended"):
    """An agent session ended; `reason` is what the harness said, if anything."""

    type: Label = "session_end"
    reason: Text | None = None
