"""The context state decision and the registry parser: pure, no disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from continuity.workstreams.context_state import ContextFacts, decide_state, read_ref
from continuity.workstreams.membership import Membership, parse_registry, unregistered


@pytest.mark.parametrize("facts, state", [
    (ContextFacts(), "CURRENT_OR_FETCHED"),
    (ContextFacts(local_tip="a", remote_tip="a"), "CURRENT_OR_FETCHED"),
    (ContextFacts(local_tip="a", remote_tip="b", remote_behind=True), "CURRENT_OR_FETCHED"),
    (ContextFacts(local_tip="a", remote_tip="b", local_behind=True), "STALE_LOCAL_CONTEXT"),
    (ContextFacts(local_tip="a", remote_tip="b", local_behind=True, waiting=True), "DIRTY_LOCAL_CONTEXT"),
    (ContextFacts(waiting=True), "DIRTY_LOCAL_CONTEXT"),
    (ContextFacts(local_tip="a", remote_tip="b", waiting=True), "DIVERGED_LOCAL_CONTEXT"),
    (ContextFacts(offline=True, local_tip="a", remote_tip="b"), "OFFLINE_IMPORTED_CONTEXT"),
])
def test_decide_state(facts: ContextFacts, state: str) -> None:
    """Each combination of facts gives the most pressing of seed 002's states."""
    assert decide_state(facts) == state


def test_parse_registry_forms_and_problems() -> None:
    """List and mapping forms read the same; strings are ids; the first problem is named."""
    listed = parse_registry({"repositories": [{"id": "a", "role": "p"}, "b"]}, "demo")
    mapped = parse_registry({"repositories": {"a": {"role": "p"}, "b": None}}, "demo")
    assert set(listed[1]) == set(mapped[1]) == {"a", "b"} and listed[2] is None
    assert parse_registry({"repositories": [{"id": "a" * 129}]}, None)[2] == \
        "repositories entry 1 has no valid id (1-128 of A-Za-z0-9._-)"
    assert parse_registry(None, None)[2] == "the registry is not a mapping with a `repositories` list"
    assert parse_registry({"repositories": 3}, None)[2] == "`repositories` is missing or not a list"


def test_a_mapped_entry_naming_another_id_is_a_problem_not_that_id() -> None:
    """`p1: {id: other}` registered `other` though the file visibly lists `p1` (the inner id won, silently), so a
    checkpoint of p1 was refused as unregistered. Said as the registry's problem now; the same id agrees."""
    assert parse_registry({"repositories": {"p1": {"id": "other", "role": "primary"}}}, None)[2] == \
        "repository 'p1' gives another id in its entry ('other'): the key is its id; remove one"
    assert parse_registry({"repositories": {"p1": {"repository": "p2"}}}, None)[2] is not None
    agreed = parse_registry({"repositories": {"p1": {"id": "p1", "role": "primary"}}}, None)
    assert set(agreed[1]) == {"p1"} and agreed[2] is None
    typed = parse_registry({"repositories": {2024: {"id": "2024"}}}, None)  # YAML's number key, the id quoted
    assert set(typed[1]) == {"2024"} and typed[2] is None
    assert "YAML reads 2024 as a number" in (parse_registry({"repositories": {"2024": {"id": 2024}}}, None)[2] or "")


def test_unregistered_only_when_managed() -> None:
    """No registry: nothing is unregistered; with one, each missing id gets the contract's message once."""
    assert unregistered(Membership(), ["x"]) == []
    managed = Membership(registry="r", members={})
    assert unregistered(managed, ["x", "x"]) == ["Repository 'x' is not registered in repositories/repositories.yaml."]


def test_a_packed_ref_named_with_a_unicode_line_break_forges_no_other_ref(tmp_path: Path) -> None:
    """packed-refs lines end at "\\n" only: a ref named `refs/heads/x<U+2028><oid> refs/heads/main` read split at
    every Unicode break gave `main` the forged object id."""
    real, forged = "1" * 40, "2" * 40
    (tmp_path / "packed-refs").write_text(f"# pack-refs with: peeled fully-peeled sorted\n"
                                          f"{real} refs/heads/main\n{real} refs/heads/x\u2028{forged} refs/heads/zz\n")
    assert read_ref(str(tmp_path), "refs/heads/zz") is None
    assert read_ref(str(tmp_path), "refs/heads/main") == real
