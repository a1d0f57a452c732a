"""`continuity work audit`: the registry against the git worktrees nearby. Read-only: it changes nothing.

Each registered repository is looked for at its `path` (relative to the project root), else
at the project root itself (this clone's own id), else at the sibling folder named by its
id. It is `missing` when no git worktree is there, `mismatched` when the worktree's member
config (`.ai/context/config.json`) names another repository id. A sibling git worktree that
the registry does not list is a plausible member when it carries a member config or a
continuity store of this project; other folders beside the project are not reported.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

from continuity.core.paths import STORE_REL
from continuity.workstreams.membership import Membership, member_repository
from events import osfs


def _is_worktree(path: str, root: str | None = None) -> bool:
    """Whether a git worktree is at `path`; the project root (`root`) is in one when any folder above holds
    `.git` too (a project kept in a subfolder of its repository is this clone, not a missing one)."""
    from continuity.facts import work_tree_root

    if not os.path.isdir(path):
        return False
    return os.path.exists(os.path.join(path, ".git")) or (path == root and work_tree_root(path) is not None)


def _store_project(path: str) -> str | None:
    try:
        data = orjson.loads(osfs.read_regular(os.path.join(path, *STORE_REL.split("/"), "config.json"),
                                              limit=1 << 20))
    except (OSError, orjson.JSONDecodeError):
        return None
    project = data.get("project") if isinstance(data, dict) else None
    return project if isinstance(project, str) else None


def _member_project(path: str) -> str | None:
    try:
        data = orjson.loads(osfs.read_regular(os.path.join(path, ".ai", "context", "config.json"), limit=1 << 20))
    except (OSError, orjson.JSONDecodeError):
        return None
    project = data.get("projectId") if isinstance(data, dict) else None
    return project if isinstance(project, str) else None


def audit(root: str, project: str, membership: Membership) -> dict[str, Any]:
    """The audit report: registered repositories found, missing or mismatched; plausible unregistered siblings."""
    root = os.path.abspath(root)
    findings: list[str] = []
    if membership.problem:
        findings.append(membership.problem)
    registered: list[dict[str, Any]] = []
    seen: set[str] = {root}
    for member in (membership.members or {}).values():
        if member.path:
            where = os.path.normpath(os.path.join(root, member.path))
        elif member.id == membership.repository:
            where = root
        else:
            where = os.path.join(os.path.dirname(root), member.id)
        seen.add(where)
        status = "present"
        present = _is_worktree(where, root)
        found_id = member_repository(where) if present else None
        if not present:
            status = "missing"
            findings.append(f"registered repository {member.id} is missing: no git worktree at {where}")
        elif found_id is not None and found_id != member.id:
            status = "mismatched"
            findings.append(f"registered repository {member.id} is mismatched: {where} is configured as "
                            f"{found_id}")
        registered.append({"id": member.id, "role": member.role, "path": where, "status": status,
                           "configuredAs": found_id})
    if membership.managed and membership.repository and membership.members is not None \
            and membership.repository not in membership.members:
        findings.append(f"this repository ({membership.repository}) is not registered")
    siblings: list[dict[str, Any]] = []
    parent = os.path.dirname(root)
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        names = []
    for name in names:
        where = os.path.join(parent, name)
        if where in seen or not _is_worktree(where):
            continue
        repo_id = member_repository(where)
        if _member_project(where) != project and _store_project(where) != project:
            continue
        if membership.members is not None and repo_id in membership.members:
            continue
        siblings.append({"path": where, "configuredAs": repo_id})
        findings.append(f"plausible unregistered sibling repository at {where}"
                        + (f" (configured as {repo_id})" if repo_id else ""))
    return {"managed": membership.managed, "registry": membership.registry, "repository": membership.repository,
            "registered": registered, "unregisteredSiblings": siblings, "findings": findings}
