"""The checkpoint channel (seed 000): recording which moments a sink has received.

A moment is the shadow of a snapshot (one per `snapshot.taken`, park's included), so
moments themselves are a projection; only their delivery is a fact worth an event: the
delivery cursor that makes `continuity moments deliver` deliver each moment once per sink.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from events.base import Event, Label, Name

#: The moments one delivery event may name (a bigger backlog is recorded in several events).
DELIVERED_LIMIT = 1000


class MomentsDelivered(Event, frozen=True, kw_only=True, tag="moments.delivered"):
    """Moments (named by their snapshot events' ids) were delivered to one sink of a team's channel."""

    type: Label = "moments"
    team: Name
    sink: Name
    moments: Annotated[tuple[Name, ...], msgspec.Meta(min_length=1, max_length=DELIVERED_LIMIT)]
