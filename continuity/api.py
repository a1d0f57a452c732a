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
`WriteFailed` (5), ... Identity comes from the arguments (`agent_id`, `session_id`, `host`
where a tool takes them), else `CONTINUITY_AGENT`, `CONTINUITY_SESSION_ID` and the rest, as
for the CLI; `host` given here stands where an MCP client's name would.

Calls from several threads of one process run one at a time (the store's lock and temp names
are per process, as in the MCP server); several processes may call at once, as CLI commands
do.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["Continuity"]

_SERIAL = threading.Lock()


class Continuity:
    """The commands of one project's store: `root` (or `CONTINUITY_ROOT`), else found from the working directory
    upward at each call, as the CLI finds it."""

    def __init__(self, root: str | None = None, *, host: str | None = None) -> None:
        self.root = root
        self.host = host

    def call(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        """Run the tool named `tool` with these arguments; its answer."""
        import msgspec

        from continuity.adapters.mcp.registry import call, load_tools
        from continuity.adapters.mcp.server import as_tool_error
        from events.errors import ContinuityError

        load_tools()
        try:
            with _SERIAL:
                data = call(tool, arguments, root=self.root, client=self.host)
        except ContinuityError as error:  # worded for this caller: `redact=True`, argument names, not CLI flags
            said = as_tool_error(error, tool, "`redact=True`")
            if said is error:
                raise
            raise said from None
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
