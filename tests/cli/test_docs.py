"""The docs say what the code does: cli.md from --help, events.md from the Structs."""

from __future__ import annotations

import re

import pytest

from tests.helpers import REPO, gen_docs


def test_cli_md_matches_the_real_help(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/cli.md is exactly what scripts/gen_docs.py renders from --help today."""
    monkeypatch.setenv("COLUMNS", "100")
    expected = gen_docs().render()  # type: ignore[attr-defined]
    assert (REPO / "docs" / "cli.md").read_text() == expected, "run scripts/gen_docs.py"


def test_every_command_has_help_and_a_docs_section() -> None:
    """Each command in the parser has a help line and its own section in docs/cli.md."""
    from continuity.cli.common import build_parser

    module = gen_docs()
    text = (REPO / "docs" / "cli.md").read_text()
    paths = module.command_paths(build_parser())  # type: ignore[attr-defined]
    assert {p[0] for p in paths} >= {"init", "log", "checkpoint", "events", "verify"}
    for path in paths:
        assert f"## continuity {' '.join(path)}\n" in text, path


def test_exit_code_table_lists_every_code_once() -> None:
    """The exit-code table has one line per code in continuity.core.errors.EXIT_CODES."""
    from continuity.core.errors import EXIT_CODES

    text = (REPO / "docs" / "cli.md").read_text()
    rows = re.findall(r"^\| (\d+) \| (.+) \|$", text, flags=re.M)
    assert [int(code) for code, _ in rows] == list(EXIT_CODES)


def test_the_guard_exits_interrupted_with_the_code_the_table_gives() -> None:
    """The guard (on the hook path, so it keeps its own constant) and the table agree on Ctrl-C's code."""
    from continuity.core import errors, guard

    assert guard.EXIT_INTERRUPTED == errors.EXIT_INTERRUPTED in errors.EXIT_CODES


def test_events_md_lists_every_type() -> None:
    """docs/events.md is current and names every event type with its version."""
    from events.base import kind_of
    from events.catalog import EVENT_TYPES

    text = (REPO / "docs" / "events.md").read_text()
    assert text == gen_docs().render_events(), "run scripts/gen_docs.py"  # type: ignore[attr-defined]
    for event_type in EVENT_TYPES:
        assert f"### `{kind_of(event_type)}` (v" in text


def test_projections_md_read_model_table_is_generated() -> None:
    """docs/projections.md lists every registered read model with its format and bounds, as generated."""
    from projections.registry import REGISTRY

    text = (REPO / "docs" / "projections.md").read_text()
    assert text == gen_docs().with_models(text), "run scripts/gen_docs.py"  # type: ignore[attr-defined]
    for model in REGISTRY.values():
        assert f"| `{model.name}` | {model.format} |" in text
        for name, value in model.bounds.items():
            assert f"`{name}` = {value}" in text


def test_gen_docs_check_writes_nothing_and_names_what_is_out_of_date(monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """`scripts/gen_docs.py --check` exits 0 on this tree and 1 naming a generated file that differs, without
    writing it (any run used to rewrite the four files, `--help` and `--check` included)."""
    monkeypatch.setenv("COLUMNS", "100")
    module = gen_docs()
    generated = [REPO / "docs" / "cli.md", REPO / "docs" / "events.md", REPO / "docs" / "projections.md",
                 REPO / "events" / "plain_table.py"]
    before = {path: (path.read_bytes(), path.stat().st_mtime_ns) for path in generated}
    assert module.main(["--check"]) == 0  # type: ignore[attr-defined]
    monkeypatch.setattr(module, "render", lambda: "something else\n")
    assert module.main(["--check"]) == 1  # type: ignore[attr-defined]
    assert "out of date: docs/cli.md" in capsys.readouterr().err
    assert module.main(["--help"]) == 2  # type: ignore[attr-defined]
    assert {path: (path.read_bytes(), path.stat().st_mtime_ns) for path in generated} == before
