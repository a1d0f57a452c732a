"""Following the log live (watchfiles): `continuity watch` and `continuity events tail --follow`.

The loop reads new events after the last one it showed whenever the events folder
changes; `watch` also keeps the projections current. Ctrl-C (SIGINT) ends it cleanly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from continuity.core.store import Store
from events.errors import EventUndecodable
from events.sealing import StoredEvent

#: How long the loop waits for file-system news before checking again anyway (ms).
POLL_MS = 500


def follow(
    store: Store,
    on_event: Callable[[StoredEvent], None],
    *,
    after: str | None,
    on_warning: Callable[[str], None],
    refresh_projections: bool = False,
    stop: threading.Event | None = None,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Call `on_event` for each event after `after`, as they land, until `stop` is set or Ctrl-C."""
    import os

    from watchfiles import watch

    from continuity.core.store import now_us
    from continuity.readside.catchup import early_warning
    from events import names

    log = store.open_reader()
    last = after
    warned: set[str] = set()  # a file or day folder that stays unreadable is said once, not at every change

    def drain() -> None:
        nonlocal last

        held: list[str] = []

        def skipped(name: str, error: EventUndecodable) -> None:
            if name not in warned:
                warned.add(name)
                on_warning(f"skipped unreadable event {name}: {error}")
            if name.endswith("/"):  # a day folder that cannot be listed: its events wait, and every later one
                held.append(name)

        landed = list(log.read(after=last, on_error=skipped))
        if held:
            landed = [stored for stored in landed if stored.name < held[0]]
        if landed and landed[-1].name[:8] > names.last_day(now_us()):  # events stamped early wait, as in reads:
            limit = log.now_limit(now_us())  # shown, the cursor
            early = [stored.name for stored in landed if stored.name[:8] > limit]  # passed what lands after
            landed = [stored for stored in landed if stored.name[:8] <= limit]
            if early and early[0][:8] not in warned:
                warned.add(early[0][:8])
                on_warning(early_warning(sorted({name[:8] for name in early})))
        if landed and refresh_projections:  # projections first: once a line shows, they include it
            from continuity.readside.writers import refresh

            for warning in refresh(store).warnings:
                on_warning(warning)
        for stored in landed:
            on_event(stored)
            last = stored.name

    os.makedirs(store.events_dir, exist_ok=True)
    drain()
    if on_ready is not None:
        on_ready()
    try:
        for _ in watch(store.events_dir, recursive=True, debounce=50, step=20, rust_timeout=POLL_MS,
                       yield_on_timeout=True, stop_event=stop, raise_interrupt=True):
            drain()
    except KeyboardInterrupt:
        return
