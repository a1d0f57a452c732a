"""The three vendors' wire formats the model stub speaks: what to answer a request, and how to stream it.

Formats, as the harnesses' own traffic shows them:
- Anthropic Messages (`POST /v1/messages`, `stream: true`): `message_start`,
  `content_block_start` / `content_block_delta` (`text_delta`, `input_json_delta`) /
  `content_block_stop`, `message_delta` (stop_reason `tool_use` or `end_turn`), `message_stop`.
- OpenAI Responses (`POST /v1/responses`): `response.created`, `response.output_item.added`,
  `response.function_call_arguments.delta`, `response.output_item.done`, `response.completed`.
- Gemini (`POST /v1beta/models/<model>:streamGenerateContent?alt=sse`): `data:` lines, each a
  GenerateContentResponse with `candidates[0].content.parts` (`text` or `functionCall`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.e2e.model_stub import ModelStub

FINAL_TEXT = "Done: the scripted steps ran."
SUMMARY_TEXT = "<summary>The session ran the scripted steps; next: keep going.</summary>"


# -- Anthropic Messages ---------------------------------------------------------------------------
def anthropic_reply(stub: ModelStub, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """(content blocks, stop reason) for one Messages request."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    content = last.get("content") if isinstance(last, dict) else None
    blocks = content if isinstance(content, list) else []
    answered = [str(b.get("tool_use_id")) for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
    if _is_summary_request(json.dumps(last)):
        return [{"type": "text", "text": SUMMARY_TEXT}], "end_turn"
    if not body.get("tools"):  # a side request (a title, a check): a short answer
        return [{"type": "text", "text": "ok"}], "end_turn"
    step = stub.next_step(answered)
    if step is None:
        return [{"type": "text", "text": stub.script.final_text}], "end_turn"
    call_id, call = step
    return [{"type": "tool_use", "id": f"toolu_{call_id}", "name": call.name, "input": call.arguments}], "tool_use"


def _is_summary_request(text: str) -> bool:
    """Claude Code's compaction asks for "a detailed summary of the conversation" (the others' prompts get the
    end-of-turn text, which serves as a summary as well)."""
    return "summary of the conversation" in text.lower()


def anthropic_events(body: dict[str, Any], blocks: list[dict[str, Any]], stop: str) -> Iterator[tuple[str, Any]]:
    """The SSE events of one streamed Messages response."""
    model = str(body.get("model") or "claude-stub")
    usage = {"input_tokens": 12, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    yield "message_start", {"type": "message_start", "message": {
        "id": "msg_e2e", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": usage}}
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "text_delta", "text": block["text"]}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 8}}
    yield "message_stop", {"type": "message_stop"}


def anthropic_message(body: dict[str, Any], blocks: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    """The same response, not streamed."""
    return {"id": "msg_e2e", "type": "message", "role": "assistant", "model": str(body.get("model") or "claude-stub"),
            "content": blocks, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 8}}


# -- OpenAI Responses -----------------------------------------------------------------------------
def responses_reply(stub: ModelStub, body: dict[str, Any]) -> dict[str, Any]:
    """The output item for one Responses request: a function call, or the message that ends the turn."""
    items = body.get("input") or []
    items = items if isinstance(items, list) else []
    tail: list[str] = []
    for item in reversed(items):  # the outputs the harness sent back since our last call
        if not isinstance(item, dict) or item.get("type") not in ("function_call_output", "custom_tool_call_output"):
            break
        tail.append(str(item.get("call_id")))
    if _is_summary_request(json.dumps(items[-1:])):
        return _output_message(SUMMARY_TEXT)
    if not body.get("tools"):
        return _output_message("ok")
    step = stub.next_step(tail)
    if step is None:
        return _output_message(stub.script.final_text)
    call_id, call = step
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": f"call_{call_id}", "name": call.name,
            "arguments": json.dumps(call.arguments), "status": "completed"}


def _output_message(text: str) -> dict[str, Any]:
    return {"type": "message", "id": "msg_e2e", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def responses_events(body: dict[str, Any], item: dict[str, Any], tokens: int) -> Iterator[tuple[str, Any]]:
    """The SSE events of one streamed Responses response holding `item`."""
    response = {"id": "resp_e2e", "object": "response", "created_at": 0, "status": "in_progress",
                "model": str(body.get("model") or "stub"), "output": []}
    yield "event: response.created", {"type": "response.created", "sequence_number": 0, "response": response}
    yield "event: response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1,
                                                "output_index": 0, "item": {**item, "status": "in_progress"}}
    if item["type"] == "function_call":
        yield "event: response.function_call_arguments.delta", {
            "type": "response.function_call_arguments.delta", "sequence_number": 2, "item_id": item["id"],
            "output_index": 0, "delta": item["arguments"]}
    else:
        text = item["content"][0]["text"]
        yield "event: response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 2,
                                                    "item_id": item["id"], "output_index": 0, "content_index": 0,
                                                    "delta": text}
    yield "event: response.output_item.done", {"type": "response.output_item.done", "sequence_number": 3,
                                               "output_index": 0, "item": item}
    usage = {"input_tokens": tokens - 8, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 8,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": tokens}
    yield "event: response.completed", {"type": "response.completed", "sequence_number": 4, "response": {
        **response, "status": "completed", "output": [item], "usage": usage}}


# -- Gemini -----------------------------------------------------------------------------------------
def gemini_reply(stub: ModelStub, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """(the model's content part, finish reason) for one generateContent request."""
    contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
    calls = 0  # function calls made since the user's last words
    for content in reversed(contents):
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
        if content.get("role") == "user" and any("text" in p for p in parts) \
                and not any("functionResponse" in p for p in parts):
            break
        calls += sum("functionCall" in p for p in parts)
    if _is_summary_request(json.dumps(contents[-1:])):
        return {"text": SUMMARY_TEXT}, "STOP"
    if not body.get("tools"):
        return {"text": "ok"}, "STOP"
    step = stub.next_step([f"e2e_0_{calls - 1}"] if calls else [])
    if step is None:
        return {"text": stub.script.final_text}, "STOP"
    call_id, call = step
    return {"functionCall": {"id": call_id, "name": call.name, "args": call.arguments}}, "STOP"


def gemini_chunk(body: dict[str, Any], part: dict[str, Any], finish: str, tokens: int) -> dict[str, Any]:
    """One GenerateContentResponse (the whole answer in one chunk)."""
    return {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": finish, "index": 0}],
            "usageMetadata": {"promptTokenCount": tokens - 8, "candidatesTokenCount": 8, "totalTokenCount": tokens},
            "modelVersion": "gemini-stub"}
