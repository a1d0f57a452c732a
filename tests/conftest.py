"""Shared fixtures: temp projects, a controllable clock, the CLI in-process."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Import up front the modules that take `now_us` by name (`from continuity.core.store import now_us`): first
    imported while a test had the store's clock patched, one kept that test's fake clock for every test after it
    (a subset run, `tests/integration/test_plain_snapshot.py tests/cli/test_sessions.py`, read ages of -3,220 h)."""
    import importlib

    for module in ("continuity.core.initialize", "continuity.readside.query", "continuity.recall.service",
                   "continuity.sessions.service", "continuity.adapters.mcp.work_tools"):
        importlib.import_module(module)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--skip-stress", action="store_true", help="skip long stress loops")
    parser.addoption("--skip-e2e", action="store_true",
                     help="skip the end-to-end tests with the real harnesses (tests/e2e)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for marker in ("stress", "e2e"):
        if not config.getoption(f"--skip-{marker}"):
            continue
        skip = pytest.mark.skip(reason=f"--skip-{marker} given")
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test sees the real home folder or the caller's CONTINUITY_* variables."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in list(os.environ):
        if name.startswith("CONTINUITY_"):
            monkeypatch.delenv(name)
    from continuity.readside import catchup

    catchup._MISSED_AT.clear()  # a turn another test waited for in vain is not this test's
    yield


class FakeClock:
    """A wall clock the test moves by hand (microseconds since the epoch)."""

    def __init__(self, start_us: int = 1_785_000_000_000_000) -> None:
        self.now = start_us

    def __call__(self) -> int:
        return self.now

    def advance(self, micros: int) -> None:
        self.now += micros


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An initialized project as the working directory."""
    from continuity.cli import main

    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.chdir(root)
    assert main(["init", "--project", "demo"]) == 0
    return root
