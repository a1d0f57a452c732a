"""An installation missing a module it needs: a dependency uninstalled (`pip uninstall msgspec`), or an environment
mixing files of two versions. Each way in said "internal error: ModuleNotFoundError ... (rerun with --debug)", exit
70 documented as "a bug; report it" (the hook: "not handled (ModuleNotFoundError)"): now the line names the module
and the way back (reinstall), and no traceback reaches the user.

The modules are made unimportable for real, in real processes: a `sitecustomize` on the path puts a finder first
that refuses them, as a missing package is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BLOCKER = '''
import importlib.abc, os, sys

BLOCKED = tuple(os.environ.get("BLOCKED_MODULES", "").split(","))


class _Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if any(name == blocked or name.startswith(blocked + ".") for blocked in BLOCKED if blocked):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Missing())
'''


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    root = tmp_path / "project"
    root.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTINUITY_", "PYTHONPATH"))}
    env.update(HOME=str(tmp_path), PYTHONPATH=str(site))
    for args in (["init", "--project", "demo"], ["log", "-m", "before the uninstall"]):
        done = subprocess.run([sys.executable, "-m", "continuity", *args], cwd=root, env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    return root, env


def run(project: tuple[Path, dict[str, str]], blocked: str, *args: str, module: str = "continuity",
        stdin: str = "") -> subprocess.CompletedProcess[str]:
    root, env = project
    return subprocess.run([sys.executable, "-m", module, *args], cwd=root, env={**env, "BLOCKED_MODULES": blocked},
                          input=stdin, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("blocked", ["msgspec", "projections.worklog"])
def test_a_command_names_the_missing_module_and_the_way_back(project: tuple[Path, dict[str, str]],
                                                            blocked: str) -> None:
    done = run(project, blocked, "status")
    assert done.returncode == 70, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert f"continuity cannot import the module '{blocked}'" in done.stderr
    assert "reinstall it" in done.stderr and "internal error" not in done.stderr
    assert len(done.stderr.splitlines()) == 1

    as_json = run(project, blocked, "status", "--json")
    assert as_json.returncode == 70
    said = json.loads(as_json.stdout or as_json.stderr)
    assert f"cannot import the module '{blocked}'" in json.dumps(said)


def test_the_hook_says_what_is_missing_and_never_blocks_the_agent(project: tuple[Path, dict[str, str]]) -> None:
    payload = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup",
                          "cwd": str(project[0])})
    done = run(project, "msgspec", "hook", "claude-code", stdin=payload)
    assert done.returncode == 0
    assert "Traceback" not in done.stderr
    assert "continuity cannot import the module 'msgspec'" in done.stderr, done.stderr


def test_the_compat_cli_says_what_is_missing(project: tuple[Path, dict[str, str]]) -> None:
    done = run(project, "msgspec", "resume-bundle", "--project", "demo",
               module="continuity.adapters.compat.runtime_continuity")
    assert done.returncode == 1  # the original's crash code
    assert done.stderr.startswith("runtime-continuity: continuity cannot import the module 'msgspec'"), done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_the_mcp_server_says_what_is_missing(project: tuple[Path, dict[str, str]]) -> None:
    """The server cannot start without msgspec: the command ends with the line. A module only a tool needs (the
    recall index's sqlite3, missing from a Python built without it): that call answers with its own line, and the
    server goes on."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "recall", "arguments": {
            "query": "uninstall"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "status", "arguments": {}}},
    ]
    calls = "".join(json.dumps(line) + "\n" for line in lines)
    start = run(project, "msgspec", "mcp", stdin=calls)
    assert start.returncode == 70 and start.stdout == ""
    assert start.stderr.startswith("continuity: error: continuity cannot import the module 'msgspec'"), start.stderr
    assert "reinstall it" in start.stderr

    entry = run(project, "msgspec", "--root", str(project[0]), module="continuity.adapters.mcp", stdin=calls)
    assert entry.returncode == 70 and entry.stdout == "" and "Traceback" not in entry.stderr, entry.stderr
    assert entry.stderr.startswith("continuity: error: continuity cannot import the module 'msgspec'"), entry.stderr

    done = run(project, "sqlite3", "mcp", stdin=calls)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    answers = {answer.get("id"): answer for answer in map(json.loads, done.stdout.splitlines())}
    assert answers[2]["result"]["isError"] is True
    said = answers[2]["result"]["content"][0]["text"]
    assert said.startswith("continuity cannot import the module 'sqlite3'") and "built without it" in said, said
    assert answers[3]["result"]["isError"] is False


def test_an_error_that_is_not_an_import_keeps_its_internal_error_line() -> None:
    from continuity.core.guard import broken_install

    assert broken_install(ValueError("x")) is None
    assert broken_install(ImportError("failed to map segment from shared object")) is None  # out of memory
    assert broken_install(ImportError("cannot import name 'x' from 'y'")) is not None
    assert "reinstall" in (broken_install(ModuleNotFoundError("No module named 'msgspec'", name="msgspec")) or "")
    assert "built without it" in (broken_install(ModuleNotFoundError("No module named '_ssl'", name="_ssl")) or "")
