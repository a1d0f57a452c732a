"""The team models' writers: snapshot `latest.json`, the agent's `LATEST.json` pointer, role documents."""

from __future__ import annotations

import os
from typing import Any

from continuity.core.fsio import pretty_json, reason_of, write_if_changed
from continuity.core.store import Store
from continuity.team.plain import POINTER_SCHEMA, names_pointer, pointer_relpath, snapshot_relpath
from continuity.team.resume import document
from continuity.team.roles import role_document, role_relpath
from events.base import Event
from events.errors import ContinuityError
from projections.readmodel import Projects
from projections.roles import RolesState
from projections.team import Teams


def own_project(store: Store) -> str | None:
    """The project whose team documents the store holds (None when config.json cannot say: then every project's).

    `team/<team>/...` has no project in its path: a branch that carries another project's team events (clones of
    differently named projects syncing with one remote) would write that project's documents over this one's.
    """
    if store.config_problem is not None:
        return None
    project = store.config.get("project")
    return project if isinstance(project, str) else None


class TeamWriter:
    """Writes the documents of each snapshot as the fold produces it (fail open: warnings)."""

    def __init__(self, store: Store, folder: str | None = None) -> None:
        self.folder = folder or store.path
        self.project = own_project(store)
        self.warnings: list[str] = []

    def __call__(self, state: Projects[Teams], name: str, event: Event) -> None:
        if event.kind != "snapshot.taken" or (self.project is not None and event.project != self.project):
            return
        team: Any = getattr(event, "team", "")
        agent: Any = getattr(event, "agent", "")
        member = state.projects[event.project].teams.get(team, {}).get(agent)
        if member is None:
            return
        try:
            for task in {getattr(event, "task", ""), member.latest_task}:
                snapshot = member.tasks.get(task) if task else None
                if snapshot is not None and not names_pointer(snapshot.task):  # a synced event the CLI refuses
                    self._write(snapshot_relpath(team, agent, snapshot.task), document(snapshot))
            latest = member.tasks.get(member.latest_task) if member.latest_task else None
            if latest is not None:
                self._write(pointer_relpath(team, agent), {
                    "schema": POINTER_SCHEMA, "agent": latest.agent, "task": latest.task,
                    "checkpoint_id": latest.checkpoint_id, "created_at": latest.created_at,
                    "path": snapshot_relpath(team, agent, latest.task),
                })
        except (OSError, ContinuityError) as error:
            message = f"team documents not written: {reason_of(error, self.folder)}"
            if message not in self.warnings:
                self.warnings.append(message)

    def _write(self, relative: str, data: dict[str, Any]) -> None:
        write_if_changed(os.path.join(self.folder, *relative.split("/")), pretty_json(data), within=self.folder)


class RoleWriter:
    """Writes a role's document each time one of its events is folded (fail open: warnings)."""

    def __init__(self, store: Store, folder: str | None = None) -> None:
        self.folder = folder or store.path
        self.project = own_project(store)
        self.warnings: list[str] = []

    def __call__(self, state: Projects[RolesState], name: str, event: Event) -> None:
        if not event.kind.startswith("role.") or (self.project is not None and event.project != self.project):
            return
        team: Any = getattr(event, "team", "")
        role = state.projects[event.project].teams.get(team, {}).get(getattr(event, "role", ""))
        if role is None:
            return
        try:
            write_if_changed(os.path.join(self.folder, *role_relpath(role.team, role.role).split("/")),
                             role_document(role), within=self.folder)
        except (OSError, ContinuityError) as error:
            message = f"role documents not written: {reason_of(error, self.folder)}"
            if message not in self.warnings:
                self.warnings.append(message)
