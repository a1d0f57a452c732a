"""Write docs/cli.md (from the real `--help` output and the exit-code table),
docs/events.md (from the event Structs) and the read-model table of docs/projections.md
(from the registry and each model's bounds).

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

Generated from `--help` by `scripts/gen_docs.py`; `tests/cli/test_docs.py` fails when
this file and the CLI disagree. Every command takes `--json` (print the result as JSON;
on failure also a JSON object `{"ok": false, "exit_code", "message"}` on stdout),
`--root DIR` (the project root; default: search upward from the working directory, or
`CONTINUITY_ROOT`) and `--debug` (show a traceback on internal errors).

Errors are one line on stderr, `continuity: error: <message>`, and one of these exit codes.
Reads (`status`, `restore`, `resume-bundle`) fail open: problems are `continuity: warning:`
lines on stderr and the exit code stays 0. The seed-004 command `runtime-continuity` has
its own contract: see [compat.md](compat.md).

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
compact, UTF-8, every field present). `kind` is the type tag; `v` the version of that
type's schema. `event_id`, `created_at` and `prev` are assigned by the log under its
lock: `created_at` is the hybrid-logical-clock time (never before the previous head's),
`event_id` is `RCE-<stamp>-<node>`, and `prev` is the SHA-256 of the bytes of the head
event the writer saw (null for a first event). The file is named
`<stamp>-<node>-<first 12 hex digits of its own SHA-256>.json` in `events/<YYYYMMDD>/`.

Field names follow seed 004's event, so a seed-004 event file reads as a continuity event
(an upcaster gives it `kind` `checkpoint.recorded` when its `type` is `checkpoint`, else
`work.logged`).

Evolution rules: new fields get defaults; a field never changes type; a tag never changes;
a new version of a type registers an upcaster from the previous one
(`Codec.register(kind, from_version)`), so old files stay readable forever. Readers ignore
fields they do not know; projections skip unknown kinds with a warning, `verify` reports them.

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


if __name__ == "__main__":
    (ROOT / "docs" / "cli.md").write_text(render())
    (ROOT / "docs" / "events.md").write_text(render_events())
    projections_md = ROOT / "docs" / "projections.md"
    projections_md.write_text(with_models(projections_md.read_text()))
    print("wrote docs/cli.md, docs/events.md and the read-model table of docs/projections.md")
