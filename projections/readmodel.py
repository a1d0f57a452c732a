"""What a read model is: a name, a format, an initial state and a dispatch table of folds.

A read model is a pure fold per project: `fold(state, name, event) -> state`, looked up
in its dispatch table by the event's class (the most specific class wins, `Event` catches
every event). The registry of models is `projections/registry.py`.
"""

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import msgspec

from events.base import Event

S = TypeVar("S")
Fold = Callable[[Any, str, Any], Any]
#: Told from an event alone: the fold leaves every state as it is for it (only the counters move).
Passes = Callable[[Any], bool]


class Projects(msgspec.Struct, Generic[S], kw_only=True):
    """One read model's state for every project, and the last event folded into it."""

    last_name: str | None = None
    events_folded: int = 0
    projects: dict[str, S] = msgspec.field(default_factory=dict)


class ReadModel(Generic[S]):
    """A named, versioned fold: `{EventType: fold(state, name, event) -> state}` per project."""

    def __init__(
        self, name: str, *, format: int, state: type[S], initial: Callable[[], S],
        folds: Mapping[type[Event], Callable[[S, str, Any], S]], bounds: Mapping[str, int] | None = None,
        passes: Mapping[type[Event], Passes] | None = None,
    ) -> None:
        self.name = name
        self.format = format
        self.state_type = state
        self.initial = initial
        self.folds: dict[type[Event], Fold] = dict(folds)
        #: Named size limits of the state (docs/projections.md lists them).
        self.bounds: dict[str, int] = dict(bounds or {})
        #: Per entry of `folds`: which events its fold passes over untouched, told without the state (a catch-up
        #: then need not decode a big state for them: the tasks model's run files, say, for events of no run).
        self.passes: dict[type[Event], Passes] = dict(passes or {})
        if not self.passes.keys() <= self.folds.keys():
            raise ValueError(f"{name}: passes names event types with no fold")
        self._dispatch: dict[type[Any], tuple[Fold | None, Passes | None]] = {}

    def fold_for(self, kind: type[Any]) -> Fold | None:
        """The fold for an event class: its own entry, else its nearest base class's."""
        return self.entry_for(kind)[0]

    def entry_for(self, kind: type[Any]) -> tuple[Fold | None, Passes | None]:
        """The fold for an event class and its `passes` test (None: every event of the class may change the state)."""
        try:
            return self._dispatch[kind]
        except KeyError:
            base = next((base for base in kind.__mro__ if base in self.folds), None)
            found = (None, None) if base is None else (self.folds[base], self.passes.get(base))
            self._dispatch[kind] = found
            return found

    def changes(self, event: Event) -> bool:
        """Whether folding `event` may change a project's state (False: only the counters move)."""
        fold, passes = self.entry_for(type(event))
        return fold is not None and not (passes is not None and passes(event))

    def empty(self) -> Projects[S]:
        """The state before any event."""
        return Projects()

    def project(self, state: Projects[S], project: str) -> S:
        """One project's state (a fresh initial state when the project has none)."""
        found = state.projects.get(project)
        return found if found is not None else self.initial()

    def apply(self, state: Projects[S], name: str, event: Event) -> Projects[S]:
        """Fold one stored event (its file name and decoded event) into the state."""
        fold, passes = self.entry_for(type(event))
        if fold is not None and not (passes is not None and passes(event)):  # passed over: no project made for it
            current = state.projects.get(event.project)
            if current is None:
                current = state.projects[event.project] = self.initial()
            state.projects[event.project] = fold(current, name, event)
        state.last_name = name
        state.events_folded += 1
        return state
