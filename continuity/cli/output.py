"""Printing results and errors (kept apart from argparse, so the hook path need not load it)."""

from __future__ import annotations

import contextlib
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook path prints through this module: `typing` costs it a few ms
    from collections.abc import Iterable
    from typing import Any


class Output:
    """Prints results as human text or JSON (`--json`), errors as one stderr line."""

    def __init__(self, *, as_json: bool) -> None:
        self.as_json = as_json

    def emit(self, data: Any, text: str | None = None) -> None:
        """Print `data` as JSON, or `text` for people."""
        if self.as_json or text is None:
            from continuity.core.fsio import indented_json
            from continuity.core.text import escape_json_bytes

            sys.stdout.buffer.write(escape_json_bytes(indented_json(data)) + b"\n")
            sys.stdout.flush()
        else:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
            sys.stdout.flush()

    def note(self, line: str) -> None:
        """A line for people about the result (a cut listing), on stderr so stdout stays the result; not with --json."""
        if not self.as_json:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    def error(self, message: str, code: int) -> None:
        """Report an error: one line on stderr (and a JSON object on stdout with --json)."""
        from continuity.core.text import one_line

        line = one_line(" ".join(message.split()))
        with contextlib.suppress(OSError):  # a stderr that takes nothing more: the exit code still tells
            sys.stderr.write(f"continuity: error: {line}\n")
            sys.stderr.flush()
        if self.as_json:
            import orjson

            data = {"ok": False, "exit_code": code, "message": line}
            try:
                encoded = orjson.dumps(data)
            except orjson.JSONEncodeError:  # a path whose bytes are not UTF-8 in the message
                from continuity.core.fsio import surrogate_json

                encoded = surrogate_json(data)
            with contextlib.suppress(OSError):  # the error may be that stdout takes nothing more
                sys.stdout.buffer.write(encoded + b"\n")
                sys.stdout.flush()


def warn(warnings: Iterable[str], prog: str = "continuity") -> None:
    """Print warnings on stderr, one line each: `<prog>: warning: <text>` (stdout stays the result)."""
    from continuity.core.text import one_line

    for warning in warnings:
        line = one_line(" ".join(str(warning).split()))
        sys.stderr.write(f"{prog}: warning: {line}\n")
    sys.stderr.flush()
