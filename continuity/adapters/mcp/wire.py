"""Requests the SDK's stdio transport would leave unanswered, made answerable.

The MCP SDK validates each line it reads with pydantic; a line that fails is dropped and the
client waits for an answer that never comes. Two kinds of valid JSON fail there: a string
with a lone surrogate escape (`"\\ud83d"`: Node's JSON.stringify writes one for half an
emoji) and arguments nested a few hundred levels deep. Such a line is read again here, only
after the SDK's own reading failed (a well-formed request costs nothing more): lone
surrogates become U+FFFD, as the hooks read them; a `tools/call` that still cannot be read
becomes a call whose arguments say so, which the tool answers as an error of one line.

A client that writes its requests and closes stdin (`printf ... | continuity mcp`, a script)
got "Connection closed" for what was still in flight, and no answer at all for some: the SDK
treats stdin's end as the end of the connection and cancels every request it has not answered.
`answered_before_eof` holds that end back until each request read has its answer (or was
cancelled by the client), so the server still stops on its own at stdin's end.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from typing import Any

#: The key of the arguments a call that could not be read is given instead (continuity/adapters/mcp/registry.py).
REFUSED = "__continuity_unreadable_request__"


class _Tolerant:
    """The SDK's JSON-RPC message adapter, reading again what it refuses (everything else is the adapter's)."""

    def __init__(self, adapter: Any) -> None:
        self._adapter = adapter

    def validate_json(self, data: Any, *args: Any, **kwargs: Any) -> Any:
        twice = _key_given_twice(data)  # before any reading that keeps the last of two (the SDK's, or ours again)
        if twice is not None:
            return self._adapter.validate_json(twice, *args, **kwargs)
        try:
            return self._adapter.validate_json(data, *args, **kwargs)
        except Exception:
            again = readable_again(data)
            if again is None:
                raise
        try:
            return self._adapter.validate_json(again, *args, **kwargs)
        except Exception:
            last = answerable(again)
            if last is None:
                raise
            return self._adapter.validate_json(last, *args, **kwargs)

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
    """The line with its lone surrogates as U+FFFD, or a request that cannot be read made one that says why
    (`_answer`); None when it is no JSON object at all (the SDK's own error stands)."""
    try:
        message, deep = _parsed(data)
    except ValueError as error:  # an integer of more digits than Python converts: read for the id, refused
        if "digits" not in str(error):
            return None
        try:
            message, deep = _parsed(data, long_integers=True)
        except ValueError:
            return None
        cleaned = None if deep else _no_surrogates(message, 0)  # the id and the tool's name as they are answered
        return _answer(cleaned if cleaned is not None else message,
                       "an argument holds an integer of more digits than any tool takes; nothing written")
    if not isinstance(message, dict):
        return None
    cleaned = None if deep else _no_surrogates(message, 0)
    if cleaned is None:  # nested past what anyone sends: only a call can be answered, and only by its id
        return _answer(message, f"the request is nested more than {DEPTH} levels deep; nothing written")
    return json.dumps(cleaned, ensure_ascii=False)


class _Twice(dict[str, Any]):
    """An object of the line that gives a key more than once (the first of them: `twice`)."""

    twice: str


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    marked = _Twice(value)
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            marked.twice = key
            break
        seen.add(key)
    return marked


def _key_given_twice(data: Any) -> str | None:
    """A tool call that gives a key twice in one object, as `_answer` makes it (refused, as the CLI refuses such a
    document: the SDK keeps the last, so the first, an item list say, went without a word); else None."""
    try:
        message = json.loads(data, object_pairs_hook=_once_each)
    except (ValueError, RecursionError, TypeError):
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    found = _first_twice(message, 0)  # anywhere in a call: its arguments, or `arguments` or `params` given twice
    if found is None:
        return None
    from events.problems import quoted

    return _answer(message, f"an object gives the key {quoted(found, 80)} twice (keep one); nothing written")


def _first_twice(value: Any, depth: int) -> str | None:
    if depth > DEPTH:
        return None
    if isinstance(value, _Twice):
        return value.twice
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return next((found for child in children if (found := _first_twice(child, depth + 1)) is not None), None)


#: What `_parsed` reads an integer too long for Python as (a marker no JSON value decodes to).
_TOO_LONG = "\ufffe too long an integer"


def _parsed(data: Any, *, long_integers: bool = False) -> tuple[Any, bool]:
    """(the line's JSON value, whether its deep part was cut): nested past Python's parser (RecursionError), it is
    read with everything deeper than DEPTH as `null`, for its id. `long_integers`: each integer too long for
    Python read as _TOO_LONG (never a number, so never taken for an id). ValueError when it cannot be read."""
    def parse_int(digits: str) -> Any:
        return int(digits) if len(digits) <= 4000 else _TOO_LONG

    options: dict[str, Any] = {"parse_int": parse_int} if long_integers else {}
    try:
        return json.loads(data, **options), False
    except RecursionError:
        text = data.decode("utf-8", "replace") if isinstance(data, bytes | bytearray) else data
        shallow = _shallow(text) if isinstance(text, str) else None
        if shallow is None:
            raise ValueError("unbalanced brackets") from None
        try:
            return json.loads(shallow, **options), True
        except RecursionError:
            raise ValueError("nested too deeply") from None
    except TypeError:
        raise ValueError("no JSON text") from None


#: Deeper than this, a request is refused rather than read again (the SDK refuses a few hundred levels).
DEPTH = 200


def answerable(line: str) -> str | None:
    """A request the SDK still cannot read once read again (its params a list, say), as `_answer` makes it."""
    message = json.loads(line)
    call = isinstance(message, dict) and message.get("method") == "tools/call"
    return _answer(message, "the request's params are not a tool call (an object with the tool's name and its "
                            "arguments as an object); nothing written" if call else
                            "its params cannot be read: not an object of that method's shape")


def _answer(message: Any, reason: str) -> str | None:
    """A request the SDK cannot read, as one it answers with an error for its id: a `tools/call` whose arguments say
    `reason` (the tool answers it as an error of one line), any other method as a method of that name that does not
    exist (JSON-RPC's "Method not found", the reason in its data). None without a usable id or method."""
    if not isinstance(message, dict):
        return None
    request_id, method = message.get("id"), message.get("method")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str) or request_id == _TOO_LONG:
        return None
    if not isinstance(method, str) or _TOO_LONG in method:
        return None
    # the id, method and name of a message too deep to be cleaned whole: a lone surrogate there left the line
    # unreadable again, and the request went unanswered
    request_id, method = _no_surrogates(request_id, 0), _no_surrogates(method, 0)
    if method != "tools/call":
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": f"{method[:100]} ({reason})", "params": {}},
                          ensure_ascii=False)
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": {
        "name": _no_surrogates(name[:200], 0) if isinstance(name, str) else "", "arguments": {REFUSED: reason}}},
        ensure_ascii=False)


def _shallow(text: str) -> str | None:
    """`text` with every array or object nested deeper than DEPTH levels replaced by `null`, so a line Python's
    parser gives up on (RecursionError) can still be read for its id; None when the brackets do not balance."""
    from continuity.core.text import outside_json_strings

    out: list[str] = []
    depth = start = 0
    cutting = False
    for index, char in outside_json_strings(text):
        if char in "[{":
            depth += 1
            if depth > DEPTH and not cutting:  # the deep value starts here: it is left out
                out.append(text[start:index])
                cutting = True
        elif char in "]}":
            depth -= 1
            if depth == DEPTH and cutting:  # and ends here: null in its place
                out.append("null")
                start, cutting = index + 1, False
    if depth:  # a string left open: the JSON parser refuses the result
        return None
    out.append(text[start:])
    return "".join(out)


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


#: Requests read and not yet answered past which the server reads no more of stdin until some are: a client
#: that writes requests without reading answers waits on its full pipe, instead of the server holding every answer.
IN_FLIGHT = 64


class _Pending:
    """The ids of requests read and not yet answered, and a wait for none left."""

    def __init__(self) -> None:
        import anyio

        self.ids: Counter[Any] = Counter()
        self._none_left = anyio.Event()
        self._none_left.set()
        self._room = anyio.Event()
        self._room.set()

    def read(self, item: Any) -> None:
        message = getattr(item, "message", None)
        method = getattr(message, "method", None)
        if method is None:
            return
        request_id = getattr(message, "id", None)
        if request_id is not None:  # a request: the server owes it an answer
            self.ids[_key(request_id)] += 1
            import anyio

            if self._none_left.is_set():
                self._none_left = anyio.Event()
            if self.ids.total() >= IN_FLIGHT and self._room.is_set():
                self._room = anyio.Event()
        elif method == "notifications/cancelled":  # the client stopped waiting: no answer is owed
            params = getattr(message, "params", None)
            request_id = params.get("requestId") if isinstance(params, dict) else None
            # as the SDK reads it: a bool or a float names no request (True would alias request 1)
            if isinstance(request_id, str | int) and not isinstance(request_id, bool):
                self._settle(request_id)

    def written(self, item: Any) -> None:
        message = getattr(item, "message", None)
        if getattr(message, "method", None) is None and getattr(message, "id", None) is not None:
            self._settle(message.id)  # type: ignore[union-attr]

    def _settle(self, request_id: Any) -> None:
        key = _key(request_id)
        left = self.ids.get(key, 0) - 1
        if left > 0:
            self.ids[key] = left
        else:  # an answer to what is no longer owed (a late answer after a cancel) changes nothing
            self.ids.pop(key, None)
        if not self.ids:
            self._none_left.set()
        if self.ids.total() < IN_FLIGHT:
            self._room.set()

    async def none_left(self) -> None:
        await self._none_left.wait()

    async def room(self) -> None:
        """Wait while IN_FLIGHT requests are owed an answer."""
        while not self._room.is_set():
            await self._room.wait()


def _key(request_id: Any) -> Any:
    """An id as the SDK correlates ids: "7" and 7 are one (its answers and cancels match them so)."""
    if isinstance(request_id, str):
        try:
            return int(request_id)
        except ValueError:
            return request_id
    return request_id


class _Wrapped:
    """A transport stream and the pending requests it tells of; closed as the stream is."""

    def __init__(self, inner: Any, pending: _Pending) -> None:
        self._inner = inner
        self._pending = pending

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _HeldRead(_Wrapped):
    """The transport's read stream, whose end waits until every request read so far is answered."""

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    def owed(self) -> bool:
        """Whether requests read so far wait for their answers."""
        return bool(self._pending.ids)

    async def receive(self) -> Any:
        import anyio

        await self._pending.room()
        try:
            item = await self._inner.receive()
        except anyio.EndOfStream:
            await self._pending.none_left()
            raise
        self._pending.read(item)
        return item

    def __aiter__(self) -> _HeldRead:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class _SeenWrite(_Wrapped):
    """The transport's write stream, telling `_Pending` about each answer it carries."""

    async def send(self, item: Any) -> None:
        await self._inner.send(item)
        self._pending.written(item)


#: The longest request line the server reads (bytes): a longer one is dropped as it arrives, read on to its end
#: without being held, so an endless line (`continuity mcp < /dev/zero`) costs no memory past this.
MAX_LINE = 64 << 20
#: What stands for a dropped line: no JSON, so the SDK drops it as it drops any line it cannot parse.
DROPPED = "(a request line over 64 MiB, dropped)\n"


def _text_of(raw: bytes) -> str:
    """A line read from the client as text. JSON is UTF-8: a tool call whose bytes are not is refused as `_answer`
    makes it (read with U+FFFD in their place, a message stored what the client never sent), as the hooks refuse
    such input; any other request is read with U+FFFD, as the SDK's own reader would."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        text = raw.decode("utf-8", "replace")
        with contextlib.suppress(ValueError, RecursionError):
            message = json.loads(text)
            if isinstance(message, dict) and message.get("method") == "tools/call":
                refused = _answer(message, f"the request is not valid UTF-8 (byte {error.start}); nothing written")
                if refused is not None:
                    return refused + text[len(text.rstrip("\r\n")):]
        return text


class StdinLines:
    """The client's lines, read from a private copy of fd 0 in a wait that a cancel ends at once.

    The SDK reads stdin in a worker thread that nothing can stop: Ctrl-C, or a client that closed
    stdout but not stdin, left the server waiting for one more line before it could exit. Here
    the wait is the event loop's (`anyio.wait_readable`); where the descriptor cannot be waited on
    so (a regular file, /dev/null under epoll), a read there cannot block for long, so it is made
    in a thread as before. fd 0 itself points at the null device while serving, as the SDK does,
    so a child process of a tool never reads the client's requests.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()
        self._scanned = 0  # the buffer holds no line end before here
        self._lines: list[str] = []  # the rest of a line that held lone CRs, split as a text reader splits it
        self._ended = False
        self._pollable = True
        self._waiting: Any = None  # the cancel scope of the wait for stdin in progress, if any

    def end(self) -> None:
        """Read no more: stdin ends here as if the client had closed it (Ctrl-C with a call in progress: what is
        read is answered first, as at stdin's end). Run on the event loop."""
        self._ended = True
        if self._waiting is not None:
            self._waiting.cancel()

    @classmethod
    def claim(cls) -> tuple[StdinLines, Any] | None:
        """The reader over a private copy of fd 0, and the call that points fd 0 back; None where that is not
        possible (no fd 0, no POSIX descriptors, an anyio without `wait_readable`): the SDK reads stdin then."""
        import os

        import anyio

        if os.name != "posix" or not hasattr(anyio, "wait_readable"):
            return None
        try:  # above 2: the guard opens the null device for any standard stream missing (not inheritable)
            private = os.dup(0)
        except OSError:
            return None
        if private <= 2:
            os.close(private)
            return None
        try:
            null = os.open(os.devnull, os.O_RDONLY)
            try:
                os.dup2(null, 0)
            finally:
                os.close(null)
        except OSError:
            os.close(private)
            return None

        def restore() -> None:
            with contextlib.suppress(OSError):
                os.dup2(private, 0)

        return cls(private), restore

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        if self._lines:
            return self._lines.pop(0)
        end = self._buffer.find(b"\n", self._scanned)
        while end < 0 and not self._ended:  # only what is new is searched: a long line costs linear time
            if len(self._buffer) > MAX_LINE:
                return await self._dropped()
            self._scanned = len(self._buffer)
            chunk = await self._read()
            if chunk:
                self._buffer += chunk
                end = self._buffer.find(b"\n", self._scanned)
            else:
                self._ended = True
        if end > MAX_LINE:
            del self._buffer[:end + 1]
            self._scanned = 0
            return self._said_dropped()
        if end < 0 and not self._buffer:
            raise StopAsyncIteration
        cut = len(self._buffer) if end < 0 else end + 1
        raw = bytes(self._buffer[:cut])
        del self._buffer[:cut]
        self._scanned = 0
        # a lone "\r" ends a line too, as the SDK's text reader (universal newlines) read it; "\r\n" is one end.
        # Split before reading as text: each line is refused on its own when its bytes are not UTF-8
        parts = raw.replace(b"\r\n", b"\n").split(b"\r")
        if len(parts) == 1:
            return _text_of(raw)
        self._lines = [_text_of(part if part.endswith(b"\n") else part + b"\n") for part in parts[1:]
                       if part not in (b"", b"\n")]
        return _text_of(parts[0] + b"\n")

    async def _dropped(self) -> str:
        """Read past the rest of a line over MAX_LINE, holding none of it; DROPPED in its place."""
        self._buffer.clear()
        while not self._ended:
            chunk = await self._read()
            if not chunk:
                self._ended = True
                break
            end = chunk.find(b"\n")
            if end >= 0:
                self._buffer += chunk[end + 1:]
                break
        self._scanned = 0
        return self._said_dropped()

    @staticmethod
    def _said_dropped() -> str:
        import sys

        with contextlib.suppress(OSError):  # the client sees no answer to it; its log (stderr) says why
            sys.stderr.write(f"continuity mcp: {DROPPED}")
            sys.stderr.flush()
        return DROPPED

    async def _read(self) -> bytes:
        import os

        import anyio

        if self._ended:
            return b""
        if self._pollable:
            with anyio.CancelScope() as self._waiting:
                try:
                    await anyio.wait_readable(self._fd)
                except OSError:  # this descriptor cannot be waited on: its reads do not block for long
                    self._pollable = False
                else:
                    return os.read(self._fd, 65536)
            self._waiting = None
            if self._ended:  # end(): no more is read
                return b""
        import anyio.to_thread

        return await anyio.to_thread.run_sync(os.read, self._fd, 65536)


def answered_before_eof(read: Any, write: Any) -> tuple[Any, Any]:
    """The stdio transport's streams, with stdin's end held back until every request read is answered."""
    pending = _Pending()
    return _HeldRead(read, pending), _SeenWrite(write, pending)
