"""Answering from read models: current (caught up, derived files refreshed) or as of a point."""

from __future__ import annotations

from typing import Any

import msgspec

from continuity.core.store import Store, now_us
from continuity.readside.views import SESSION_MODELS, Models, ProjectView
from events import clock


class View(msgspec.Struct, kw_only=True):
    """Read models to answer from: current, or as of an earlier point."""

    models: Models
    as_of: str | None = None
    warnings: list[str] = msgspec.field(default_factory=list)
    #: Why the catch-up stopped short of the log's end (catchup.Outcome.stopped), or None: the models are whole.
    stopped: str | None = None
    #: The time an as-of view answers at (replay.point_written), when it was resolved to one.
    at: str | None = None

    @property
    def out_of_time(self) -> bool:
        """Whether the catch-up stopped at its deadline: the models hold the log up to a day in the past."""
        from continuity.readside.catchup import out_of_time

        return out_of_time(self.stopped)

    def project(self, project: str) -> ProjectView:
        """One project's view."""
        return self.models.project(project)


def current_view(store: Store, names: tuple[str, ...] = SESSION_MODELS, *, as_of: str | None = None,
                 write: bool = True, views: dict[str, Any] | None = None, deadline: float | None = None,
                 sparse: dict[str, str] | None = None) -> View:
    """The named read models now (caught up and saved) or as of a point. Fails open.

    `views`: what the caller reads of a model's state, when it needs less than all of it
    (catchup.py); an audit replay folds whole states. `deadline`: a read that must answer in
    time stops folding past it (catchup.catch_up) and says so in its warnings. `sparse`: the
    models the caller reads one project of (catchup.catch_up).
    """
    from continuity.readside.catchup import out_of_time
    from continuity.readside.writers import refresh
    from events.errors import StoreUnsafe

    unsafe = None
    try:
        log = store.open_reader()
    except StoreUnsafe as error:  # reads fail open
        try:  # `local/` is what cannot be trusted: the log is replayed in memory, nothing saved is read
            log = store.open_events_only()
        except StoreUnsafe:  # the store or events/ itself: answer as for an empty log, say why
            from continuity.core.errors import note_unread

            note_unread(str(error))  # a lookup that then finds nothing says why (exit 6), not "unknown" (exit 7)
            # no log to find an as-of point in: the answer is the empty log's, as of now (`RCE-x` is never parsed)
            return View(models=Models.empty(names), warnings=[f"{error}; nothing read"])
        unsafe = f"{error}: the saved read models are not read; the log was replayed in memory and nothing saved"
    if as_of is not None or unsafe is not None:  # replayed in memory (the common read needs none of it)
        from continuity.readside.replay import known_at, models_until, point_written, resolve_point
    if as_of is not None:
        warnings: list[str] = [unsafe] if unsafe else []
        last_name, point = resolve_point(log, as_of)
        return View(models=models_until(log, last_name, warnings, names, only=known_at(last_name, point),
                                        whole=True), as_of=as_of, warnings=warnings, at=point_written(as_of, point))
    if unsafe is not None:
        warnings = [unsafe]
        models = models_until(log, "~", warnings, names, deadline=deadline)
        return View(models=models, warnings=warnings, stopped=next((line for line in warnings if out_of_time(line)),
                                                                   None))
    try:
        outcome = refresh(store, names, write=write, views=views, deadline=deadline, sparse=sparse)
    except OSError as error:
        from continuity.readside.replay import models_until

        warnings = [f"projections unavailable ({error.strerror or error}); replayed the log in memory"]
        return View(models=models_until(log, "~", warnings, names, deadline=deadline), warnings=warnings)
    return View(models=outcome.models, warnings=outcome.warnings, stopped=outcome.stopped)


def now_for(view: View) -> str:
    """`now` for a view: the real clock, or the time of the point an audit replays."""
    from continuity.readside.replay import point_time

    if view.as_of is None:
        return clock.iso(now_us())
    return view.at or point_time(view.as_of)
