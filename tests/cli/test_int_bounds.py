"""Every integer option is bounded: out-of-range values are one usage line (exit 2), never an internal error."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from continuity.cli import main
from continuity.cli.common import COUNT_MAX, EXIT_CODE_MAX, EXIT_CODE_MIN, bounded_int, build_parser
from continuity.core.errors import EXIT_USAGE
from tests.helpers import all_event_files

Capture = pytest.CaptureFixture[str]

HUGE = [str(10**20), str(-(10**20))]
INTEGER_OPTIONS = [
    ["events", "list", "--last"],
    ["events", "list", "--limit"],
    ["events", "tail", "-n"],
    ["events", "tail", "--lines"],
    ["watch", "--last"],
    ["log", "ran tests", "--command", "pytest", "--exit-code"],
    ["checkpoint", "ran tests", "--command", "pytest", "--exit-code"],
    ["resume-bundle", "--max-chars"],
]


def parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parser and every subcommand parser under it."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                found.extend(parsers(child))
    return found


def test_no_option_takes_an_unbounded_int() -> None:
    """No option of any command parses with plain `int`; the integer ones use the shared bounded type."""
    options = [action for parser in parsers(build_parser()) for action in parser._actions]
    assert not [action.dest for action in options if action.type is int]
    bounded = {action.dest for action in options if getattr(action.type, "__qualname__", "").startswith("bounded_int")}
    assert bounded == {"last", "limit", "lines", "exit_code", "max_chars", "context_percent", "priority",
                       "expected_version"}


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("argv", INTEGER_OPTIONS, ids=lambda argv: " ".join(argv[:1] + argv[-1:]))
def test_huge_integers_are_a_usage_error(project: Path, capsys: Capture, argv: list[str], value: str) -> None:
    """10**20 and -10**20 for each integer option: exit 2, one stderr line naming the range, nothing written."""
    capsys.readouterr()
    assert main([*argv, value]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("continuity: error:")
    assert "must be an integer from" in captured.err and value in captured.err
    assert "Traceback" not in captured.err + captured.out and captured.out == ""
    assert all_event_files(project) == []


@pytest.mark.parametrize("value", ["\u0663", "\uff13", "1_0", "+3"])
def test_digits_int_reads_but_no_one_types_are_a_usage_error(project: Path, capsys: Capture, value: str) -> None:
    """On the plain path too (`log` hands what it cannot vouch for to argparse, which took them)."""
    for argv in (["log", "x", "--command", "ls", "--exit-code", value], ["events", "list", "--last", value]):
        capsys.readouterr()
        assert main(argv) == EXIT_USAGE, argv
        assert "must be an integer from" in capsys.readouterr().err
    assert all_event_files(project) == []


def test_the_range_ends_are_accepted(project: Path, capsys: Capture) -> None:
    """The largest count and both extreme exit codes work, and the exit codes are stored as given."""
    for argv in (["events", "list", "--last", str(COUNT_MAX)], ["events", "tail", "-n", str(COUNT_MAX)],
                 ["resume-bundle", "--max-chars", str(COUNT_MAX)]):
        assert main(argv) == 0, argv
    for code in (EXIT_CODE_MIN, EXIT_CODE_MAX, -9, 0, 255):
        assert main(["log", "x", "--command", "ls", f"--exit-code={code}"]) == 0
    capsys.readouterr()
    assert main(["events", "list", "--json"]) == 0
    events = json.loads(capsys.readouterr().out)["events"]
    assert [e["refs"]["commands"][0]["exit_code"] for e in events] == [EXIT_CODE_MIN, EXIT_CODE_MAX, -9, 0, 255]


def test_bounded_int_names_the_range_and_shows_the_value_safely() -> None:
    """The shared type refuses non-integers and out-of-range values with one line, clipping and neutralizing input."""
    parse = bounded_int(0, 10)
    assert parse("7") == 7 and parse(" 10 ") == 10
    # digits int() reads that no one types (was: `--exit-code ٣` recorded 3): Arabic-Indic, full-width, `_`, `+`
    for text in ("11", "-1", "seven", "1" * 5000, "\x9b2J\u202e", "\u0663", "\uff10", "1_0", "+5", "- 5", "5\n"):
        with pytest.raises(argparse.ArgumentTypeError) as caught:
            parse(text)
        message = str(caught.value)
        assert message.startswith("must be an integer from 0 to 10") and len(message) < 100
        assert "\x9b" not in message and "\u202e" not in message


@pytest.mark.parametrize("value", HUGE)
def test_runtime_continuity_exit_code_out_of_range_is_recorded_as_null(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture, value: str,
) -> None:
    """runtime-continuity --exit-code 10**20 is never an error (contract §8): exit 0, exit_code null."""
    from continuity.adapters.compat.runtime_continuity import main as compat_main

    monkeypatch.chdir(tmp_path)
    for mode in ("log", "checkpoint"):
        capsys.readouterr()
        code = compat_main([mode, "--project", "demo", "--gate", "agent", "--message", "ran tests",
                            "--command", "pytest", "--exit-code", value])
        data = json.loads(capsys.readouterr().out)
        assert code == 0 and data["ok"] is True, data
        assert data["event"]["refs"]["commands"] == [{"command": "pytest", "exit_code": None, "summary": ""}]
    assert len(all_event_files(tmp_path)) == 2


def test_runtime_continuity_exit_code_in_range_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture,
) -> None:
    """runtime-continuity keeps accepting ordinary and extreme exit codes."""
    from continuity.adapters.compat.runtime_continuity import main as compat_main

    monkeypatch.chdir(tmp_path)
    for value in (3, EXIT_CODE_MIN, EXIT_CODE_MAX):
        capsys.readouterr()
        assert compat_main(["log", "--project", "demo", "--gate", "agent", "--message", "m",
                            "--command", "make", "--exit-code", str(value)]) == 0
        assert json.loads(capsys.readouterr().out)["event"]["refs"]["commands"][0]["exit_code"] == value


#: Tokens of rules that need more characters than the refusal shows of a value (32): cut first, they matched no rule.
LONG_TOKENS = ["ghp_16C7e42F292c6912E7710c838347Ae178B4aXY", "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3sT5vX7zB9dF1hJ3lN5",
               "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"]


@pytest.mark.parametrize("token", LONG_TOKENS, ids=["github", "openai", "slack"])
@pytest.mark.parametrize("argv", [*INTEGER_OPTIONS, ["task", "create", "--title", "t", "--priority"],
                                  ["recall", "push", "--limit"]], ids=lambda argv: " ".join(argv[:1] + argv[-1:]))
def test_a_refused_integer_that_looks_like_a_secret_shows_none_of_it(
        project: Path, capsys: Capture, argv: list[str], token: str) -> None:
    """The refusal names the value redacted in whole before it is cut: no part of the token (the cut one showed
    its first 29 characters, which no rule matched)."""
    capsys.readouterr()
    assert main([*argv, token]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "[REDACTED:" in err and err.count("\n") == 1
    assert not any(token[start:start + 12] in err for start in range(len(token) - 12))
