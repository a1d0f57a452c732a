"""Write docs/cli.md (from the real `--help` output and the exit-code table),
docs/events.md (from the event Structs), the read-model table of docs/projections.md
(from the registry and each model's bounds), events/plain_table.py (the Structs'
constraints as plain data, for the plain append path), events/kind_table.py (each event
kind's module, class and version, so the codec imports an event family only when it meets
one) and projections/model_table.py (each read model's format and the event kinds it folds,
so a catch-up need not import a model's module for events it does not fold).

Run after changing a command or an event type: `.venv/bin/python scripts/gen_docs.py`.
Tests fail when the files and the code disagree.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HEADER = """# continuity CLI reference

Generated from `--help` by `scripts/gen_docs.py` (`--check` writes nothing and says what is out
of date); `tests/cli/test_docs.py` fails when this file and the CLI disagree. Every command takes
`--json` (print the result as JSON; on failure also a JSON object `{"ok": false, "exit_code",
"message"}` on stdout; DEL, C1 controls, bidi marks and line separators inside strings are written
as `\\uXXXX` escapes, the same JSON with nothing a terminal would act on), `--root DIR` (the project
root; default: search upward from the working directory, or `CONTINUITY_ROOT`) and `--debug` (show
a traceback on internal errors).

Errors are one line on stderr, `continuity: error: <message>`, and one of these exit codes.
Text printed for people shows terminal controls and bidi marks as visible stand-ins.
Reads (`status`, `restore`, `resume-bundle`) fail open: problems in the store they find are
`continuity: warning:` lines on stderr and the exit code stays 0 (with no store at all they
exit 3). Reports (`verify`, `doctor`, `work status`, `work start`, `work audit`) print their
whole report on stdout and exit 1 when it finds a problem; with `--json` that report carries
`"ok": false`, `exit_code` and a one-line `message`. A command whose stdout's reader leaves
early (`continuity verify | grep -q ...`) keeps its own exit code: a report's verdict, a refusal's.
The seed-004 command `runtime-continuity` has
its own contract: see [compat.md](compat.md); so do seed 000's team commands (`snapshot`,
`resume`, `park`, `checkpoint --role`), whose messages, banners and exit codes are seed 000's:
see [team.md](team.md).

## Exit codes

| code | meaning |
|---:|---|
"""


def command_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path in the parser tree, depth first."""
    paths: list[tuple[str, ...]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                paths.append((*prefix, name))
                paths.extend(command_paths(sub, (*prefix, name)))
    return paths


def help_text(argv: list[str]) -> str:
    """What `continuity ARGV --help` prints, at a fixed width."""
    from continuity.cli import main

    os.environ["COLUMNS"] = "100"
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        main([*argv, "--help"])
    return buffer.getvalue().rstrip() + "\n"


def render() -> str:
    """The whole of docs/cli.md."""
    from continuity.cli.common import build_parser
    from continuity.core.errors import EXIT_CODES

    parts = [HEADER]
    parts.extend(f"| {code} | {meaning} |\n" for code, meaning in EXIT_CODES.items())
    parts.append("\n## continuity\n\n```text\n" + help_text([]) + "```\n")
    for path in command_paths(build_parser()):
        parts.append(f"\n## continuity {' '.join(path)}\n\n```text\n{help_text(list(path))}```\n")
    return "".join(parts)


EVENTS_HEADER = """# Event catalogue

Generated from the event Structs by `scripts/gen_docs.py`; `tests/cli/test_docs.py` fails
when this file and the code disagree. The JSON Schema of every type is written to
`.agent/runtime-continuity/event.schema.json` by `continuity init`.

## The envelope

Every event is one JSON object, stored as canonical bytes (keys sorted at every level,
compact, UTF-8, every field present but `written_at`). `kind` is the type tag; `v` the version of that
type's schema. `event_id`, `created_at`, `written_at` and `prev` are assigned by the log under its
lock: `created_at` is the hybrid-logical-clock time (never before the previous head's),
`event_id` is `RCE-<stamp>-<node>`, and `prev` is the SHA-256 of the bytes of the head
event the writer saw (null for a first event). `written_at` is there only when `created_at`
ran more than a second past the writer's own clock (the head it follows was stamped ahead:
a teammate's clock running fast, synced in): it is the writer's clock then, and presence,
leases and sessions' activity count time from it (docs/architecture.md, "Clocks"). A release
before it reads such an event as before, without the field. The file is named
`<stamp>-<node>-<first 12 hex digits of its own SHA-256>.json` in `events/<YYYYMMDD>/`.

Field names follow seed 004's event, so a seed-004 event file reads as a continuity event
(an upcaster gives it `kind` `checkpoint.recorded` when its `type` is `checkpoint`, else
`work.logged`).

Evolution rules: new fields get defaults; a field never changes type (a string's constraints may
widen, as ids did for seed 004: a release from before reads a value past its own as undecodable and
skips that event with a warning, docs/sync.md "Clones on different versions"); a tag never changes;
a new version of a type registers an upcaster from the previous one
(`Codec.register(kind, from_version)`), so old files stay readable forever. Readers ignore
fields they do not know; projections skip unknown kinds with a warning, `verify` reports them.
An event of a known kind whose `v` is newer than this release reads counts as unknown too (named
`<kind> v<N>` in the warning and in `verify`'s `unknown_types`), never as the version this release
knows: the release that reads that version rebuilds the read models that went past it, once.

"""


def render_events() -> str:
    """The whole of docs/events.md."""
    import msgspec

    from events.base import CommandRef, Event, Refs, Summary, kind_of
    from events.catalog import EVENT_TYPES

    def table(struct: type, skip: frozenset[str] = frozenset()) -> str:
        rows = ["| field | type | default |", "|---|---|---|"]
        for field in msgspec.structs.fields(struct):
            if field.name in skip:
                continue
            if field.default is not msgspec.NODEFAULT:
                default = repr(field.default)
            elif field.default_factory is not msgspec.NODEFAULT:
                default = f"{field.default_factory.__name__}()"
            else:
                default = "required"
            rows.append(f"| `{field.name}` | `{_describe(field.type)}` | `{default}` |")
        return "\n".join(rows) + "\n"

    envelope = frozenset(f.name for f in msgspec.structs.fields(Event))
    parts = [EVENTS_HEADER, "### Envelope fields\n\n", table(Event)]
    for struct in (Summary, Refs, CommandRef):
        parts.append(f"\n### `{struct.__name__}`\n\n{(struct.__doc__ or '').strip()}\n\n{table(struct)}")
    parts.append("\n## Event types\n")
    for event_type in EVENT_TYPES:
        version = next(f.default for f in msgspec.structs.fields(event_type) if f.name == "v")
        overrides = [f for f in msgspec.structs.fields(event_type)
                     if f.name in envelope and f.default != next(
                         g.default for g in msgspec.structs.fields(Event) if g.name == f.name)]
        extra = frozenset(f.name for f in msgspec.structs.fields(event_type)) - envelope
        parts.append(
            f"\n### `{kind_of(event_type)}` (v{version}) — `{event_type.__name__}`\n\n"
            f"{(event_type.__doc__ or '').strip()} Module `{event_type.__module__}`.\n\n"
        )
        for field in overrides:
            parts.append(f"- `{field.name}` defaults to `{field.default!r}`\n")
        if extra:
            parts.append("\nFields beyond the envelope:\n\n")
            parts.append(table(event_type, skip=envelope))
        else:
            parts.append("\nNo fields beyond the envelope.\n")
    return "".join(parts)


def _describe(annotation: object) -> str:
    """A readable spelling of a field's type, constraints included."""
    import typing

    import msgspec

    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *metas = typing.get_args(annotation)
        limits = []
        for meta in metas:
            if isinstance(meta, msgspec.Meta):
                if meta.max_length is not None:
                    limits.append(f"max {meta.max_length}")
                if meta.pattern is not None:
                    limits.append("pattern")
        return f"{_describe(base)} ({', '.join(limits)})" if limits else _describe(base)
    if origin in (typing.Union, __import__("types").UnionType):
        return " or ".join(_describe(arg) for arg in typing.get_args(annotation))
    if origin is not None:
        args = ", ".join("..." if arg is Ellipsis else _describe(arg) for arg in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if annotation is type(None):
        return "null"
    return getattr(annotation, "__name__", str(annotation))


MODELS_START = "<!-- read-models: generated by scripts/gen_docs.py -->\n"
MODELS_END = "<!-- end of read-models -->\n"


def render_models() -> str:
    """The read-model table: each registered model, its format, its folds and its bounds."""
    from events.base import Event, kind_of
    from projections.registry import REGISTRY

    rows = ["| model | format | module | folds | bounds |", "|---|---:|---|---|---|"]
    for model in REGISTRY.values():
        folds = ", ".join("every event" if kind is Event else f"`{kind_of(kind)}`" for kind in model.folds)
        bounds = ", ".join(f"`{name}` = {value}" for name, value in model.bounds.items()) or "none"
        module = model.folds[next(iter(model.folds))].__module__
        rows.append(f"| `{model.name}` | {model.format} | `{module}` | {folds} | {bounds} |")
    return MODELS_START + "\n".join(rows) + "\n" + MODELS_END


def with_models(text: str) -> str:
    """docs/projections.md with its read-model table replaced by the generated one."""
    start, end = text.index(MODELS_START), text.index(MODELS_END) + len(MODELS_END)
    return text[:start] + render_models() + text[end:]


PLAIN_TABLE_HEADER = '''"""The event Structs' fields and constraints as plain data. GENERATED by scripts/gen_docs.py.

events/plain.py checks and completes events against this table without loading msgspec;
tests/unit/test_plain.py fails when the table and the Structs (events/*.py) disagree.
A type is a tuple: ("str", min_length, max_length, pattern), ("int", ge, le),
("bool",), ("none",), ("any",), ("literal", values), ("union", types), ("tuple", item,
min_length, max_length), ("dict", key, value, min_length, max_length), ("struct", name).
A field is (name, type, default); REQUIRED marks a field without one, UNSET one left out
until set, and a struct's default factory is written as {} (the struct with all its own defaults).
"""

'''


def plain_type(info: object, structs: dict[str, object]) -> tuple[object, ...]:
    """One msgspec type (from msgspec.inspect) as the plain table spells it; nested Structs go to `structs`."""
    from msgspec import inspect as mi

    if isinstance(info, mi.StrType):
        return ("str", info.min_length, info.max_length, info.pattern)
    if isinstance(info, mi.IntType):
        if info.multiple_of is not None:
            raise ValueError("multiple_of has no plain spelling")
        ge = info.ge if info.gt is None else info.gt + 1
        le = info.le if info.lt is None else info.lt - 1
        return ("int", ge, le)
    if isinstance(info, mi.BoolType):
        return ("bool",)
    if isinstance(info, mi.NoneType):
        return ("none",)
    if isinstance(info, mi.AnyType):
        return ("any",)
    if isinstance(info, mi.LiteralType):
        return ("literal", tuple(info.values))
    if isinstance(info, mi.UnionType):
        return ("union", tuple(plain_type(member, structs) for member in info.types))
    if isinstance(info, mi.VarTupleType):
        return ("tuple", plain_type(info.item_type, structs), info.min_length, info.max_length)
    if isinstance(info, mi.DictType):
        return ("dict", plain_type(info.key_type, structs), plain_type(info.value_type, structs),
                info.min_length, info.max_length)
    if isinstance(info, mi.StructType):
        name = info.cls.__name__
        if name not in structs:
            structs[name] = ()  # a placeholder against recursion
            structs[name] = plain_fields(info, structs)
        return ("struct", name)
    raise ValueError(f"no plain spelling for {info!r}")


def plain_fields(info: object, structs: dict[str, object]) -> tuple[object, ...]:
    """The fields of one Struct type: (name, type, default)."""
    import msgspec

    fields = []
    for field in info.fields:  # type: ignore[attr-defined]
        if field.default is not msgspec.NODEFAULT:
            default: object = field.default
        elif field.default_factory is not msgspec.NODEFAULT:
            made = field.default_factory()
            default = {} if isinstance(made, msgspec.Struct) else msgspec.to_builtins(made)
        elif not field.required:  # `msgspec.UNSET`: left out of the event until set
            default = "UNSET"
        else:
            default = "REQUIRED"
        fields.append((field.name, plain_type(field.type, structs), default))
    return tuple(fields)


def plain_table() -> tuple[int, dict[str, object], dict[str, str]]:
    """(MAX_EVENT_BYTES, structs by name, struct name by event kind), derived from the Structs."""
    from msgspec import inspect as mi

    from events.base import MAX_EVENT_BYTES, kind_of
    from events.catalog import EVENT_TYPES

    structs: dict[str, object] = {}
    kinds: dict[str, str] = {}
    for event_type in EVENT_TYPES:
        plain_type(mi.type_info(event_type), structs)
        kinds[kind_of(event_type)] = event_type.__name__
    return MAX_EVENT_BYTES, structs, kinds


def render_plain_table() -> str:
    """The whole of events/plain_table.py."""
    import pprint

    limit, structs, kinds = plain_table()
    body = pprint.pformat(structs, width=110, sort_dicts=True).replace("'REQUIRED'", "REQUIRED").replace(
        "'UNSET'", "UNSET")
    return (PLAIN_TABLE_HEADER + "from __future__ import annotations\n\nTYPE_CHECKING = False\nif TYPE_CHECKING:\n"
            "    from typing import Any\n\n"
            'REQUIRED = "<required>"\n'
            'UNSET = "<unset>"\n'
            f"MAX_EVENT_BYTES = {limit}\n\n"
            f"#: kind -> the Struct an event of that kind is (its fields, in STRUCTS)\n"
            f"KINDS = {pprint.pformat(kinds, width=110, sort_dicts=True)}\n\n"
            f"#: struct name -> its fields: (name, type, default)\n"
            f"STRUCTS: dict[str, tuple[tuple[Any, ...], ...]] = {body}\n")


MODEL_TABLE_HEADER = '''"""Each read model's format and the event kinds it folds. GENERATED by scripts/gen_docs.py.

projections/registry.py reads this instead of importing a model's module: a catch-up of events
none of whose kinds a model folds moves only its counters, so a session start in a project that
never used tasks, teams or workstreams does not load those folds. tests/unit/test_registry.py
fails when this table and the models (projections/*.py) disagree.
"""
'''


def model_table() -> dict[str, tuple[int, dict[str, str] | None]]:
    """name -> (format, kind -> the light `passes` test of its fold ("" for none; "*": any other kind's), or None
    when the model folds every event with folds of its own module), from the registered models."""
    from events.base import Event, kind_of
    from events.catalog import EVENT_TYPES
    from projections.registry import REGISTRY

    table: dict[str, tuple[int, dict[str, str] | None]] = {}
    for name in REGISTRY:
        entry = REGISTRY[name]
        model = getattr(entry, "real", entry)
        folds: dict[str, str] | None = {}
        for event_type in EVENT_TYPES:
            fold, passes = model.entry_for(event_type)
            if fold is None:
                continue
            light = passes is not None and passes.__module__ == "projections.passes"
            folds[kind_of(event_type)] = passes.__name__ if light else ""
        if Event in model.folds:  # a kind no release of the catalog knows yet goes to this fold too
            test = model.passes.get(Event)
            if test is None:
                folds = None  # every kind loads it: nothing to look up
            else:
                folds["*"] = test.__name__ if test.__module__ == "projections.passes" else ""
        table[name] = (model.format, folds)
    return table


KIND_TABLE_HEADER = '''"""Every event kind: its module, class and current version. GENERATED by scripts/gen_docs.py.

events/codec.py's default codec reads this instead of importing events/catalog.py, so a process imports the
module of an event family only when it meets one of its events (a session start in a project that never used
tasks, teams or workstreams loads none of their Structs). tests/unit/test_model_table.py fails when this table
and the catalog disagree.
"""
'''


def render_kind_table() -> str:
    """The whole of events/kind_table.py."""
    import pprint

    from events.base import kind_of
    from events.catalog import EVENT_TYPES
    from events.codec import _default_version

    kinds = {kind_of(event_type): (event_type.__module__, event_type.__name__, _default_version(event_type))
             for event_type in EVENT_TYPES}
    body = pprint.pformat(kinds, width=110, sort_dicts=False)
    return (KIND_TABLE_HEADER + "\n#: kind -> (module, class, current version), in the catalog's order\n"
            f"KINDS: dict[str, tuple[str, str, int]] = {body}\n")


def render_model_table() -> str:
    """The whole of projections/model_table.py."""
    import pprint

    body = pprint.pformat(model_table(), width=110, sort_dicts=False)
    return (MODEL_TABLE_HEADER + "\n#: name -> (format, kind -> the `passes` test of its fold in "
            "projections/passes.py\n#: (\"\": none; \"*\": any other kind), or None: every kind)\n"
            f"MODELS: dict[str, tuple[int, dict[str, str] | None]] = {body}\n")


def main(argv: list[str]) -> int:
    """Write the generated files; with --check, write nothing and exit 1 naming each one that is out of date."""
    if any(arg not in ("--check",) for arg in argv):
        print("usage: scripts/gen_docs.py [--check]", file=sys.stderr)
        return 2
    projections_md = ROOT / "docs" / "projections.md"
    wanted = {
        ROOT / "docs" / "cli.md": render(),
        ROOT / "docs" / "events.md": render_events(),
        projections_md: with_models(projections_md.read_text()),
        ROOT / "events" / "plain_table.py": render_plain_table(),
        ROOT / "projections" / "model_table.py": render_model_table(),
        ROOT / "events" / "kind_table.py": render_kind_table(),
    }
    if "--check" in argv:
        stale = [path.relative_to(ROOT).as_posix() for path, text in wanted.items()
                 if not path.exists() or path.read_text() != text]
        for name in stale:
            print(f"out of date: {name} (run scripts/gen_docs.py)", file=sys.stderr)
        return 1 if stale else 0
    for path, text in wanted.items():
        path.write_text(text)
    print("wrote docs/cli.md, docs/events.md, the read-model table of docs/projections.md, events/plain_table.py, "
          "events/kind_table.py and projections/model_table.py")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
