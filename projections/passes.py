"""The `passes` tests of folds a catch-up runs without importing their model (projections/model_table.py names them).

Each tells from an event alone that its fold leaves every state as it is, so a model whose events
so far are all passed over (a project that never started a run) is neither decoded nor imported.
"""

from __future__ import annotations

from typing import Any


def no_run_files(event: Any) -> bool:
    """No run named, or no files or commands: the tasks model's `on_any` passes it over."""
    return not (event.run_id and (event.refs.files or event.refs.commands))


def no_run(event: Any) -> bool:
    """No run named: the tasks model's `on_session_ended` passes it over (it writes a run's session summary)."""
    return not event.run_id


def no_identity(event: Any) -> bool:
    """No session, run or host named (a log written in a terminal, a script's): the sessions model's fold passes it
    over (a host switch names its host in `to_host`: it has its own entry)."""
    return not (event.session_id or event.run_id or event.host)
