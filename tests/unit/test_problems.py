"""A refused field is named in words, never by its regex: every patterned type of the events, each kind of bad
value (events/problems.py)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import pytest

from events import base, context, task, workstream
from events.problems import first_control, readable

#: (type, a value its pattern refuses, words the message must hold)
CASES: list[tuple[Any, str, str]] = [
    (base.Name, "a b", "'a b' is not a valid id: letters, digits and ._:@+=-"),
    (base.Name, "../amy", "'../amy' is not a valid id"),
    (base.Name, "amy\u202e", "'amy\\u202e' is not a valid id"),
    (base.ProjectName, "a/b", "'a/b' is not a valid name: no /"),
    (base.ProjectName, "a\x01", "'a\\u0001' is not a valid name"),
    (base.Label, "-x", "'-x' is not a valid label"),
    (base.Text, "a\x1b[31m", "holds a control character (U+001B at character 2); only tab and line breaks"),
    (base.PathRef, "a\x7f", "holds a control character (U+007F at character 2)"),
    (base.NextItem, "\x00", "holds a control character (U+0000 at character 1)"),
    (context.Hex64, "abc", "'abc' is not a SHA-256"),
    (context.Stamp, "2026", "'2026' is not a stamp"),
    (task.Title, "two\nlines", "holds a control character (U+000A at character 4); it is one line"),
    (task.Title, "   ", "must hold some text"),
    (workstream.WorkId, "A1\n", "'A1\\u000a' is not a valid id: letters, digits and ._-"),
    (workstream.Entry, "a\x08", "holds a control character (U+0008 at character 2)"),
    (workstream.Title, "   ", "must hold some text"),
    (workstream.NextAction, "\t\n ", "must hold some text"),
    (workstream.Short, "\x1f", "holds a control character (U+001F at character 1)"),
]


@pytest.mark.parametrize(("kind", "value", "words"), CASES)
def test_a_refused_value_is_named_in_words(kind: Any, value: str, words: str) -> None:
    holder = msgspec.defstruct("Holder", [("items", list[kind])])  # type: ignore[valid-type]
    document = {"items": ["fine" if kind not in (context.Hex64, context.Stamp) else value, value]}
    with pytest.raises(msgspec.ValidationError) as raised:
        msgspec.convert(document, holder)
    text = readable(str(raised.value), document)
    assert "regex" not in text and "Expected" not in text, text
    assert text.startswith("items[") and words in text, text
    assert all(char.isprintable() for char in text)  # nothing a terminal acts on


def test_a_long_value_is_cut_and_other_messages_pass_unchanged() -> None:
    holder = msgspec.defstruct("Holder", [("who", base.Name)])
    with pytest.raises(msgspec.ValidationError) as raised:
        msgspec.convert({"who": "x" * 60 + " "}, holder)
    assert "…' is not a valid id" in readable(str(raised.value), {"who": "x" * 60 + " "})
    assert readable("Expected `int`, got `str` - at `$.n`") == "Expected `int`, got `str` - at `$.n`"
    # without the document, the field is still named, only without its value
    assert readable(str(raised.value)).startswith("who is not a valid id")


@pytest.mark.parametrize("control", ["\x01", "\x08", "\x0e", "\x1b", "\x7f"])
def test_a_title_or_next_action_with_one_control_character_is_refused_on_write(control: str) -> None:
    """Their patterns (`...*\\S...*`) let one control character through as the `\\S`: the write path refuses it,
    naming the field; a stored event that holds one still decodes."""
    from events.codec import default_codec
    from events.errors import EventInvalid
    from events.sealing import prepare

    codec = default_codec()
    for draft, field in (
            (task.TaskCreated(project="demo", task_id="T-1", title=f"ab{control}cd"), "title"),
            (workstream.WorkItemAdded(project="demo", workstream_id="WS-1", items=(
                workstream.WorkItemData(id="A1", title=f"x{control}"),)), "items[0].title"),
            (workstream.CursorMoved(project="demo", workstream_id="WS-1", cursor=workstream.Cursor(
                next_action=f"go{control}")), "cursor.next_action")):
        with pytest.raises(EventInvalid) as refused:
            prepare(draft, codec, redact=False)
        assert f"{field} holds a control character (U+{ord(control):04X}" in str(refused.value)
        raw = codec.encode(draft)
        assert codec.decode(raw) == draft  # stored before the check: still read
    fine = task.TaskCreated(project="demo", task_id="T-1", title="tab\\b and \\u0001 as text")
    assert prepare(fine, codec, redact=False) == fine
    # a caller's note is its own JSON: a `title` there may hold anything the note takes
    noted = task.TaskCreated(project="demo", task_id="T-1", title="t", note={"title": f"a{control}b",
                                                                            "x": [{"next_action": control}]})
    assert prepare(noted, codec, redact=False) == noted


def test_a_value_that_looks_like_a_secret_is_not_echoed() -> None:
    """MCP arguments and checkpoint documents are checked before the secret guard: the refusal names the field
    but never repeats the token."""
    token = "token ghp_" + "a1B2c3D4e5" * 4  # made up
    holder = msgspec.defstruct("Holder", [("agent_id", base.Name)])
    with pytest.raises(msgspec.ValidationError) as raised:
        msgspec.convert({"agent_id": token}, holder)
    text = readable(str(raised.value), {"agent_id": token})
    assert "ghp_" not in text and text.startswith("agent_id (a value that looks like a secret, not shown) is not")


def test_first_control() -> None:
    assert first_control("a\tb") == "U+0009 at character 2"
    assert first_control("a\tb\n", breaks_allowed=True) is None
    assert first_control("ok") is None and first_control(5) is None


def test_a_value_too_long_is_named_with_its_limit() -> None:
    """msgspec's `Expected `str` of length <= 128 - at `$.team`` is said in words, with the value cut."""
    holder = msgspec.defstruct("Holder", [("team", base.Name)])
    document = {"team": "x" * 129}
    with pytest.raises(msgspec.ValidationError) as raised:
        msgspec.convert(document, holder)
    text = readable(str(raised.value), document)
    assert text.startswith("team 'xxx") and text.endswith("…' is too long: at most 128 characters"), text


def _refusal(draft: Any) -> str:
    from events.codec import default_codec
    from events.errors import EventInvalid

    codec = default_codec()
    with pytest.raises(EventInvalid) as raised:
        codec.validate(codec.encode(draft))
    return str(raised.value)


@pytest.mark.parametrize("bad", ["a\x01", "x" * 129, "a b"])
def test_a_refusal_names_the_field_a_message_was_made_from(bad: str) -> None:
    """A draft's message is made from what the user gave (`snapshot <team>/<agent>/<task>`); the event checks
    `message` first, so a team with a control character was refused as "message holds a control character" and
    the user was never told which value to fix. The field given is named now."""
    from events.team import SnapshotTaken

    text = _refusal(SnapshotTaken(project="p", team=bad, agent="amy", task="t", objective="o",
                                  message=f"snapshot {bad}/amy/t"))
    assert text.startswith("invalid event: team '"), text
    assert "message" not in text and all(char.isprintable() for char in text)


def test_a_title_with_a_control_character_is_named_as_the_title() -> None:
    from events.workstream import WorkItemAdded, WorkItemData

    title = "evil\x1b[2Jtitle"
    text = _refusal(WorkItemAdded(project="p", workstream_id="WS-1", items=(WorkItemData(id="T3", title=title),),
                                  message=f"workstream WS-1: work item T3 added: {title}"))
    assert text == ("invalid event: items[0].title holds a control character (U+001B at character 5); it is one "
                    "line of text"), text


def test_a_message_refused_on_its_own_is_still_named_as_the_message() -> None:
    from events.worklog import WorkLogged

    assert _refusal(WorkLogged(project="p", message="a\x1bb")).startswith(
        "invalid event: message holds a control character (U+001B at character 2)")


@pytest.mark.parametrize(("line", "said"), [
    ("Expected `str` of length >= 1 - at `$.transcript_path`", "transcript_path must not be empty"),
    ("Expected `str` of length >= 3 - at `$.code`", "code must have at least 3 characters"),
    ("Expected `array` of length <= 256 - at `$.next_actions`", "next_actions has too many items: at most 256"),
    ("Expected `array` of length >= 1 - at `$.texts`", "texts must have at least 1 item(s)"),
    ("Expected `object` of length <= 64 - at `$.note.extra`", "note.extra has too many items: at most 64"),
    ("Expected `int` >= 0 - at `$.percent`", "percent must be at least 0"),
    ("Expected `int` <= 100 - at `$.refs.commands[0].exit_code`", "refs.commands[0].exit_code must be at most 100"),
    ("Expected `float` > 0.0 - at `$.ttl`", "ttl must be more than 0.0"),
    ("Expected `int` < -1 - at `$`", "the value must be less than -1"),
])
def test_a_length_or_a_number_out_of_bounds_is_said_in_words(line: str, said: str) -> None:
    """msgspec's bounds (`Expected `array` of length <= 256 - at `$.next_actions``) reached users as they are."""
    assert readable(line) == said
    holder = msgspec.defstruct("Holder", [("items", Annotated[list[str], msgspec.Meta(max_length=2)])])
    with pytest.raises(msgspec.ValidationError) as raised:
        msgspec.convert({"items": ["a", "b", "c"]}, holder)
    assert readable(str(raised.value)) == "items has too many items: at most 2"
