"""Printing results and errors (kept apart from argparse, so the hook path need not load it)."""

from __future__ import annotations

import contextlib
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook path prints through this module: `typing` costs it a few ms
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any

#: How much of a listing printed with --json is kept in memory before the rest goes to a temporary file.
SPOOL_BYTES = 8 << 20


@contextlib.contextmanager
def reader_may_leave() -> Iterator[None]:
    """Writes to stdout whose reader may be gone (`| head -1`, `| grep -q`): the rest of the output goes nowhere and
    the command goes on to its own exit code. The closed pipe ended the command with 0, so a report's verdict, a
    refusal's code (park's "CHECKPOINT NOT WRITTEN", a stale `resume`) read as success. Only stdout's own writes go
    in here: a BrokenPipeError of another pipe (a git process) is a failure."""
    try:
        yield
    except BrokenPipeError:
        import os

        with contextlib.suppress(OSError, ValueError, AttributeError):  # no file of its own (captured): as it is
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # what is still buffered, and the flush at exit, go nowhere
            os.close(devnull)


class Output:
    """Prints results as human text or JSON (`--json`), errors as one stderr line."""

    def __init__(self, *, as_json: bool) -> None:
        self.as_json = as_json

    def emit(self, data: Any, text: str | None = None, *, shown: bool = False) -> None:
        """Print `data` as JSON, or `text` for people, what looks like a secret redacted (see `shown_data`;
        `shown`: the text is redacted already, part by part)."""
        if self.as_json or text is None:
            encoded = shown_json(data) + b"\n"
            with reader_may_leave():
                sys.stdout.flush()  # text written before goes out first
                sys.stdout.buffer.write(encoded)
                sys.stdout.flush()
        else:  # a path, an id or an archive's text may hold what a terminal acts on: shown as stand-ins
            from continuity.core.text import terminal_text

            text = text if text.endswith("\n") else text + "\n"
            text = terminal_text(text if shown else shown_text(text))
            with reader_may_leave():
                sys.stdout.write(text)
                sys.stdout.flush()

    def emit_report(self, data: dict[str, Any], text: str, code: int, message: str) -> int:
        """Print a report whose verdict is its exit code `code` (0: all well; else `message` says why in one line):
        with --json a failing report carries `exit_code` and `message` too, as every failure does. Returns `code`,
        also when the reader left before the end (`verify | head -1`): the verdict stands (see reader_may_leave)."""
        self.emit({**data, "exit_code": code, "message": message} if code else data, text)
        return code

    def emit_lines(self, lines: Iterable[str], empty: str) -> None:
        """Print text lines as they come (a long listing is never held whole), or `empty` when there are none."""
        write, any_line = sys.stdout.write, False
        with reader_may_leave():
            for line in lines:  # redacted by the caller, a field at a time (the line joins fields: `type: message`)
                write(line + "\n")
                any_line = True
            if not any_line:
                write(empty + "\n")
            sys.stdout.flush()

    def emit_listing(self, items: Iterable[Any], key: str, head: Callable[[int], dict[str, Any]]) -> None:
        """Print `{**head(count), key: [items]}` byte for byte as `emit` would, one item held at a time.

        `head` (the count, and warnings met while reading) is known only once every item is
        read, and comes first in the document, so each item is encoded as it comes into a spool
        (memory up to a few MiB, a temporary file past that) and copied out after the head.
        """
        import shutil
        import tempfile

        count = 0
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
            for item in items:  # each checked alone: its values are a fifth of its JSON text to scan
                spool.write(b",\n    " if count else b"    ")
                spool.write(shown_json(item).replace(b"\n", b"\n    "))
                count += 1
            document = shown_json({**head(count), key: []})
            with reader_may_leave():
                if not count:
                    sys.stdout.buffer.write(document + b"\n")
                else:
                    empty = b"[]\n}"  # the document's end: `key`'s empty list, last, closes it
                    sys.stdout.buffer.write(document[: -len(empty)] + b"[\n")
                    spool.seek(0)
                    shutil.copyfileobj(spool, sys.stdout.buffer)
                    sys.stdout.buffer.write(b"\n  ]\n}\n")
                sys.stdout.flush()

    def note(self, line: str) -> None:
        """A line for people about the result (a cut listing), on stderr so stdout stays the result; not with --json."""
        if not self.as_json:
            with contextlib.suppress(OSError):  # a stderr that takes nothing: the result on stdout stands
                sys.stderr.write(line + "\n")
                sys.stderr.flush()

    def error(self, message: str, code: int) -> None:
        """Report an error: one line on stderr (and a JSON object on stdout with --json)."""
        try:
            from continuity.core.text import one_line

            line = one_line(" ".join(shown_text(message).split()))  # a name from a synced tree may hold a secret
        except (ImportError, OSError):  # no module loads now (no file descriptor left): every unsafe one escaped
            line = " ".join(message.split()).encode("ascii", "backslashreplace").decode()
        with contextlib.suppress(OSError):  # a stderr that takes nothing more: the exit code still tells
            sys.stderr.write(f"continuity: error: {line}\n")
            sys.stderr.flush()
        if self.as_json:
            try:
                import orjson
            except (ImportError, OSError):  # as above: the line on stderr and the exit code tell
                return
            data = {"ok": False, "exit_code": code, "message": line}
            try:
                encoded = orjson.dumps(data)
            except orjson.JSONEncodeError:  # a path whose bytes are not UTF-8 in the message
                from continuity.core.fsio import surrogate_json

                encoded = surrogate_json(data)
            with contextlib.suppress(OSError):  # the error may be that stdout takes nothing more
                sys.stdout.flush()  # text written before goes out first
                sys.stdout.buffer.write(encoded + b"\n")
                sys.stdout.flush()


def shown_text(text: str) -> str:
    """`text` as a view prints it: what looks like a secret redacted. The guard runs on writes only, so an event a
    sync brought in (another clone's, an older release's, one written by hand) may hold one; a view's output may go
    to an agent's model as well as to a terminal, as the brief does (which is redacted the same way)."""
    from events.guard import redact_text

    return redact_text(text)[0]


#: How much of a listing's lines (characters) is checked for secrets as one text (see shown_batch): a listing
#: holds only that much more at a time.
LINES_BATCH_CHARS = 1 << 10


def shown_batch(batch: list[str]) -> list[str]:
    """Each text as a view prints it (see shown_text), the batch checked at once: its texts joined are scanned
    once, and only a batch a rule matches is redacted text by text (a match only the joining makes costs that, no
    more: every text stands in the joined one as it is). A listing of clean events pays one scan a batch."""
    from events.guard import find_secret, might_hold_secret

    joined = "\n".join(batch)
    if not might_hold_secret(joined) or find_secret(joined) is None:
        return batch
    return [shown_text(text) for text in batch]


def shown_json(data: Any) -> bytes:
    """`data` as a view prints it in JSON (indented, escaped for terminals), what looks like a secret redacted."""
    if _clean(data):
        from continuity.core.fsio import indented_json
        from continuity.core.text import escape_json_bytes

        return escape_json_bytes(indented_json(data))
    return shown_data(data, checked=True)[1].encode("utf-8", "surrogatepass")


def shown_data(data: Any, *, checked: bool = False) -> tuple[Any, str]:
    """`data` and its indented JSON text (escaped for terminals) as a view shows them, what looks like a secret
    redacted: only data whose values a rule matches is walked (`checked`: known to be such). Every field is looked
    at (an event a sync brought in may hold one in `prev` too). The data is None when it nests past even a deep walk
    (a forged event): only its text, redacted as text, is shown then."""
    from continuity.core.fsio import indented_json
    from continuity.core.text import escape_json

    if checked or not _clean(data):
        try:
            data = _redacted(data)
        except RecursionError:
            return None, escape_json(shown_text(indented_json(data).decode("utf-8", "surrogatepass")))
    return data, escape_json(indented_json(data).decode("utf-8", "surrogatepass"))


def redacted(data: Any) -> Any:
    """`data` as a view shows it: what looks like a secret in any string redacted (the same `data` when none does)."""
    return _redacted(data) if not _clean(data) else data


def _clean(data: Any) -> bool:
    """Whether no rule matches any string of `data` (keys too): the strings not known clean joined, scanned once.
    A match only the joining makes costs a walk, no more. Data nested past even a deep walk is not clean.

    A string is redacted alone (see _redacted), so one found clean stays clean: the short ones (keys, kinds, names)
    are remembered for the process, and a listing of thousands of events scans each key once, not once an event."""
    from events.guard import entry_text, find_secret, might_hold_secret

    try:
        texts = _deep(_values, data, [], entry_text)
    except RecursionError:
        return False
    unseen = [text for text in texts if text not in _KNOWN_CLEAN]
    if not unseen:
        return True
    joined = "\n".join(unseen)
    if might_hold_secret(joined) and find_secret(joined) is not None:
        return False
    if len(_KNOWN_CLEAN) > KNOWN_CLEAN_MOST:
        _KNOWN_CLEAN.clear()
    _KNOWN_CLEAN.update(text for text in unseen if len(text) <= KNOWN_CLEAN_CHARS)
    return True


#: Strings found clean (see _clean): at most KNOWN_CLEAN_MOST of them, each at most KNOWN_CLEAN_CHARS characters.
_KNOWN_CLEAN: set[str] = set()
KNOWN_CLEAN_MOST = 20_000
KNOWN_CLEAN_CHARS = 64


def _redacted(data: Any) -> Any:
    """A copy of `data` with what looks like a secret redacted in every string, the fields the write guard leaves
    alone included (`"$"`: no field of the top level is skipped)."""
    from events.guard import redact_tree

    return _deep(redact_tree, data, "$", [])


def _deep(call: Callable[..., Any], *args: Any) -> Any:
    """`call(*args)` with room for data nested as deep as a stored event may be (the reader takes a few thousand
    levels; Python's own limit is 1,000 frames)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, DEEP_FRAMES))
    try:
        return call(*args)
    finally:
        sys.setrecursionlimit(limit)


#: The frames a walk of a stored event may take (see _deep).
DEEP_FRAMES = 20_000


def _values(node: Any, into: list[str], entry: Callable[[str, str], str | None]) -> list[str]:
    """Every string of a tree, a dict's keys too, in order, and each entry whose key may name a secret as `key:
    value` (`entry`: events.guard.entry_text; a password under `password` is a secret where neither string alone is)."""
    if isinstance(node, str):
        into.append(node)
    elif isinstance(node, dict):
        for key, value in node.items():
            name = str(key)
            into.append(name)
            if isinstance(value, str) and (text := entry(name, value)) is not None:
                into.append(text)
            _values(value, into, entry)
    elif isinstance(node, list | tuple):
        for value in node:
            _values(value, into, entry)
    return into


def shown_raw(raw: bytes) -> bytes:
    """An event's stored bytes as a view prints them: as they are, or, when a string of the event looks like a
    secret, the event with it redacted (compact JSON)."""
    import msgspec

    try:
        data = msgspec.json.decode(raw)
        if _clean(data):
            return raw
        return msgspec.json.encode(_redacted(data))
    except (msgspec.DecodeError, RecursionError):  # read by the log, so not expected: its text, redacted as text
        return shown_text(raw.decode("utf-8", "replace")).encode()


def warn(warnings: Iterable[str], prog: str = "continuity") -> None:
    """Print warnings on stderr, one line each: `<prog>: warning: <text>` (stdout stays the result); a warning that
    several catch-ups of one command each gave (park, role claim, work checkpoint) is said once. What looks like a
    secret is redacted, as `--json` shows it (a file name in a synced tree, a value quoted from a settings file)."""
    from continuity.core.text import one_line

    lines = dict.fromkeys(one_line(" ".join(shown_text(str(warning)).split())) for warning in warnings)
    with contextlib.suppress(OSError):  # a stderr that takes nothing (full, closed): the answer is still given
        for line in lines:
            sys.stderr.write(f"{prog}: warning: {line}\n")
        sys.stderr.flush()
