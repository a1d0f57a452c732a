"""The read-model registry: every read model, each saved in a file of its own.

Bumping one model's `format` rebuilds only that model, and a command loads only the
models it reads. Adding a read model: write a module with `MODEL = ReadModel(...)`
(see `projections/readmodel.py`) and add one line below. No other model changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from projections import (
    archives,
    handoffs,
    inbox,
    moments,
    overview,
    refs,
    roles,
    sessions,
    tasks,
    team,
    worklog,
    workstreams,
)
from projections.readmodel import ReadModel

#: name -> read model, in the order catch-up folds them (any order is correct).
REGISTRY: dict[str, ReadModel[Any]] = {
    model.name: model
    for model in (
        overview.MODEL,
        worklog.MODEL,
        sessions.MODEL,
        refs.MODEL,
        archives.MODEL,
        tasks.MODEL,
        team.MODEL,
        roles.MODEL,
        workstreams.MODEL,
        handoffs.MODEL,
        inbox.MODEL,
        moments.MODEL,
    )
}


def models(names: Iterable[str] | None = None) -> list[ReadModel[Any]]:
    """The registered models named (all of them when `names` is None)."""
    if names is None:
        return list(REGISTRY.values())
    return [REGISTRY[name] for name in names]
