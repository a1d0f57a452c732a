"""The Python API: continuity's commands for harnesses written in Python.

    from continuity.api import Continuity

    store = Continuity(host="my-harness")          # the store found from the working directory upward
    store.log(message="parsed the config", files=["src/config.py"])
    store.checkpoint(message="parser done", next=["write the tests"])
    brief = store.resume_bundle(format="md")["brief"]
    store.call("create_task", title="Fix login")    # every MCP tool, by name

Each call is the MCP tool of that name (docs/adapters.md lists them), served by the same
registry: its arguments are checked against the same Struct (an unknown or misspelt one is
refused), the same decisions write the same events, and the answer is the tool's structured
result as a dict. A refusal raises the command's error (`continuity.core.errors`), whose
`exit_code` is the CLI's for the same refusal: `UsageError` (2), `SecretRefused` (4),
`WriteFailed` (5), ... (`park` that wrote nothing and `resume` past `max_age` answer their verdict instead,
in `ok`/`exit_code` and `freshness_failure`, as the MCP tools do). Arguments are JSON's types (`as_sent`).
Identity comes from the arguments (`agent_id`, `session_id`, `host`
where a tool takes them), else `CONTINUITY_AGENT`, `CONTINUITY_SESSION_ID` and the rest, as
for the CLI; `host` given here stands where an MCP client's name would.

Calls from several threads of one process run one at a time (the store's lock and temp names
are per process, as in the MCP server); several processes may call at once, as CLI commands
do, a process forked while another thread was in a call too. An answer shows what looks like a
secret redacted, as every MCP tool's answer and the CLI's `--json` do (an event another clone
wrote can hold one: the guard runs on writes).
"""

from __future__ import annotations

import os
import threading
from typing import Any

__all__ = ["Continuity"]

_SERIAL = threading.Lock()


def _serial_in_the_child() -> None:
    """A new lock in a forked child: one that another thread of the parent held at the fork is never released in the
    child, whose first call then waited for good."""
    global _SERIAL
    _SERIAL = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX only (Windows has no fork)
    os.register_at_fork(after_in_child=_serial_in_the_child)


class Continuity:
    """The commands of one project's store: `root` (or `CONTINUITY_ROOT`), else found from the working directory
    upward at each call, as the CLI finds it."""

    def __init__(self, root: str | os.PathLike[str] | None = None, *, host: str | None = None) -> None:
        """`root`: a path (text or `os.PathLike`), a relative one taken from the working directory now (a later
        `os.chdir` does not move it); `host`: text. Anything else raises `UsageError`."""
        from continuity.core.errors import UsageError

        if root is not None and not isinstance(root, str):
            if not isinstance(root, os.PathLike) or not isinstance(path := os.fspath(root), str):
                raise UsageError(f"root: a path as text or os.PathLike of text, not {type(root).__name__}")
            root = path
        if host is not None and not isinstance(host, str):  # was dropped without a word (the environment's used)
            raise UsageError(f"host: text, not {type(host).__name__}")
        if root and "\0" not in root:  # "" searches upward from the working directory at each call, as `--root ""`
            import contextlib

            with contextlib.suppress(OSError):  # the working directory is gone: the call says the store is not found
                root = os.path.abspath(root)
        self.root: str | None = root
        self.host = host

    def call(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        """Run the tool named `tool` with these arguments; its answer."""
        import msgspec

        from continuity.adapters.mcp.registry import call, load_tools
        from continuity.adapters.mcp.server import as_tool_error
        from continuity.cli.output import shown_data
        from events.errors import ContinuityError

        load_tools()
        sent = as_sent(tool, arguments)
        try:
            with _SERIAL:
                data = call(tool, sent, root=self.root, client=self.host)
        except ContinuityError as error:  # worded for this caller: `redact=True`, argument names, not CLI flags
            said = as_tool_error(error, tool, "`redact=True`", also=("root",))
            if said is error:
                raise
            raise said from None
        data, _ = shown_data(data)  # secrets redacted, C1 and bidi controls escaped: as the MCP tool answers
        found: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(data))  # JSON's types, as a client reads
        return found

    @staticmethod
    def tools() -> list[str]:
        """The names `call` takes, in the order the MCP server lists them."""
        from continuity.adapters.mcp.registry import load_tools

        return list(load_tools())

    def log(self, **arguments: Any) -> dict[str, Any]:
        """Record a work-log entry (`message`, `done`, `next`, `blockers`, `files`, `command`, ...)."""
        return self.call("log", **arguments)

    def checkpoint(self, **arguments: Any) -> dict[str, Any]:
        """Record a phase checkpoint to resume from (`in_progress`, `next` and `blockers` as they stand now)."""
        return self.call("checkpoint", **arguments)

    def archive(self, **arguments: Any) -> dict[str, Any]:
        """Take an archive of the working state."""
        return self.call("archive", **arguments)

    def resume_bundle(self, **arguments: Any) -> dict[str, Any]:
        """What a new session needs to resume (`format`: "md" for the brief, "json" for the data)."""
        return self.call("resume_bundle", **arguments)

    def status(self, **arguments: Any) -> dict[str, Any]:
        """The newest archive's age, whether to archive now, and the next action."""
        return self.call("status", **arguments)

    def events(self, **arguments: Any) -> dict[str, Any]:
        """The newest events of the log (`kind`, `limit`), oldest first."""
        return self.call("events", **arguments)


#: Deeper than this, arguments are refused (an MCP request's limit: continuity/adapters/mcp/wire.py).
DEPTH = 200
_JSON_TYPES = "text, int, float, bool, None, a list or a dict with text keys"


def as_sent(tool: object, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments as an MCP client's arrive: JSON's types only (a `str` subclass as `str`, a tuple as a list);
    a lone surrogate as the CLI reads its arguments (an `os.fsdecode`d name as the UTF-8 its bytes are, else
    U+FFFD). Anything else (bytes, sets, objects, NaN, keys that are not text) raises `UsageError`: never stored
    in another spelling, never past the secret guard in an encoding it does not read."""
    from continuity.core.errors import UsageError
    from events.plain import nested_deeper_than

    if not isinstance(tool, str):
        raise UsageError(f"a tool's name is text, not {type(tool).__name__} (Continuity.tools() lists them)")
    if nested_deeper_than(arguments, DEPTH):
        raise UsageError(f"{tool}: the arguments are nested more than {DEPTH} levels deep; nothing written")

    def plain(value: Any, where: str) -> Any:
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, str):
            return _text(value)
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise UsageError(f"{tool}: invalid arguments: {where} is {value}, which JSON cannot hold")
            return float(value)
        if isinstance(value, list | tuple):
            return [plain(item, f"{where}[{index}]") for index, item in enumerate(value)]
        if isinstance(value, dict):
            found: dict[str, Any] = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise UsageError(f"{tool}: invalid arguments: {where} has a key of type {type(key).__name__} "
                                     f"(keys are text)")
                found[_text(key)] = plain(item, f"{where}.{_text(key)}" if where else _text(key))
            return found
        raise UsageError(f"{tool}: invalid arguments: {where} is {type(value).__name__}, not one of JSON's types "
                         f"({_JSON_TYPES})")

    sent: dict[str, Any] = plain(arguments, "")
    return sent


def _text(value: str) -> str:
    """`value` as an exact `str`, its lone surrogates read as `facts.path_text` reads a path's."""
    value = str.__str__(value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:  # a surrogate no file name decodes to: U+FFFD, as MCP's wire reads it
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value
