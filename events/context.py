"""`context.served`: what a session was told, with every input that came from outside the log.

With these inputs and the log as it stood at `as_of`, `resume-bundle --as-of <this event>`
renders the same brief byte for byte: the audit answer to "what did the agent know?".
"""

from typing import Annotated

import msgspec

from events.base import END, Event, Label, Name, PathRef, PathRefs, Text

Hex64 = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}" + END)]
#: An HLC stamp as event file names spell it.
Stamp = Annotated[str, msgspec.Meta(pattern=r"^[0-9]{8}_[0-9]{6}_[0-9]{6}" + END)]
#: The most clones a served brief names in `folded_nodes` (more: none named, see there).
FOLDED_NODES_MAX = 2000
#: An event file's name, or "" (a read model that had folded none).
EventName = Annotated[str, msgspec.Meta(pattern=r"^([0-9]{8}_[0-9]{6}_[0-9]{6}-[a-z0-9]{8}-[0-9a-f]{12}\.json)?" + END)]
#: The most read models a served brief names in `model_points`.
MODEL_POINTS_MAX = 64


class GitNow(msgspec.Struct, frozen=True, kw_only=True):
    """Live git facts at the time of a view, and the drift since the latest archive."""

    root: PathRef | None = None
    branch: Text | None = None
    head: Text | None = None
    status_short: Annotated[str, msgspec.Meta(max_length=65536)] = ""
    dirty_files: PathRefs = ()
    head_moved: bool = False
    changed_since_archive: PathRefs = ()
    new_dirty_files: PathRefs = ()


class RunFile(msgspec.Struct, frozen=True, kw_only=True):
    """A run record under `.agent/runs/` (the harness's own file) and its status."""

    path: PathRef
    status: Text | None = None


class RecalledEvent(msgspec.Struct, frozen=True, kw_only=True):
    """An earlier event on the brief's subject, as recall ranked it when the brief was served."""

    event_id: Name
    created_at: Text
    kind: Label
    agent_id: Name | None = None
    #: The matching words in brackets, the text around them made safe to print.
    snippet: Text = ""
    #: Its writer's clock, where the log's time had run ahead of it (the brief's age counts from it).
    written_at: Text | msgspec.UnsetType = msgspec.UNSET


class ViewInputs(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a view reads besides the log: the time, git, files on disk, warnings."""

    now: Text
    git: GitNow | None = None
    runs: tuple[RunFile, ...] = ()
    handoff_states: dict[str, str] = msgspec.field(default_factory=dict)
    #: Whom each handoff document is addressed to: `agent:<name>` or `host:<name>` (absent: it does not say).
    handoff_to: dict[str, str] = msgspec.field(default_factory=dict)
    artifact_states: dict[str, str] = msgspec.field(default_factory=dict)
    read_first: PathRefs = ()
    latest_markdown: PathRef | None = None
    warnings: tuple[Text, ...] = ()
    #: The brief's "earlier, on the same subject" hits (docs/recall.md), read from the recall index.
    recall: Annotated[tuple[RecalledEvent, ...], msgspec.Meta(max_length=20)] = ()


class ContextServed(Event, frozen=True, kw_only=True, tag="context.served"):
    """A resume brief was served to a session: its hash, options, and outside inputs."""

    type: Label = "context_served"
    brief_sha256: Hex64
    format: Label = "md"
    max_chars: int = 8000
    chars: int = 0
    as_of: Text | None = None
    events_folded: int = 0
    served_to: Name | None = None
    inputs: ViewInputs
    #: For each node (clone) whose events of the project the brief folded, the stamp of the newest one:
    #: a replay folds exactly those, leaving out events a sync brought in later, stamped earlier.
    #: Empty (events written before it, or a project written by more clones than FOLDED_NODES_MAX):
    #: a replay folds every event up to `as_of`.
    folded_nodes: Annotated[dict[Name, Stamp], msgspec.Meta(max_length=FOLDED_NODES_MAX)] = msgspec.field(
        default_factory=dict)
    #: What rendered the brief (`continuity <version>, Unicode <version>`: the Markdown escaping follows
    #: the Unicode database), so a replay whose text differs can say it was rendered by other code.
    renderer: Text | None = None
    #: Where each read model the brief read stood (the last event it had folded), when they stood at different points
    #: (a catch-up cut short by its deadline: a model rebuilt after an upgrade partway, the others at the head): a
    #: replay folds each model to its own point. Left out when they agreed (every brief before it, and almost all).
    model_points: Annotated[dict[Label, EventName], msgspec.Meta(max_length=MODEL_POINTS_MAX)] | msgspec.UnsetType = \
        msgspec.UNSET
