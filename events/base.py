"""The envelope every event shares: seed 004's event fields plus `v`, `prev` and `kind`.

`kind` is the tagged-union tag (a past-tense name such as ``work.logged``); `type` is
seed 004's free-form work-log category (``checkpoint``, ``decision``, ...).
"""

from typing import Annotated, Any

import msgspec

from events.names import ISO_TIME

_NO_CONTROL = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"
#: The end of a whole-string pattern. msgspec checks a pattern with `re.search`, where `$` also
#: matches before a final newline ("demo\n" would pass as a name); this does not, here or in
#: the JSON Schema's ECMAScript regexes.
END = r"$(?!\n)"

#: An identifier: host, agent, run, session, task and mission names (and continuity's own project names).
Name = Annotated[
    str,
    msgspec.Meta(pattern=r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,127}" + END, max_length=128),
]
#: A project name: a Name, or (written through `runtime-continuity`, contract I4) any one-line
#: text of up to 128 characters that is safe as one folder name: no `/`, `\`, `..`, not `.`.
#: No `[` or `]` either: a secret in a project name is refused, never redacted to `[REDACTED:…]`.
ProjectName = Annotated[
    str,
    msgspec.Meta(pattern=r"^(?!\.$)(?!.*\.\.)[^/\\\[\]\x00-\x1f\x7f]{1,128}" + END, max_length=128),
]
#: Who wrote an event: its host, agent, run, session, task and mission. A Name, or (seed 004's
#: `runtime-continuity` takes any value: `--host "Claude Code"`, a session `S-<project>-<stamp>`
#: of a project named `web app`) one line of up to 192 characters that is safe as one folder
#: name, as a ProjectName. continuity's own commands, hooks and tools still take only Names
#: (continuity/core/idfields.py), the ids its team features address.
Ident = Annotated[
    str,
    msgspec.Meta(pattern=r"^(?!\.$)(?!.*\.\.)[^/\\\[\]\x00-\x1f\x7f]{1,192}" + END, max_length=192),
]
#: A short label such as a task's type or a run's role.
Label = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/ -]{0,63}" + END)]
#: A work-log type or a phase: a Label, or (seed 004 takes any text) one line of up to 64
#: characters without control characters that does not start with a space.
Tag = Annotated[str, msgspec.Meta(pattern=r"^[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]{0,63}" + END)]
#: Free text: no NUL or control characters other than tab and newline.
Text = Annotated[str, msgspec.Meta(max_length=16384, pattern=_NO_CONTROL)]
#: A path or reference to a file, artifact or handoff.
PathRef = Annotated[str, msgspec.Meta(min_length=1, max_length=1024, pattern=_NO_CONTROL)]
#: List limits keep one event small enough to read in one go.
TEXTS_MAX = 256
Texts = Annotated[tuple[Text, ...], msgspec.Meta(max_length=TEXTS_MAX)]
#: A next step (or what is in progress): short enough that a resume brief can always show
#: the next action whole.
NextItem = Annotated[str, msgspec.Meta(max_length=1000, pattern=_NO_CONTROL)]
NextItems = Annotated[tuple[NextItem, ...], msgspec.Meta(max_length=TEXTS_MAX)]
PathRefs = Annotated[tuple[PathRef, ...], msgspec.Meta(max_length=1024)]

#: The largest encoded event accepted on write.
MAX_EVENT_BYTES = 256 * 1024


class CommandRef(msgspec.Struct, frozen=True, kw_only=True):
    """A shell command the agent ran, with its exit code and a short summary."""

    command: Text
    exit_code: int | None = None
    summary: Text | None = None


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 004's work summary: done, in progress, next steps and blockers."""

    done: Texts = ()
    in_progress: NextItem | None = None
    next: NextItems = ()
    blockers: Texts = ()


class Refs(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 004's references: files touched, commands run, artifacts and handoffs."""

    files: PathRefs = ()
    commands: Annotated[tuple[CommandRef, ...], msgspec.Meta(max_length=256)] = ()
    artifacts: PathRefs = ()
    handoffs: PathRefs = ()


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    """The envelope. `event_id`, `created_at` and `prev` are assigned by the log on append."""

    v: int = 1
    event_id: str = ""
    created_at: str = ""
    #: The writer's own clock when the log's time (`created_at`) had to run more than a second ahead of it: the
    #: newest event was stamped ahead (a teammate's clock running fast, synced in), and every later stamp follows
    #: it. Absent otherwise. Views that count time from an event (presence, leases, a session's last activity)
    #: read it before `created_at` (`clock.written`); the log's order stays `created_at`'s. Set by the log.
    written_at: Annotated[str, msgspec.Meta(pattern=rf"^{ISO_TIME}{END}")] | msgspec.UnsetType = msgspec.UNSET
    prev: str | None = None
    project: ProjectName
    host: Ident | None = None
    agent_id: Ident | None = None
    run_id: Ident | None = None
    session_id: Ident | None = None
    task_id: Ident | None = None
    mission_id: Ident | None = None
    type: Tag = "event"
    phase: Tag | None = None
    message: Text = ""
    summary: Summary = msgspec.field(default_factory=Summary)
    refs: Refs = msgspec.field(default_factory=Refs)
    note: dict[str, Any] | None = None
    #: One entry per redacted match, ``<field>:<rule>``; the secret itself is gone.
    redacted: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        """The event's type tag, e.g. ``work.logged``."""
        return kind_of(type(self))


def kind_of(event_type: type[Event]) -> str:
    """The tag of an event type."""
    tag = event_type.__struct_config__.tag
    assert isinstance(tag, str)
    return tag
