"""Logging: structlog, configured once at the CLI edge, and only when something is logged.

`log(level, event, **fields)` is free while logging is off (the default), so modules on
the hook path may call it without importing structlog. `--log-level LEVEL` turns it on:
human-readable lines on a terminal, JSON lines (orjson) otherwise, to stderr. Hook
handlers also append their errors to a JSON-lines file under the store.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

LEVELS = ("debug", "info", "warning", "error")
_state: dict[str, Any] = {"logger": None, "level": None}


def configure(level: str, stream: TextIO | None = None, *, as_json: bool | None = None) -> None:
    """Turn logging on at `level` (debug, info, warning, error), to `stream` (stderr)."""
    import logging

    import orjson
    import structlog

    stream = stream or sys.stderr
    if as_json is None:
        as_json = not stream.isatty()
    renderer: Any = (
        structlog.processors.JSONRenderer(serializer=lambda data, **_: orjson.dumps(data).decode())
        if as_json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(stream),
        cache_logger_on_first_use=False,
    )
    _state["logger"] = structlog.get_logger("continuity")
    _state["level"] = level


def enabled() -> bool:
    """True once configure() ran."""
    return _state["logger"] is not None


def log(level: str, event: str, **fields: Any) -> None:
    """Log one event with fields; nothing at all while logging is off."""
    logger = _state["logger"]
    if logger is not None:
        getattr(logger, level)(event, **fields)


def append_error_line(path: str, **fields: Any) -> None:
    """Append one JSON line to an error log file (a hook's record of what went wrong).

    Each line is whole or not there: a write a full disk (or `ulimit -f`) cuts short is cut back off the file, and
    a line torn by a writer that could not do so (killed mid-write) is ended before the next is appended, which ran
    on into it. Writers take turns on the file's lock (a second at most: then the line goes in without it), so one
    never reads another's line half written, nor cuts off lines appended after its own. (An earlier release writing
    at the same time takes no lock: a line of its, read half written, can leave an empty line before this one.)
    """
    import os
    import time

    import msgspec

    from events import osfs

    fields = {"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **fields}
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = osfs.open_append(path, readable=True)  # a FIFO planted there must not hang the hook
        try:
            osfs.lock_within(fd, 1.0)
            size = os.fstat(fd).st_size
            line = msgspec.json.encode(fields, enc_hook=str) + b"\n"
            if size and osfs.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line
            view = memoryview(line)
            try:
                while view:
                    view = view[os.write(fd, view):]
            except OSError:
                if os.fstat(fd).st_size == size + len(line) - len(view):  # nothing appended after it
                    os.ftruncate(fd, size)
                raise
        finally:
            osfs.release(fd)
    except OSError:
        pass
