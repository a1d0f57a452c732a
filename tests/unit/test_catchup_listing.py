"""The day listing's fast path: the same answers as the plain filter."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from continuity.readside.catchup import _event_names
from events import names

LENGTH = names.NAME_LENGTH
STEM = st.text(alphabet="0123456789abcdef_-", min_size=LENGTH - 5, max_size=LENGTH - 5)
EVENT = STEM.map(lambda stem: stem + ".json")
JUNK = st.one_of(
    st.text(min_size=0, max_size=LENGTH + 3),  # any length, any characters
    st.text(min_size=LENGTH, max_size=LENGTH),  # the right length, (almost always) the wrong suffix
    st.text(alphabet="0123456789.jsonx", min_size=LENGTH, max_size=LENGTH),  # near misses: ".jsox", "json."
    EVENT.map(lambda name: "." + name[1:]),  # a dot file shaped like an event
)


def plain(entries: list[str]) -> list[str]:
    return sorted(entry for entry in entries if len(entry) == LENGTH and entry.endswith(".json"))


@given(st.lists(EVENT, max_size=40), st.lists(JUNK, max_size=5))
def test_listing_matches_the_plain_filter(events: list[str], junk: list[str]) -> None:
    entries = events + junk
    assert _event_names(list(entries)) == plain(entries)


@given(st.lists(EVENT, max_size=40))
def test_a_folder_of_events_only_is_kept_whole_and_sorted(events: list[str]) -> None:
    assert _event_names(list(events)) == sorted(events)


def test_one_bad_suffix_among_thousands_is_filtered() -> None:
    events = [f"{i:017d}".ljust(LENGTH - 5, "0") + ".json" for i in range(3000)]
    wrong = events[1500][:-5] + ".jsom"
    assert _event_names([*events, wrong]) == sorted(events)
    assert _event_names([*events, wrong[:-1]]) == sorted(events)  # one character short


def test_unknown_kinds_are_bounded_and_a_star_stands_for_the_rest() -> None:
    """Planted files can carry any number of made-up kinds of any length: a saved model names at most
    UNKNOWN_KEPT, "*" stands for the others, and "*" rebuilds only under a release that knows other kinds."""
    from continuity.readside.catchup import KIND_CHARS, UNKNOWN_KEPT, keep_unknown, known_kinds, reads_now

    unknown: list[str] = []
    assert keep_unknown(unknown, "future.a") and not keep_unknown(unknown, "future.a")
    assert keep_unknown(unknown, "x" * (KIND_CHARS + 1)) and unknown == ["future.a", "*"]
    for index in range(500):
        keep_unknown(unknown, f"made.up{index}")
    assert len(unknown) == UNKNOWN_KEPT and unknown.count("*") == 1
    release = {"work.logged": 1, "session.started": 1}
    assert not reads_now(unknown, known_kinds(release), release)  # saved by this release: nothing new to read
    assert reads_now(unknown, known_kinds(release), {**release, "made.up999": 1})  # knows more now: "*" may be it
    assert reads_now(["future.a"], None, {**release, "future.a": 1}) and not reads_now(["future.b"], None, release)


@given(st.lists(st.text(alphabet="0123456789abcdef_-.json", min_size=1, max_size=12), max_size=40),
       st.lists(st.integers(min_value=0, max_value=45), min_size=1, max_size=6))
def test_a_digest_going_on_from_a_shorter_one_is_the_digest_taken_whole(listed: list[str], counts: list[int]) -> None:
    """prefix_digest goes on from the last digest of the same listing (the check, then the marks): the same value
    as the digest of those names taken whole, whatever counts it is asked for, in any order."""
    from continuity.readside.catchup import prefix_digest
    from events import names

    listed = sorted(set(listed))
    for count in counts:
        assert prefix_digest(listed, count) == names.digest(listed[:count])
    other = list(listed)  # another listing object with the same names: never taken for the one before
    assert prefix_digest(other, len(other)) == names.digest(other)


def test_a_saved_model_that_shrinks_keeps_no_bytes_past_its_frame(tmp_path: object) -> None:
    """Models are saved in place: one saved smaller than before kept the old tail (a rebuild's file then differed
    from a clean one, and a model once megabytes stayed that size, read whole at every load)."""
    from pathlib import Path

    from continuity.core.initialize import init_store
    from continuity.readside.catchup import Saved, load, model_path, save
    from projections.registry import models

    root = Path(str(tmp_path))
    store, _ = init_store(root, project="demo", language=None)
    model = next(iter(models(["worklog"])))
    big = Saved(format=model.format, state=model.initial(), unread=[f"file-{number}" for number in range(500)])
    small = Saved(format=model.format, state=model.initial(), unread=["one"])
    save(store, model, big)
    grown = Path(model_path(store, model)).stat().st_size
    save(store, model, small)
    path = Path(model_path(store, model))
    shrunk = path.read_bytes()
    path.unlink()
    save(store, model, small)
    assert len(shrunk) < grown and shrunk == path.read_bytes()
    loaded = load(store, model)
    assert loaded is not None and loaded.unread == ["one"]
