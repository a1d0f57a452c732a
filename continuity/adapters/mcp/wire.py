"""Requests the SDK's stdio reader would drop without a word, made answerable.

The MCP SDK validates each line it reads with pydantic; a line that fails is dropped and the
client waits for an answer that never comes. Two kinds of valid JSON fail there: a string
with a lone surrogate escape (`"\\ud83d"`: Node's JSON.stringify writes one for half an
emoji) and arguments nested a few hundred levels deep. Such a line is read again here, only
after the SDK's own reading failed (a well-formed request costs nothing more): lone
surrogates become U+FFFD, as the hooks read them; a `tools/call` that still cannot be read
becomes a call whose arguments say so, which the tool answers as an error of one line.
"""

from __future__ import annotations

import json
from typing import Any

#: The key of the arguments a call that could not be read is given instead (continuity/adapters/mcp/registry.py).
REFUSED = "__continuity_unreadable_request__"


class _Tolerant:
    """The SDK's JSON-RPC message adapter, reading again what it refuses (everything else is the adapter's)."""

    def __init__(self, adapter: Any) -> None:
        self._adapter = adapter

    def validate_json(self, data: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._adapter.validate_json(data, *args, **kwargs)
        except Exception:
            again = readable_again(data)
            if again is None:
                raise
            return self._adapter.validate_json(again, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._adapter, name)


def install() -> None:
    """Wrap the adapter the SDK's stdio server reads lines with (nothing when this SDK version has none)."""
    try:
        import mcp.server.stdio as stdio
    except ImportError:
        return
    types = getattr(stdio, "types", None)
    adapter = getattr(types, "jsonrpc_message_adapter", None)
    if adapter is not None and hasattr(adapter, "validate_json") and not isinstance(adapter, _Tolerant):
        types.jsonrpc_message_adapter = _Tolerant(adapter)  # type: ignore[union-attr]


def readable_again(data: Any) -> str | None:
    """The line with its lone surrogates as U+FFFD, or a `tools/call` that cannot be read made one that says so;
    None when it is no JSON object at all (the SDK's own error stands)."""
    try:
        message = json.loads(data)
    except (ValueError, RecursionError, TypeError):
        return None
    if not isinstance(message, dict):
        return None
    cleaned = _no_surrogates(message, 0)
    if cleaned is None:  # nested past what anyone sends: only a call can be answered, and only by its id
        if message.get("method") != "tools/call" or "id" not in message:
            return None
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        cleaned = {"jsonrpc": "2.0", "id": message["id"], "method": "tools/call",
                   "params": {"name": name[:200] if isinstance(name, str) else "", "arguments": {
                       REFUSED: f"the request is nested more than {DEPTH} levels deep; nothing written"}}}
    return json.dumps(cleaned, ensure_ascii=False)


#: Deeper than this, a request is refused rather than read again (the SDK refuses a few hundred levels).
DEPTH = 200


def _no_surrogates(value: Any, depth: int) -> Any:
    """`value` with each lone surrogate in its strings (keys too) as U+FFFD; None past DEPTH levels."""
    if depth > DEPTH:
        return None
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        items = [_no_surrogates(item, depth + 1) for item in value]
        return None if any(item is None and each is not None for item, each in zip(items, value, strict=True)) \
            else items
    if isinstance(value, dict):
        pairs = {}
        for key, item in value.items():
            cleaned = _no_surrogates(item, depth + 1)
            if cleaned is None and item is not None:
                return None
            pairs[_no_surrogates(key, depth + 1)] = cleaned
        return pairs
    return value
