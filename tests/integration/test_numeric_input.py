"""Extreme numbers in JSON input (config.json, --note-json, MCP arguments, stored events): never an internal error.

Python reads JSON numbers that other readers cannot carry: an integer beyond 64 bits
(orjson and msgpack refuse it, orjson even reads 10**20 as a float), infinity and NaN
(msgspec writes them as `null`). Each is either refused at the door with one line or
read back without an internal error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from continuity.adapters.mcp.registry import TOOL_MODULES
from continuity.adapters.mcp.registry import call as call_tool
from continuity.cli import main
from continuity.core.errors import EXIT_USAGE, UsageError
from events import sealing
from events.errors import EventInvalid
from tests.helpers import all_event_files

Capture = pytest.CaptureFixture[str]

#: Numbers as JSON text, by name: legal-looking, extreme.
EXTREME = {"1e20 as an integer": "100000000000000000000", "-1e20 as an integer": "-100000000000000000000",
           "10**400": "1" + "0" * 400, "1e308": "1e308", "5e-324": "5e-324", "-0.0": "-0.0", "1.5": "1.5",
           "true": "true", "a string of digits": '"30"'}


def git(cwd: Path, *args: str) -> None:
    """Run git in `cwd` with a throwaway identity (the test fails when git does)."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, env=env)


def set_config(project: Path, key: str, value_json: str) -> None:
    """Put `key` into config.json with a value written as raw JSON text (so 10**400 stays an integer)."""
    config = project / ".agent" / "runtime-continuity" / "config.json"
    data = json.loads(config.read_text())
    data.pop(key, None)
    config.write_text(json.dumps(data)[:-1] + f', "{key}": {value_json}}}')


# -- config.json ----------------------------------------------------------------------------------
@pytest.mark.parametrize("value", sorted(EXTREME), ids=sorted(EXTREME))
def test_an_extreme_sync_timeout_falls_back_to_the_default(project: Path, capsys: Capture, value: str) -> None:
    """sync_timeout 10**20, 10**400, 1e308 (each was exit 70), 5e-324 or true: the default is used, sync works."""
    git(project, "init", "-q", "-b", "main")
    git(project, "commit", "-q", "--allow-empty", "-m", "code")
    git(project.parent, "init", "-q", "--bare", "remote.git")
    git(project, "remote", "add", "origin", str(project.parent / "remote.git"))
    assert main(["log", "-m", "before the sync"]) == 0
    set_config(project, "sync_timeout", EXTREME[value])
    code = main(["sync"])
    err = capsys.readouterr().err
    assert (code, "internal error" in err) == (0, False), err


# -- notes: refused at the door when a reader could not carry them back ---------------------------
#: Note values no reader spells back alike (beyond 64 bits); the JSON texts --note-json takes.
UNCARRIED = {"2**64": str(2**64), "1e20 as an integer": "100000000000000000000", "-2**63-1": str(-(2**63) - 1),
             "10**400 in a list": "[" + "1" + "0" * 400 + "]", "nested": '{"deep": {"n": -100000000000000000000}}'}
#: Edge values every reader carries: stored as given.
CARRIED = {"2**64-1": str(2**64 - 1), "-2**63": str(-(2**63)), "1e308": "1e308", "5e-324": "5e-324", "-0.0": "-0.0",
           "1.5": "1.5", "true": "true"}


@pytest.mark.parametrize("command", ["log", "checkpoint"])
@pytest.mark.parametrize("value", sorted(UNCARRIED), ids=sorted(UNCARRIED))
def test_note_json_with_a_number_beyond_64_bits_is_refused(project: Path, capsys: Capture, command: str,
                                                           value: str) -> None:
    """--note-json {"n": 10**20}: exit 2 and one line, nothing written (orjson read it as 1e+20 and stored that)."""
    before = all_event_files(project)
    assert main([command, "-m", "x", "--note-json", f'{{"n": {UNCARRIED[value]}}}']) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "note" in err and "internal error" not in err
    assert all_event_files(project) == before


@pytest.mark.parametrize("value", sorted(CARRIED), ids=sorted(CARRIED))
def test_note_json_edge_numbers_are_stored_exactly(project: Path, value: str) -> None:
    """The extremes every reader carries (2**64-1, -2**63, 1e308, 5e-324, -0.0) are stored as given."""
    assert main(["log", "-m", "x", "--note-json", f'{{"n": {CARRIED[value]}}}']) == 0
    [event] = [json.loads(path.read_bytes()) for path in all_event_files(project)]
    stored, given = event["note"]["n"], json.loads(CARRIED[value])
    assert (stored, type(stored), str(stored)) == (given, type(given), str(given))


def _tools() -> None:
    import importlib

    for module in TOOL_MODULES:
        importlib.import_module(module)


#: What the MCP server's JSON parser hands a tool for `NaN`, `Infinity`, `1e400` and big integers.
MCP_UNCARRIED: dict[str, Any] = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf"),
                                 "2**64": 2**64, "10**400": 10**400, "-10**20": -(10**20)}


@pytest.mark.parametrize("tool", ["log", "checkpoint"])
@pytest.mark.parametrize("value", sorted(MCP_UNCARRIED), ids=sorted(MCP_UNCARRIED))
def test_mcp_note_with_nan_infinity_or_a_huge_integer_is_refused(project: Path, tool: str, value: str) -> None:
    """MCP log/checkpoint: a note number msgspec writes as null (NaN, inf) or no reader carries: refused, one line."""
    _tools()
    before = all_event_files(project)
    with pytest.raises(EventInvalid) as refused:
        call_tool(tool, {"message": "x", "note": {"n": [MCP_UNCARRIED[value]]}}, root=str(project))
    assert "note.n[0]" in str(refused.value) and "\n" not in str(refused.value)
    assert all_event_files(project) == before


# -- events already stored with such a number (an older version, another machine) ------------------
@pytest.fixture
def stored_huge(project: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture) -> str:
    """The project with an event whose note holds 10**30, written as a version before the bound did."""
    with monkeypatch.context() as patched:
        patched.setattr(sealing, "odd_number", lambda value: None, raising=False)
        assert main(["log", "-m", "old", "--note-json", '{"n": 1000000000000000000000000000000}']) == 0
    capsys.readouterr()
    [path] = all_event_files(project)
    event_id: str = json.loads(path.read_bytes())["event_id"]
    return event_id


def test_reads_print_a_stored_huge_integer(stored_huge: str, capsys: Capture) -> None:
    """events list/show --json and events show: the number printed exactly (orjson's refusal was exit 70)."""
    for command in (["events", "list", "--json"], ["events", "show", stored_huge, "--json"],
                    ["events", "show", stored_huge], ["status"], ["resume-bundle"]):
        assert main(command) == 0, command
        captured = capsys.readouterr()
        assert "internal error" not in captured.err
        if command[0] == "events":
            assert "1000000000000000000000000000000" in captured.out


def test_the_mcp_server_answers_events_with_a_stored_huge_integer(stored_huge: str, project: Path,
                                                                  tmp_path: Path) -> None:
    """Over the real SDK: `events` answers with the number (orjson refused it: an internal error), and `log`
    with such a note is one tool error line."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.types import TextContent

    from tests.helpers import REPO

    env = {"PYTHONPATH": str(REPO), "HOME": os.environ["HOME"], "PATH": os.environ.get("PATH", "")}
    errlog = tmp_path / "server-stderr.txt"

    async def run() -> tuple[Any, Any]:
        params = StdioServerParameters(command=sys.executable, cwd=str(tmp_path), env=env,
                                       args=["-m", "continuity.adapters.mcp", "--root", str(project)])
        with anyio.fail_after(30), errlog.open("w") as err:
            async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.call_tool("events", {})
                logged = await session.call_tool("log", {"message": "x", "note": {"n": 10**30}})
                return listed, logged

    listed, logged = anyio.run(run)
    assert "Traceback" not in errlog.read_text()
    [block] = listed.content
    assert not listed.is_error and isinstance(block, TextContent)
    assert "1000000000000000000000000000000" in block.text and stored_huge in block.text
    [line] = logged.content
    assert logged.is_error and isinstance(line, TextContent) and "\n" not in line.text
    assert "note.n" in line.text and "internal error" not in line.text


@pytest.mark.parametrize("value", [10**9 + 1, 10**20, 10**400], ids=["1e9+1", "1e20", "1e400"])
def test_mcp_resume_bundle_budget_is_bounded_like_the_cli(project: Path, value: int, capsys: Capture) -> None:
    """MCP `max_chars` takes what `--max-chars` takes (2500 to 10**9): beyond, a usage error naming the field."""
    _tools()
    with pytest.raises(UsageError) as refused:
        call_tool("resume_bundle", {"max_chars": value}, root=str(project))
    assert "max_chars" in str(refused.value) and "\n" not in str(refused.value)
    assert call_tool("resume_bundle", {"max_chars": 10**9}, root=str(project))["ok"] is True
    assert main(["resume-bundle", "--max-chars", str(value)]) == EXIT_USAGE
