"""Event types, canonical bytes, upcasting and the hybrid logical clock (no disk)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events import clock
from events import codec as codec_module
from events.archive import ArchivedState, GitFacts
from events.base import CommandRef, Event, Refs, Summary, kind_of
from events.catalog import EVENT_TYPES
from events.codec import Codec, default_codec, seed004_legacy
from events.context import GitNow, RunFile, ViewInputs
from events.errors import EventInvalid, EventUndecodable, UnknownEventType
from events.worklog import WorkLogged
from events.workstream import (
    ITEM_STATUSES,
    WORKSTREAM_EVENTS,
    Cursor,
    ItemRevision,
    RepositoryRole,
    StatusChange,
    ValidationEntry,
    WorkItemData,
)

CODEC = default_codec()
CONTROL = "".join(chr(c) for c in range(32) if chr(c) not in "\t\n") + "\x7f"

names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,30}", fullmatch=True).filter(
    lambda s: ".." not in s
)
labels = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:/ -]{0,20}", fullmatch=True)
texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters=CONTROL),
    max_size=60,
)
paths = texts.filter(bool)
small = {"max_size": 4}


def envelope() -> dict[str, Any]:
    return {
        "project": names,
        "host": st.none() | names,
        "agent_id": st.none() | names,
        "run_id": st.none() | names,
        "session_id": st.none() | names,
        "task_id": st.none() | names,
        "type": labels,
        "phase": st.none() | labels,
        "message": texts,
        "summary": st.builds(
            Summary,
            done=st.lists(texts, **small).map(tuple),
            in_progress=st.none() | texts,
            next=st.lists(texts, **small).map(tuple),
            blockers=st.lists(texts, **small).map(tuple),
        ),
        "refs": st.builds(
            Refs,
            files=st.lists(paths, **small).map(tuple),
            commands=st.lists(
                st.builds(CommandRef, command=texts,
                          exit_code=st.none() | st.integers(-255, 255),
                          summary=st.none() | texts),
                **small,
            ).map(tuple),
            artifacts=st.lists(paths, **small).map(tuple),
        ),
        "note": st.none() | st.dictionaries(names, texts | st.integers(), max_size=3),
        "prev": st.none() | st.text("0123456789abcdef", min_size=64, max_size=64),
    }


work_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,20}", fullmatch=True)
entries = st.lists(paths, max_size=3, unique=True).map(tuple)
#: One-line titles: printable, no control characters (C0, DEL, C1) and not only spaces (the Structs' pattern).
TITLE_CHARS = st.characters(min_codepoint=33, max_codepoint=0x2FF, blacklist_categories=("Cc", "Zs"))
one_line_titles = st.text(TITLE_CHARS, min_size=1, max_size=40)
cursors = st.builds(Cursor, current_item_id=st.none() | work_ids, phase=st.none() | texts,
                    next_action=one_line_titles)
items = st.builds(WorkItemData, id=work_ids, title=one_line_titles, status=st.sampled_from(ITEM_STATUSES),
                  scope=entries, depends_on=st.lists(work_ids, max_size=3).map(tuple), notes=entries)
repositories = st.lists(st.builds(RepositoryRole, repository=work_ids, role=labels), min_size=1, max_size=2).map(tuple)
ledger = st.builds(ValidationEntry, id=work_ids, kind=labels, result=st.sampled_from(["PASS", "FAIL"]),
                   repository=work_ids, scope=texts, summary=texts, timestamp=texts, command=st.none() | texts,
                   evidence_refs=entries)


def workstream_payload(event_type: type[Event]) -> dict[str, Any]:
    """Valid payloads for the workstream events (seed 002)."""
    tag = kind_of(event_type)
    fields = {f.name for f in msgspec.structs.fields(event_type)}
    extra: dict[str, Any] = {"workstream_id": (st.none() | work_ids) if tag in (
        "decision.recorded", "finding.confirmed", "approach.rejected", "validation.recorded",
        "context.checkpointed", "workstream.problems_resolved") else work_ids}
    if tag == "workstream.started":
        extra.update(title=one_line_titles, objective=texts, repositories=repositories, cursor=cursors)
    elif tag == "workstream.revised":
        extra.update(title=st.none() | one_line_titles, repositories=st.none() | repositories)
    elif tag == "workstream.status_changed":
        extra.update(from_status=st.sampled_from(ITEM_STATUSES[1:3]), status=st.sampled_from(ITEM_STATUSES[3:]))
    elif tag == "work_item.added":
        extra["items"] = st.lists(items, min_size=1, max_size=3).map(tuple)
    elif tag == "work_item.status_changed":
        extra["changes"] = st.lists(st.builds(StatusChange, item_id=work_ids, from_status=st.sampled_from(
            ITEM_STATUSES), status=st.sampled_from(ITEM_STATUSES), reopen=st.booleans()),
            min_size=1, max_size=3).map(tuple)
    elif tag == "work_item.revised":
        extra["revisions"] = st.lists(st.builds(ItemRevision, item_id=work_ids, title=st.none() | one_line_titles,
                                                notes=st.none() | entries), min_size=1, max_size=3).map(tuple)
    elif tag == "workstream.cursor_moved":
        extra["cursor"] = cursors
    elif tag == "context.checkpointed":
        extra.update(repository=work_ids, status=st.sampled_from(["PROPOSED", "VALIDATED", "UNKNOWN"]),
                     next_action=one_line_titles, open_questions=entries, scope=texts,
                     acknowledged=st.lists(work_ids, max_size=3, unique=True).map(tuple))
    elif tag == "workstream.problems_resolved":
        extra.update(problem_ids=st.lists(work_ids, min_size=1, max_size=3).map(tuple), reason=paths)
    elif "texts" in fields:
        extra["texts"] = st.lists(paths, min_size=1, max_size=3).map(tuple)
    elif tag == "validation.recorded":
        extra.update(entries=st.lists(ledger, min_size=1, max_size=2).map(tuple), head=st.none() | texts,
                     fingerprint=st.none() | texts)
    return extra


def payload(event_type: type[Event]) -> dict[str, Any]:
    if event_type in WORKSTREAM_EVENTS:
        return workstream_payload(event_type)
    extra: dict[str, Any] = {}
    fields = {f.name for f in msgspec.structs.fields(event_type)}
    for name in ("source", "model"):
        if name in fields:
            extra[name] = st.none() | labels
    for name in ("transcript_path", "cwd"):
        if name in fields:
            extra[name] = st.none() | paths
    if "reason" in fields:
        extra["reason"] = st.none() | texts
    if "title" in fields:  # task events: a non-empty one-line title (required on task.created)
        titles = st.text(TITLE_CHARS, min_size=1, max_size=40)
        extra["title"] = titles if event_type.__struct_config__.tag == "task.created" else st.none() | titles
    if "team" in fields:  # team events: names for team, agent, task and role, some text in each list
        team_fields = dict(team=names, agent=names, task=names, role=names, objective=texts,
                           next_actions=st.lists(texts, **small).map(tuple),
                           artifacts=st.lists(texts, **small).map(tuple),
                           context_used_percent=st.none() | st.integers(0, 100), ttl_seconds=st.integers(1, 86400),
                           takeover_from=st.none() | names, checkpoint_ref=paths, description=texts,
                           message_id=names, to_agent=names, text=texts, sink=names,
                           moments=st.lists(names, min_size=1, max_size=3).map(tuple))
        extra.update({name: value for name, value in team_fields.items() if name in fields})
    if "handoff_id" in fields:  # handoff events: an id, an addressee, some artifacts
        handoff_fields = dict(handoff_id=names, to_agent=st.none() | names, to_host=st.none() | names,
                              for_task=st.none() | names, artifacts=st.lists(texts, **small).map(tuple),
                              note_text=texts)
        extra.update({name: value for name, value in handoff_fields.items() if name in fields})
    if "from_host" in fields:
        extra["from_host"] = names
        extra["to_host"] = names
    if "git" in fields:
        extra["git"] = st.builds(GitFacts, root=st.none() | paths, branch=st.none() | texts,
                                 head=st.none() | texts, status_short=texts,
                                 dirty_files=st.lists(paths, **small).map(tuple))
        extra["state"] = st.builds(ArchivedState, current_goal=st.none() | texts,
                                   done=st.lists(texts, **small).map(tuple),
                                   next=st.lists(texts, **small).map(tuple))
        extra["gate"] = st.none() | st.sampled_from(["user", "agent"])
        extra["full"] = st.booleans()
    if "inputs" in fields:
        extra["brief_sha256"] = st.text("0123456789abcdef", min_size=64, max_size=64)
        extra["inputs"] = st.builds(
            ViewInputs, now=texts,
            git=st.none() | st.builds(GitNow, branch=st.none() | texts, head_moved=st.booleans(),
                                      changed_since_archive=st.lists(paths, **small).map(tuple)),
            runs=st.lists(st.builds(RunFile, path=paths, status=st.none() | texts), **small).map(tuple),
            handoff_states=st.dictionaries(paths, texts, max_size=3),
            warnings=st.lists(texts, **small).map(tuple),
        )
        extra["max_chars"] = st.integers(2500, 20000)
    return extra


events_of_every_type = st.one_of(
    [st.builds(t, **envelope(), **payload(t)) for t in EVENT_TYPES]
)


@settings(max_examples=300, deadline=None)
@given(events_of_every_type)
def test_round_trip_every_type(event: Event) -> None:
    """Every event type decodes back to itself, and its bytes are canonical."""
    raw = CODEC.encode(event)
    decoded = CODEC.decode(raw)
    assert decoded == event
    assert type(decoded) is type(event)
    assert CODEC.encode(decoded) == raw


BULK_CODEC = Codec(EVENT_TYPES, legacy=seed004_legacy)
BULK_CODEC.decode(CODEC.encode(WorkLogged(project="warm", message="up")))
BULK_CODEC._decoded = codec_module.BULK  # the next decode switches to the union's Decoder


@settings(max_examples=300, deadline=None)
@given(events_of_every_type)
def test_the_per_kind_and_the_union_decoders_agree(event: Event) -> None:
    """A process that decoded few events (per-kind Decoders) and one past BULK (the union's) read the same."""
    raw = CODEC.encode(event)
    fresh = Codec(EVENT_TYPES, legacy=seed004_legacy)
    assert fresh.decode(raw) == BULK_CODEC.decode(raw) == event
    assert BULK_CODEC._union_decoder is not None and fresh._union_decoder is None


@pytest.mark.parametrize("bulk", [False, True])
@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (b"{not json", EventUndecodable),
        (b'{"kind":1,"v":1}', EventUndecodable),
        (b'{"kind":"future.thing","v":1}', UnknownEventType),
        (b'{"kind":"work.logged","v":1}', EventUndecodable),
    ],
)
def test_both_decoders_refuse_alike(raw: bytes, error: type[Exception], bulk: bool) -> None:
    codec = BULK_CODEC if bulk else Codec(EVENT_TYPES, legacy=seed004_legacy)
    with pytest.raises(error):
        codec.decode(raw)


def test_every_type_is_covered_by_the_round_trip() -> None:
    """The round-trip strategy draws from every type in the catalogue."""
    assert {kind_of(t) for t in EVENT_TYPES} == set(CODEC.current)


def test_tags_are_unique_and_past_tense_names() -> None:
    """No two event types share a tag; tags look like `family.verbed` (or an irregular past participle)."""
    irregular = {"taken", "sent", "given", "held", "made", "begun", "written", "done", "known", "seen"}
    tags = [kind_of(t) for t in EVENT_TYPES]
    assert len(tags) == len(set(tags))
    for tag in tags:
        family, _, verb = tag.partition(".")
        assert family and (verb.endswith("ed") or verb in irregular), tag


def test_canonical_bytes_are_sorted_compact_and_stable() -> None:
    """Keys are sorted at every level, no spaces, and two encodings agree byte for byte."""
    from events.worklog import CheckpointRecorded

    event = CheckpointRecorded(project="p", message="é ✓", summary=Summary(done=("a",)))
    raw = CODEC.encode(event)
    assert raw == CODEC.encode(CheckpointRecorded(project="p", message="é ✓", summary=Summary(done=("a",))))
    parsed = msgspec.json.decode(raw)
    assert list(parsed) == sorted(parsed)
    assert list(parsed["summary"]) == sorted(parsed["summary"])
    assert b", " not in raw and b": " not in raw
    assert "é ✓".encode() in raw  # UTF-8, not \\u escapes


def test_stable_bytes_pinned() -> None:
    """The canonical form of a fixed event never changes (its hash is pinned)."""
    import hashlib

    from events.worklog import WorkLogged

    event = WorkLogged(project="demo", event_id="RCE-20260723_010203_000001-abcd1234",
                       created_at="2026-07-23T01:02:03.000001Z", message="hello")
    digest = hashlib.sha256(CODEC.encode(event)).hexdigest()
    assert digest == PINNED_DIGEST


PINNED_DIGEST = "6101627bbc9b974781485ae10427c6821ba5619487a42a4f28f11ffb9ee1b56e"


def test_seed_004_event_reads_as_a_continuity_event() -> None:
    """A seed-004 event file (no kind, no v) is upcast to a checkpoint event."""
    seed = (
        b'{"event_id":"RCE-20260723_010203_001","project":"cortex-agent","host":"codex",'
        b'"agent_id":"codex-main","run_id":"R-T-RC02","task_id":"T-RC02","type":"checkpoint",'
        b'"phase":"editing","message":"runtime-continuity CLI expanded","summary":{"done":'
        b'["added schema"],"in_progress":"implementing CLI","next":["sync templates"]},'
        b'"refs":{"files":["a.js"],"commands":[{"command":"node t.js","exit_code":0,'
        b'"summary":"passed"}],"artifacts":[],"handoffs":[]},"created_at":"2026-07-23T00:00:00.000Z"}'
    )
    event = CODEC.decode(seed)
    assert event.kind == "checkpoint.recorded"
    assert event.summary.in_progress == "implementing CLI"
    assert event.refs.commands[0].exit_code == 0
    log_entry = CODEC.decode(seed.replace(b'"type":"checkpoint"', b'"type":"decision"'))
    assert log_entry.kind == "work.logged" and log_entry.type == "decision"


class ThingV1(Event, frozen=True, kw_only=True, tag="thing.happened"):
    """A synthetic event whose v1 split v0's `who` into `who_first` / `who_last`."""

    v: int = 1
    type: str = "thing"
    who_first: str = ""
    who_last: str = ""


def test_upcaster_registry_reads_a_synthetic_v0_as_v1() -> None:
    """A v0 event is upcast by the registered function; v1 takes the fast path."""
    codec = Codec([ThingV1])
    calls: list[int] = []

    @codec.register("thing.happened", 0)
    def split_who(obj: dict[str, Any]) -> dict[str, Any]:
        calls.append(obj["v"])
        first, _, last = obj.pop("who").partition(" ")
        return {**obj, "v": 1, "who_first": first, "who_last": last}

    old = b'{"kind":"thing.happened","v":0,"project":"p","who":"Ada Lovelace"}'
    event = codec.decode(old)
    assert isinstance(event, ThingV1)
    assert (event.v, event.who_first, event.who_last) == (1, "Ada", "Lovelace")
    assert calls == [0]
    current = codec.encode(ThingV1(project="p", who_first="Alan"))
    assert codec.decode(current).who_first == "Alan"
    assert calls == [0]


def test_missing_upcaster_is_undecodable_not_a_crash() -> None:
    """An old version with no upcaster registered is reported, not guessed at."""
    codec = Codec([ThingV1])
    with pytest.raises(EventUndecodable, match="no upcaster"):
        codec.decode(b'{"kind":"thing.happened","v":0,"project":"p"}')


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (b"", EventUndecodable),
        (b"{not json", EventUndecodable),
        (b"[1,2]", EventUndecodable),
        (b'{"kind":"future.thing","v":1}', UnknownEventType),
        (b'{"kind":"work.logged","v":1}', EventUndecodable),  # no project
        (b'{"kind":"work.logged","v":1,"project":"a/b"}', EventUndecodable),
        (b'\xff\xfe{"kind":1}', EventUndecodable),
    ],
)
def test_bad_bytes_raise_the_right_error(raw: bytes, error: type[Exception]) -> None:
    """Garbage, unknown kinds and invalid fields each raise a specific error."""
    with pytest.raises(error):
        CODEC.decode(raw)


@pytest.mark.parametrize(
    "bad",
    ["..", "a/b", "a\x00b", "a\x01b", "", "x" * 193, "../etc", "a\\b", "[REDACTED:aws]", ".", "a\nb"],
)
def test_invalid_names_are_refused_on_validate(bad: str) -> None:
    """Ids and projects with '..', '/', '\\', brackets, NUL, controls, a line break, empty or too long are
    invalid (an id may hold 192 characters, a project 128)."""
    from events.worklog import WorkLogged

    with pytest.raises(EventInvalid):
        CODEC.validate(CODEC.encode(WorkLogged(project="demo", agent_id=bad)))
    with pytest.raises(EventInvalid):
        CODEC.validate(CODEC.encode(WorkLogged(project=bad if len(bad) < 129 else "x" * 129)))


@pytest.mark.parametrize("good", ["Claude Code", "codex main", "S-web app-20261203_101010_000001-0a1b2c3d",
                                  "项目", "x" * 192, "a.b", "R 1"])
def test_ids_take_what_seed_004_takes(good: str) -> None:
    """Seed 004 records any host, agent, run, session, task and mission id: spaces and Unicode are valid ids."""
    from events.worklog import WorkLogged

    fields = dict.fromkeys(("host", "agent_id", "run_id", "session_id", "task_id", "mission_id"), good)
    event = WorkLogged(project="demo", **fields)
    assert CODEC.decode(CODEC.encode(event)) == event
    CODEC.validate(CODEC.encode(event))


@pytest.mark.parametrize(("phase", "valid"), [("编辑", True), ("editing (step 2)", True), ("a" * 64, True),
                                              ("a" * 65, False), (" lead", False), ("a\tb", False),
                                              ("a\nb", False), ("", False)])
def test_phase_and_type_take_one_line_of_text(phase: str, valid: bool) -> None:
    """A work log's phase and type: any one line up to 64 characters (seed 004's `--phase 编辑`)."""
    from events.worklog import WorkLogged

    for event in (WorkLogged(project="demo", phase=phase), WorkLogged(project="demo", type=phase)):
        if valid:
            CODEC.validate(CODEC.encode(event))
        else:
            with pytest.raises(EventInvalid):
                CODEC.validate(CODEC.encode(event))


@pytest.mark.parametrize(("name", "valid"), [("with space", True), ("我的 项目", True), ("a.b", True),
                                             (".", False), ("a\\b", False), ("[REDACTED:aws]", False)])
def test_project_names_follow_the_seed_004_rule(name: str, valid: bool) -> None:
    """A project name may hold spaces and Unicode (contract I4); never `/`, `\\`, `..`, `.`, or brackets."""
    from events.worklog import WorkLogged

    raw = CODEC.encode(WorkLogged(project=name))
    if valid:
        CODEC.validate(raw)
    else:
        with pytest.raises(EventInvalid):
            CODEC.validate(raw)


def test_control_characters_in_text_are_refused() -> None:
    """Free text may hold tabs and newlines but no other control characters."""
    from events.worklog import WorkLogged

    CODEC.validate(CODEC.encode(WorkLogged(project="p", message="a\tb\nc")))
    with pytest.raises(EventInvalid):
        CODEC.validate(CODEC.encode(WorkLogged(project="p", message="bell\x07")))


def test_lone_surrogates_cannot_be_encoded() -> None:
    """Text that is not valid UTF-8 (a lone surrogate) is refused with EventInvalid."""
    from events.worklog import WorkLogged

    with pytest.raises(EventInvalid):
        CODEC.encode(WorkLogged(project="p", message="bad \udcff"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-10**9, 10**9), min_size=1, max_size=50))
def test_hlc_is_strictly_monotonic_when_the_clock_steps_back(steps: list[int]) -> None:
    """However the wall clock jumps, each HLC time is after the previous one."""
    now = 1_785_000_000_000_000
    head: int | None = None
    for step in steps:
        now += step
        t = clock.next_time(now, head)
        assert head is None or t > head
        assert t >= now
        head = t


@given(st.integers(0, 4_102_444_800_000_000))
def test_stamp_and_iso_round_trip(us: int) -> None:
    """Stamps and ISO times both read back to the same microsecond; stamps sort as time."""
    assert clock.parse_stamp(clock.stamp(us)) == us
    assert clock.parse_iso(clock.iso(us)) == us
    assert clock.stamp(us) < clock.stamp(us + 1)
