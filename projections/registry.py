"""The read-model registry: every read model, each saved in a file of its own.

Bumping one model's `format` rebuilds only that model, and a command loads only the
models it reads: a model's module is imported the first time the registry is asked for
it, so a command that reads the tasks model never imports the archive or team folds.
Until then the registry answers with a `LazyModel`, which knows the model's name, format and
the event kinds it folds (projections/model_table.py, generated from the models): a catch-up
of events none of whose kinds the model folds moves its counters without importing it.
Adding a read model: write a module with `MODEL = ReadModel(...)` (see
`projections/readmodel.py`), add one line below and run `scripts/gen_docs.py`. No other
model changes.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any

from events.base import kind_of
from projections.readmodel import Fold, Passes, ReadModel


class LazyModel(ReadModel[Any]):
    """A registered model whose module is imported when one of its folds, its state type or its initial state is
    first needed: until then its name, format and the kinds it folds come from projections/model_table.py."""

    def __init__(self, name: str, module: str, format: int, folds: dict[str, str] | None) -> None:
        # ReadModel.__init__ is not called: the fold's parts (state, initial, folds, bounds, passes) are the real
        # model's, read through __getattr__ once it is imported.
        self.name = name
        self.format = format
        self._module = module
        #: kind -> the name of its fold's `passes` test in projections/passes.py ("": none; "*": any other kind's);
        #: None: every kind, whose folds need the module.
        self._folds = folds
        self._dispatch: dict[type[Any], tuple[Fold | None, Passes | None]] = {}
        self._real: ReadModel[Any] | None = None

    @property
    def real(self) -> ReadModel[Any]:
        """The model itself (its module imported)."""
        if self._real is None:
            self._real = importlib.import_module(self._module).MODEL
        return self._real

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr in ("_real", "_module", "_folds", "_dispatch"):
            raise AttributeError(attr)
        return getattr(self.real, attr)

    def entry_for(self, kind: type[Any]) -> tuple[Fold | None, Passes | None]:
        """The fold for an event class and its `passes` test, as ReadModel.entry_for; a kind the model does not fold,
        or whose fold a light test passes over, is answered without importing the model."""
        found = self._dispatch.get(kind)
        if found is None:
            found = self._dispatch[kind] = self._entry(kind)
        return found

    def _entry(self, kind: type[Any]) -> tuple[Fold | None, Passes | None]:
        if self._folds is None or self._real is not None:
            return self.real.entry_for(kind)
        found = self._folds.get(_kind(kind) or "")
        test = self._folds.get("*") if found is None else found
        if test is None:
            return None, None
        if not test:
            return self.real.entry_for(kind)
        from projections import passes

        def fold(state: Any, name: str, event: Any) -> Any:  # reached when the test does not pass the event over
            real = self.real.fold_for(kind)
            assert real is not None
            return real(state, name, event)

        test_fn: Passes = getattr(passes, test)
        return fold, test_fn


def _kind(event_type: type[Any]) -> str | None:
    """An event class's kind (None for a class that is no tagged event, which every table lookup misses)."""
    try:
        return kind_of(event_type)
    except (AttributeError, AssertionError):
        return None


class Registry(MutableMapping[str, ReadModel[Any]]):
    """Read models by name, in fold order; each model's module is imported on first use."""

    def __init__(self, modules: dict[str, str]) -> None:
        self._entries: dict[str, ReadModel[Any] | str] = dict(modules)

    def __getitem__(self, name: str) -> ReadModel[Any]:
        entry = self._entries[name]
        if isinstance(entry, str):
            from projections.model_table import MODELS

            known = MODELS.get(name)
            entry = self._entries[name] = (importlib.import_module(entry).MODEL if known is None
                                           else LazyModel(name, entry, *known))
        return entry

    def __setitem__(self, name: str, model: ReadModel[Any]) -> None:
        self._entries[name] = model

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


#: name -> the module whose `MODEL` it is, in the order catch-up folds them (any order is correct).
REGISTRY = Registry({
    "overview": "projections.overview",
    "worklog": "projections.worklog",
    "agentwork": "projections.agentwork",
    "sessions": "projections.sessions",
    "refs": "projections.refs",
    "archives": "projections.archives",
    "tasks": "projections.tasks",
    "team": "projections.team",
    "roles": "projections.roles",
    "workstreams": "projections.workstreams",
    "handoffs": "projections.handoffs",
    "inbox": "projections.inbox",
    "moments": "projections.moments",
})


def models(names: Iterable[str] | None = None) -> list[ReadModel[Any]]:
    """The registered models named (all of them when `names` is None)."""
    if names is None:
        return list(REGISTRY.values())
    return [REGISTRY[name] for name in names]
