"""Work-log events: `continuity log` and `continuity checkpoint` (seed 004)."""

from events.base import Event, Tag


class WorkLogged(Event, frozen=True, kw_only=True, tag="work.logged"):
    """A portable work-log entry: what was done, what is in progress, what comes next."""

    type: Tag = "log"


class CheckpointRecorded(Event, frozen=True, kw_only=True, tag="checkpoint.recorded"):
    """A phase checkpoint: the state to resume from if the context is lost now."""

    type: Tag = "checkpoint"
