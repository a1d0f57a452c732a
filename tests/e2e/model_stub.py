"""A model API of our own on 127.0.0.1: scripted turns streamed in each vendor's format.

The harnesses under test (Claude Code, Codex, Gemini CLI) talk to it instead of a
vendor. Each main-loop request gets the next step of the script: a tool call while the
script has steps left, then a short text that ends the turn. Which step comes next is
read from the request itself (the tool results the harness sends back carry our call
ids, `e2e_<n>_<step>`), so retries and side requests (titles, quota checks,
summaries) never shift it. Every request is recorded for the tests to read.

The vendors' formats are in `tests/e2e/stub_formats.py`.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.e2e.stub_formats import (
    FINAL_TEXT,
    anthropic_events,
    anthropic_message,
    anthropic_reply,
    gemini_chunk,
    gemini_reply,
    responses_events,
    responses_reply,
)

CALL_ID = re.compile(r"e2e_(\d+)_(\d+)")
__all__ = ["FINAL_TEXT", "ModelStub", "Recorded", "ToolCall"]


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


# -- the handler -----------------------------------------------------------------------------------
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
