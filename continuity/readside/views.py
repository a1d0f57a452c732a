"""Read models as the views see them: the states a command loaded, one project at a time.

A command names the read models it reads; `ProjectView` exposes each under a short
attribute and raises if a view touches a model its command did not load.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from projections.registry import REGISTRY

if TYPE_CHECKING:  # the models' modules are imported when a command loads them (projections/registry.py)
    from projections.archives import ArchivesState
    from projections.overview import IndexEntry, Overview
    from projections.readmodel import Projects
    from projections.refs import RefsState
    from projections.sessions import SessionsState
    from projections.tasks import TasksState
    from projections.worklog import WorkState

#: What the session commands (status, archive, resume-bundle) read.
SESSION_MODELS = ("overview", "worklog", "sessions", "refs", "archives")
#: What the resume brief reads: the session models, tasks, runs and memories, the active workstream, and the
#: agent's team snapshots; and `handoffs`, whose catch-up writes the `handoffs/<id>.json` documents the brief reads
#: each mentioned handoff's state from (left to other commands, a handoff a sync or a pull brought showed
#: "missing" until one ran); and `agentwork`, the agent's own work state beside the project's, which is whoever wrote
#: last.
BRIEF_MODELS = (*SESSION_MODELS, "tasks", "workstreams", "team", "handoffs", "agentwork")
#: Of those, the ones a project may never use: the brief reads them only when they hold state for its project.
SPARSE_MODELS = ("tasks", "workstreams", "team", "handoffs")
#: What the brief (and `status`) read of the tasks model: its view Struct, named so that it is imported only when a
#: project's tasks state is decoded.
BRIEF_VIEWS = {"tasks": "projections.tasks:TaskBrief"}


class Models:
    """Read-model states by name, as loaded (and caught up) for one command."""

    def __init__(self, states: dict[str, Projects[Any]], partial: dict[str, int] | None = None) -> None:
        self.states = states
        #: Models handed over with no project (catchup.catch_up's `sparse`), and how many projects each holds: the
        #: project the command reads is as before any event of the model, and the others are left out.
        self.partial = partial or {}

    @classmethod
    def empty(cls, names: tuple[str, ...] = BRIEF_MODELS) -> Models:
        """Every named model before any event."""
        return cls({name: REGISTRY[name].empty() for name in names})

    def state(self, name: str) -> Projects[Any]:
        """One model's state (KeyError when the command did not load it: a bug)."""
        return self.states[name]

    def project(self, project: str) -> ProjectView:
        """The loaded models' states for one project."""
        return ProjectView(self, project)

    @property
    def last_name(self) -> str | None:
        """The newest event folded (every loaded model has folded the same events)."""
        return max((state.last_name or "" for state in self.states.values()), default="") or None

    @property
    def events_folded(self) -> int:
        """How many events the loaded models have folded."""
        return max((state.events_folded for state in self.states.values()), default=0)


class ProjectView:
    """One project as the loaded read models know it."""

    def __init__(self, models: Models, project: str) -> None:
        self.models = models
        self.project = project

    def has(self, name: str) -> bool:
        """Whether a loaded read model holds state for this project (False: as before any event of it)."""
        return self.project in self.models.state(name).projects

    def of(self, name: str) -> Any:
        """The state of any loaded read model for this project (a new model needs no attribute here)."""
        return REGISTRY[name].project(self.models.state(name), self.project)

    @cached_property
    def overview(self) -> Overview:
        """Counts, times and the newest events."""
        found: Overview = self.of("overview")
        return found

    @cached_property
    def work(self) -> WorkState:
        """Goal, done, in progress, next, blockers, decisions."""
        found: WorkState = self.of("worklog")
        return found

    @cached_property
    def sessions(self) -> SessionsState:
        """Sessions and runs."""
        found: SessionsState = self.of("sessions")
        return found

    @cached_property
    def refs(self) -> RefsState:
        """Handoffs and artifacts mentioned."""
        found: RefsState = self.of("refs")
        return found

    @cached_property
    def tasks(self) -> TasksState:
        """Tasks, agent runs and synthesized memories."""
        found: TasksState = self.of("tasks")
        return found

    @cached_property
    def archive_state(self) -> ArchivesState:
        """The archives read model's state."""
        found: ArchivesState = self.of("archives")
        return found

    @cached_property
    def archives(self) -> list[Any]:
        """The newest archives as seed 004's archive records, oldest first."""
        from continuity.sessions.archives import record_of

        return [record_of(self.project, entry) for entry in self.archive_state.archives]

    @property
    def archives_total(self) -> int:
        """How many archives the project has ever had."""
        return self.archive_state.total

    def archive_of(self, event_id: str) -> Any:
        """The archive record its `archive.created` event made (None when the model lacks it).

        Not the newest one: another process may have archived the same project since that event.
        """
        from continuity.sessions.archives import record_of

        for entry in reversed(self.archive_state.archives):
            if entry.event_id == event_id:
                return record_of(self.project, entry)
        return None

    def latest_archive_at(self) -> str | None:
        """When the newest archive was taken, by its writer's clock (`events.clock.written`), or None."""
        entries = self.archive_state.archives
        return (entries[-1].written_at or entries[-1].created_at) if entries else None

    def latest_archive(self) -> Any:
        """The newest archive record, or None."""
        entries = self.archive_state.archives
        if not entries:
            return None
        from continuity.sessions.archives import record_of

        return record_of(self.project, entries[-1])

    # The overview's fields, by their usual names.
    @property
    def events(self) -> int:
        """How many events the project has."""
        return self.overview.events

    @property
    def first_at(self) -> str | None:
        """The time of its first event."""
        return self.overview.first_at

    @property
    def last_at(self) -> str | None:
        """The time of its newest event."""
        return self.overview.last_at

    @property
    def last_event_id(self) -> str | None:
        """The id of its newest event."""
        return self.overview.last_event_id

    @property
    def recent(self) -> list[IndexEntry]:
        """Its newest events as a successor needs them, oldest first.

        Notable events (edits, commands, checkpoints, archives, notes) come first; routine
        ones (turn and session markers, briefs served) fill what room is left, so a burst
        of turns never pushes the last real edit out.
        """
        from projections.overview import RECENT_LIMIT

        overview = self.overview
        chosen = {entry.name: entry for entry in overview.notable[-RECENT_LIMIT:]}
        for entry in reversed(overview.recent):
            if len(chosen) >= RECENT_LIMIT:
                break
            chosen.setdefault(entry.name, entry)
        return [chosen[name] for name in sorted(chosen)]

    @property
    def served(self) -> int:
        """How many resume briefs were recorded as served."""
        return self.overview.served
