"""Repository membership (seed 002): `repositories/repositories.yaml` names the managed repositories.

The registry lives at `<project root>/repositories/repositories.yaml`, or where `work_registry`
in config.json points (a path relative to the project root: a shared central checkout). Its
shape:

    project: demo            # optional; when given it must be the store's project
    repositories:
      - id: web              # seed 002's id pattern
        role: primary
        path: ../web         # optional: where audit looks for it (default: a sibling folder named <id>)

(`repositories` may also map ids to `{role, path}`.) It is read with PyYAML's safe loader.
No registry file means membership is not managed: nothing is refused, `work status` says so.
This clone's repository id is `repositoryId` in `.ai/context/config.json` (seed 002's member
config, written by `continuity install ai-context --repository ID`), else `work_repository` in
config.json, else the newest checkpoint's `repository`.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterable
from typing import Any

import msgspec

from events import osfs

REGISTRY_REL = "repositories/repositories.yaml"
MEMBER_CONFIG_REL = ".ai/context/config.json"
#: Where this clone's id came from when config.json's `work_repository` gave it.
WORK_REPOSITORY = "config.json work_repository"
REGISTRY_LIMIT = 1 << 20  # bytes; a registry is a short list
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class Member(msgspec.Struct, frozen=True, kw_only=True):
    """One registered repository."""

    id: str
    role: str = ""
    path: str | None = None


class Membership(msgspec.Struct, frozen=True, kw_only=True):
    """What the registry says, read once: None for `members` when there is no registry (unmanaged)."""

    registry: str | None = None
    project: str | None = None
    members: dict[str, Member] | None = None
    problem: str | None = None
    repository: str | None = None
    repository_source: str | None = None

    @property
    def configured(self) -> str | None:
        """This clone's repository id as configured (member config, `work_repository`): not the newest checkpoint's,
        which may be another clone's, synced in."""
        return self.repository if self.repository_source in (MEMBER_CONFIG_REL, WORK_REPOSITORY) else None

    @property
    def managed(self) -> bool:
        """Whether a registry file exists (readable or not)."""
        return self.registry is not None


#: What `work start` refuses, and `work status` reports, in a managed project whose clone names no repository.
NO_REPOSITORY_ID = ("This repository has no repository id (repositoryId in .ai/context/config.json, or "
                    "work_repository in config.json): it cannot be checked against repositories/repositories.yaml.")


def not_registered(repository: str) -> str:
    """The contract's refusal for an unregistered repository."""
    return f"Repository '{repository}' is not registered in {REGISTRY_REL}."


def unregistered(membership: Membership, ids: Iterable[str]) -> list[str]:
    """The contract's messages for the ids the registry does not list (none when unmanaged or unreadable)."""
    if membership.members is None:
        return []
    return [not_registered(repo) for repo in dict.fromkeys(ids) if repo not in membership.members]


def parse_registry(data: Any, project: str | None) -> tuple[str | None, dict[str, Member], str | None]:
    """The registry's project, its members, and the first problem (None when it is well formed)."""
    if not isinstance(data, dict):
        return None, {}, "the registry is not a mapping with a `repositories` list"
    declared = data.get("project")
    if declared is not None and not isinstance(declared, str):
        return None, {}, f"`project` is not a string{_unquoted(declared)}"
    raw = data.get("repositories")
    if isinstance(raw, dict):
        for key, value in raw.items():  # `p1: {id: other}` registered `other` under a key that read `p1`
            named = value.get("id", value.get("repository")) if isinstance(value, dict) else None
            if named is not None and str(named) != str(key):  # `2024: {id: "2024"}` is one id, as YAML types them
                from events.problems import quoted

                return declared, {}, (f"repository {quoted(str(key), 80)} gives another id in its entry "
                                      f"({quoted(str(named), 80)}): the key is its id; remove one")
        raw = [{"id": key, **(value if isinstance(value, dict) else {"role": "" if value is None else value})}
               for key, value in raw.items()]
    if not isinstance(raw, list):
        return declared, {}, "`repositories` is missing or not a list"
    members: dict[str, Member] = {}
    for number, entry in enumerate(raw, 1):
        entry = {"id": entry} if isinstance(entry, str) else entry
        if not isinstance(entry, dict):
            return declared, members, f"repositories entry {number} is not a mapping"
        repo = entry.get("id", entry.get("repository"))
        role, path = entry.get("role", ""), entry.get("path")
        if not isinstance(repo, str) or not _ID.fullmatch(repo):
            return declared, members, (f"repositories entry {number} has no valid id (1-128 of A-Za-z0-9._-)"
                                       f"{_unquoted(repo)}")
        if not isinstance(role, str) or (path is not None and not isinstance(path, str)):
            return declared, members, f"repository {repo}: `role` and `path` must be strings"
        if repo in members:
            return declared, members, f"repository {repo} is listed twice"
        members[repo] = Member(id=repo, role=role, path=path)
    if declared is not None and project is not None and declared != project:
        return declared, members, f"the registry is for project {declared!r}, not {project!r}"
    return declared, members, None


def _unquoted(value: Any) -> str:
    """What to say of a YAML scalar read as a number or a boolean where text belongs (`id: 2024`, `id: on`): YAML
    reads it so unless it is quoted, and a number's digits may not survive it (`0123` is octal 83)."""
    if isinstance(value, bool):
        return ": YAML reads it as a boolean (true/false, yes/no, on/off unquoted); quote the text"
    if isinstance(value, int | float):
        return f": YAML reads {value!r} as a number; quote the text (\"{value}\" if those are its characters)"
    return ""


def registry_path(root: str, config: dict[str, Any]) -> str:
    """Where this project's registry is (it may not exist)."""
    given = config.get("work_registry")
    if isinstance(given, str) and given and "\x00" not in given:
        return os.path.normpath(os.path.join(root, given))
    return os.path.join(root, *REGISTRY_REL.split("/"))


class _RepeatedKey(Exception):
    def __init__(self, key: Any, line: int) -> None:
        super().__init__(key, line)
        self.key, self.line = key, line


def _unique_loader(base: Any) -> Any:
    """`base` (a safe loader) refusing a mapping that names a key twice: YAML forbids it, and PyYAML keeps the last,
    so a registry listing `repositories:` twice dropped the first list without a word."""
    class Unique(base):  # type: ignore[misc]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    if key in seen:
                        raise _RepeatedKey(key, key_node.start_mark.line + 1)
                    seen.add(key)
                except TypeError:  # an unhashable key: the base refuses it with its own words
                    break
            return super().construct_mapping(node, deep)

    return Unique


def read_yaml(path: str) -> Any:
    """A YAML file's data (safe loader only, no key named twice in a mapping); ValueError with the reason when it
    cannot be read."""
    import yaml

    try:  # a FIFO or a device standing there is refused at once, never waited on
        raw = osfs.read_regular(path, limit=REGISTRY_LIMIT)
    except OSError as error:
        if error.errno == errno.EFBIG:
            raise ValueError(f"it is larger than {REGISTRY_LIMIT} bytes") from None
        raise ValueError(f"cannot read it ({error.strerror or error})") from None
    loader = _unique_loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    try:
        return yaml.load(raw, Loader=loader)
    except _RepeatedKey as repeated:
        from events.problems import quoted

        shown = quoted(repeated.key, 64) if isinstance(repeated.key, str) else repr(repeated.key)[:64]
        raise ValueError(f"it names the key {shown} twice in one mapping (line {repeated.line})") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"it is not valid YAML{where}") from None
    except (RecursionError, ValueError, TypeError):
        raise ValueError("it is not valid YAML") from None


def member_config(root: str) -> dict[str, Any]:
    """`.ai/context/config.json` (seed 002's member config) as data; empty when it is not there or not an object."""
    return read_member_config(root)[0]


def read_member_config(root: str) -> tuple[dict[str, Any], str | None]:
    """`.ai/context/config.json` as data, and what is wrong with it when it is there but says no member: not
    readable, not a JSON object, a `repositoryId` that is no repository id (None: absent, or fine)."""
    from events.problems import quoted

    path = os.path.join(root, *MEMBER_CONFIG_REL.split("/"))
    try:
        raw = osfs.read_regular(path, limit=REGISTRY_LIMIT)
    except FileNotFoundError:
        return {}, None
    except OSError as error:
        if not os.path.lexists(path):
            return {}, None
        return {}, f"{MEMBER_CONFIG_REL} is unreadable: {error.strerror or error}"
    import orjson  # only where the file exists: orjson loads dataclasses and inspect (about 15 ms)

    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}, f"{MEMBER_CONFIG_REL} is not valid JSON"
    if not isinstance(data, dict):
        return {}, f"{MEMBER_CONFIG_REL} is not a JSON object"
    value = data.get("repositoryId")
    if value is not None and not (isinstance(value, str) and _ID.fullmatch(value)):
        shown = (quoted(value, 64, redact=True) if isinstance(value, str)
                 else "a list" if isinstance(value, list) else "an object" if isinstance(value, dict)
                 else quoted(str(value).lower() if isinstance(value, bool) else str(value)[:64], 64))
        return data, f"{MEMBER_CONFIG_REL}: repositoryId {shown} is not a repository id"
    return data, None


def member_repository(root: str) -> str | None:
    """`repositoryId` of `.ai/context/config.json`, when the file is there and names a valid id."""
    value = member_config(root).get("repositoryId")
    return value if isinstance(value, str) and _ID.fullmatch(value) else None


def foreign_project(member: dict[str, Any], project: str | None) -> str | None:
    """The problem when the member config names another project than the registry's `project` (seed 002: "A member
    config must use the same project ID and a repository ID present in that registry"), else None (none when the
    registry names no project: the store's own name may be only its folder's)."""
    named = member.get("projectId")
    if named is None or project is None or named == project:
        return None
    if not isinstance(named, str):
        return f"{MEMBER_CONFIG_REL}: projectId is not a string"
    return f"{MEMBER_CONFIG_REL}: projectId {named!r} is not this project's id {project!r}"


def load(root: str, config: dict[str, Any], project: str | None,
         checkpoint_repository: str | None = None) -> Membership:
    """Read the registry and this clone's repository id (fail open: a problem, never an exception)."""
    member, member_problem = read_member_config(root)
    repository = member.get("repositoryId")
    repository = repository if isinstance(repository, str) and _ID.fullmatch(repository) else None
    source: str | None = MEMBER_CONFIG_REL
    if repository is None:
        configured = config.get("work_repository")
        if isinstance(configured, str) and _ID.fullmatch(configured):
            repository, source = configured, WORK_REPOSITORY
        elif checkpoint_repository is not None:
            repository, source = checkpoint_repository, "the newest checkpoint"
        else:
            source = None
    path = registry_path(root, config)
    if not os.path.lexists(path):
        return Membership(repository=repository, repository_source=source)
    try:
        data = read_yaml(path)
    except ValueError as error:
        return Membership(registry=path, members={}, problem=f"{REGISTRY_REL} is unreadable: {error}",
                          repository=repository, repository_source=source)
    declared, members, problem = parse_registry(data, project)
    # a member config that is there but says no member fails membership closed, as one naming another does: its id
    # was dropped without a word and the clone took the newest checkpoint's
    return Membership(registry=path, project=declared, members=members,
                      problem=f"{REGISTRY_REL}: {problem}" if problem else member_problem
                      or foreign_project(member, declared), repository=repository, repository_source=source)


def frozen_members(membership: Membership) -> frozenset[str] | None:
    """The registered ids as a decision's fact (None: unmanaged)."""
    return None if membership.members is None else frozenset(membership.members)


def diagnostics(membership: Membership, ids: Iterable[str]) -> dict[str, Any]:
    """The membership section of the runtime document: managed or not, this repository, what is wrong."""
    wanted = [membership.repository] if membership.repository else []
    problems = ([membership.problem] if membership.problem else []) + unregistered(membership, [*wanted, *ids])
    if membership.managed and membership.repository is None:  # `work start` refuses it: status says so
        problems.append(NO_REPOSITORY_ID)
    return {"managed": membership.managed, "registry": membership.registry, "repository": membership.repository,
            "repositorySource": membership.repository_source,
            "registered": sorted(membership.members) if membership.members is not None else None,
            "healthy": not problems, "problems": problems}
