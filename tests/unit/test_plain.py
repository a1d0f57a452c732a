"""The plain append path's pieces against the msgspec ones: the table, validation, bytes, seal, JSON reading."""

from __future__ import annotations

import json
from typing import Annotated, Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuity.core.errors import UsageError
from continuity.core.identity import IDENTITY_FIELDS, Identity
from continuity.worklog import plain as plain_work
from continuity.worklog.decide import WorkRequest, decide_checkpoint, decide_log
from events import plain, sealing
from events.catalog import EVENT_TYPES
from events.codec import default_codec
from events.errors import EventInvalid
from events.plain_table import KINDS, STRUCTS
from tests.helpers import REPO, gen_docs

CODEC = default_codec()
NAME_LIKE = st.one_of(
    st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,20}\Z"),
    st.sampled_from(["", "a..b", "-x", ".", "a/b", "a b", "x" * 128, "x" * 129, "a\n", "a\x00", "é", "[x]"]),
    st.text(max_size=12),
)
TEXT_LIKE = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", "\t\n", "\x1b[31m", "\x7f", "\u2028", "x" * 1000, "x" * 1001, "ghp_" + "A1b2" * 9,
                     "password=hunter2secret", "a\rb"]),
)
ANY_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), TEXT_LIKE),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT_LIKE, inner, max_size=3),
    max_leaves=8,
)


def test_the_plain_table_is_generated_from_the_structs() -> None:
    """events/plain_table.py is exactly what scripts/gen_docs.py derives from the event Structs today."""
    assert (REPO / "events" / "plain_table.py").read_text() == gen_docs().render_plain_table(), \
        "run scripts/gen_docs.py"
    assert set(KINDS) == {event_type.__struct_config__.tag for event_type in EVENT_TYPES}


def test_the_table_would_notice_a_changed_constraint() -> None:
    """The derivation reads the constraints themselves: a Struct with another limit gives another table."""
    class Narrow(msgspec.Struct):
        name: Annotated[str, msgspec.Meta(max_length=3, pattern="^a")]
        count: Annotated[int, msgspec.Meta(ge=0, lt=10)] = 0

    structs: dict[str, object] = {}
    gen_docs().plain_type(msgspec.inspect.type_info(Narrow), structs)
    assert structs["Narrow"] == (("name", ("str", None, 3, "^a"), "REQUIRED"), ("count", ("int", 0, 9), 0))


def test_plain_helpers_mirror_their_structs() -> None:
    """The identity field names and the work request defaults are those of `Identity` and `WorkRequest`."""
    assert Identity.__struct_fields__ == IDENTITY_FIELDS
    assert msgspec.structs.asdict(WorkRequest()) == plain_work.REQUEST_DEFAULTS


def field_values(spec: tuple[Any, ...], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values for one field of the table: mostly near its constraints, some of the wrong type."""
    kind = spec[0]
    wrong = st.one_of(st.none(), st.integers(-3, 3), st.booleans(), st.text(max_size=3))
    if kind == "str":
        base = NAME_LIKE if spec[3] and "A-Za-z0-9]" in spec[3] else TEXT_LIKE
        return st.one_of(base, wrong) if depth else base
    if kind == "int":
        return st.one_of(st.integers(min_value=-(2**65), max_value=2**65), st.integers(-5, 1005), wrong)
    if kind == "bool":
        return st.one_of(st.booleans(), wrong)
    if kind == "none":
        return st.none()
    if kind == "union":
        return st.one_of(*(field_values(member, depth) for member in spec[1]))
    if kind == "literal":
        return st.one_of(st.sampled_from(spec[1]), st.text(max_size=4))
    if kind == "tuple":
        return st.lists(field_values(spec[1], depth + 1), max_size=3).map(tuple)
    if kind == "dict":
        return st.dictionaries(st.text(max_size=5), field_values(spec[2], depth + 1), max_size=3)
    if kind == "any":
        return ANY_JSON
    assert kind == "struct"
    return struct_values(spec[1], depth + 1)


def struct_values(name: str, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({field: field_values(spec, depth) for field, spec, _ in STRUCTS[name]})


def event_trees(kinds: tuple[str, ...] = tuple(sorted(KINDS))) -> st.SearchStrategy[dict[str, Any]]:
    """Event-shaped trees of the given kinds: every field present, values near and past their constraints."""
    return st.one_of(*(struct_values(KINDS[kind]).map(lambda fields, kind=kind: {"kind": kind, **fields})
                       for kind in kinds))


WORK_TREES = event_trees(("work.logged", "checkpoint.recorded"))


def msgspec_accepts(raw: bytes) -> bool:
    try:
        CODEC.validate(raw)
    except EventInvalid:
        return False
    return True


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(event_trees())
def test_plain_validation_agrees_with_msgspec(tree: dict[str, Any]) -> None:
    """For any event-shaped tree: plain `valid` is msgspec's verdict, and an accepted tree has msgspec's bytes."""
    raw = plain.canonical(tree)
    verdict = msgspec_accepts(raw)
    assert plain.valid(tree) == verdict
    if verdict:
        assert CODEC.encode(CODEC.validate(raw)) == raw


@settings(max_examples=50, deadline=None)
@given(WORK_TREES, st.floats(allow_nan=True), st.integers(0, 2))
def test_floats_are_never_vouched_for(tree: dict[str, Any], number: float, where: int) -> None:
    """A float anywhere in a note (the encoders spell floats differently) leaves the event to msgspec."""
    note = [{"x": number}, {"x": [1, {"y": number}]}, {"x": {"y": number}}][where]
    assert not plain.valid({**tree, "note": note})


def test_complete_fills_the_defaults_msgspec_would() -> None:
    """An event from a few given fields, completed, is the to_builtins form of the Struct built from them."""
    from events.session import SessionStarted
    from events.worklog import WorkLogged

    tree = plain.complete("work.logged", {"project": "p", "refs": {"commands": [{"command": "ls"}]}})
    assert json.loads(plain.canonical(tree)) == json.loads(CODEC.encode(msgspec.convert(tree, WorkLogged)))
    tree = plain.complete("session.started", {"project": "p", "model": "m"})
    assert json.loads(plain.canonical(tree)) == json.loads(CODEC.encode(SessionStarted(project="p", model="m")))
    with pytest.raises(plain.Unsure):
        plain.complete("work.logged", {"message": "no project"})
    with pytest.raises(plain.Unsure):
        plain.complete("work.logged", {"project": "p", "nonsense": 1})
    with pytest.raises(plain.Unsure):
        plain.complete("no.such", {"project": "p"})


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=2**52), st.from_regex(r"\A[a-z0-9]{8}\Z"),
       st.one_of(st.none(), st.from_regex(r"\A[0-9a-f]{64}\Z")), TEXT_LIKE, NAME_LIKE,
       st.one_of(st.none(), st.integers(min_value=0, max_value=2**52)))
def test_plain_seal_is_the_msgspec_seal(at_us: int, node: str, prev: str | None, message: str, agent: str,
                                        written_us: int | None) -> None:
    """Same time, node, predecessor and writer's clock: the plain seal gives the file name, id and bytes
    events/sealing.py gives (`written_at` there only when given)."""
    from events.worklog import WorkLogged

    tree = plain.complete("work.logged", {"project": "p", "message": message, "agent_id": agent})
    if not plain.valid(tree):
        return
    typed = sealing.seal(WorkLogged(project="p", message=message, agent_id=agent), at_us=at_us, node=node,
                         prev=prev, codec=CODEC, written_us=written_us)
    sealed = plain.seal(tree, at_us, node, prev, written_us)
    assert (sealed.name, sealed.raw) == (typed.name, typed.raw)
    assert (b'"written_at":' in sealed.raw) == (written_us is not None)
    assert plain.valid(json.loads(sealed.raw))
    assert sealed.tree == msgspec.to_builtins(typed.event) | {"summary": sealed.tree["summary"],
                                                              "refs": sealed.tree["refs"], "redacted": ()}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(WORK_TREES)
def test_prepare_vouches_only_for_what_the_typed_prepare_stores_unchanged(tree: dict[str, Any]) -> None:
    """plain.prepare passes a draft only when sealing.prepare would store it as it is (no secret, valid, in size)."""
    try:
        plain.prepare(tree)
    except plain.Unsure:
        return
    draft = CODEC.validate(plain.canonical(tree))
    assert sealing.prepare(draft, CODEC, redact=False) is draft


def test_prepare_leaves_secrets_to_the_typed_path() -> None:
    """A secret-like string anywhere (a note key included) is never vouched for; a trigger word alone is."""
    base = {"project": "p", "message": "rotated the token policy"}
    assert plain.prepare(plain.complete("work.logged", base))
    for given_fields in ({**base, "message": "export GITHUB_TOKEN=ghp_" + "A1b2" * 9},
                         {**base, "note": {"password=hunter2secret": "x"}},
                         {**base, "summary": {"next": ["curl https://u:s3cretpass@host/x"]}}):
        with pytest.raises(plain.Unsure):
            plain.prepare(plain.complete("work.logged", given_fields))


REQUEST = st.fixed_dictionaries({
    "message": TEXT_LIKE, "type": st.one_of(st.none(), NAME_LIKE), "phase": st.one_of(st.none(), NAME_LIKE),
    "done": st.lists(TEXT_LIKE, max_size=2).map(tuple), "in_progress": st.one_of(st.none(), TEXT_LIKE),
    "next": st.lists(TEXT_LIKE, max_size=2).map(tuple), "blockers": st.lists(TEXT_LIKE, max_size=2).map(tuple),
    "files": st.lists(TEXT_LIKE, max_size=2).map(tuple), "artifacts": st.lists(TEXT_LIKE, max_size=1).map(tuple),
    "handoffs": st.lists(TEXT_LIKE, max_size=1).map(tuple), "command": st.one_of(st.none(), TEXT_LIKE),
    "exit_code": st.one_of(st.none(), st.integers(-(2**31), 2**32 - 1)),
    "command_summary": st.one_of(st.none(), TEXT_LIKE), "note": st.none(),
})
IDENTITY = st.fixed_dictionaries({name: st.one_of(st.none(), NAME_LIKE) for name in IDENTITY_FIELDS[1:]}).map(
    lambda fields: {"project": "demo", **fields})


@settings(max_examples=300, deadline=None)
@given(REQUEST, IDENTITY, st.booleans())
def test_the_plain_work_decision_is_decide_log(request: dict[str, Any], identity: dict[str, Any],
                                               checkpoint: bool) -> None:
    """For any request: the plain decision's draft is decide_log's (or decide_checkpoint's), and it refuses alike."""
    typed_request, who = WorkRequest(**request), Identity(**identity)
    try:
        typed = (decide_checkpoint if checkpoint else decide_log)(who, typed_request)[0]
    except UsageError:
        with pytest.raises(plain.Unsure):
            plain_work.work_event(request, identity, checkpoint=checkpoint)
        return
    tree = plain_work.work_event(request, identity, checkpoint=checkpoint)
    assert plain.canonical(tree) == CODEC.encode(typed)


JSON_TEXTS = st.one_of(
    ANY_JSON.map(lambda value: json.dumps(value, ensure_ascii=False)),
    ANY_JSON.map(lambda value: json.dumps(value, ensure_ascii=True, indent=1)),
    st.sampled_from(["NaN", "[Infinity]", "-Infinity", "1e400", "[1e-400]", '"\\ud800"', '["\\udc00x"]',
                     '"\\ud83d\\ude00"', "\ufeff{}", "{} x", "", " ", "01", "1.", ".5", "+1", '{"a":1,"a":2}',
                     "[" * 70 + "]" * 70, "[" * 2000 + "]" * 2000, '"\x01"', "1E5", "-0.0", "[1,]", "tru"]),
    st.text(max_size=12),
)


@settings(max_examples=400, deadline=None)
@given(JSON_TEXTS, st.sampled_from(["utf-8", "utf-16"]))
def test_plain_loads_accepts_what_msgspec_accepts(text: str, encoding: str) -> None:
    """plain.loads reads a document exactly when msgspec does (within its depth), to the same value."""
    raw = text.encode(encoding, "surrogatepass")
    try:
        expected = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        with pytest.raises(ValueError):
            plain.loads(raw)
        return
    try:
        value = plain.loads(raw)
    except ValueError:
        assert text.count("[") + text.count("{") > plain.MAX_DEPTH  # refused only for depth
        return
    assert value == expected and json.dumps(value) == json.dumps(expected)
