"""The tool registry: name -> (input Struct, handler, description), and calling a tool by name.

An input is a msgspec Struct, usually derived from the Structs the CLI uses (`tool_input`),
so the schema a client sees comes from `msgspec.json.schema` and the arguments it sends
are checked by `msgspec.convert`. Nothing here imports the `mcp` SDK.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Annotated, Any, NamedTuple

import msgspec

from continuity.core.errors import UsageError
from continuity.core.store import Store, find_store
from continuity.worklog.plain import EXIT_CODE_MAX, EXIT_CODE_MIN

Handler = Callable[[Any, Store], dict[str, Any]]


class ToolSpec(NamedTuple):
    """A tool: the Struct its arguments convert to, the function that serves it, what it does."""

    input: type[msgspec.Struct]
    handler: Handler
    description: str


#: tool name -> its spec; the server's tool list is built from this, in this order.
TOOLS: dict[str, ToolSpec] = {}

#: Modules whose import registers tools (a later feature adds its own here).
TOOL_MODULES = ("continuity.adapters.mcp.tools", "continuity.adapters.mcp.task_tools",
                "continuity.adapters.mcp.work_tools", "continuity.adapters.mcp.team_tools",
                "continuity.adapters.mcp.recall_tools")


def load_tools() -> dict[str, ToolSpec]:
    """Every tool registered (their modules imported once), by name, in the order they are served."""
    import importlib

    for module in TOOL_MODULES:
        importlib.import_module(module)
    return TOOLS

#: Descriptions shown in the schemas, by field name (the Structs carry the types and defaults).
FIELD_HELP = {
    "message": "what happened, in one line or a few",
    "type": "work-log category (default: the tool's name); decision and question are remembered",
    "phase": "phase of the work, e.g. planning, editing, testing",
    "done": "finished items",
    "in_progress": "what is under way",
    "next": "next steps; the first is the next action a resumed session starts from",
    "blockers": "what blocks the work (a checkpoint that states any replaces the old ones)",
    "files": "files touched (an absolute path inside the project is recorded from its root)",
    "command": "a command that was run (exit_code and command_summary need it)",
    "note": "extra structured note (a JSON object)",
    "redact": "store secret-like text as [REDACTED:<rule>] instead of refusing the call",
    "project": "project name (default: from the store's config.json)",
    "host": "host tool: claude-code, codex, cursor, gemini, ... (default: the connected client's name, else env "
            "CONTINUITY_HOST)",
    "session_id": "session id (default: env CONTINUITY_SESSION_ID)",
    "gate": "who asked for the archive",
    "full": "record full structured refs (seed 004)",
    "max_chars": "size budget of the Markdown brief",
    "format": "md (a Markdown brief) or json (the bundle's data)",
    "record": "record what was served (a context.served event) for audits",
    "as_of": "answer as the log stood at this EVENT_ID or ISO time (audit replay)",
    "kind": "only events of this kind, e.g. checkpoint.recorded",
    "limit": "how many of the newest events to return",
}


#: Bounds the CLI's flags check (`bounded_int`) and the request Structs do not carry, by field name:
#: a tool takes what the command takes (an exit code of 10**30 was stored, past what every reader carries).
FIELD_BOUNDS = {
    "exit_code": msgspec.Meta(ge=EXIT_CODE_MIN, le=EXIT_CODE_MAX),
    "priority": msgspec.Meta(ge=0, le=1000),  # task create/update --priority
    "expected_version": msgspec.Meta(ge=1, le=10**9),  # task update --expected-version
    "context_used_percent": msgspec.Meta(ge=0, le=100),  # snapshot --context-percent
}


def _bounded(kind: Any, meta: msgspec.Meta) -> Any:
    """`int` or `int | None` with `meta`'s bounds on the integer."""
    if kind is int:
        return Annotated[int, meta]
    if kind == int | None:
        return Annotated[int, meta] | None
    raise ValueError(f"bounds for a field of type {kind!r}")


def tool(name: str, input: type[msgspec.Struct], description: str) -> Callable[[Handler], Handler]:
    """Register a tool under `name`: a decorator for its handler ``(request, store) -> dict``."""

    def add(handler: Handler) -> Handler:
        TOOLS[name] = ToolSpec(input, handler, description)
        return handler

    return add


def tool_input(name: str, doc: str, *parts: type[msgspec.Struct], filled: tuple[str, ...] = ("project",),
               help_for: dict[str, str] | None = None) -> type[msgspec.Struct]:
    """One flat input Struct with the fields of `parts`; the `filled` ones become optional (the server fills them).

    Unknown fields are refused, so a misspelt argument is an error, not silently dropped.
    """
    fields: list[tuple[str, Any, Any]] = []
    for part in parts:
        for field in msgspec.structs.fields(part):
            kind, default = field.type, field.default
            if field.name in FIELD_BOUNDS and kind in (int, int | None):  # a work item's `priority` is text
                kind = _bounded(kind, FIELD_BOUNDS[field.name])
            if field.name in filled:
                kind, default = kind | None, None
            elif field.default_factory is not msgspec.NODEFAULT:
                default = msgspec.field(default_factory=field.default_factory)
            description = (help_for or {}).get(field.name) or FIELD_HELP.get(field.name)
            if description:
                kind = Annotated[kind, msgspec.Meta(description=description)]
            fields.append((field.name, kind, default))
    names = [field[0] for field in fields]
    if len(set(names)) != len(names):
        raise ValueError(f"{name}: the parts share a field name: {names}")
    return msgspec.defstruct(name, fields, kw_only=True, frozen=True, forbid_unknown_fields=True,
                             module=__name__, namespace={"__doc__": doc})


def input_schema(struct: type[msgspec.Struct]) -> dict[str, Any]:
    """The Struct's JSON schema with the Struct itself at the root (MCP wants ``type: object`` there)."""
    schema = msgspec.json.schema(struct)
    definitions = dict(schema.get("$defs", {}))
    root: dict[str, Any] = definitions.pop(struct.__name__, schema)
    if not root.get("required"):
        root.pop("required", None)  # an empty list is invalid in older JSON Schema drafts some clients use
    return root | {"$defs": definitions} if definitions else root


def pick(struct: type[Any], request: Any) -> Any:
    """The `struct` part of a flat input made by `tool_input`."""
    return struct(**{name: getattr(request, name) for name in struct.__struct_fields__})


#: The connected client's name (`clientInfo.name` from `initialize`), while a tool runs.
CLIENT: contextvars.ContextVar[str | None] = contextvars.ContextVar("continuity_mcp_client", default=None)


def call(name: str, arguments: dict[str, Any] | None, *, root: str | None,
         client: str | None = None) -> dict[str, Any]:
    """Run one tool: check the arguments against its Struct, find the store, call the handler."""
    from continuity.adapters.mcp.wire import REFUSED

    if isinstance(arguments, dict) and isinstance(arguments.get(REFUSED), str):  # a request the wire could not read
        raise UsageError(f"{name or 'tools/call'}: {arguments[REFUSED]}")
    spec = TOOLS.get(name)
    if spec is None:
        raise UsageError(f"unknown tool {name!r} (tools: {', '.join(TOOLS)})")
    try:
        request = msgspec.convert(whole_numbers(arguments or {}, spec.input), spec.input)
    except msgspec.ValidationError as error:
        from events.problems import readable

        raise UsageError(f"{name}: invalid arguments: {readable(str(error), arguments)}") from None
    token = CLIENT.set(client)
    try:
        store = find_store(root=root)
        store.lock_wait = LOCK_WAIT_S
        return spec.handler(request, store)
    finally:
        CLIENT.reset(token)


#: How long a tool's write waits for the store's append lock before it is a tool error: a holder stopped
#: mid-append (Ctrl-Z, a hung mount) otherwise held the server, reads queued behind the write, until it went away.
#: Longer than a hook's (a sync installs its events under that lock: seconds for a big one); the client is told.
LOCK_WAIT_S = 20.0
_INTEGER_FIELDS: dict[type, frozenset[str]] = {}


def whole_numbers(arguments: Any, struct: type[msgspec.Struct]) -> Any:
    """The arguments with a whole float (`5.0`) given for an integer field as that integer: JSON Schema's
    `integer`, which the tool's schema states, takes it, and clients whose JSON numbers are floats send it so (it
    was refused: "Expected `int`, got `float`"). Only such fields: a float in free-form data (a note) is kept."""
    if not isinstance(arguments, dict):
        return arguments
    fields = _INTEGER_FIELDS.get(struct)
    if fields is None:
        fields = _INTEGER_FIELDS[struct] = _integer_fields(struct)
    changed = {key: int(value) for key, value in arguments.items()
               if key in fields and type(value) is float and value.is_integer()}
    return {**arguments, **changed} if changed else arguments


def _integer_fields(struct: type[msgspec.Struct]) -> frozenset[str]:
    import msgspec.inspect as inspect

    found = []
    for field in inspect.type_info(struct).fields:  # type: ignore[attr-defined]
        kind = field.type.type if isinstance(field.type, inspect.Metadata) else field.type
        kinds = kind.types if isinstance(kind, inspect.UnionType) else (kind,)
        kinds = tuple(k.type if isinstance(k, inspect.Metadata) else k for k in kinds)
        if any(isinstance(k, inspect.IntType) for k in kinds) and not any(isinstance(k, inspect.FloatType)
                                                                           for k in kinds):
            found.append(field.encode_name)
    return frozenset(found)
