"""The arrows between packages, and one home for each piece of plumbing (read from the source)."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

from continuity.core.errors import ERROR_CLASSES, EXIT_CODES

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("events", "projections", "continuity")
#: What each package may not import (first segment of the module name).
FORBIDDEN = {
    "events": {"projections", "continuity"},
    "projections": {"continuity", "os", "time", "datetime", "subprocess", "random"},
}


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def imported(path: Path) -> set[str]:
    """First segments of every module a file imports, at any depth (lazy imports count)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_layers_point_inward(package: str) -> None:
    """events imports neither projections nor continuity; projections imports no continuity, clock, os or process."""
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported(path) & FORBIDDEN[package])
        for path in modules(package) if imported(path) & FORBIDDEN[package]
    }
    assert offenders == {}


def test_the_import_check_catches_a_violation(tmp_path: Path) -> None:
    """The check is not vacuous: a lazy `import time` inside a function is found."""
    sample = tmp_path / "fold.py"
    sample.write_text("def fold(state, event):\n    import time\n    from continuity.core import store\n")
    assert imported(sample) >= {"time", "continuity"}


def definitions() -> Counter[str]:
    names: Counter[str] = Counter()
    for package in PACKAGES:
        for path in modules(package):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.FunctionDef | ast.ClassDef):
                    names[node.name] += 1
    return names


@pytest.mark.parametrize("helper", [
    "write_atomic", "write_if_changed", "event_relpath", "resolve_identity", "clean_name", "Identity",
    "guarded", "first_non_utf8", "exit_with", "pretty_json", "schema_json", "read_json",
    # the file-log protocol and what both append paths share (events/durable.py, guard, idfields, hook_entries)
    "sha256_hex", "FileOps", "DurableFolder", "list_days", "refuse_link", "append_sealed", "Head",
    "resolve_fields", "strings_in", "redact_tree", "tool_entry", "simple_entry", "current_run_changes", "loads",
])
def test_each_helper_has_one_home(helper: str) -> None:
    """The plumbing helpers are defined exactly once across events/, projections/ and continuity/."""
    assert definitions()[helper] == 1


def calls_to(module: str, attribute: str) -> set[str]:
    """Files that call `<module>.<attribute>(...)`."""
    found = set()
    for package in PACKAGES:
        for path in modules(package):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == attribute and isinstance(node.func.value, ast.Name)
                        and node.func.value.id == module):
                    found.add(str(path.relative_to(ROOT)))
    return found


def test_only_the_atomic_writer_replaces_files() -> None:
    """Files are replaced in one place; the other is the `latest.md` symlink swap (a link, not a file write).
    `os.rename` moves folders: sync's staged day folders into the store, never over one that exists
    (checked under the append lock where `renameat2(RENAME_NOREPLACE)` is missing), and back on failure;
    `fsio.move_aside` takes a recorded checkpoint document aside under a name of its own (never over one); and the
    landing token (`durable.mark_landed`) moves a folder holding files that was put in its place aside, under a
    random name, so the token can be written."""
    assert calls_to("os", "replace") == {"continuity/core/fsio.py", "continuity/readside/writers.py"}
    assert calls_to("os", "rename") == {"continuity/sync/files.py", "continuity/core/fsio.py", "events/durable.py"}
    assert calls_to("tempfile", "mkstemp") == set()


def test_one_warning_printer_and_one_error_guard() -> None:
    """Warnings are printed by one function; both entry points go through one guard."""
    sources = {str(path.relative_to(ROOT)): path.read_text() for package in PACKAGES for path in modules(package)}
    printers = [name for name, text in sources.items() if ': warning: {' in text]
    assert printers == ["continuity/cli/output.py"]
    guards = [name for name, text in sources.items()
              if "except BrokenPipeError" in text and "except KeyboardInterrupt" in text]
    assert guards == ["continuity/core/guard.py"]


def test_every_error_class_names_a_documented_exit_code() -> None:
    """Each error class carries its exit code, and the code is in the documented table."""
    for kind in ERROR_CLASSES:
        assert kind.exit_code in EXIT_CODES, kind
    assert len({kind.exit_code for kind in ERROR_CLASSES}) > 1


#: The entry modules of the plain append path (`log`, `checkpoint`, record-only hooks).
PLAIN_ENTRIES = ("continuity.cli.plain_log", "continuity.cli.plain_snapshot", "continuity.team.plain",
                 "continuity.moments.paths", "continuity.adapters.hook_fast", "continuity.cli")
#: What that path must never load at import time (the whole point of it: see docs/performance.md).
PLAIN_FORBIDDEN = {"msgspec", "orjson", "argparse", "structlog", "typing_extensions", "uuid", "decimal"}


def module_level_imports(module: str) -> set[str]:
    """Modules a module of ours imports when it is imported (function bodies and TYPE_CHECKING blocks excluded)."""
    parts = module.split(".")
    path = ROOT.joinpath(*parts).with_suffix(".py")
    if not path.exists():
        path = ROOT.joinpath(*parts, "__init__.py")
    found: set[str] = set()
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.update(f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in our_modules()
                         else node.module for alias in node.names)
    return found


def our_modules() -> set[str]:
    return {".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            for package in PACKAGES for path in modules(package)}


def test_the_plain_append_path_imports_no_msgspec() -> None:
    """From the plain path's entry modules, module-level imports never reach msgspec, orjson or argparse."""
    ours, seen, todo = our_modules(), set(), list(PLAIN_ENTRIES)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        for name in module_level_imports(module):
            parents = [".".join(name.split(".")[:depth]) for depth in range(1, name.count(".") + 2)]
            todo.extend(parent for parent in parents if parent in ours)
    reached = {name.split(".")[0] for module in seen for name in module_level_imports(module)}
    assert {"events.plain", "events.durable", "events.plain_table", "continuity.core.store",
            "continuity.team.plain", "continuity.moments.paths"} <= seen
    assert reached & PLAIN_FORBIDDEN == set()
    # the walk does find msgspec where it is imported at module level
    assert "msgspec" in {name.split(".")[0] for name in module_level_imports("events.codec")}
