"""A model API of our own on 127.0.0.1: scripted turns streamed in each vendor's format.

The harnesses under test (Claude Code, Codex, Gemini CLI) talk to it instead of a
vendor. Each main-loop request gets the next step of the script: a tool call while the
script has steps left, then a short text that ends the turn. Which step comes next is
read from the request itself (the tool results the harness sends back carry our call
ids, `e2e_<n>_<step>`), so retries and side requests (titles, quota checks,
summaries) never shift it. Every request is recorded for the tests to read.

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

import itertools
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CALL_ID = re.compile(r"e2e_(\d+)_(\d+)")
FINAL_TEXT = "Done: the scripted steps ran."
SUMMARY_TEXT = "<summary>The session ran the scripted steps; next: keep going.</summary>"


@dataclass(frozen=True)
class ToolCall:
    """One scripted step: the tool to call and its arguments, per vendor naming."""

    name: str
    arguments: dict[str, Any]


@dataclass
class Recorded:
    """One request the stub received."""

    method: str
    path: str
    body: Any
    headers: dict[str, str]

    def text(self) -> str:
        """The whole body as text, for `in` checks."""
        return json.dumps(self.body, ensure_ascii=False)


@dataclass
class Script:
    """The scripted turn: these tool calls, one per request, then the end of the turn."""

    steps: list[ToolCall] = field(default_factory=list)
    final_text: str = FINAL_TEXT
    #: Tokens the first response claims to use (20 after it): a large figure makes the harness compact.
    usage_tokens: int = 20


class ModelStub:
    """A threaded HTTP server on a free 127.0.0.1 port speaking the three vendors' streaming APIs."""

    def __init__(self) -> None:
        self.script = Script()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="model-stub", daemon=True)

    @property
    def base_url(self) -> str:
        """http://127.0.0.1:<port>"""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ModelStub:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def reset(self, steps: list[ToolCall] | None = None, *, usage_tokens: int = 20) -> None:
        """A new script and an empty request record."""
        with self._lock:
            self.script = Script(steps=list(steps or []), usage_tokens=usage_tokens)
            self.requests.clear()

    def record(self, item: Recorded) -> None:
        """Keep one request."""
        with self._lock:
            self.requests.append(item)

    def take_usage(self) -> int:
        """The token count the next response reports: the script's figure once, then 20."""
        with self._lock:
            tokens, self.script.usage_tokens = self.script.usage_tokens, 20
            return tokens

    def model_requests(self, path_part: str) -> list[Recorded]:
        """The recorded requests whose path holds `path_part` (e.g. `/v1/messages`)."""
        with self._lock:
            return [item for item in self.requests if path_part in item.path]

    def next_step(self, last_call_ids: list[str]) -> tuple[str, ToolCall] | None:
        """(call id, tool call) for the step after the one `last_call_ids` answer, or None: end the turn."""
        done = [int(match.group(2)) for match in map(CALL_ID.search, last_call_ids) if match]
        step = max(done) + 1 if done else 0
        if step >= len(self.script.steps):
            return None
        return f"e2e_{next(self._ids)}_{step}", self.script.steps[step]


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


# -- the handler -----------------------------------------------------------------------------------
Route = Callable[["_Handler", dict[str, Any]], None]


class _Handler(BaseHTTPRequestHandler):
    stub: ModelStub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the record is in stub.requests
        return

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding") == "gzip":
            import gzip

            raw = gzip.decompress(raw)
        if self.headers.get("Content-Encoding") == "zstd":
            return {"undecoded": "zstd", "bytes": len(raw)}
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return {"undecoded": raw[:2000].decode("utf-8", "replace")}

    def do_GET(self) -> None:
        self.stub.record(Recorded("GET", self.path, None, dict(self.headers)))
        self._json(404, {"error": {"type": "not_found", "message": "model stub: no such endpoint"}})

    def do_POST(self) -> None:
        body = self._body()
        self.stub.record(Recorded("POST", self.path, body, dict(self.headers)))
        path = self.path.split("?", 1)[0]
        if not isinstance(body, dict):
            self._json(400, {"error": {"message": "model stub: body is not a JSON object"}})
        elif path.endswith("/v1/messages/count_tokens"):
            self._json(200, {"input_tokens": 100})
        elif path.endswith("/v1/messages"):
            blocks, stop = anthropic_reply(self.stub, body)
            if body.get("stream"):
                self._sse((f"event: {name}", data) for name, data in anthropic_events(body, blocks, stop))
            else:
                self._json(200, anthropic_message(body, blocks, stop))
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            part, finish = gemini_reply(self.stub, body)
            chunk = gemini_chunk(body, part, finish, self.stub.take_usage())
            if ":stream" in path:
                self._sse(iter([(None, chunk)]))
            else:
                self._json(200, chunk)
        elif ":countTokens" in path:
            self._json(200, {"totalTokens": 100})
        elif path.endswith("/responses"):
            item = responses_reply(self.stub, body)
            if body.get("stream", True):
                self._sse(responses_events(body, item, self.stub.take_usage()))
            else:
                self._json(200, {"id": "resp_e2e", "object": "response", "status": "completed", "output": [item]})
        else:
            self._json(404, {"error": {"type": "not_found", "message": f"model stub: no route for {path}"}})

    def _json(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: Iterator[tuple[str | None, Any]]) -> None:
        """Stream `events` as text/event-stream (chunked, so the client sees each as it comes)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for head, data in events:
            text = (f"{head}\n" if head else "") + f"data: {json.dumps(data)}\n\n"
            chunk = text.encode()
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _handler_for(stub: ModelStub) -> type[_Handler]:
    return type("StubHandler", (_Handler,), {"stub": stub})
