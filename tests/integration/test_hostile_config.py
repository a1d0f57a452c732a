"""A broken config.json never renames the project: writes refuse, reads and hooks fail open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from continuity.adapters.hooks import run_hook
from continuity.cli import main
from tests.helpers import all_event_files

Capture = pytest.CaptureFixture[str]

BROKEN: dict[str, bytes | None] = {
    "missing": None,
    "empty": b"",
    "blank": b"  \n",
    "not JSON": b"{",
    "not UTF-8": b"\xff\xfe{}",
    "a list": b"[]",
    "no project": b'{"language": "en"}',
    "a path as project": b'{"project": "../elsewhere"}',
    "a number as project": b'{"project": 5}',
}


@pytest.fixture(params=sorted(BROKEN))
def broken(request: pytest.FixtureRequest, project: Path, capsys: Capture) -> Path:
    """The demo project with some history, then config.json broken one way."""
    assert main(["checkpoint", "-m", "parser done", "--next", "wire the CLI"]) == 0
    config = project / ".agent" / "runtime-continuity" / "config.json"
    content = BROKEN[request.param]
    if content is None:
        config.unlink()
    else:
        config.write_bytes(content)
    capsys.readouterr()
    return project


def test_writes_refuse_naming_the_file_and_the_fix(broken: Path, capsys: Capture) -> None:
    """log and checkpoint: exit 9, one line naming config.json and `init --repair`, nothing written."""
    before = all_event_files(broken)
    for command in (["log", "-m", "x"], ["checkpoint", "-m", "y"], ["archive", "--reason", "z"]):
        assert main(command) == 9, command
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "config.json" in err and "continuity init --repair" in err
    assert all_event_files(broken) == before


def test_an_explicit_project_still_writes(broken: Path, capsys: Capture) -> None:
    """With --project the name is not guessed, so the write goes through."""
    assert main(["log", "-m", "x", "--project", "demo"]) == 0


def test_reads_answer_for_the_real_project_with_a_warning(broken: Path, capsys: Capture) -> None:
    """resume-bundle and status: exit 0, the project of the log (not the folder's name), one warning."""
    assert main(["resume-bundle"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("# Resume: demo") and "wire the CLI" in captured.out
    assert "config.json" in captured.err and "warning" in captured.err
    assert main(["status", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["project"] == "demo" and data["events"] == 1


def test_hooks_record_nothing_but_session_start_still_briefs(broken: Path, capsys: Capture) -> None:
    """A hook under a broken config records nothing; SessionStart still serves the log's brief."""
    before = all_event_files(broken)
    tool = {"hook_event_name": "PostToolUse", "session_id": "s1", "tool_name": "Bash", "cwd": str(broken),
            "tool_input": {"command": "pytest"}, "tool_response": {"exit_code": 0}}
    assert run_hook("claude-code", json.dumps(tool).encode(), root=str(broken)).recorded == []
    assert "config.json" in capsys.readouterr().err
    start = {"hook_event_name": "SessionStart", "session_id": "s1", "cwd": str(broken)}
    result = run_hook("claude-code", json.dumps(start).encode(), root=str(broken))
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "wire the CLI" in context and result.recorded == []
    assert all_event_files(broken) == before


def test_init_refuses_to_guess_and_repair_restores(broken: Path, capsys: Capture) -> None:
    """`init` on a broken config with history: exit 9; `init --repair` takes the name from the log."""
    assert main(["init"]) == 9
    assert main(["init", "--repair"]) == 0
    config = json.loads((broken / ".agent" / "runtime-continuity" / "config.json").read_text())
    assert config["project"] == "demo"
    assert main(["log", "-m", "after the repair"]) == 0


def test_a_new_store_needs_no_repair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture) -> None:
    """A fresh folder: plain `init` names the project after the folder, as before."""
    root = tmp_path / "fresh-folder"
    root.mkdir()
    monkeypatch.chdir(root)
    assert main(["init"]) == 0 and "project fresh-folder" in capsys.readouterr().out


UNPARSED = {
    "a byte order mark": (b'\xef\xbb\xbf{"project": "demo", "sync_remote": "up"}',
                          "it starts with a byte order mark: save it as UTF-8 without one"),
    "a missing comma": (b'{"project": "demo",\n "sync_remote": "up"\n "brief_recall": 5}',
                        "line 3 column 2: Expecting ',' delimiter"),
    "not UTF-8": (b'{"project": "de\xffmo"}', "not UTF-8 at byte 15"),
    "NaN": (b'{"project": "demo", "brief_recall": NaN}', "NaN is not JSON"),
    "a lone surrogate": (b'{"project": "demo", "x": "\\ud800"}', "an escape names half of a surrogate pair"),
}


@pytest.mark.parametrize("case", sorted(UNPARSED))
def test_a_hand_edited_config_says_where_it_breaks_and_repair_keeps_it(
        case: str, project: Path, capsys: Capture) -> None:
    """A config.json typed by hand that does not parse: the refusal says where and why (quoting none of
    the file), and `init --repair` keeps the file under local/ and says so before writing a new one, so the
    settings typed there are not silently lost."""
    assert main(["log", "-m", "first"]) == 0
    store = project / ".agent" / "runtime-continuity"
    content, reason = UNPARSED[case]
    (store / "config.json").write_bytes(content)
    capsys.readouterr()
    assert main(["log", "-m", "x"]) == 9
    assert f"config.json is not valid JSON ({reason})" in capsys.readouterr().err
    assert main(["init", "--repair", "--json"]) == 0
    kept = json.loads(capsys.readouterr().out)["config_kept"]
    assert Path(kept).parent == store / "local" and Path(kept).read_bytes() == content
    assert json.loads((store / "config.json").read_text())["project"] == "demo"
    (store / "config.json").write_bytes(content)
    assert main(["init", "--repair"]) == 0  # a second repair keeps its own copy beside the first
    out = capsys.readouterr().out
    assert "did not parse was kept as" in out and len(list((store / "local").glob("config.unparsed-*.json"))) == 2


def test_repair_of_a_config_too_big_to_copy_refuses_and_overwrites_nothing(project: Path, capsys: Capture) -> None:
    """A config.json over the size a config is read at (1 MiB) that does not parse: `init --repair` refuses (exit 5,
    one line saying to move it out) and leaves it as it is; it was replaced with no copy kept (what it held lost)."""
    assert main(["log", "-m", "first"]) == 0
    store = project / ".agent" / "runtime-continuity"
    content = b'{"sync_remote": "up", "notes": "' + b"x" * (2 << 20) + b'"'  # no closing brace: no JSON
    (store / "config.json").write_bytes(content)
    capsys.readouterr()
    assert main(["init", "--repair"]) == 5
    err = capsys.readouterr().err
    assert "is bigger than a config holds (1 MiB) and is not copied: move it out of the store" in err, err
    assert (store / "config.json").read_bytes() == content
    assert list((store / "local").glob("config.unparsed-*")) == []


def test_repair_of_a_config_that_parses_keeps_its_settings_and_copies_nothing(project: Path, capsys: Capture) -> None:
    """Valid JSON with a bad project name: repair replaces the name only; nothing is copied to local/."""
    assert main(["log", "-m", "first"]) == 0
    store = project / ".agent" / "runtime-continuity"
    (store / "config.json").write_text('{"project": "../x", "sync_remote": "up"}')
    capsys.readouterr()
    assert main(["init", "--repair", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config_kept"] is None
    assert json.loads((store / "config.json").read_text()) == {
        "sync_remote": "up", "project": "demo", "language": "en", "format": 1}
    assert list((store / "local").glob("config.unparsed-*")) == []


def test_repair_never_copies_what_a_linked_config_names_and_keeps_its_copy_private(
        project: Path, tmp_path: Path, capsys: Capture) -> None:
    """config.json planted as a link to a private file: repair copies nothing (the file it names is not the
    store's), and a copy of a config that does not parse is readable by its owner only (was: the linked file's
    bytes copied to local/ as rw-r--r--)."""
    assert main(["log", "-m", "first"]) == 0
    store = project / ".agent" / "runtime-continuity"
    secret = tmp_path / "id_private"
    secret.write_text("private bytes\n")
    secret.chmod(0o600)
    (store / "config.json").unlink()
    (store / "config.json").symlink_to(secret)
    capsys.readouterr()
    assert main(["init", "--repair", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config_kept"] is None
    assert list((store / "local").glob("config.unparsed-*")) == [] and secret.read_text() == "private bytes\n"
    (store / "config.json").write_bytes(b"{oops")
    assert main(["init", "--repair", "--json"]) == 0
    kept = Path(json.loads(capsys.readouterr().out)["config_kept"])
    assert kept.read_bytes() == b"{oops" and kept.stat().st_mode & 0o777 == 0o600
