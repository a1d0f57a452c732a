"""The team tools (seed 000): `snapshot`, `resume`, `park`, `briefing`, `inbox`, `send`, `handoff`.

Inputs are built from the request Structs the CLI builds (continuity/team/decide.py,
continuity/team/service.py, continuity/handoffs/decide.py); each tool calls the same service
as the CLI and answers with what the CLI prints with `--json`, plus its warnings (a client
has no stderr). A park that writes nothing answers `ok: false` with seed 000's banner and
code, as `park --json` does: the call itself succeeded, the checkpoint was not written.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from continuity.adapters.mcp.registry import pick, tool, tool_input
from continuity.adapters.mcp.tools import identity
from continuity.core.errors import UsageError
from continuity.core.identity import Identity
from continuity.core.store import Store
from continuity.handoffs.decide import HandoffCreate
from continuity.team.decide import ParkRequest, SnapshotRequest
from continuity.team.service import BriefingRequest, InboxRequest, ResumeRequest, SendRequest


class Who(msgspec.Struct, frozen=True, kw_only=True):
    """Who writes, besides the agent the tool's own arguments name."""

    project: str | None = None
    host: str | None = None
    session_id: str | None = None


class ParkOptions(msgspec.Struct, frozen=True, kw_only=True):
    """How park checks what it writes."""

    handoff: bool = False


class HandoffAction(msgspec.Struct, frozen=True, kw_only=True):
    """What `handoff` does: create one, move one (accept, reject, close) or list them."""

    action: Literal["create", "accept", "reject", "close", "list"]
    handoff_id: str | None = None
    note: str = ""
    state: Literal["pending", "accepted", "rejected", "closed", "all"] | None = None
    agent: str | None = None


TEAM_HELP = {
    "team": "the team", "agent": "the agent (default: env CONTINUITY_AGENT)", "task": "the task",
    "objective": "what the work is for, one line", "decisions": "decisions made", "next_actions": "next actions",
    "open_questions": "open questions", "artifacts": "artifacts: paths or URLs (<remote>#<ref>@<commit> claims "
    "pushed state)", "context_used_percent": "how much of the context window was used (0-100)",
    "transcript_path": "the session transcript", "max_age": "fail freshness unless at most this old: 30s, 15m, 12h, 2d",
    "role": "park only this role", "handoff": "parking for a successor: check the parking doctrine first",
    "all": "every member (briefing) or read messages too (inbox)", "ack": "acknowledge this message id",
    "to": "the agent the message is for",
    "to_agent": "create: the agent it is for; list: only the handoffs addressed to this agent",
    "to_host": "create: the host it is for", "for_task": "create: the task it concerns",
    "handoff_id": "accept, reject, close: the handoff", "note": "accept, reject, close: a note",
    "state": "list: which state (default pending and accepted)",
}
SnapshotInput = tool_input("SnapshotInput", "A team snapshot of an agent's task.", SnapshotRequest, Who,
                           filled=("project", "agent"), help_for=TEAM_HELP)
ResumeInput = tool_input("ResumeInput", "Whose team resume brief to read.", ResumeRequest, filled=("agent",),
                         help_for=TEAM_HELP)
ParkInput = tool_input("ParkInput", "Park the roles an agent holds.", ParkRequest, ParkOptions, Who,
                       filled=("project", "agent"), help_for=TEAM_HELP)
BriefingInput = tool_input("BriefingInput", "Whose team briefing to read.", BriefingRequest, filled=(),
                           help_for=TEAM_HELP)
InboxInput = tool_input("InboxInput", "Whose team inbox to read (or a message to acknowledge).", InboxRequest, Who,
                        help_for=TEAM_HELP)
SendInput = tool_input("SendInput", "A message to an agent of a team.", SendRequest, Who, help_for=TEAM_HELP)
HandoffInput = tool_input("HandoffInput", "A handoff to create, accept, reject, close, or the handoffs to list.",
                          HandoffAction, HandoffCreate, Who, filled=("project", "message"), help_for=TEAM_HELP)


def _agent(request: Any, tool: str) -> str:
    """The agent a team tool is for: its `agent` argument, else CONTINUITY_AGENT (identity's order)."""
    import os

    agent = request.agent if request.agent is not None else os.environ.get("CONTINUITY_AGENT")
    if not agent:
        raise UsageError(f"{tool}: give agent or set CONTINUITY_AGENT")
    return str(agent)


def _picked(struct: type[Any], request: Any, tool: str) -> Any:
    """`pick` for a part whose `agent` the tool fills in: the argument, else CONTINUITY_AGENT."""
    return struct(**{name: getattr(request, name) for name in struct.__struct_fields__} | {
        "agent": _agent(request, tool)})


def _who(request: Any, store: Store, agent: str | None, *, reading: bool = False) -> Identity:
    """The writer of a team call; `reading`: a read, which answers whatever a write would be refused for (a broken
    config.json), its warnings said by the read itself (service.TeamRead), once."""
    return identity(_Ids(request, agent), store, reading=[] if reading else None)


class _Ids:
    """A team request seen as an identity request: the agent it names is the writer."""

    def __init__(self, request: Any, agent: str | None) -> None:
        for name in Identity.__struct_fields__:
            setattr(self, name, getattr(request, name, None) if name in Who.__struct_fields__ else None)
        self.agent_id = agent


@tool("snapshot", SnapshotInput, "Record a structured team snapshot of your task (objective, decisions, next "
      "actions, open questions, artifacts) so a fresh session resumes from it.")
def snapshot(request: Any, store: Store) -> dict[str, Any]:
    """The `snapshot` tool."""
    from continuity.team import service

    wanted = _picked(SnapshotRequest, request, "snapshot")
    data, warnings = service.take_snapshot(store, _who(request, store, wanted.agent), wanted)
    return {**data, "warnings": warnings}


@tool("resume", ResumeInput, "An agent's newest team snapshot as a deterministic resume brief (and its age); "
      "max_age makes freshness a requirement. Read-only.")
def resume(request: Any, store: Store) -> dict[str, Any]:
    """The `resume` tool."""
    from continuity.team import service

    result = service.resume(store, _picked(ResumeRequest, request, "resume"))
    return {**result.data, "brief": result.brief, "freshness_failure": result.line, "warnings": result.warnings}


@tool("park", ParkInput, "At session exit: snapshot every role you hold under a fresh lease (or just role) and "
      "point its checkpoint_ref at it. ok false says CHECKPOINT NOT WRITTEN.")
def park(request: Any, store: Store) -> dict[str, Any]:
    """The `park` tool."""
    from continuity.core.text import one_line
    from continuity.team import decide
    from continuity.team.parking import EXIT_UNREADABLE, refuse_secret_names, unreadable_line
    from continuity.team.parking import park as park_roles
    from events.errors import ContinuityError

    agent = _agent(request, "park")
    wanted = pick(ParkRequest, request)
    checked = msgspec.structs.replace(
        wanted, team=decide.checked_name(wanted.team, "team", "park"),
        agent=decide.checked_name(agent, "agent", "park"),
        role=None if wanted.role is None else decide.checked_name(wanted.role, "role", "park"))
    refuse_secret_names(checked)  # as `park`: before a banner names it
    try:  # seed 000: a store whose role state cannot be read parks nothing (exit 1, the banner), as `park` says
        store.check_safe()
        store.project  # noqa: B018 (a config.json that cannot say)
    except ContinuityError as error:
        errors = [one_line(f"park: {error}"), unreadable_line(checked.agent, checked.team)]
        return {"ok": False, "exit_code": EXIT_UNREADABLE, "message": errors[-1], "errors": errors, "warnings": []}
    who = _who(request, store, agent)
    result = park_roles(store, who, checked, handoff=request.handoff)
    if result.code != 0:
        return {"ok": False, "exit_code": result.code, "message": result.errors[-1], "errors": result.errors,
                "warnings": result.warnings}
    return {"ok": True, "action": "park", "parked": msgspec.to_builtins(result.parked), "lines": result.lines(),
            "warnings": result.warnings}


@tool("briefing", BriefingInput, "Session start for a team in one call: presence, board, inbox, needs-me, pending "
      "handoffs, latest snapshot. Read-only, never fails.")
def briefing(request: Any, store: Store) -> dict[str, Any]:
    """The `briefing` tool."""
    from continuity.team import service

    data, warnings = service.briefing(store, pick(BriefingRequest, request))
    return {**data, "warnings": warnings}


@tool("inbox", InboxInput, "An agent's unread team messages; with ack, mark one read.")
def inbox(request: Any, store: Store) -> dict[str, Any]:
    """The `inbox` tool."""
    from continuity.team import service

    wanted = pick(InboxRequest, request)
    data, warnings = service.inbox(store, _who(request, store, wanted.agent, reading=wanted.ack is None), wanted)
    return {**data, "warnings": warnings}


@tool("send", SendInput, "Send a message to an agent of a team.")
def send(request: Any, store: Store) -> dict[str, Any]:
    """The `send` tool."""
    from continuity.team import service

    wanted = pick(SendRequest, request)
    data, warnings = service.send(store, _who(request, store, wanted.agent), wanted)
    return {**data, "warnings": warnings}


#: The `handoff` tool's arguments each action takes, beside HANDOFF_ANY (a misspelt or misplaced one is refused).
HANDOFF_ARGS = {"create": frozenset({"to_agent", "to_host", "for_task", "message", "artifacts"}),
                "accept": frozenset({"handoff_id", "note"}), "reject": frozenset({"handoff_id", "note"}),
                "close": frozenset({"handoff_id", "note"}), "list": frozenset({"state", "to_agent"})}
HANDOFF_ANY = frozenset({"action", "agent", "project", "host", "session_id"})


def _given(request: Any) -> list[str]:
    """The arguments of `request` given another value than their default."""
    return [field.name for field in msgspec.structs.fields(request)
            if field.default is not msgspec.NODEFAULT and getattr(request, field.name) != field.default]


@tool("handoff", HandoffInput, "Hand work to another agent or host and track it: create (to_agent or to_host, "
      "message), accept, reject, close (handoff_id), or list (state, to_agent).")
def handoff(request: Any, store: Store) -> dict[str, Any]:
    """The `handoff` tool."""
    from continuity.handoffs import service
    from continuity.team import decide

    # `list` reads this store's project for no writer (as the CLI's `handoff list`, which takes none of the writer's
    # flags): a project, agent, host or session given to it was dropped, a secret or `../..` one without a word
    common = frozenset({"action"}) if request.action == "list" else HANDOFF_ANY
    stray = [name for name in _given(request) if name not in common | HANDOFF_ARGS[request.action]]
    if stray:  # as the CLI's parser refuses an option the action does not take: never dropped without a word
        raise UsageError(f"handoff {request.action} does not take {', '.join(stray)}")
    if request.action == "list":  # a read: no writer to name (the CLI's `handoff list` fails open the same way)
        if request.to_agent is not None:  # as the CLI's `handoff list --to`
            decide.checked_name(request.to_agent, "agent", "handoff list to_agent")
        return service.listing(store, request.state, request.to_agent)
    who = _who(request, store, request.agent)
    if request.action == "create":
        if request.message is None:
            raise UsageError("handoff create: give message")
        return service.create(store, who, pick(HandoffCreate, request))
    if request.handoff_id is None:
        raise UsageError(f"handoff {request.action}: give handoff_id")
    return service.move(store, who, request.handoff_id, request.action, request.note)
