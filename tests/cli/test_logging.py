"""Logging: off by default (structlog not even imported on the hook path), on with --log-level."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import structlog.testing

from continuity.core import logs


def test_log_is_silent_and_free_until_configured() -> None:
    """Without configure(), log() does nothing; with it, events reach structlog."""
    logs._state["logger"] = None
    logs.log("info", "nothing happens")
    assert not logs.enabled()
    logs.configure("debug")
    try:
        with structlog.testing.capture_logs() as captured:
            logs.log("info", "projections caught up", folded=3)
        assert captured == [{"event": "projections caught up", "folded": 3, "log_level": "info"}]
    finally:
        logs._state["logger"] = None


def test_the_hook_path_does_not_import_structlog_or_watchfiles(project: Path) -> None:
    """`continuity log` in a new process loads neither structlog, watchfiles, git helpers nor projections."""
    code = ("import sys; from continuity.cli import main; main(['log', 'x']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('structlog', 'watchfiles', 'projections', 'mcp') or m in ('continuity.facts', 'subprocess')))")
    result = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_log_level_writes_json_lines_to_stderr(project: Path) -> None:
    """--log-level debug on a pipe: JSON lines on stderr, the command's output unchanged."""
    subprocess.run([sys.executable, "-m", "continuity", "log", "x"], cwd=project, check=True, capture_output=True)
    result = subprocess.run([sys.executable, "-m", "continuity", "status", "--log-level", "debug"], cwd=project,
                            capture_output=True, text=True, check=True)
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert any(line["event"] == "projections caught up" and line["level"] == "debug" for line in lines)
    assert result.stdout.startswith("demo:")


def test_the_hook_fast_path_skips_argparse(project: Path) -> None:
    """`continuity hook <harness>` handles PostToolUse without importing argparse, structlog or projections."""
    payload = ('{"hook_event_name": "PostToolUse", "tool_name": "Bash", "session_id": "s1", '
               '"tool_input": {"command": "ls"}, "tool_response": {"exit_code": 0}}')
    code = ("import sys; from continuity.cli import main; main(['hook', 'claude-code']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('argparse', 'structlog', 'watchfiles', 'projections', 'mcp', 'subprocess')))")
    result = subprocess.run([sys.executable, "-c", code], cwd=project, input=payload, capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip().splitlines()[-1] == "[]"
    assert result.stderr == ""
