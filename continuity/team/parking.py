"""Park (seed 000's session-exit verb), shared by the CLI, the hooks and the MCP tools.

Loud by design: when no checkpoint can be written the result says `CHECKPOINT NOT
WRITTEN` with seed 000's code (2: nothing held; 1: role state unreadable; 3: the
`--handoff` doctrine found problems; 5: the write failed), and nothing is written.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import msgspec

from continuity.core.identity import Identity
from continuity.core.store import Store
from continuity.team import decide, doctrine, service
from continuity.team.decide import ParkRequest
from events.base import Event

EXIT_NOTHING_HELD = 2
EXIT_UNREADABLE = 1
EXIT_DOCTRINE = 3
NOT_WRITTEN = "CHECKPOINT NOT WRITTEN"


class Parked(msgspec.Struct, kw_only=True):
    """One parked role: its snapshot's path and ids."""

    role: str
    path: str
    checkpoint_id: str
    event_id: str


class ParkResult(msgspec.Struct, kw_only=True):
    """What park did: the exit code, the roles parked, the stderr lines (findings, banner), warnings."""

    code: int
    parked: list[Parked] = msgspec.field(default_factory=list)
    errors: list[str] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)

    def lines(self) -> list[str]:
        """The `parked <role> -> <path>` lines."""
        return [f"parked {each.role} -> {each.path}" for each in self.parked]


def refuse_secret_names(request: Any) -> None:
    """A team, agent or role name that looks like a secret is refused (exit 4) before park's banners name it."""
    from events.errors import SecretRefused
    from events.guard import find_secret

    for field, value in (("team", request.team), ("agent_id", request.agent), ("role", request.role)):
        rule = find_secret(value) if value else None
        if rule is not None:
            raise SecretRefused(field, rule, redact_with=None)


def unreadable_line(agent: str, team: str) -> str:
    """Seed 000's banner when the roles cannot be read (exit 1): nothing was parked."""
    return (f"park: could not determine which fresh roles {agent} holds in team/{team} (role state unreadable, "
            f"not empty) — {NOT_WRITTEN}. Nothing was parked; retry before ending the session.")


def park(store: Store, identity: Identity, request: ParkRequest, *, handoff: bool = False,
         deadline: float | None = None) -> ParkResult:
    """Read the roles, decide, check the doctrine (with `handoff`), record under the lock, catch up.

    `deadline` (a hook the harness kills): the catch-up after the write stops there (the park stands)."""
    from continuity.core import store as clock
    from events.errors import StoreUnsafe, WriteFailed
    from events.sealing import prepare

    where = f"team/{request.team}"
    unreadable = unreadable_line(request.agent, request.team)
    held = f"does not hold fresh role {request.role}" if request.role else "holds no fresh roles"
    nothing = f"park: {request.agent} {held} in {where} — {NOT_WRITTEN} because there was nothing to park"
    state, warnings = service.readable_roles(store, identity.project)
    if state is None:
        return ParkResult(code=EXIT_UNREADABLE, errors=[unreadable], warnings=warnings)
    now = clock.now_us()  # one time for every decision: a decision taken again must come out the same
    try:
        drafts = decide.decide_park(state, identity, request, now)
    except decide.NothingToPark:
        return ParkResult(code=EXIT_NOTHING_HELD, errors=[nothing], warnings=warnings)
    codec = store.open_reader().codec  # only checked here: the lock is taken when the events are recorded
    for draft in drafts:  # a secret or an oversized field is refused (raised) before any remote is asked
        prepare(draft, codec, redact=False)
    if handoff:
        found = _doctrine(store, request, drafts)
        if found:
            return ParkResult(code=EXIT_DOCTRINE, warnings=warnings, errors=[
                *(f"park: handoff check: {line}" for line in found),
                f"park: {len(found)} handoff check(s) failed — {NOT_WRITTEN}. Nothing was parked; fix them "
                "(or park without --handoff) before ending the session."])
    try:
        stored, more = service.record_roles(
            store, identity, lambda fresh: decide.decide_park(fresh, identity, request, now))
    except decide.NothingToPark:
        return ParkResult(code=EXIT_NOTHING_HELD, errors=[nothing], warnings=warnings)
    except (WriteFailed, StoreUnsafe) as error:  # a lock file planted as a link or a folder too: loud, as the seed says
        from continuity.core.errors import EXIT_WRITE_FAILED

        return ParkResult(code=EXIT_WRITE_FAILED, warnings=warnings, errors=[
            f"park: {error} — {NOT_WRITTEN}. Nothing was parked; retry before ending the session."])
    _, caught = service.caught_up(store, identity.project, ("team", "roles"), deadline)
    parked = []
    for index, each in enumerate(stored):
        event: Any = each.event
        if event.kind == "role.checkpointed":
            snapshot: Any = stored[index - 1].event
            parked.append(Parked(role=event.role, path=event.checkpoint_ref, event_id=snapshot.event_id,
                                 checkpoint_id=f"CHK-{snapshot.created_at}-{snapshot.task}"))
    from continuity.moments.deliver import emit_after_save
    from continuity.sync import auto

    shadows = emit_after_save(store, identity, stored)  # fail open: lines, never the park's exit code
    started = auto.start(store, "park")
    return ParkResult(code=0, parked=parked,
                      warnings=list(dict.fromkeys(warnings + more + caught + shadows + ([started] if started else []))))


class HookPark(msgspec.Struct, kw_only=True):
    """What parking for a hook did: the events recorded, loud problems (nothing parked), quiet warnings."""

    recorded: list[str] = msgspec.field(default_factory=list)
    problems: list[str] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)


def park_held(store: Store, identity: Identity,
              content: Callable[[], tuple[str | None, tuple[str, ...]]], deadline: float | None = None) -> HookPark:
    """Park every team's roles the agent holds under a fresh lease (PreCompact, SessionEnd). Never raises.

    `content` gives the snapshots' objective and next actions; it is asked only when something is held.
    `deadline`: the role state must be caught up by then (a hook the harness kills after a few seconds);
    past it, nothing is parked and the problem says so (the catch-up keeps its progress for the next one).
    """
    from continuity.core import store as clock
    from events.errors import ContinuityError

    done = HookPark()
    agent = identity.agent_id
    if not agent:
        return done
    try:
        state, warnings = service.readable_roles(store, identity.project, deadline)
        done.warnings.extend(warnings)
        if state is None:
            from continuity.readside.catchup import OUT_OF_TIME, out_of_time

            why = (f"{OUT_OF_TIME}; a later session end or `continuity park` parks them"
                   if any(out_of_time(line) for line in warnings) else "role state unreadable, not empty")
            done.problems.append(f"park: could not determine which fresh roles {agent} holds ({why}) — {NOT_WRITTEN}.")
            return done
        teams = decide.held_teams(state, agent, clock.now_us())
        if not teams:
            return done
        objective, next_actions = content()
        for team in teams:
            request = ParkRequest(team=team, agent=decide.checked_name(agent, "agent", "park"), objective=objective,
                                  next_actions=next_actions)
            try:
                result = park(store, identity, request, deadline=deadline)
            except ContinuityError as error:
                done.problems.append(f"park: team/{team}: {error} — {NOT_WRITTEN}.")
                continue
            done.warnings.extend(result.warnings)
            if result.code != 0:
                done.problems.extend(result.errors)
            done.recorded.extend(each.event_id for each in result.parked)
    except (ContinuityError, OSError) as error:
        done.problems.append(f"park: {error} — {NOT_WRITTEN}.")
    return done


def _doctrine(store: Store, request: ParkRequest, drafts: list[Event]) -> list[str]:
    """The parking doctrine's findings: remotes read with `git ls-remote`, role documents looked for."""
    from continuity.facts import ls_remote
    from continuity.sync.credentials import has_secret
    from continuity.team.roles import role_relpath

    texts: list[str] = []
    for draft in drafts:
        if draft.kind == "snapshot.taken":
            snap: Any = draft
            texts = [snap.objective, *snap.decisions, *snap.next_actions, *snap.open_questions]
            break
    reads: dict[str, doctrine.RemoteRead] = {}
    for claim in doctrine.push_claims(request.artifacts):
        if has_secret(claim.remote):
            reads[claim.artifact] = doctrine.RemoteRead(error="the remote URL holds credentials; not read")
            continue
        refs, error = ls_remote(store.root, claim.remote, claim.ref)
        reads[claim.artifact] = doctrine.RemoteRead(refs=tuple(refs or ()), error=error)
    roles = sorted({getattr(draft, "role", "") for draft in drafts if draft.kind == "role.checkpointed"})
    missing = [role_relpath(request.team, role) for role in roles
               if not os.path.isfile(os.path.join(store.path, *role_relpath(request.team, role).split("/")))]
    return doctrine.findings(texts=texts, artifacts=request.artifacts, reads=reads, missing_docs=missing)
