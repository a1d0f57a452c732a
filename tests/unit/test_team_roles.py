"""Roles and leases without disk: the fold's log-order rule, the decisions, the document, lease views."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.core.errors import RoleConflict, RoleNotFound, UsageError
from continuity.core.identity import Identity
from continuity.team import decide
from continuity.team.roles import lease_state, role_document, role_text
from events import clock
from events.base import Event
from events.team import RoleCheckpointed, RoleClaimed, RoleCreated, RoleReleased, RoleRenewed
from projections.readmodel import Projects
from projections.roles import MODEL, RolesState

T0 = clock.parse_iso("2026-07-01T18:00:00.000000Z")
WHO = Identity(project="p")


def at(seconds: float) -> str:
    return clock.iso(T0 + int(seconds * 1_000_000))


def created(when: float = 0) -> RoleCreated:
    return RoleCreated(project="p", team="core", role="rev", description="reviews", created_at=at(when),
                       event_id=f"RCE-c{when}")


def claimed(agent: str, when: float, ttl: int = 60) -> RoleClaimed:
    return RoleClaimed(project="p", team="core", role="rev", agent=agent, ttl_seconds=ttl, created_at=at(when),
                       event_id=f"RCE-{agent}{when}")


def fold(*events: Event) -> RolesState:
    state = MODEL.empty()
    for index, event in enumerate(events):
        MODEL.apply(state, f"n{index:04d}", event)
    return MODEL.project(state, "p")


def rev(state: RolesState) -> Any:
    return state.teams["core"]["rev"]


def test_first_claim_in_log_order_holds_and_the_later_one_is_lost() -> None:
    """Two claims while the first lease is fresh: the earlier holds; the later is kept in history as lost."""
    role = rev(fold(created(), claimed("amy", 1), claimed("bo", 2)))
    assert role.holder == "amy" and role.lease_expires_at == at(61)
    assert [note.action for note in role.history] == ["created", "claimed", "claim-lost"]
    assert role.history[-1].agent == "bo" and "held by amy" in role.history[-1].detail


def test_a_park_by_an_agent_that_does_not_hold_the_role_moves_no_resume_point() -> None:
    """Two replicas: bo claimed and parked offline while amy's claim came first in log order; after the sync the
    role was amy's with bo's snapshot as its checkpoint_ref, so amy's next session resumed bo's work. bo's park
    is noted and changes nothing; the holder's own park, and a plain `checkpoint --role --ref`, still move it."""
    def park(agent: str, when: float, ref: str) -> RoleCheckpointed:
        return RoleCheckpointed(project="p", team="core", role="rev", checkpoint_ref=ref, parked=True,
                                agent_id=agent, created_at=at(when))

    role = rev(fold(created(), claimed("amy", 1), park("amy", 2, "amy/1"), claimed("bo", 3), park("bo", 4, "bo/1")))
    assert role.holder == "amy" and role.checkpoint_ref == "amy/1" and role.checkpoint_by == "amy"
    assert [note.action for note in role.history][-2:] == ["claim-lost", "park-ignored"]
    assert role.history[-1].agent == "bo" and "held by amy" in role.history[-1].detail
    role = rev(fold(created(), claimed("amy", 1), park("amy", 2, "amy/2"),
                    RoleCheckpointed(project="p", team="core", role="rev", checkpoint_ref="x/y.json",
                                     agent_id="bo", created_at=at(3))))
    assert role.checkpoint_ref == "x/y.json"  # `checkpoint --role --ref`: anyone sets it, as seed 000 does
    taken = rev(fold(created(), claimed("amy", 1, ttl=10), claimed("bo", 20), park("amy", 21, "amy/3")))
    assert taken.holder == "bo" and taken.checkpoint_ref is None  # amy's lease was taken over before she parked


def test_an_expired_lease_is_taken_over_and_recorded() -> None:
    """A claim at or after the expiry takes the role over; the history names the previous holder."""
    role = rev(fold(created(), claimed("amy", 1, ttl=10), claimed("bo", 11)))
    assert role.holder == "bo" and role.history[-1].action == "took-over" and "from amy" in role.history[-1].detail


def test_renew_release_and_checkpoint() -> None:
    """Only the holder renews or releases; others are noted and change nothing; checkpoint_ref follows the log."""
    events: list[Event] = [
        created(), claimed("amy", 1, ttl=10),
        RoleRenewed(project="p", team="core", role="rev", agent="bo", ttl_seconds=100, created_at=at(2)),
        RoleRenewed(project="p", team="core", role="rev", agent="amy", ttl_seconds=100, created_at=at(3)),
        RoleReleased(project="p", team="core", role="rev", agent="bo", created_at=at(4)),
        RoleCheckpointed(project="p", team="core", role="rev", checkpoint_ref="a/b.json", created_at=at(5)),
    ]
    role = rev(fold(*events))
    assert role.holder == "amy" and role.lease_expires_at == at(103) and role.checkpoint_ref == "a/b.json"
    assert [note.action for note in role.history][2:] == ["renew-refused", "renewed", "release-refused",
                                                          "checkpoint"]
    role = rev(fold(*events, RoleReleased(project="p", team="core", role="rev", agent="amy", created_at=at(6))))
    assert role.holder is None and role.lease_expires_at is None and role.checkpoint_ref == "a/b.json"


def test_a_second_creation_keeps_the_first() -> None:
    """A role created on two replicas keeps the first description in log order; the second creation is noted as
    `create-ignored` with the description it gave."""
    second = RoleCreated(project="p", team="core", role="rev", description="other", created_at=at(1))
    role = rev(fold(created(), second))
    assert role.description == "reviews"
    assert [(note.action, note.detail) for note in role.history] == [
        ("created", ""), ("create-ignored", "its description: other")]


def request(agent: str | None = "amy", ttl: int = 60) -> decide.RoleRequest:
    return decide.RoleRequest(team="core", role="rev", agent=agent, ttl_seconds=ttl)


def test_claim_decisions() -> None:
    """Unknown role: not found; free: claimed; fresh foreign lease: conflict; expired: a recorded takeover."""
    with pytest.raises(RoleNotFound):
        decide.decide_role_claim(fold(), WHO, request(), T0)
    state = fold(created(), claimed("amy", 1, ttl=10))
    with pytest.raises(RoleConflict, match="held by amy under a fresh lease"):
        decide.decide_role_claim(state, WHO, request("bo"), T0 + 5_000_000)
    [again] = decide.decide_role_claim(state, WHO, request("amy"), T0 + 5_000_000)
    assert isinstance(again, RoleClaimed) and again.takeover_from is None
    [takeover] = decide.decide_role_claim(state, WHO, request("bo"), T0 + 11_000_000)
    assert isinstance(takeover, RoleClaimed) and takeover.takeover_from == "amy" and takeover.agent_id == "bo"


def test_create_renew_release_checkpoint_decisions() -> None:
    """Create twice conflicts; only the holder renews or releases; checkpoint needs the role."""
    state = fold(created(), claimed("amy", 1))
    with pytest.raises(RoleConflict, match="already exists"):
        decide.decide_role_create(state, WHO, request(None))
    with pytest.raises(RoleConflict, match="bo does not hold rev"):
        decide.decide_role_renew(state, WHO, request("bo"))
    with pytest.raises(RoleConflict, match="held by amy"):
        decide.decide_role_release(state, WHO, request("bo"))
    assert isinstance(decide.decide_role_release(state, WHO, request("amy"))[0], RoleReleased)
    with pytest.raises(RoleNotFound):
        decide.decide_role_checkpoint(fold(), WHO, request(), "x.json")


@pytest.mark.parametrize(("text", "seconds"), [
    (None, 3600), ("30s", 30), (".5h", 1800), ("1.2s", 2), ("366d", 366 * 86400),
])
def test_ttl_grammar(text: str | None, seconds: int) -> None:
    """Leases use the resume duration grammar, rounded up to whole seconds; default one hour."""
    assert decide.ttl_seconds(text, "role claim") == seconds


@pytest.mark.parametrize("text", ["0s", "0.1s", "367d", "abc", "-1h", "1w", "x" * 10_000_000])
def test_ttl_refused(text: str) -> None:
    """Below a second, past a year, or not a duration: a short usage error."""
    with pytest.raises(UsageError) as caught:
        decide.ttl_seconds(text, "role claim")
    assert len(str(caught.value)) < 200


@pytest.mark.parametrize("name", ["../x", "a/b", "a\x00", "a\x1b[2J", "..", "", ".x", "x" * 10_000_000])
def test_hostile_names_are_refused_briefly(name: str) -> None:
    """Path tricks, NUL, control characters and huge names: a usage error of one short line."""
    with pytest.raises(UsageError) as caught:
        decide.checked_name(name, "role", "role claim")
    assert len(str(caught.value)) < 200 and "\n" not in str(caught.value) and "\x00" not in str(caught.value)


def test_lease_views_and_document() -> None:
    """Lease state is a view of now; the document has front matter and no clock in it."""
    role = rev(fold(created(), claimed("amy", 1, ttl=10)))
    assert lease_state(role, T0 + 5_000_000) == "fresh" and lease_state(role, T0 + 11_000_000) == "expired"
    assert "lease EXPIRED" in role_text(role, T0 + 11_000_000) and "claimable" in role_text(role, T0 + 11_000_000)
    text = role_document(role).decode()
    assert text.startswith('---\nschema: "coord.teams.role.v1"\nteam: "core"\nrole: "rev"\nholder: "amy"\n')
    assert f'lease_expires_at: "{at(11)}"\ncheckpoint_ref: null\n' in text and "fresh" not in text


EVENTS = st.lists(st.tuples(st.sampled_from(["claim", "renew", "release", "checkpoint", "create"]),
                            st.sampled_from(["amy", "bo", "cy"]), st.integers(1, 30)), max_size=40)


def one_event(action: str, agent: str, number: int, when: float) -> Event:
    base: dict[str, Any] = {"project": "p", "team": "core", "role": "rev", "created_at": at(when)}
    if action == "claim":
        return RoleClaimed(**base, agent=agent, ttl_seconds=number)
    if action == "renew":
        return RoleRenewed(**base, agent=agent, ttl_seconds=number)
    if action == "release":
        return RoleReleased(**base, agent=agent)
    if action == "checkpoint":
        return RoleCheckpointed(**base, checkpoint_ref=f"ref/{number}")
    return RoleCreated(**base, description=agent)


def events_of(script: list[tuple[str, str, int]]) -> list[Event]:
    made: list[Event] = [created()]
    now = 0.0
    for action, agent, number in script:
        now += number / 3
        made.append(one_event(action, agent, number, now))
    return made


@settings(max_examples=60, deadline=None)
@given(EVENTS, st.integers(0, 40))
def test_incremental_fold_equals_full_fold(script: list[tuple[str, str, int]], cut: int) -> None:
    """Folding in two runs with the state saved and loaded between gives the same bytes as one run."""
    events = events_of(script)
    encode = msgspec.msgpack.Encoder()
    whole = MODEL.empty()
    for index, event in enumerate(events):
        MODEL.apply(whole, f"n{index:04d}", event)
    part = MODEL.empty()
    for index, event in enumerate(events[:cut]):
        MODEL.apply(part, f"n{index:04d}", event)
    part = msgspec.msgpack.decode(encode.encode(part), type=Projects[RolesState])  # saved, then loaded
    for index, event in enumerate(events[cut:], start=cut):
        MODEL.apply(part, f"n{index:04d}", event)
    assert encode.encode(part) == encode.encode(whole)
    assert role_document(rev(MODEL.project(part, "p"))) == role_document(rev(MODEL.project(whole, "p")))


@settings(max_examples=200, deadline=None)
@given(ref=st.text(st.characters(blacklist_categories=("Cs",)), max_size=40),
       holder=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12))
def test_a_role_documents_front_matter_is_yaml_that_reads_back_what_it_holds(ref: str, holder: str) -> None:
    """Front-matter values are JSON scalars and YAML reads them back as written, whatever the text: C1 controls
    (NEL), bidi marks, separators and the non-characters U+FFFE/U+FFFF included (a raw one broke the YAML)."""
    import re

    import yaml

    from projections.roles import Role

    role = Role(role="reviewer", team="core", holder=holder, checkpoint_ref=ref)
    front = role_document(role).decode().split("---\n")[1]
    read = yaml.safe_load(front)
    assert read["checkpoint_ref"] == ref and read["holder"] == holder
    assert not re.search("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufffe\uffff]", front)
