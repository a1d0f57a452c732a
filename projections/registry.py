"""The read-model registry: every read model, each saved in a file of its own.

Bumping one model's `format` rebuilds only that model, and a command loads only the
models it reads: a model's module is imported the first time the registry is asked for
it, so a command that reads the tasks model never imports the archive or team folds.
Adding a read model: write a module with `MODEL = ReadModel(...)` (see
`projections/readmodel.py`) and add one line below. No other model changes.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any

from projections.readmodel import ReadModel


class Registry(MutableMapping[str, ReadModel[Any]]):
    """Read models by name, in fold order; each model's module is imported on first use."""

    def __init__(self, modules: dict[str, str]) -> None:
        self._entries: dict[str, ReadModel[Any] | str] = dict(modules)

    def __getitem__(self, name: str) -> ReadModel[Any]:
        entry = self._entries[name]
        if isinstance(entry, str):
            entry = self._entries[name] = importlib.import_module(entry).MODEL
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
