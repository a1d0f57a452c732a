"""The MCP server over the tool registry, on the official `mcp` SDK's v2 low-level `Server`.

The SDK is imported inside the functions here, so importing this module stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from continuity.adapters.mcp.registry import TOOLS, call, input_schema, load_tools

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

INSTRUCTIONS = (
    "continuity keeps this project's working state across sessions. Start a session with resume_bundle; "
    "log what you finish; checkpoint with `next` before you stop or switch."
)


#: The most of an error a client is sent: a refusal quoting a 1 MB argument is not a 1 MB line.
ERROR_CHARS = 2000


def one_line(error: BaseException) -> str:
    """An error as the one line a client sees (never a traceback): whitespace runs as one space, a control or bidi
    character as a visible stand-in (a harness shows the line to a person, as the CLI's stderr does), at most
    ERROR_CHARS characters (the message was redacted whole before it is cut)."""
    from continuity.core.guard import broken_install
    from continuity.core.text import one_line as visible
    from continuity.core.text import shortened
    from events.errors import ContinuityError

    if isinstance(error, ContinuityError):
        return shortened(visible(" ".join(str(error).split())), ERROR_CHARS)
    said = broken_install(error)
    if said is not None:
        return shortened(visible(said), ERROR_CHARS)
    return f"internal error: {type(error).__name__}: {shortened(visible(' '.join(str(error).split())), ERROR_CHARS)}"


def as_tool_error(error: Exception, tool: str, redact_with: str = "`redact: true`", *,
                  also: Collection[str] = ()) -> Exception:
    """An error as a tool caller can act on it: CLI flags it names as the tool's arguments (or as one of `also`,
    arguments the caller gives apart), and a secret refusal offering the tool's `redact` argument (spelt
    `redact_with`), or none (never a CLI flag)."""
    from events.errors import SecretRefused

    if not isinstance(error, SecretRefused):
        said = _in_argument_names(error, tool, also)
    else:
        spec = TOOLS.get(tool)
        offered = spec is not None and "redact" in getattr(spec.input, "__struct_fields__", ())
        said = SecretRefused(error.field, error.rule, redactable=error.redactable,
                             redact_with=redact_with if offered else None)
    if said is not error and "warnings" in vars(error):  # what the command had found before it failed, kept
        said.warnings = list(error.warnings)  # type: ignore[attr-defined]
    return said


#: CLI flags whose tool argument is not the flag's name with `_` for `-`.
_ARGUMENT_OF = {"to": "to_agent", "context-percent": "context_used_percent", "file": "files", "kind": "kinds",
                "note-json": "note", "blocker": "blockers"}
#: A flag, with the placeholder after it (`--to AGENT`); or a whole command suggested (`(continuity work item set
#: T1 --status PENDING --reopen)`, in backquotes or parentheses), which is left as it is: it still runs as written.
#: A command is looked for up to 500 characters on: read to the end of the text from each `(continuity ` of an
#: argument's name echoed in a refusal, one of 400 kB took seconds.
_FLAG_OR_COMMAND = r"`continuity [^`]{0,500}`|\(continuity [^)]{0,500}\)|(?<![\w-])--([a-z][a-z-]*)(?: [A-Z_]+\b)?"


def _in_argument_names(error: Exception, tool: str, also: Collection[str] = ()) -> Exception:
    """A refusal the decisions word for the CLI (`give --to AGENT or --to-host HOST`), in the tool's argument names
    (`give to_agent or to_host`), where the tool has that argument; any other error as it is."""
    import re

    spec = TOOLS.get(tool)
    fields = set(getattr(spec.input, "__struct_fields__", ())) if spec is not None else set()
    fields.update(also)
    text = str(error)

    def named(found: re.Match[str]) -> str:
        if found[1] is None:  # a command suggested: as written
            return found[0]
        for argument in (found[1].replace("-", "_"), _ARGUMENT_OF.get(found[1])):
            if argument is not None and argument in fields:
                return argument
        return found[0]

    renamed = re.sub(_FLAG_OR_COMMAND, named, text)
    if renamed == text:
        return error
    try:
        again = type(error)(renamed)
    except TypeError:  # an error class that takes more than its message: left as it is
        return error
    return again


def _client_name(ctx: Any) -> str | None:
    """The client's `clientInfo.name` from `initialize` (the host its events are recorded from)."""
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", None)
    return name if isinstance(name, str) else None


#: The deepest result sent as structured content: the SDK's serializer (pydantic-core) refuses values
#: nested past 255 levels, and the JSON-RPC envelope around a result takes a few of them.
STRUCTURED_DEPTH = 200


#: The answer to a call still waiting for its turn when Ctrl-C came: not run, said at once.
NOT_RUN = "not run: the server was interrupted (Ctrl-C) before this call's turn came"


def build_server(root: str | None, stopping: Callable[[], bool] = lambda: False) -> Any:
    """The MCP server (`mcp.server.Server`) serving every registered tool; calls whose turn comes once `stopping`
    says so are answered NOT_RUN (Ctrl-C waits for the call in progress, not for every call read)."""
    import anyio
    import anyio.to_thread
    from mcp.server import Server
    from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

    from continuity import __version__
    from continuity.cli.output import shown_data
    from events.plain import nested_deeper_than

    load_tools()
    # Calls run one at a time in a worker thread: the store's locks and temp names are per process.
    serial = anyio.Lock()

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=[
            Tool(name=name, description=spec.description, input_schema=input_schema(spec.input))
            for name, spec in TOOLS.items()
        ])

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        try:
            async with serial:
                if stopping():
                    return CallToolResult(content=[TextContent(text=NOT_RUN)], is_error=True)
                client = _client_name(ctx)
                data = await anyio.to_thread.run_sync(
                    lambda: call(params.name, params.arguments, root=root, client=client))
            data, text = shown_data(data)  # C1 and bidi controls escaped, secrets redacted, as `--json` prints
        except Exception as error:  # every failure is a tool error of one line; the server keeps serving
            return CallToolResult(content=[TextContent(text=one_line(as_tool_error(error, params.name)))],
                                  is_error=True)
        if data is None or nested_deeper_than(data, STRUCTURED_DEPTH):  # an event stored before notes were bounded,
            # or forged
            return CallToolResult(content=[TextContent(text=text)])
        return CallToolResult(content=[TextContent(text=text)], structured_content=data)

    def schema_of(name: str) -> dict[str, Any] | None:
        return input_schema(TOOLS[name].input) if name in TOOLS else None

    return Server("continuity", version=__version__, instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool, get_tool_input_schema=schema_of)


def serve(root: str | None, *, exiting: bool = True) -> None:
    """Serve MCP over this process's stdin and stdout until the client closes stdin. `exiting`: the process exits
    once this returns (both entries do; a program serving in-process and going on says False)."""
    import anyio
    from mcp.server.stdio import stdio_server

    from continuity.adapters.mcp import wire

    wire.install()  # a request the SDK would drop unanswered is read again, or answered as an error
    claimed = wire.StdinLines.claim()  # read so that Ctrl-C or a client gone from stdout ends the wait for a line
    interrupted = _Interrupts()
    server = build_server(root, stopping=lambda: interrupted.seen)

    async def run() -> None:
        interrupted.follow()
        async with stdio_server(stdin=claimed[0] if claimed else None) as streams:  # type: ignore[arg-type]
            read, write = wire.answered_before_eof(*streams)  # stdin's end waits for what is in flight
            interrupted.answering = read, claimed[0] if claimed else None  # a first Ctrl-C with a call in progress
            await server.run(read, write, server.create_initialization_options())

    try:
        try:
            anyio.run(run)
        except* (BrokenPipeError, ConnectionResetError):  # the client stopped reading: it left, as at stdin's end
            pass
        except* OSError as group:  # stdout took no more (a full disk, /dev/full): the guard's one line, exit 5
            raise _first_os_error(group) from None
        if interrupted.seen:  # Ctrl-C ended stdin once the call in progress was answered
            raise KeyboardInterrupt
    except BaseException:
        if interrupted.seen:  # Ctrl-C: whatever the SDK's tasks raised as they were cancelled, it is an interrupt
            raise KeyboardInterrupt from None
        raise
    finally:
        interrupted.unfollow(exiting)
        if claimed:
            claimed[1]()


def _first_os_error(group: BaseExceptionGroup[OSError]) -> OSError:
    """The first OSError of a group of them (groups nest: a task group's inside the server's)."""
    for each in group.exceptions:
        if isinstance(each, BaseExceptionGroup):
            return _first_os_error(each)
        return each
    return OSError("no error")


class _Interrupts:
    """Whether SIGINT arrived while serving, told without taking Ctrl-C from the event loop.

    asyncio turns the first SIGINT into a cancel of the main task and raises KeyboardInterrupt
    only when that task ends cancelled; the SDK's task groups can end with the errors their
    streams raise as they close (`BrokenResourceError` from a reader whose consumer was
    cancelled, a few ms after a request line), which then reached the user as an internal error.
    The loop's own handler still runs: this one only notes the signal before calling it.
    """

    def __init__(self) -> None:
        self.seen = False
        self._passed = False  # asyncio's handler was called: it raises KeyboardInterrupt anywhere from its second
        self._handler: Any = None
        #: The read stream that knows which requests are owed an answer (wire._HeldRead) and stdin's reader (wire.
        #: StdinLines): a first Ctrl-C with answers owed ends stdin, so they are answered before the server stops.
        self.answering: tuple[Any, Any] | None = None

    def follow(self) -> None:
        import asyncio
        import signal

        previous = signal.getsignal(signal.SIGINT)
        if not callable(previous):  # SIGINT ignored or left to the system: nothing to follow
            return
        loop = asyncio.get_running_loop()

        def noted(signum: int, frame: Any) -> None:
            first, self.seen = not self.seen, True
            read, stdin = self.answering or (None, None)
            if first and read is not None and stdin is not None and read.owed():
                # as at stdin's end: the call in progress is answered (those waiting for their turn as NOT_RUN),
                # then the server stops (exit 130)
                loop.call_soon_threadsafe(stdin.end)
                return
            if not self._passed:  # cancel now (a second Ctrl-C: the call in progress is not waited for); asyncio's
                self._passed = True  # handler, called again, raised KeyboardInterrupt in whatever frame ran: a
                previous(signum, frame)  # traceback, or a hang as the loop shut down

        self._handler = noted
        signal.signal(signal.SIGINT, noted)

    def unfollow(self, exiting: bool) -> None:
        """Serving is over. `exiting`: all the process has left to do is exit (Python waits there for the SDK's
        threads and runs the exit hooks), so a Ctrl-C from here exits 130 at once, as a kill would (every answer is
        written): Python's own handler raised KeyboardInterrupt in whatever frame ran (a traceback, exit by SIGINT)."""
        import signal

        import continuity

        if self._handler is not None and signal.getsignal(signal.SIGINT) is self._handler:
            signal.signal(signal.SIGINT, continuity._interrupted_starting if exiting else signal.default_int_handler)
