"""Writes never leave the store: symlinks and files planted where the store's folders belong."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from continuity.cli import main
from tests.helpers import all_event_files

Capture = pytest.CaptureFixture[str]


def run(capsys: Capture, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def store_of(project: Path) -> Path:
    return project / ".agent" / "runtime-continuity"


@pytest.fixture(params=["folder", "dangling"])
def outside(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Where a planted link points: a real folder outside the store, or nowhere."""
    target = tmp_path / "outside"
    if request.param == "folder":
        target.mkdir()
    return target


def outside_files(target: Path) -> list[Path]:
    return sorted(path for path in target.rglob("*")) if target.is_dir() else []


def plant(link: Path, target: Path) -> None:
    if link.is_dir() and not link.is_symlink():
        for child in link.iterdir():
            child.unlink()
        link.rmdir()
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target, target_is_directory=True)


def test_a_symlinked_day_folder_is_refused_and_reported(project: Path, capsys: Capture, outside: Path) -> None:
    """A day folder that is a link: `log` exits 6 with nothing written outside; verify exits 1 naming it."""
    assert run(capsys, "log", "-m", "first")[0] == 0
    day_dir = next(store_of(project).joinpath("events").iterdir())
    for event in day_dir.iterdir():
        event.chmod(0o644)
    plant(day_dir, outside)
    code, out, err = run(capsys, "log", "-m", "second")
    assert code == 6 and "symlink" in err and out == ""
    assert outside_files(outside) == []
    code, out, _ = run(capsys, "verify")
    assert code == 1 and f"symlink inside the store: events/{day_dir.name}" in out
    code, data = main(["verify", "--json"]), json.loads(capsys.readouterr().out)
    assert code == 1 and data["symlinks"] == [f"events/{day_dir.name}"] and data["ok"] is False


def test_reads_warn_of_a_symlinked_day_folder_they_leave_out(project: Path, capsys: Capture, outside: Path) -> None:
    """A day folder that is a link: its events are never read, and status, resume-bundle and the session-start
    brief say so on stderr (exit 0) instead of answering from a log that silently looks empty."""
    from continuity.adapters.hooks import run_hook

    assert run(capsys, "checkpoint", "-m", "first", "--next", "ship it")[0] == 0
    day_dir = next(store_of(project).joinpath("events").iterdir())
    for event in day_dir.iterdir():
        event.chmod(0o644)
    plant(day_dir, outside)
    warning = f"events/{day_dir.name} is a symlink: its events are not read"
    for command in (["status"], ["resume-bundle"], ["rebuild"]):
        code, _, err = run(capsys, *command)
        assert code == 0 and warning in err, (command, err)
    payload = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup"}).encode()
    brief = json.loads(run_hook("claude-code", payload, root=str(project)).stdout)
    assert warning in brief["hookSpecificOutput"]["additionalContext"]
    assert outside_files(outside) == []


@pytest.mark.parametrize("folder", ["archives", "local/tmp", "local/models"])
def test_a_symlinked_store_folder_refuses_writes(project: Path, capsys: Capture, outside: Path,
                                                 folder: str) -> None:
    """archives/, local/tmp or local/models as a link: writes exit 6 and leave nothing outside."""
    run(capsys, "log", "-m", "first", "--next", "ship")
    plant(store_of(project) / folder, outside)
    before = len(all_event_files(project))
    for command in (["log", "-m", "x"], ["archive", "--reason", "eod"], ["checkpoint", "-m", "y"]):
        code, _, err = run(capsys, *command)
        assert code == 6 and "symlink" in err, command
    assert len(all_event_files(project)) == before
    assert outside_files(outside) == []


@pytest.mark.parametrize("folder", ["archives", "local/models"])
def test_reads_fail_open_and_write_nothing_through_a_link(project: Path, capsys: Capture, outside: Path,
                                                          folder: str) -> None:
    """resume-bundle and status with a derived folder linked away: exit 0, a warning, nothing written outside."""
    run(capsys, "log", "-m", "first", "--next", "ship")
    run(capsys, "archive", "--reason", "eod")
    run(capsys, "log", "-m", "after the archive")
    plant(store_of(project) / folder, outside)
    for command in (["resume-bundle"], ["status"]):
        code, out, err = run(capsys, *command)
        assert code == 0 and out and "warning" in err and "symlink" in err, command
    assert outside_files(outside) == []


@pytest.mark.parametrize("folder", ["archives", "local/tmp"])
def test_a_folder_only_writers_use_does_not_stop_reads(project: Path, capsys: Capture, outside: Path,
                                                       folder: str) -> None:
    """archives/ or local/tmp linked away: the task, memory and team reads answer (exit 0) from the log, which
    they read only through events/ and local/models; writes still refuse (exit 6); nothing lands outside."""
    run(capsys, "task", "create", "--title", "keep me")
    run(capsys, "log", "-m", "first")
    plant(store_of(project) / folder, outside)
    for command in (["task", "list"], ["memory", "list"], ["briefing", "core"], ["resume-bundle"]):
        code, out, _ = run(capsys, *command)
        assert code == 0, command
        if command[0] in ("task", "briefing"):
            assert "keep me" in out, command
    assert run(capsys, "task", "create", "--title", "refused")[0] == 6
    assert outside_files(outside) == []


def test_verify_is_clean_without_links(project: Path, capsys: Capture) -> None:
    """No link inside the store: verify says intact and lists none."""
    run(capsys, "log", "-m", "first")
    run(capsys, "resume-bundle")
    assert main(["verify", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["symlinks"] == []


def test_events_folder_replaced_by_a_file_fails_open_for_reads(project: Path, capsys: Capture) -> None:
    """`events/` as a file: resume-bundle and status answer (exit 0) with a warning; log refuses (exit 6)."""
    events = store_of(project) / "events"
    events.rmdir()
    events.write_text("not a folder")
    for command in (["resume-bundle"], ["status"]):
        code, out, err = run(capsys, *command)
        assert code == 0 and out and "not a folder" in err, command
    assert run(capsys, "log", "-m", "x")[0] == 6


@pytest.mark.parametrize("name", ["state.json", "archives/latest.json"])
def test_a_derived_file_turned_into_a_folder_is_repaired(project: Path, capsys: Capture, name: str) -> None:
    """An empty folder where state.json or latest.json belongs is replaced by the file on the next read."""
    run(capsys, "log", "-m", "first", "--next", "ship")
    run(capsys, "archive", "--reason", "eod")
    path = store_of(project) / name
    path.unlink()
    path.mkdir()
    run(capsys, "log", "-m", "more")
    assert run(capsys, "resume-bundle")[0] == 0
    assert path.is_file() and json.loads(path.read_text())
    assert not os.path.islink(path)


@pytest.mark.parametrize("planted", ["x: ignore\nok: the log is intact\nnote: harmless.json",
                                     "x\rok: the log is intact", "x\x1b[2Kok: the log is intact",
                                     "x\u2028ok: the log is intact"])
def test_verify_prints_each_name_in_the_store_on_one_line(project: Path, capsys: Capture, planted: str) -> None:
    """A file or link named with a line break or control (anyone who can write the store can name one) cannot add
    lines to verify's report: each problem is one line, the break shown as a stand-in; --json keeps the name."""
    run(capsys, "log", "-m", "first")
    day = next(path for path in (store_of(project) / "events").iterdir() if path.is_dir())
    (day / planted).write_text("{}")
    (store_of(project) / f"link {planted}").symlink_to(day)
    code, out, _ = run(capsys, "verify")
    assert code == 1 and "ok: the log is intact" not in out.splitlines()
    assert not any(line.startswith(("ok:", "note:")) for line in out.splitlines())
    assert all(line.isprintable() for line in out.splitlines())
    code, out, _ = run(capsys, "verify", "--json")
    assert code == 1 and f"link {planted}" in json.loads(out)["symlinks"]


@pytest.mark.parametrize("planted", ["local", "local/models"])
def test_a_link_planted_in_local_leaves_the_brief_of_the_log(
        project: Path, capsys: Capture, tmp_path: Path, planted: str) -> None:
    """`local/` or `local/models` replaced by a link (the saved models cannot be trusted): `events/` is intact, so
    the SessionStart brief, `status` and `resume-bundle` are the log replayed in memory, with a warning; nothing is
    read or written through the link, and nothing is recorded (writes refuse, exit 6)."""
    from continuity.adapters import hooks
    from continuity.core.store import find_store

    assert run(capsys, "checkpoint", "-m", "parser done", "--next", "wire the CLI")[0] == 0
    link = store_of(project) / planted
    target = tmp_path / "planted"
    link.rename(target)
    link.symlink_to(target)
    before = sorted((path, path.stat().st_mtime_ns) for path in target.rglob("*"))
    events_before = all_event_files(project)
    payload = {"session_id": "S1", "hook_event_name": "SessionStart", "source": "startup", "cwd": str(project)}
    result = hooks.session_start("claude-code", payload, find_store(root=str(project)))
    brief = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "## Next action\nwire the CLI" in brief and "saved read models are not read" in brief
    assert result.recorded == []
    code, out, err = run(capsys, "status")
    assert code == 0 and "(1 events)" in out and "replayed in memory" in err
    code, out, _ = run(capsys, "resume-bundle")
    assert code == 0 and "wire the CLI" in out
    assert run(capsys, "log", "-m", "refused")[0] == 6
    assert sorted((path, path.stat().st_mtime_ns) for path in target.rglob("*")) == before
    assert all_event_files(project) == events_before


def test_a_linked_agent_folder_takes_no_write_anywhere(project: Path, tmp_path: Path) -> None:
    """A project whose `.agent/` is a link (a cloned repository can carry one) to another project's `.agent/`:
    `log`, every harness's hooks and `sync` wrote this project's work into the other store, while a linked
    `runtime-continuity/` was refused. Each is refused now (the hooks still exit 0), and nothing reaches the
    other store; `status` says why."""
    import shutil
    import subprocess
    import sys

    other = tmp_path / "other"
    shutil.copytree(project / ".agent", other / ".agent", symlinks=True)
    before = sorted(path.name for path in (other / ".agent").rglob("*.json"))
    shutil.rmtree(project / ".agent")
    (project / ".agent").symlink_to(other / ".agent", target_is_directory=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith("CONTINUITY_")}

    def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "continuity", *args], cwd=project, env=env, input=stdin,
                              capture_output=True, text=True, timeout=60)

    logged = cli("log", "-m", "to the wrong store")
    assert logged.returncode == 6 and ".agent is a symlink" in logged.stderr, logged.stderr
    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "hooks"
    claude = json.dumps({"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Bash",
                         "tool_input": {"command": "ls"}, "tool_response": {"stdout": "x"}, "cwd": str(project)})
    for harness, payload in (("claude-code", claude), ("codex", claude),
                             ("cursor", (fixtures / "cursor" / "after_shell_execution.json").read_text()),
                             ("gemini", (fixtures / "gemini" / "after_tool_shell.json").read_text())):
        assert cli("hook", harness, stdin=payload.replace("{cwd}", str(project))).returncode == 0
    status = cli("status")
    assert "symlink" in status.stderr + status.stdout
    assert sorted(path.name for path in (other / ".agent").rglob("*.json")) == before


@pytest.mark.parametrize("linked", ["store", "local"])
def test_task_and_memory_lists_read_a_linked_store_as_the_other_reads_do(project: Path, capsys: Capture,
                                                                         tmp_path: Path, linked: str) -> None:
    """docs/architecture.md: a linked store answers as an empty log with the warning, a linked `local/` from the log
    replayed in memory. `status`, `work status` and `role list` did; `task list` and `memory list` exited 6. A
    task write is still refused and writes nothing through the link."""
    import shutil

    assert run(capsys, "task", "create", "--title", "the parser")[0] == 0
    place = store_of(project) if linked == "store" else store_of(project) / "local"
    shutil.move(str(place), str(tmp_path / "moved"))
    place.symlink_to(tmp_path / "moved", target_is_directory=True)
    before = sorted(path.relative_to(tmp_path / "moved") for path in (tmp_path / "moved").rglob("*"))
    for args in (["task", "list"], ["memory", "list"]):
        code, out, err = run(capsys, *args)
        assert code == 0 and "is a symlink" in err, (args, err)
        if args[0] == "task":
            assert ("the parser" in out) == (linked == "local"), out  # the log replayed, or nothing read
    code, _, err = run(capsys, "task", "create", "--title", "through the link")
    assert code == 6 and "is a symlink" in err
    assert sorted(path.relative_to(tmp_path / "moved") for path in (tmp_path / "moved").rglob("*")) == before


@pytest.mark.parametrize("plain", [False, True])
def test_a_writer_whose_store_was_moved_away_never_makes_it_again(project: Path, tmp_path: Path,
                                                                 plain: bool) -> None:
    """The store moved (or removed) while a writer holds its log open (a long-lived MCP server, a hook racing the
    move): the append fails, saying the store is gone; it made `.agent/runtime-continuity/events/<day>/` (and
    `local/`) again at the old place, an empty shell without config.json that every later command took for a
    broken store, and could write an event into it."""
    import shutil

    from continuity.core.store import find_store
    from events import plain as plain_log
    from events.errors import WriteFailed
    from events.worklog import WorkLogged

    store = find_store(root=str(project))
    log = store.open_folder() if plain else store.open_log()
    if not plain:  # a writer that appended before (its lock file open): the same line
        log.append(WorkLogged(project="demo", message="before"))
    moved = tmp_path / "moved"
    shutil.move(str(project / ".agent"), str(moved))
    with pytest.raises(WriteFailed, match="the store is gone"):
        if plain:
            tree = plain_log.prepare(plain_log.complete("work.logged", {"project": "demo", "message": "late"}))
            plain_log.append(log, "0badc0de", lambda: 1_800_000_000_000_000, [tree])
        else:
            log.append(WorkLogged(project="demo", message="late"))
    assert not (project / ".agent").exists()


@pytest.mark.parametrize("linked", [".agent", ".agent/runtime-continuity"])
def test_a_linked_store_is_answered_under_the_folders_name_not_the_linked_projects(
        project: Path, tmp_path: Path, capsys: Capture, linked: str) -> None:
    """A store (or `.agent/`) that is a link to another project's store is not read, and the reads say so; they
    answered under the other project's name, read from its config.json through the link."""
    import shutil

    other = tmp_path / "someone-else"
    other.mkdir()
    assert main(["--root", str(other), "init", "--project", "someone-else"]) == 0
    capsys.readouterr()
    shutil.rmtree(project / linked)
    (project / linked).symlink_to(other / linked, target_is_directory=True)
    for command in (["status", "--json"], ["resume-bundle", "--format", "json"]):
        code, out, err = run(capsys, *command)
        answer = json.loads(out)
        assert code == 0 and answer["project"] == project.name and "symlink" in err + out, (command, answer)
        assert "someone-else" not in out + err
