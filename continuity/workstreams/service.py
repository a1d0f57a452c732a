"""The workstream commands' API, shared by the CLI and the MCP tools: load the state, decide, record."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from continuity.core.identity import Identity
from continuity.core.store import Store
from events.base import Event
from events.errors import ContinuityError, EventInvalid
from events.sealing import StoredEvent
from projections.workstreams import MODEL, WorkstreamsState, active

if TYPE_CHECKING:
    from continuity.workstreams.decide import Facts
    from continuity.workstreams.fingerprint import Observation, Worktree
    from continuity.workstreams.membership import Membership

NAMES = ("workstreams",)


def workstreams_state(store: Store, project: str, *, as_of: str | None = None,
                      write: bool = True) -> tuple[WorkstreamsState, list[str], str | None]:
    """The project's `workstreams` state (caught up and its files written unless not `write`, or as of a point),
    warnings, last event."""
    from continuity.readside.query import current_view

    view = current_view(store, NAMES, as_of=as_of, write=write)
    state = view.models.state("workstreams")
    return MODEL.project(state, project), view.warnings, state.last_name


def record(store: Store, identity: Identity, decide: Callable[[WorkstreamsState], list[Event]], *,
           redact: bool = False, facts: Facts | None = None) -> tuple[list[StoredEvent], list[str]]:
    """Decide from the current state and append, deciding again under the lock (continuity/readside/decided.py).

    Every write is refused while the repository registry cannot be read or names another project, as
    `work checkpoint` is (seed 002: membership fails closed); `facts`: the ones the decision was given, when
    it was (their membership is the one checked).
    """
    from continuity.readside.decided import record_decided
    from continuity.workstreams.decide import require_members

    require_members(facts or checkpoint_facts(store, bind=False), ())
    decided: list[Event] = []

    def deciding(state: WorkstreamsState) -> list[Event]:
        decided[:] = decide(state)
        return list(decided)  # a list of its own: the decision under the lock is compared with the first one

    try:
        return record_decided(store, MODEL, identity.project,
                              lambda store, project: workstreams_state(store, project), deciding, redact=redact,
                              what="workstream")
    except EventInvalid as error:
        if not str(error).startswith("event too large"):
            raise
        raise EventInvalid(f"{error}: {_too_large(decided)} must fit one event (one work item, or a checkpoint's "
                           "openQuestions and validation notes together); shorten it (nothing written)") from None


def _too_large(drafts: list[Event]) -> str:
    """What to shorten, named: the biggest work item of the biggest event, or the checkpoint's notes."""
    import msgspec

    if not drafts:
        return "what was written"
    biggest = max(drafts, key=lambda draft: len(msgspec.json.encode(draft)))
    parts = getattr(biggest, "items", None) or getattr(biggest, "revisions", None) or ()
    if parts:
        part = max(parts, key=lambda each: len(msgspec.json.encode(each)))
        return f"work item {getattr(part, 'id', None) or getattr(part, 'item_id', '?')}"
    if biggest.kind == "context.checkpointed":
        return "the checkpoint's openQuestions and validation notes"
    return f"the {biggest.kind} event"


def after_write(store: Store, *, observe: bool = True) -> list[str]:
    """After a write of this clone's: catch the model up, write its documents, and write the runtime files with
    the live views as observed now (seed 002: a checkpoint refreshes the resume contract, its validation
    freshness and membership included; git stats the worktree while the model catches up). Warnings only,
    never raises: a durable write stands whatever the read side does. Not `observe`: the model and its
    documents only (`work start` observes on its own)."""
    from continuity.readside.writers import refresh
    from continuity.workstreams.fingerprint import Observation

    observation = Observation(store.root) if observe else None
    try:
        warnings = refresh(store, NAMES).warnings
    except (OSError, ContinuityError) as error:
        if observation is not None:
            observation.cancel()
        return [f"the events are saved, but workstream documents were not updated: {error}"]
    if observation is None:
        return warnings
    return warnings + [line for line in write_observed(store, observation) if line not in warnings]


#: How long a write waits for the worktree's observation (a worktree whose untracked files hold gigabytes is
#: hashed for as long as that takes): past it, the runtime files stay as the log alone writes them.
OBSERVE_WRITE_S = 2.0


def write_observed(store: Store, observation: Observation) -> list[str]:
    """Write the runtime files (`.ai-bridge/context-runtime.json` and `.md`) of the store's own project with the
    live views (freshness, context state, membership, `memberConfig`, `observedAt`); warnings. Observed first,
    the state read after: a catch-up that folds changes from elsewhere meanwhile (a sync) is in what is written,
    and one that lands between the read and the write is written again. A later catch-up of such changes writes
    the files from the log alone, saying the live views were not observed since."""
    from continuity.workstreams.documents import runtime_document
    from continuity.workstreams.files import not_written, write_runtime_doc
    from continuity.workstreams.membership import member_repository

    live = observation.result_within(OBSERVE_WRITE_S)
    if live is None:
        return [f"the runtime files say the worktree was not observed: that took longer than {OBSERVE_WRITE_S:g} s "
                "(`continuity work status` observes it)"]
    try:
        project = store.reading_project()[0]
        for _ in range(3):  # the log moved between the read and the write: again, from where it stands
            state, warnings, last = workstreams_state(store, project)
            doc = runtime_document(state, project)
            live_status(store, project, state, doc, live=live)
            doc["memberConfig"] = member_repository(store.root) is not None
            write_runtime_doc(store.root, doc)
            if workstreams_state(store, project, write=False)[2] == last:
                break
    except (OSError, ContinuityError) as error:
        return [not_written(error)]
    return warnings


def checkpoint_facts(store: Store, *, bind: bool, leaving: str | None = None) -> Facts:
    """The facts a checkpoint is decided with: membership always; HEAD and fingerprint when `bind` (the worktree
    without `leaving`, the document the checkpoint removes once recorded: evidence it binds is not stale at once)."""
    from continuity.workstreams.decide import Facts
    from continuity.workstreams.membership import frozen_members, load

    membership = load(store.root, store.config, store.project)
    live = None
    if bind:  # git and hashing only for a document whose ledger binds entries to the worktree
        from continuity.workstreams.fingerprint import observe

        live = observe(store.root, leaving)
    return Facts(head=live.head if live else None, fingerprint=live.fingerprint if live else None,
                 members=frozen_members(membership), membership_problem=membership.problem,
                 repository=membership.repository, worktree_problem=live.problem if live else None)


def membership_of(store: Store, project: str, state: WorkstreamsState) -> Membership:
    """This clone's membership, falling back on the repository the newest checkpoint named."""
    from continuity.workstreams.membership import load

    return load(store.root, store.config, project,
                state.checkpoint.repository if state.checkpoint is not None else None)


def live_status(store: Store, project: str, state: WorkstreamsState, doc: dict[str, Any],
                observation: Observation | None = None, *, live: Worktree | None = None) -> bool:
    """Add the live views to a runtime document: validation freshness, context state, membership; healthy?

    Unhealthy: a problem a merge left, or a membership problem (an unregistered repository,
    an unreadable registry). `observation`: the worktree's, started by the caller before
    reading the state (so git runs beside the catch-up); else observed now.
    """
    from continuity.core.store import now_us
    from continuity.workstreams.context_state import decide_state, observe_context
    from continuity.workstreams.fingerprint import freshness, observe
    from continuity.workstreams.membership import diagnostics
    from events import clock

    if live is None:
        live = observation.result() if observation is not None else observe(store.root)
    membership = membership_of(store, project, state)
    here = membership.configured  # as `work validate` binds: the newest checkpoint may be another clone's
    doc["validationFreshness"] = {
        "head": live.head, "fingerprint": live.fingerprint, "problem": live.problem,
        "entries": {v.entry.id: OTHER_REPOSITORY if here is not None and v.entry.repository != here
                    else freshness(v.head, v.fingerprint, live) for v in state.validations.values()}}
    context = observe_context(store)
    doc["contextState"] = decide_state(context)
    ws = active(state)
    doc["membership"] = diagnostics(membership, [r.repository for r in ws.repositories] if ws else [])
    doc["observedAt"] = clock.iso(now_us())
    return not doc["problems"] and doc["membership"]["healthy"]


#: The freshness of evidence about another repository than this clone's: judged in that repository's own clone.
OTHER_REPOSITORY = "OTHER_REPOSITORY"


def invariant_problems(store: Store) -> tuple[list[str], list[dict[str, Any]], list[str]]:
    """For `verify`: the workstream problems a merge of clones left open, those resolved (and how), warnings.

    Fails open.
    """
    from continuity.workstreams.documents import problems_of, resolved_problems

    try:
        project, said = store.reading_project()
        state, warnings, _ = workstreams_state(store, project)
    except (OSError, ContinuityError) as error:
        return [], [], [f"workstreams not checked: {error}"]
    return problems_of(state), resolved_problems(state), [*said, *warnings]
