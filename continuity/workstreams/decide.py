"""Decisions for tracked workstreams: pure functions from the `workstreams` state and a request to events.

Every decision refuses (InvariantRefused, exit 12, the contract's text) rather than write
a change that would lose or reopen work, switch workstreams silently, or leave a
workstream with a dependency cycle, a blocked item without a blocker or a cursor into
nothing: the events are folded into a copy of the state and the result is checked
(continuity/workstreams/rules.py). The caller takes the same decision again under the
append lock (continuity/workstreams/service.py), so two racing writers cannot both pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import groupby
from typing import Any

import msgspec

from continuity.core.errors import UsageError, WorkNotFound
from continuity.core.identity import Identity
from continuity.workstreams.diff import REVISABLE, chunks, evidence_events, item_events, workstream_events
from continuity.workstreams.document import ITEM_LISTS, Checkpoint, CheckpointV1, unique
from continuity.workstreams.membership import not_registered
from continuity.workstreams.rules import introduced, refuse, structure_problems, transition
from events.base import Event
from events.guard import cut
from events.workstream import (
    MAX_ITEMS,
    TERMINAL,
    ContextCheckpointed,
    Cursor,
    CursorMoved,
    ItemRevision,
    ItemStatus,
    Priority,
    ValidationEntry,
    ValidationRecorded,
    WorkId,
    WorkItemAdded,
    WorkItemData,
    WorkProblemsResolved,
)
from projections.workstreams import (
    MODEL,
    Workstream,
    WorkstreamsState,
    active,
    ledger_has,
    open_problems,
    unresolved,
)


class Facts(msgspec.Struct, frozen=True, kw_only=True):
    """What the caller observed: the repository HEAD and worktree fingerprint (None outside git)."""

    head: str | None = None
    fingerprint: str | None = None
    #: The ids `repositories/repositories.yaml` registers (None: no registry, membership not managed).
    members: frozenset[str] | None = None
    #: Why the registry cannot be used (unreadable, malformed, another project's): writes fail closed.
    membership_problem: str | None = None
    #: This clone's own repository id, as configured (`.ai/context/config.json`, config.json `work_repository`):
    #: every write checks it against the registry too, as `work start` does (seed 002).
    repository: str | None = None
    #: Why HEAD and the fingerprint are None when they were asked for (not in a git worktree, git failed: its line).
    worktree_problem: str | None = None


class ItemSet(msgspec.Struct, frozen=True, kw_only=True):
    """What `work item set` was asked to change (None: unchanged)."""

    item_id: str
    workstream_id: str | None = None
    status: ItemStatus | None = None  # the tools' schema lists the statuses (the CLI's choices)
    reopen: bool = False
    title: str | None = None
    priority: Priority | None = None
    scope: tuple[str, ...] | None = None
    acceptance_criteria: tuple[str, ...] | None = None
    depends_on: tuple[str, ...] | None = None
    blocked_by: tuple[str, ...] | None = None
    validation_requirements: tuple[str, ...] | None = None
    notes: tuple[str, ...] | None = None


class CursorSet(msgspec.Struct, frozen=True, kw_only=True):
    """What `work cursor set` was asked to change (None: unchanged; "" clears a field)."""

    workstream_id: str | None = None
    current_item_id: str | None = None
    last_completed_item_id: str | None = None
    phase: str | None = None
    last_completed_action: str | None = None
    next_action: str | None = None


_STATE = msgspec.msgpack.Decoder(WorkstreamsState)
_ENCODE = msgspec.msgpack.Encoder()


def folded(state: WorkstreamsState, drafts: Iterable[Event]) -> WorkstreamsState:
    """A copy of the state with the drafts folded in (the state itself is untouched)."""
    after = _STATE.decode(_ENCODE.encode(state))
    for draft in drafts:
        fold = MODEL.fold_for(type(draft))
        if fold is not None:
            after = fold(after, "", draft)
    return after


def check_after(state: WorkstreamsState, drafts: Sequence[Event], workstream_id: str | None, *,
                whole: bool = True) -> None:
    """Refuse when the workstream, with the drafts applied, breaks a structural invariant.

    `whole` (a checkpoint document, the full statement of the workstream): any problem, even
    when the document changes nothing of it (restating a cycle a merge left is not accepting
    it); else (a granular command) only a problem the drafts bring, so a cycle a merge left does
    not refuse a note on another item.
    """
    if workstream_id is None or not (drafts or whole):
        return
    ws = folded(state, drafts).workstreams.get(workstream_id)
    if ws is None:
        return
    problems = structure_problems(ws) if whole else introduced(state.workstreams.get(workstream_id), ws)
    if problems:
        refuse(problems[0])


def validation_events(state: WorkstreamsState, env: dict[str, Any], entries: Sequence[ValidationEntry],
                      facts: Facts, ws_id: str | None) -> list[Event]:
    """The ledger entries not yet recorded; an id recorded with other content is refused (ids are immutable)."""
    held = [ledger_has(state, entry) for entry in entries]
    reused = [entry.id for entry, has in zip(entries, held, strict=True) if has is False]
    if reused:
        refuse(f"Validation ledger entry ids are immutable and already exist: {', '.join(reused)}")
    new = [entry for entry, has in zip(entries, held, strict=True) if has is None]
    events: list[Event] = []
    # bound to this worktree only when it is about this clone's repository: another repository's evidence (a gate run
    # in that clone) is recorded unbound, never judged against a worktree it was not run in
    for bound, group in groupby(new, lambda entry: facts.repository in (None, entry.repository)):
        events += [ValidationRecorded(**env, workstream_id=ws_id, entries=tuple(run),
                                      head=facts.head if bound else None,
                                      fingerprint=facts.fingerprint if bound else None,
                                      message=f"validation {run[0].id}: {run[0].result}" + (
                                          f" and {len(run) - 1} more" if len(run) > 1 else ""))
                   for run in chunks(list(group))]
    return events


def require_members(facts: Facts, repositories: Iterable[str]) -> None:
    """Refuse this clone's own repository or the named ones when the registry does not list them, or any write
    when the registry cannot be read."""
    if facts.membership_problem is not None:
        refuse(f"{facts.membership_problem} (membership cannot be checked; nothing written)")
    if facts.members is None:
        return
    for repository in (*([facts.repository] if facts.repository else []), *repositories):
        if repository not in facts.members:
            refuse(not_registered(repository))


def decide_checkpoint(state: WorkstreamsState, identity: Identity, doc: Checkpoint, facts: Facts) -> list[Event]:
    """`work checkpoint`: the events a checkpoint document describes, or a refusal."""
    env = identity.fields()
    current = active(state)
    tracked = None if isinstance(doc, CheckpointV1) or doc.continuity.mode == "snapshot" else doc.continuity.workstream
    ledger_repositories = () if isinstance(doc, CheckpointV1) else tuple(
        e.repository for e in doc.continuity.validation_ledger)
    require_members(facts, [doc.repository, *(r.repository for r in (tracked.repositories if tracked else ())),
                            *ledger_repositories])
    if tracked is None and current is not None:
        what = "Legacy schemaVersion 1 checkpoint" if isinstance(doc, CheckpointV1) else "Snapshot checkpoint"
        open_ids = ", ".join(item.id for item in unresolved(current)) or "none"
        refuse(f"{what} would lose an active tracked workstream {current.id} ({current.status}; unresolved work "
               f"items: {open_ids}); checkpoint it in tracked mode with schemaVersion 2, or terminate it first")
    ws_id = tracked.id if tracked is not None else None
    events = workstream_events(state, env, tracked) if tracked is not None else []
    check_after(state, events, ws_id)
    events += evidence_events(state, env, doc, ws_id)
    if not isinstance(doc, CheckpointV1):
        ledger = [ValidationEntry(id=e.id, kind=e.kind, result=e.result, repository=e.repository, scope=e.scope,
                                  summary=e.summary, timestamp=e.timestamp, command=e.command,
                                  evidence_refs=e.evidence_refs) for e in doc.continuity.validation_ledger]
        events += validation_events(state, env, ledger, facts, ws_id)
    # The recorded merge problems of this workstream open now: the document restates it whole,
    # validated against every invariant, so it resolves them (docs/workstreams.md).
    acknowledged = tuple(problem.id for problem in open_problems(state)
                         if ws_id is not None and problem.workstream_id == ws_id)
    events.append(ContextCheckpointed(
        **env, schema_version=1 if isinstance(doc, CheckpointV1) else 2,
        mode="tracked" if tracked is not None else "snapshot",
        repository=doc.repository, scope=doc.scope, status=doc.status, objective=doc.objective,
        next_action=doc.next_action, open_questions=doc.open_questions, validation_notes=doc.validation,
        workstream_id=ws_id, acknowledged=acknowledged,
        message=f"checkpoint ({doc.status}): next {cut(doc.next_action, 200)}"))
    return events


def target(state: WorkstreamsState, workstream_id: str | None, *, settles: str | None = None) -> Workstream:
    """The workstream a granular command changes: the named one, else the active one; never an archived one.

    Except to settle (`settles`: an item id) an item a merge left unresolved in an archived
    workstream: only a terminal status, and only for such an item (decide_item_set).
    """
    if workstream_id is None:
        ws = active(state)
        if ws is None:
            raise WorkNotFound("no active workstream: start one with `continuity work checkpoint` "
                               "(a tracked checkpoint document)")
        return ws
    found = state.workstreams.get(workstream_id)
    if found is None:
        raise WorkNotFound(f"unknown workstream {workstream_id!r}")
    item = found.items.get(settles) if settles is not None else None
    if found.status in TERMINAL and (item is None or item.status in TERMINAL):
        refuse(f"Workstream {found.id} is {found.status} and archived: it cannot change (start a new workstream id)")
    return found


def _unique_lists(item_id: str, lists: dict[str, Any]) -> None:
    """The checkpoint document's rules on item lists, for the granular commands (exit 2, nothing written):
    unique entries, and ids where a list names items (before the invariants would call one unknown, exit 12)."""
    for field, values in lists.items():
        unique(values, f"item {item_id} {field}", "work item")
        if field in ("depends_on", "blocked_by"):
            for value in values or ():
                try:
                    msgspec.convert(value, WorkId)
                except msgspec.ValidationError:
                    from events.problems import quoted

                    raise UsageError(f"invalid work item: item {item_id} {field} names "
                                     f"{quoted(value, 80, redact=True)}, which is no work item id") from None


def decide_item_add(state: WorkstreamsState, identity: Identity, item: WorkItemData,
                    workstream_id: str | None = None) -> list[Event]:
    """`work item add`: one `work_item.added`, refused if the result breaks an invariant."""
    ws = target(state, workstream_id)
    _unique_lists(item.id, {field: getattr(item, field) for field in ITEM_LISTS})
    if item.id in ws.items:
        raise UsageError(f"work item {item.id} already exists in workstream {ws.id} "
                         "(change it with `continuity work item set`)")
    open_items = len(unresolved(ws))
    if open_items >= MAX_ITEMS:  # a document lists every unresolved item: one more and none could list them all
        raise UsageError(f"workstream {ws.id} holds {open_items} unresolved work items, the most a checkpoint "
                         f"document can list ({MAX_ITEMS}); end some first; nothing written")
    drafts: list[Event] = [WorkItemAdded(**identity.fields(), workstream_id=ws.id, items=(item,),
                                         message=f"workstream {ws.id}: work item {item.id} added: {item.title}")]
    check_after(state, drafts, ws.id, whole=False)
    return drafts


def decide_item_set(state: WorkstreamsState, identity: Identity, request: ItemSet) -> list[Event]:
    """`work item set`: a revision and/or a status change of one item, refused if it breaks an invariant.

    An item a merge left unresolved in an archived workstream can only be given a terminal status.
    """
    settling = request.status in TERMINAL and not request.reopen and not any(
        getattr(request, field) is not None for field in REVISABLE)
    ws = target(state, request.workstream_id, settles=request.item_id if settling else None)
    item = ws.items.get(request.item_id)
    if item is None:
        raise WorkNotFound(f"unknown work item {request.item_id!r} in workstream {ws.id}")
    env = identity.fields()
    # A field given as it already is changes nothing: no revision is recorded for it (setting a title twice wrote a
    # revision each time, while setting a status twice was "nothing to change").
    changes: dict[str, Any] = {field: getattr(request, field) for field in REVISABLE
                               if getattr(request, field) is not None
                               and _as_held(getattr(request, field)) != _as_held(getattr(item, field))}
    _unique_lists(item.id, {field: value for field, value in changes.items() if field in ITEM_LISTS})
    revision = ItemRevision(item_id=item.id, **changes) if changes else None
    if request.reopen and request.status is None:
        raise UsageError("--reopen needs --status (the unresolved status to reopen the item to)")
    change = None
    if request.status is not None and (request.status != item.status or request.reopen):
        change = transition(ws.id, item, request.status, request.reopen)
    if revision is None and change is None:
        given = request.status is not None or any(getattr(request, field) is not None for field in REVISABLE)
        raise UsageError(f"nothing to change: work item {item.id} is already so" if given
                         else "nothing to change: give --status or a field to set")
    drafts = item_events(env, ws.id, [], [revision] if revision else [], [change] if change else [])
    check_after(state, drafts, ws.id, whole=False)
    return drafts


def _as_held(value: Any) -> Any:
    """A field's value as an item holds it (a list as a tuple), to compare a request's with the item's."""
    return tuple(value) if isinstance(value, list) else value


def decide_cursor_set(state: WorkstreamsState, identity: Identity, request: CursorSet) -> list[Event]:
    """`work cursor set`: the cursor with the given fields changed ("" clears one), refused if it names no item."""
    ws = target(state, request.workstream_id)
    old = ws.cursor
    values: dict[str, Any] = {}
    for field in ("current_item_id", "last_completed_item_id", "phase", "last_completed_action"):
        given = getattr(request, field)
        values[field] = getattr(old, field) if given is None else (given or None)
    next_action = request.next_action if request.next_action is not None else old.next_action
    if not next_action.strip():
        raise UsageError("the cursor's next action cannot be empty")
    cursor = Cursor(**values, next_action=next_action)
    if cursor == old:
        raise UsageError("nothing to change: the cursor is already so")
    drafts: list[Event] = [CursorMoved(**identity.fields(), workstream_id=ws.id, cursor=cursor,
                                       message=f"workstream {ws.id}: next {cut(next_action, 200)}")]
    check_after(state, drafts, ws.id, whole=False)
    return drafts


def decide_validate(state: WorkstreamsState, identity: Identity, entry: ValidationEntry, facts: Facts) -> list[Event]:
    """`work validate`: one new ledger entry bound to the observed HEAD and fingerprint; its id must be new.

    An empty `repository` takes this clone's configured id, else the newest checkpoint's repository, else the
    active workstream's first.
    """
    if entry.id in state.validations or entry.id in state.recorded:
        refuse(f"Validation ledger entry ids are immutable and already exist: {entry.id}")
    unique(entry.evidence_refs, f"validation ledger entry {entry.id} evidenceRefs", "validation ledger entry")
    ws = active(state)
    if not entry.repository:  # default: this clone's, else the newest checkpoint's, else the workstream's first
        known = facts.repository or (state.checkpoint.repository if state.checkpoint is not None else (
            ws.repositories[0].repository if ws is not None else None))
        if known is None:
            raise UsageError("name the repository validated with --repository (no checkpoint names one yet)")
        entry = msgspec.structs.replace(entry, repository=known)
    require_members(facts, [entry.repository])  # evidence about a repository this project does not hold: refused
    return validation_events(state, identity.fields(), [entry], facts, ws.id if ws is not None else None)


def decide_resolve(state: WorkstreamsState, identity: Identity, problem_ids: Sequence[str], reason: str, *,
                   every: bool = False, workstream_id: str | None = None) -> list[Event]:
    """`work resolve`: one `workstream.problems_resolved` naming the open recorded problems chosen, and why.

    `every`: all open ones (of `workstream_id` when given). A structural problem has no id: it
    clears when the state is fixed. An unknown id is exit 7; one already resolved is a usage error.
    """
    if not reason.strip():
        raise UsageError("say why with --reason (it is recorded with the resolution)")
    pending = open_problems(state)
    if every:
        chosen = [p.id for p in pending if workstream_id is None or p.workstream_id == workstream_id]
        if problem_ids:
            raise UsageError("give problem ids or --all, not both")
    else:
        if workstream_id is not None:
            raise UsageError("--workstream goes with --all")
        known = {p.id: p for p in state.problems}
        for problem_id in problem_ids:
            if problem_id not in known:
                raise WorkNotFound(f"unknown problem {problem_id!r} (`continuity work status --json` lists "
                                   "problemDetails with their ids; a structural problem clears when the state is "
                                   "fixed)")
            done = known[problem_id].resolved
            if done is not None:
                raise UsageError(f"problem {problem_id} was already resolved by {done.by} {done.event_id}")
        chosen = list(dict.fromkeys(problem_ids))
    if not chosen:
        raise UsageError("nothing to resolve: no open recorded problem" +
                         (f" of workstream {workstream_id}" if workstream_id else ""))
    ws_ids = {p.workstream_id for p in state.problems if p.id in chosen}
    return [WorkProblemsResolved(**identity.fields(), workstream_id=ws_ids.pop() if len(ws_ids) == 1 else None,
                                 problem_ids=tuple(run), reason=reason,
                                 message=f"resolved {len(run)} workstream problem(s): {cut(reason, 200)}")
            for run in (chosen[i:i + 256] for i in range(0, len(chosen), 256))]
