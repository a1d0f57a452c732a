"""Requests the MCP SDK cannot read, made answerable (continuity/adapters/mcp/wire.py), read through the SDK's own
JSON-RPC adapter: each with a usable id gets an answer under that id, and none under another."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import types

from continuity.adapters.mcp.wire import REFUSED, _Tolerant

DIGITS = "9" * 5000
DEEP = "[" * 100_000 + "]" * 100_000


def read(line: str) -> Any:
    return _Tolerant(types.jsonrpc_message_adapter).validate_json(line)


@pytest.mark.parametrize(("line", "request_id"), [
    ('{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"log\\ud800","arguments":{"n":' + DIGITS + "}}}",
     8),
    ('{"jsonrpc":"2.0","id":"x\\ud800","method":"tools/call","params":{"name":"log","arguments":{"n":' + DIGITS
     + "}}}", "x\ufffd"),
    ('{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"log","arguments":{"n":' + DIGITS
     + ',"d":' + DEEP + "}}}", 9),
])
def test_a_long_integer_beside_another_unreadable_part_is_still_answered(line: str, request_id: Any) -> None:
    """A lone surrogate or nesting past Python's parser beside an integer too long to read: each alone was
    answered, together the line went unanswered (the client waited for good)."""
    message = read(line)
    body = json.loads(message.model_dump_json(by_alias=True, exclude_none=True))
    assert body["id"] == request_id and body["method"] == "tools/call"
    assert "more digits" in body["params"]["arguments"][REFUSED]


DEEP_300 = '{"a":' * 300 + "1" + "}" * 300


@pytest.mark.parametrize(("line", "request_id", "name"), [
    ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"log\\ud83d","arguments":{"note":' + DEEP_300
     + "}}}", 1, "log\ufffd"),
    ('{"jsonrpc":"2.0","id":"r\\ud83d","method":"tools/call","params":{"name":"log","arguments":{"note":' + DEEP_300
     + "}}}", "r\ufffd", "log"),
    ('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"log","arguments":{"note":'
     + "[" * 100_000 + "]" * 100_000 + ',"m":"\\ud83d"}}}', 2, "log"),
])
def test_a_lone_surrogate_beside_nesting_too_deep_is_still_answered(line: str, request_id: Any, name: str) -> None:
    """A lone surrogate in the tool's name or the id of a request nested past DEPTH: the answer made for the depth
    kept the surrogate, the SDK could not read it either, and the request went unanswered."""
    message = read(line)
    body = json.loads(message.model_dump_json(by_alias=True, exclude_none=True))
    assert (body["id"], body["params"]["name"]) == (request_id, name)
    assert "nested more than" in body["params"]["arguments"][REFUSED]


def test_a_long_integer_as_the_method_or_the_id_is_not_answered_under_a_made_up_name() -> None:
    for line in ('{"jsonrpc":"2.0","id":3,"method":' + DIGITS + "}",
                 '{"jsonrpc":"2.0","id":' + DIGITS + ',"method":"ping"}'):
        with pytest.raises(Exception):  # noqa: B017  (the SDK's own refusal: no id to answer under)
            read(line)
