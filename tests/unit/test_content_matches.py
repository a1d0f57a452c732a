"""`names.content_matches`: an event's id and time are the ones its file name spells, for every sealed event."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from events import clock, names
from events.codec import default_codec
from events.sealing import seal
from events.worklog import WorkLogged

CODEC = default_codec()


@settings(max_examples=200, deadline=None)
@given(at_us=st.integers(clock.FIRST_US, clock.LAST_US), node=st.from_regex(r"[a-z0-9]{8}", fullmatch=True))
def test_every_sealed_event_matches_its_name(at_us: int, node: str) -> None:
    stored = seal(WorkLogged(project="demo", message="m"), at_us=at_us, node=node, prev=None, codec=CODEC)
    event = stored.event
    assert names.content_matches(stored.name, event.event_id, event.created_at)
    assert not names.content_matches(stored.name, event.event_id[:-1] + ("x" if node[-1] != "x" else "y"),
                                     event.created_at)
    assert not names.content_matches(stored.name, "XYZ" + event.event_id[3:], event.created_at)
    assert not names.content_matches(stored.name, event.event_id, event.created_at.replace("Z", "+00:00"))
