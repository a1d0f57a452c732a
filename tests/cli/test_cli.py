"""The CLI in-process: init, log, checkpoint, events, verify, --json, identity, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from continuity.cli import main
from continuity.core.errors import (
    EXIT_INTEGRITY,
    EXIT_NO_STORE,
    EXIT_NOT_FOUND,
    EXIT_SECRET,
    EXIT_UNSAFE_STORE,
    EXIT_USAGE,
)
from tests.helpers import all_event_files, cli_process

Capture = pytest.CaptureFixture[str]


def run_json(capsys: Capture, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    capsys.readouterr()
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_init_creates_the_store_and_is_idempotent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: Capture) -> None:
    """init writes config, README, .gitignore and the schema; a second run changes nothing."""
    monkeypatch.chdir(tmp_path)
    code, data = run_json(capsys, "init", "--project", "demo")
    assert code == 0 and data["created"] is True
    store = tmp_path / ".agent" / "runtime-continuity"
    for name in ("config.json", "README.md", ".gitignore", "event.schema.json"):
        assert (store / name).is_file(), name
    assert json.loads((store / "config.json").read_text())["project"] == "demo"
    schema = json.loads((store / "event.schema.json").read_text())
    assert "work.logged" in json.dumps(schema) and "checkpoint.recorded" in json.dumps(schema)
    snapshot = {p: p.read_bytes() for p in store.glob("*") if p.is_file()}
    code, data = run_json(capsys, "init")
    assert code == 0 and data["created"] is False and data["project"] == "demo"
    assert {p: p.read_bytes() for p in store.glob("*") if p.is_file()} == snapshot


def test_init_again_with_another_project_keeps_the_logs_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: Capture) -> None:
    """`init --project other` over a store whose log holds events renamed its project without a word: every read
    of the store's project then answered an empty log. It is refused (exit 2) and nothing changes; before the
    first event, or with the same name, init goes on as before."""
    monkeypatch.chdir(tmp_path)
    assert run_json(capsys, "init", "--project", "demo")[0] == 0
    assert run_json(capsys, "init", "--project", "renamed")[1]["project"] == "renamed"  # no event yet
    assert run_json(capsys, "log", "-m", "first")[0] == 0
    config = (tmp_path / ".agent" / "runtime-continuity" / "config.json").read_bytes()
    code, data = run_json(capsys, "init", "--project", "other")
    assert code == 2 and "this store's project is 'renamed'" in data["message"]
    assert (tmp_path / ".agent" / "runtime-continuity" / "config.json").read_bytes() == config
    assert run_json(capsys, "init", "--project", "renamed")[0] == 0
    assert run_json(capsys, "status")[1]["events"] == 1


def test_log_and_checkpoint_write_seed_004_events(project: Path, capsys: Capture) -> None:
    """Every seed-004 flag lands in the event's seed-004 field."""
    code, data = run_json(
        capsys, "checkpoint", "-m", "runtime-continuity CLI expanded", "--phase", "editing",
        "--done", "added schema", "--done", "wrote tests", "--in-progress", "implementing CLI",
        "--next", "sync templates", "--blocker", "none yet", "--file", "src/a.py",
        "--file", "src/b,c.py", "--artifact", "out/state.json", "--handoff", "h/H-1.json",
        "--command", "pytest -q", "--exit-code", "0", "--command-summary", "passed",
        "--task", "T-RC02", "--run", "R-T-RC02", "--session", "S-1", "--host", "codex",
        "--agent", "codex-main", "--note-json", '{"goal": "ship"}',
    )
    assert code == 0 and data["ok"] is True and data["action"] == "checkpoint"
    event = data["event"]
    assert event["kind"] == "checkpoint.recorded" and event["type"] == "checkpoint"
    assert event["summary"] == {
        "done": ["added schema", "wrote tests"], "in_progress": "implementing CLI",
        "next": ["sync templates"], "blockers": ["none yet"],
    }
    assert event["refs"]["files"] == ["src/a.py", "src/b,c.py"]
    assert event["refs"]["commands"] == [{"command": "pytest -q", "exit_code": 0, "summary": "passed"}]
    assert (event["task_id"], event["run_id"], event["session_id"], event["host"], event["agent_id"]) == (
        "T-RC02", "R-T-RC02", "S-1", "codex", "codex-main")
    assert event["project"] == "demo" and event["note"] == {"goal": "ship"}
    assert (project / data["event_path"]).is_file()
    code, data = run_json(capsys, "log", "a plain entry", "--type", "decision")
    assert data["event"]["kind"] == "work.logged" and data["event"]["type"] == "decision"


def test_identity_comes_from_the_environment(project: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: Capture) -> None:
    """CONTINUITY_* variables fill identity; flags win over them."""
    monkeypatch.setenv("CONTINUITY_AGENT", "env-agent")
    monkeypatch.setenv("CONTINUITY_HOST", "claude-code")
    monkeypatch.setenv("CONTINUITY_SESSION_ID", "sess-42")
    monkeypatch.setenv("CONTINUITY_RUN_ID", "run-7")
    _, data = run_json(capsys, "log", "from env", "--host", "codex")
    event = data["event"]
    assert (event["agent_id"], event["host"], event["session_id"], event["run_id"]) == (
        "env-agent", "codex", "sess-42", "run-7")


def test_store_is_found_from_a_subfolder_or_with_root(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path, capsys: Capture) -> None:
    """Commands find the store upward from the working directory, or at --root."""
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert main(["log", "from deep inside"]) == 0
    monkeypatch.chdir(tmp_path)
    assert main(["log", "from outside", "--root", str(project)]) == 0
    assert len(all_event_files(project)) == 2
    capsys.readouterr()
    assert main(["log", "nowhere"]) == EXIT_NO_STORE
    assert "continuity init" in capsys.readouterr().err


def test_events_list_and_show(project: Path, capsys: Capture) -> None:
    """list shows events in order (filters, --after, --last); show prints one whole."""
    for i in range(4):
        main(["log", f"entry {i}"])
    main(["checkpoint", "-m", "cp"])
    code, data = run_json(capsys, "events", "list")
    assert code == 0 and data["count"] == 5
    ids = [e["event_id"] for e in data["events"]]
    assert [e["message"] for e in data["events"]] == ["entry 0", "entry 1", "entry 2", "entry 3", "cp"]
    _, data = run_json(capsys, "events", "list", "--kind", "checkpoint.recorded")
    assert [e["message"] for e in data["events"]] == ["cp"]
    _, data = run_json(capsys, "events", "list", "--after", ids[2], "--limit", "1")
    assert [e["message"] for e in data["events"]] == ["entry 3"]
    _, data = run_json(capsys, "events", "list", "--last", "2")
    assert [e["message"] for e in data["events"]] == ["entry 3", "cp"]
    code, data = run_json(capsys, "events", "show", ids[1])
    assert code == 0 and data["message"] == "entry 1"
    capsys.readouterr()
    assert main(["events", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5 and lines[0].startswith(ids[0])
    assert main(["events", "show", "RCE-20000101_000000_000000-zzzzzzzz"]) == EXIT_NOT_FOUND


def test_verify_reports_ok_and_then_the_broken_event(project: Path, capsys: Capture) -> None:
    """verify exits 0 on an intact log and 1 naming the first broken event."""
    for i in range(3):
        main(["log", f"entry {i}"])
    code, data = run_json(capsys, "verify")
    assert code == 0 and data["ok"] is True and data["events"] == 3 and data["roots"] == 1
    victim = all_event_files(project)[1]
    victim.chmod(0o644)
    victim.write_bytes(victim.read_bytes().replace(b"entry 1", b"entry X"))
    code, data = run_json(capsys, "verify")
    assert code == EXIT_INTEGRITY and data["ok"] is False
    assert data["first_problem"]["name"] == victim.name
    capsys.readouterr()
    assert main(["verify"]) == EXIT_INTEGRITY
    assert f"first: {victim.name}: edited bytes" in capsys.readouterr().out


def test_secret_is_refused_with_exit_4_and_redacted_on_request(project: Path, capsys: Capture) -> None:
    """A token in --done is refused (field and rule named, secret not echoed); --redact stores it."""
    token = "xo" + "xb-" + "123456789012-" + "abcdefABCDEF1234"
    capsys.readouterr()
    assert main(["log", "deploy", "--done", f"used {token}"]) == EXIT_SECRET
    err = capsys.readouterr().err
    assert "summary.done[0]" in err and token not in err and err.count("\n") == 1
    assert all_event_files(project) == []
    code, data = run_json(capsys, "log", "deploy", "--done", f"used {token}", "--redact")
    assert code == 0 and token not in json.dumps(data)
    assert data["event"]["summary"]["done"][0].startswith("used [REDACTED:")
    assert data["event"]["redacted"] == [f"summary.done[0]:{data['event']['redacted'][0].split(':')[1]}"]


@pytest.mark.parametrize(
    "argv",
    [
        ["log", "x", "--agent", "../../etc"],
        ["log", "x", "--agent", "x y"],  # a valid seed-004 id, no Name: continuity's own commands take Names
        ["checkpoint", "-m", "x", "--host", "Claude Code"],
        ["log", "x", "--host", "a/b"],
        ["log", "x", "--session", "nul\x00byte"],
        ["log", "x", "--run", "tab\there"],
        ["log", "bell \x07 ring"],
        ["log", "x" * 20000],
        ["log", "x", "--exit-code", "zero", "--command", "ls"],
        ["log", "x", "--exit-code", "1"],
        ["log", "x", "--note-json", "[1, 2]"],
        ["log", "x", "--note-json", "{nope"],
        ["log", "x", "-m", "twice"],
        ["log", "x", "--no-such-flag"],
        ["no-such-command"],
        ["events"],
        ["events", "list", "--last", "-1"],
        ["log", "x", "--project", "has space"],
        ["init", "--project", "a/b"],
        ["init", "--language", "fr"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(project: Path, capsys: Capture, argv: list[str]) -> None:
    """Bad argv of every kind: exit 2, one stderr line, nothing written, no traceback."""
    capsys.readouterr()
    assert main(argv) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("continuity: error:")
    assert "continuity: error: continuity" not in captured.err  # the program's name once, not twice
    assert "Traceback" not in captured.err + captured.out
    assert all_event_files(project) == []


def test_invalid_utf8_argument_is_refused(project: Path) -> None:
    """An argument that is not UTF-8 (a real process, raw bytes in argv): exit 2, one line."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable.encode(), b"-m", b"continuity", b"log", b"bad \xff\xfe bytes"],
        cwd=project, capture_output=True,
    )
    assert result.returncode == EXIT_USAGE
    assert result.stderr.count(b"\n") == 1 and b"UTF-8" in result.stderr
    assert all_event_files(project) == []


def test_a_symlinked_store_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: Capture) -> None:
    """A store (or its events folder) that is a symlink: exit 6, nothing written through it."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "proj"
    (root / ".agent").mkdir(parents=True)
    (root / ".agent" / "runtime-continuity").symlink_to(elsewhere)
    monkeypatch.chdir(root)
    capsys.readouterr()
    assert main(["log", "x"]) == EXIT_UNSAFE_STORE
    assert main(["init"]) == EXIT_UNSAFE_STORE
    assert "symlink" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []


def test_json_errors_are_json_too(project: Path, capsys: Capture) -> None:
    """With --json a failure also prints a JSON object with ok false and the exit code."""
    capsys.readouterr()
    assert main(["log", "x", "--agent", "a/b", "--json"]) == EXIT_USAGE
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["exit_code"] == EXIT_USAGE


def test_help_and_version_exit_zero(capsys: Capture) -> None:
    """--help on every command and --version succeed."""
    assert main(["--version"]) == 0
    for argv in (["--help"], ["log", "--help"], ["events", "list", "--help"]):
        assert main(argv) == 0


def test_as_a_real_process_the_hook_path_works(project: Path) -> None:
    """`python -m continuity log` as a new process writes one event and prints its id."""
    result = cli_process("log", "from a process", "--json", cwd=project,
                         env={"CONTINUITY_AGENT": "proc"})
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["event"]["agent_id"] == "proc"
    assert len(all_event_files(project)) == 1


def test_internal_errors_are_one_line(project: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: Capture) -> None:
    """An unexpected exception becomes one line and exit 70, a traceback only with --debug (either log path)."""
    from continuity.cli import plain_log
    from continuity.cli import worklog as work
    from continuity.core import paths

    def boom(*args: object) -> int:
        raise RuntimeError("unexpected")

    monkeypatch.setattr(paths, "event_relpath", boom)  # reporting what was written: the plain path's last step
    capsys.readouterr()
    assert main(["log", "x"]) == 70
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--debug" in err
    with pytest.raises(RuntimeError):
        main(["log", "x", "--debug"])
    monkeypatch.setattr(plain_log, "run", lambda argv: None)  # the argparse path
    monkeypatch.setattr(work, "_run", boom)
    assert main(["log", "x"]) == 70
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--debug" in err
    with pytest.raises(RuntimeError):
        main(["log", "x", "--debug"])


def test_only_the_named_action_of_a_family_is_built() -> None:
    """`task update ...` builds only the update parser; `task --help` or a typo build every action."""
    import argparse

    from continuity.cli.common import build_parser

    def actions(argv: list[str]) -> list[str]:
        parser = build_parser(argv)
        [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        family = commands.choices[argv[0]]
        [sub] = [a for a in family._actions if isinstance(a, argparse._SubParsersAction)]
        return list(sub.choices)

    assert actions(["task", "update", "t-1", "--note", "x"]) == ["update"]
    assert actions(["run", "complete", "r-1"]) == ["complete"]
    every = ["create", "update", "show", "list", "ready"]
    assert actions(["task"]) == actions(["task", "lsit"]) == every
    assert actions(["task", "--root", "/x", "list"]) == ["list"]  # a flag's value is no action (nor command)
