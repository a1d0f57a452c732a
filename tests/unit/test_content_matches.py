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


@settings(max_examples=200, deadline=None)
@given(listed=st.lists(st.sampled_from([
    "20261206_065432_000001-abcd1234-aaaaaaaaaaaa.json", "20261206_065432_000001-abcd1234-bbbbbbbbbbbb.json",
    "20261206_065433_000001-ef567890-cccccccccccc.json", "notes.txt", ".tmp-1", "20261206_255432_000001-abcd1234-"
    "aaaaaaaaaaaa.json"]), max_size=8),
    index=st.integers(-1, 10))
def test_event_before_is_the_last_event_name_before_the_index(listed: list[str], index: int) -> None:
    """What a read compares its first name with: the nearest earlier event file, not any file, None when none."""
    earlier = [name for name in listed[:max(index, 0)] if names.parse_name(name) is not None]
    assert names.event_before(listed, index) == (earlier[-1] if earlier else None)


def test_event_before_skips_what_is_no_event_name() -> None:
    first, junk = "20261206_065432_000001-abcd1234-aaaaaaaaaaaa.json", "20261206_065432_000002-abcd1234-.json"
    assert names.event_before([first, junk, "notes.txt"], 3) == first
    assert names.event_before([first, junk], 1) == first
    assert names.event_before([first], 0) is None
    assert names.event_before([junk, "notes.txt"], 2) is None
