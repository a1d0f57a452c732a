"""Fuzzing the two ways in: hook payloads and CLI argument vectors (Hypothesis).

Whatever comes in: no traceback, hooks always exit 0, exit codes come from the documented
table, and nothing is written outside the store (the project root is checked file by file).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuity.adapters.hooks import HANDLERS, run_hook
from continuity.cli import main
from continuity.core.errors import EXIT_CODES
from tests.helpers import all_event_files

HOSTILE_TEXT = st.lists(
    st.one_of(st.text(max_size=8), st.sampled_from(["\x1b[31m", "\u009b", "\u202e", "\n## Next action\n",
                                                     "../../", "/etc/passwd", "\x00", "ghp_" + "A1b2" * 9])),
    max_size=6,
).map("".join)
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30), st.floats(allow_nan=False),
              HOSTILE_TEXT),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(HOSTILE_TEXT, inner, max_size=4),
    max_leaves=12,
)
KEYS = ["hook_event_name", "session_id", "agent_id", "model", "source", "cwd", "tool_name", "tool_input",
        "tool_response", "tool_use_id", "turn_id", "error", "is_interrupt", "trigger", "prompt", "reason",
        "transcript_path", "last_assistant_message", "custom_instructions", "compact_summary", "agent_type"]


@st.composite
def payloads(draw: Any) -> dict[str, Any]:
    body: dict[str, Any] = draw(st.dictionaries(st.sampled_from(KEYS), JSON_VALUES, max_size=8))
    if draw(st.booleans()):
        body["hook_event_name"] = draw(st.sampled_from(sorted(HANDLERS)))
    if draw(st.booleans()):
        body["tool_name"] = draw(st.sampled_from(["Bash", "Edit", "Write", "shell", "apply_patch", "Read", "x"]))
        body["tool_input"] = draw(st.one_of(
            st.fixed_dictionaries({"command": st.one_of(HOSTILE_TEXT, st.lists(HOSTILE_TEXT, max_size=3))}),
            st.fixed_dictionaries({"file_path": HOSTILE_TEXT}), JSON_VALUES))
    return body


def snapshot(root: Path) -> dict[str, int]:
    """Every file outside the store and the test's home, with its size."""
    found = {}
    for parent, _, files in os.walk(root):
        if ".agent" in Path(parent).parts or "home" in Path(parent).relative_to(root).parts[:1]:
            continue
        for name in files:
            path = Path(parent, name)
            found[str(path)] = path.stat().st_size
    return found


@pytest.fixture
def fuzz_root(project: Path) -> Path:
    return project.parent


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=payloads(), harness=st.sampled_from(["claude-code", "codex"]), raw_mode=st.sampled_from(["json", "bytes"]),
       junk=st.binary(max_size=40))
def test_hooks_never_break_whatever_the_payload(project: Path, fuzz_root: Path, capsys: pytest.CaptureFixture[str],
                                                body: dict[str, Any], harness: str, raw_mode: str,
                                                junk: bytes) -> None:
    """Random hook payloads (valid JSON or not): no exception, stdout empty or the SessionStart shape, store only."""
    before = snapshot(fuzz_root)
    raw = json.dumps(body).encode() if raw_mode == "json" else junk
    result = run_hook(harness, raw, root=str(project))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if result.stdout:
        output = json.loads(result.stdout)
        assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert snapshot(fuzz_root) == before
    assert len(all_event_files(project)) >= len(result.recorded)


ARG_WORDS = st.one_of(
    st.sampled_from(["log", "checkpoint", "status", "restore", "resume-bundle", "archive", "host-switch", "events",
                     "list", "show", "verify", "rebuild", "replay", "warm", "--json", "-m", "--next", "--done",
                     "--file", "--exit-code", "--command", "--as-of", "--max-chars", "--last", "--limit", "--root",
                     "--project", "--agent", "--session", "--note-json", "--redact", "--from-host", "--to-host",
                     "--until", "--out", "--load", "--list", "--format", "--gate", "--reason", "-n"]),
    st.integers(min_value=-(10**25), max_value=10**25).map(str),
    HOSTILE_TEXT,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=st.lists(ARG_WORDS, min_size=1, max_size=7))
def test_the_cli_never_shows_a_traceback(project: Path, fuzz_root: Path, capsys: pytest.CaptureFixture[str],
                                         argv: list[str]) -> None:
    """Random argument vectors: a documented exit code, no traceback, nothing written outside the store."""
    if any(arg in ("--out", "--root") for arg in argv):
        argv = [arg for arg in argv if arg not in ("--out", "--root")]
    before = snapshot(fuzz_root)
    code = main(argv)
    captured = capsys.readouterr()
    assert code in EXIT_CODES and code != 70, (argv, captured.err)
    assert "Traceback" not in captured.err
    assert snapshot(fuzz_root) == before
