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


@pytest.mark.parametrize("command", [["task", "list"], ["memory", "list"], ["work", "status"], ["work", "audit"],
                                     ["work", "item", "show", "A1"]])
def test_every_read_says_it_guessed_the_project(broken: Path, capsys: Capture, command: list[str]) -> None:
    """`status` warned that config.json could not say and it answered for the log's project; the task, memory and
    workstream reads answered for the guess without a word (their `--json` warnings empty)."""
    main(command)
    err = capsys.readouterr().err
    assert "answering for project demo (run `continuity init --repair`)" in err, err


def test_work_export_is_a_write_that_refuses(broken: Path, capsys: Capture) -> None:
    """`work export` records local events and writes a manifest naming the project: under a broken config it wrote
    one for the guessed project, exit 0. Refused as every write is: exit 9, nothing written."""
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=broken, check=True)
    assert main(["work", "export", "--out", str(broken / "transfer")]) == 9
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "config.json" in err and "continuity init --repair" in err
    assert "--project" not in err  # work export takes none
    assert not (broken / "transfer").exists()


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


def test_repair_names_the_store_after_this_clones_own_events(project: Path, capsys: Capture) -> None:
    """A log sync shared with a clone of another project, whose event is the newest: with config.json broken, reads
    answered for that project and `init --repair` renamed this clone after it (its later writes went there)."""
    import time

    from continuity.core.store import Store
    from events.filelog import FileEventLog
    from events.worklog import WorkLogged

    assert main(["log", "-m", "ours"]) == 0
    store = Store(str(project))
    other = store.open_log()  # another clone's event: another node, another project, the newest
    other_node = "0" * 8 if store.node() != "0" * 8 else "1" * 8
    FileEventLog(store.events_dir, store.local_dir, node=other_node,
                 clock_us=lambda: time.time_ns() // 1000).append(WorkLogged(project="theirs", message="x"))
    assert other.head() is not None and other.head().event.project == "theirs"
    (project / ".agent" / "runtime-continuity" / "config.json").write_text("{}")
    capsys.readouterr()
    assert main(["status"]) == 0
    assert "answering for project demo" in capsys.readouterr().err
    assert main(["init", "--repair"]) == 0
    assert json.loads((project / ".agent" / "runtime-continuity" / "config.json").read_text())["project"] == "demo"


def test_a_project_renamed_by_hand_is_told_where_its_history_went(project: Path, capsys: Capture) -> None:
    """config.json's project edited by hand: `status` and the brief answered as for a new store ("nothing is known
    yet"), without a word about the events of the project it named before."""
    assert main(["checkpoint", "-m", "parser done", "--next", "wire the CLI"]) == 0
    config = project / ".agent" / "runtime-continuity" / "config.json"
    config.write_text(config.read_text().replace('"demo"', '"renamed"'))
    capsys.readouterr()
    assert main(["status"]) == 0
    err = capsys.readouterr().err
    assert "none of project renamed; the newest event is project demo's" in err, err
    start = {"hook_event_name": "SessionStart", "session_id": "s1", "cwd": str(project)}
    result = run_hook("claude-code", json.dumps(start).encode(), root=str(project))
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "none of project renamed" in context
    assert main(["log", "-m", "work under the new name"]) == 0
    capsys.readouterr()
    assert main(["status"]) == 0
    assert "none of project" not in capsys.readouterr().err  # a mixed store whose project has events says nothing


@pytest.mark.parametrize("added", ["-9223372036854775809", "1180591620717411303424", "[" * 300 + "]" * 300,
                                   "[" * 900 + "]" * 900],
                         ids=["below-64-bit", "beyond-64-bit", "300-deep", "900-deep"])
@pytest.mark.parametrize("command", [["init"], ["init", "--repair"]])
def test_init_writes_back_every_config_every_other_command_reads(project: Path, capsys: Capture, added: str,
                                                                  command: list[str]) -> None:
    """A config.json that every command reads (an integer beyond 64 bits, values nested hundreds deep) ended
    `init` and `init --repair` in exit 70 (the writer takes neither); nested 900 deep, written back indented, it
    became a file too big for any command to read. They keep it now, and every command still reads it."""
    store = project / ".agent" / "runtime-continuity"
    (store / "config.json").write_text(f'{{"project": "demo", "format": 1, "added": {added}}}')
    capsys.readouterr()
    assert main(command) == 0, capsys.readouterr().err
    assert json.loads((store / "config.json").read_text())["added"] == json.loads(added)
    assert main(["log", "-m", "still written"]) == 0
    assert main(["init", "--repair"]) == 0
    capsys.readouterr()
    assert main(["status"]) == 0
    assert "config.json" not in capsys.readouterr().err


def test_a_number_of_thousands_of_digits_is_said_without_pythons_advice(project: Path, capsys: Capture) -> None:
    """Python refuses to read an integer of more than 4300 digits and its message advises
    `sys.set_int_max_str_digits()`: that reached the user of config.json as if it were theirs to call."""
    store = project / ".agent" / "runtime-continuity"
    (store / "config.json").write_text('{"project": "demo", "format": 1, "added": ' + "9" * 5000 + "}")
    capsys.readouterr()
    assert main(["log", "-m", "x"]) == 9
    err = capsys.readouterr().err
    assert "a number with more than 4300 digits" in err and "set_int_max_str_digits" not in err, err


def test_init_never_writes_a_config_too_big_for_the_commands_to_read(project: Path, capsys: Capture) -> None:
    """Numbers written back longer than they were read (`1E5` as `100000.0`), 200,000 of them: `init` rewrote an
    800 kB config.json as 1.8 MB, which every command then refused (and `init --repair` would not copy). It refuses
    to write it now (exit 5), the file stays as it was, and the commands still read it."""
    config = project / ".agent" / "runtime-continuity" / "config.json"
    config.write_text('{"project": "demo", "format": 1, "added": [' + ",".join(["1E5"] * 200_000) + "]}")
    before = config.read_bytes()
    capsys.readouterr()
    assert main(["init"]) == 5
    assert "config.json not written: it would hold" in capsys.readouterr().err
    assert config.read_bytes() == before
    assert main(["log", "-m", "still written"]) == 0
