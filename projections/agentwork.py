"""Each agent's own work state: what it said it is doing and what comes next, apart from the others'.

The `worklog` model is the project's: with several agents in one store (sessions side by
side, or clones united by sync) its next steps are whoever wrote last. A write made on an
agent's behalf (the pre-compaction checkpoint, the park of its roles) restates this model's
state for that agent instead: the same folds as `worklog`, one state per agent id ("" for
events that name no agent), the AGENTS_LIMIT most recently active kept. An archive is not
folded: it restates the project's state, whoever wrote it (another agent's next steps, when
that agent wrote last), as the agent's that took it.
"""

import msgspec

from events.worklog import CheckpointRecorded, WorkLogged
from projections import worklog
from projections.common import touch_bounded
from projections.readmodel import ReadModel
from projections.worklog import WorkState

AGENTS_LIMIT = 200


class AgentWork(msgspec.Struct, kw_only=True):
    """Work states by agent id ("" for events that name no agent), least recently active first. `forgotten`
    counts the agents let go of past AGENTS_LIMIT."""

    agents: dict[str, WorkState] = msgspec.field(default_factory=dict)
    forgotten: int = 0


def _fold(state: AgentWork, name: str, event: WorkLogged | CheckpointRecorded) -> AgentWork:
    """Fold the event into its agent's own work state, as `worklog` folds it into the project's."""
    key = event.agent_id or ""
    folded = worklog.on_work(state.agents.get(key) or WorkState(), name, event)
    state.forgotten += touch_bounded(state.agents, key, folded, AGENTS_LIMIT)
    return state


def own_work(state: AgentWork, agent: str | None) -> WorkState:
    """The agent's own work state; for an agent that stated nothing, what events naming no agent stated. Once
    any agent was let go of, an agent not here may be one of them: nothing is known of its work (a write made
    on its behalf, a pre-compaction checkpoint, restated the agentless entries' next steps as its own)."""
    found = state.agents.get(agent or "")
    if found is None and agent and not state.forgotten:
        found = state.agents.get("")
    return found if found is not None else WorkState()


MODEL = ReadModel(
    "agentwork", format=3, state=AgentWork, initial=AgentWork,
    folds={WorkLogged: _fold, CheckpointRecorded: _fold},
    bounds={"AGENTS_LIMIT": AGENTS_LIMIT},
)
