"""`continuity install` / `uninstall` (issue 9, item 8): commands that always exit 0, portable
committed files, exact recognition of our entries, byte-for-byte restores, backups in the store,
PostToolUseFailure."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from continuity.adapters import install
from continuity.adapters.install import is_ours
from continuity.cli import main
from tests.helpers import all_event_files

Capture = pytest.CaptureFixture[str]

SHELLS = ["/bin/sh", *([shutil.which("bash")] if shutil.which("bash") else [])]
VENV_CONTINUITY = install.executable()
#: A stand-in `continuity` made of sh builtins only: says where it ran, echoes stdin, exits 2 (blocking).
FAKE = '#!/bin/sh\necho "ran $0 in $(pwd)"\nwhile IFS= read -r line; do printf "%s\\n" "$line"; done\nexit 2\n'
USER_HOOKS = [
    'echo "continuity hook claude-code ran" >> /tmp/hooks.log',
    "./scripts/notify.sh && continuity hook claude-code",
    "continuity hook claude-code --verbose",
    "./bin/my-continuity hook claude-code",
    'cd "${CLAUDE_PROJECT_DIR:-.}" && ./tools/continuity-hook claude-code',
]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No `continuity` on PATH and no XDG_STATE_HOME unless a test puts them there."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder without a store, as the working directory."""
    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


def fake_continuity(folder: Path) -> Path:
    """A fake `continuity` script in `folder` (made if needed)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "continuity"
    script.write_text(FAKE)
    script.chmod(0o755)
    return script


def put_on_path(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def run(capsys: Capture, *args: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main([*args, "--json"]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


def command_of(settings: Path, event: str = "PostToolUse") -> str:
    """The command of our entry for `event` in a settings file."""
    config = json.loads(settings.read_text())
    [command] = [h["command"] for g in config["hooks"][event] for h in g["hooks"] if is_ours(h)]
    return str(command)


def sh(shell: str, command: str, *, path: str, project_dir: Path, stdin: str = "",
       cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run an installed command as Claude Code does: `<shell> -c`, payload on stdin."""
    env = {"PATH": path, "HOME": os.environ["HOME"], "CLAUDE_PROJECT_DIR": str(project_dir)}
    return subprocess.run([shell, "-c", command], input=stdin, env=env, cwd=cwd or project_dir.parent,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("shell", SHELLS)
def test_committed_command_exits_0_without_its_folder_or_continuity(
        proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture, shell: str) -> None:
    """The settings.json command exits 0 with a missing project folder, with no `continuity` on PATH,
    and even when the hook itself exits 2; stdin and stdout pass through."""
    fake_dir = tmp_path / "fake-bin"
    fake_continuity(fake_dir)
    put_on_path(monkeypatch, fake_dir)
    run(capsys, "install", "claude-code")
    command = command_of(proj / ".claude" / "settings.json")
    empty = tmp_path / "empty-bin"

    gone = sh(shell, command, path=str(fake_dir), project_dir=tmp_path / "moved-away", stdin="{}\n")
    assert (gone.returncode, gone.stdout, gone.stderr) == (0, "", "")
    missing = sh(shell, command, path=str(empty), project_dir=proj, stdin="{}\n")
    assert (missing.returncode, missing.stdout, missing.stderr) == (0, "", "")
    ran = sh(shell, command, path=str(fake_dir), project_dir=proj, stdin='{"hook_event_name": "Stop"}\n')
    assert ran.returncode == 0
    assert ran.stdout == f'ran {fake_dir / "continuity"} in {proj}\n{{"hook_event_name": "Stop"}}\n'


@pytest.mark.parametrize("shell", SHELLS)
def test_local_fallback_runs_this_machines_binary_only_when_path_has_none(
        proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture, shell: str) -> None:
    """settings.local.json's command runs the absolute binary when PATH has no `continuity`, stays out
    of the way when it has one, and exits 0 when the binary or the folder is gone."""
    exe = fake_continuity(tmp_path / "venv" / "bin")
    monkeypatch.setattr(install, "executable", lambda: str(exe))
    run(capsys, "install", "claude-code")
    command = command_of(proj / ".claude" / "settings.local.json")
    empty, other = tmp_path / "empty-bin", tmp_path / "other-bin"
    fake_continuity(other)

    alone = sh(shell, command, path=str(empty), project_dir=proj, stdin="{}\n")
    assert (alone.returncode, alone.stdout) == (0, f"ran {exe} in {proj}\n{{}}\n")
    with_path = sh(shell, command, path=str(other), project_dir=proj, stdin="{}\n")
    assert (with_path.returncode, with_path.stdout, with_path.stderr) == (0, "", "")
    gone = sh(shell, command, path=str(empty), project_dir=tmp_path / "moved-away", stdin="{}\n")
    assert (gone.returncode, gone.stdout, gone.stderr) == (0, "", "")
    exe.unlink()
    no_binary = sh(shell, command, path=str(empty), project_dir=proj, stdin="{}\n")
    assert (no_binary.returncode, no_binary.stdout, no_binary.stderr) == (0, "", "")


@pytest.mark.skipif(VENV_CONTINUITY is None, reason="no continuity script beside this interpreter")
def test_real_hooks_through_sh_record_and_exit_0(project: Path, tmp_path: Path, capsys: Capture) -> None:
    """The real binary behind both installed forms records a prompt (turn markers on); PostToolUseFailure's
    command exits 0."""
    run(capsys, "install", "claude-code", "--turns")
    payload = {"session_id": "s-1", "hook_event_name": "UserPromptSubmit", "cwd": str(project), "prompt": "go"}
    before = len(all_event_files(project))
    fallback = command_of(project / ".claude" / "settings.local.json", "UserPromptSubmit")
    done = sh("/bin/sh", fallback, path="/usr/bin:/bin", project_dir=project, stdin=json.dumps(payload))
    assert done.returncode == 0 and len(all_event_files(project)) == before + 1
    portable = command_of(project / ".claude" / "settings.json", "UserPromptSubmit")
    venv_bin = str(Path(str(VENV_CONTINUITY)).parent)
    done = sh("/bin/sh", portable, path=f"{venv_bin}:/usr/bin:/bin", project_dir=project, stdin=json.dumps(payload))
    assert done.returncode == 0 and len(all_event_files(project)) == before + 2
    failure = {"session_id": "s-1", "hook_event_name": "PostToolUseFailure", "cwd": str(project),
               "tool_name": "Bash", "tool_input": {"command": "false"}, "tool_use_id": "t1",
               "error": "Command failed with exit code 1"}
    for command in (command_of(project / ".claude" / "settings.json", "PostToolUseFailure"),
                    command_of(project / ".claude" / "settings.local.json", "PostToolUseFailure")):
        for path in (f"{venv_bin}:/usr/bin:/bin", "/usr/bin:/bin"):
            assert sh("/bin/sh", command, path=path, project_dir=project, stdin=json.dumps(failure)).returncode == 0


def test_committed_files_hold_no_machine_path(proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: Capture) -> None:
    """Without `continuity` on PATH, settings.json and CLAUDE.md stay portable; the absolute path goes to
    settings.local.json, and the output says which files to commit."""
    exe = fake_continuity(tmp_path / "venv" / "bin")
    monkeypatch.setattr(install, "executable", lambda: str(exe))
    data = run(capsys, "install", "claude-code")
    assert [(Path(f["path"]).relative_to(proj).as_posix(), f["commit"]) for f in data["files"]] == [
        (".claude/settings.json", True), (".claude/settings.local.json", False), ("CLAUDE.md", True)]
    for shared in (proj / ".claude" / "settings.json", proj / "CLAUDE.md"):
        assert str(tmp_path) not in shared.read_text()
    assert str(exe) in (proj / ".claude" / "settings.local.json").read_text()
    assert "`continuity checkpoint -m" in (proj / "CLAUDE.md").read_text()
    assert any("not on PATH" in note and "settings.local.json" in note for note in data["notes"])
    assert main(["uninstall", "claude-code"]) == 0
    assert main(["install", "claude-code"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "commit (shared with the team): .claude/settings.json, CLAUDE.md" in lines
    assert "do not commit (this machine only; git-ignore it if git lists it): .claude/settings.local.json" in lines


def test_rerun_with_continuity_on_path_drops_the_fallback(proj: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, capsys: Capture) -> None:
    """Once `continuity` is on PATH, a rerun takes our fallback out of settings.local.json and gives the
    user's own local settings back byte for byte."""
    local = proj / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_bytes(b'{"permissions": {"allow": ["Bash(ls)"]}}')
    monkeypatch.setattr(install, "executable", lambda: str(fake_continuity(tmp_path / "venv" / "bin")))
    run(capsys, "install", "claude-code")
    assert is_ours(json.loads(local.read_text())["hooks"]["PostToolUse"][0]["hooks"][0])
    put_on_path(monkeypatch, tmp_path / "venv" / "bin")
    data = run(capsys, "install", "claude-code")
    assert [f["status"] for f in data["files"]] == ["unchanged", "updated", "unchanged"]
    assert local.read_bytes() == b'{"permissions": {"allow": ["Bash(ls)"]}}'


def test_user_scope_records_this_machines_path(proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: Capture) -> None:
    """--scope user writes the absolute path (the user's own file), guarded so a missing binary exits 0."""
    exe = fake_continuity(tmp_path / "venv" / "bin")
    monkeypatch.setattr(install, "executable", lambda: str(exe))
    data = run(capsys, "install", "claude-code", "--scope", "user")
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    assert command_of(settings) == (f'cd "${{CLAUDE_PROJECT_DIR:-.}}" >/dev/null 2>&1 && [ -x {exe} ] && '
                                    f"{exe} hook claude-code; exit 0")
    assert [f["commit"] for f in data["files"]] == [False, False] and data["notes"] == []
    assert sh("/bin/sh", command_of(settings), path="/nonexistent", project_dir=proj, stdin="{}").stdout.startswith(
        f"ran {exe}")


def test_uninstall_keeps_user_hooks_that_mention_continuity(proj: Path, capsys: Capture) -> None:
    """A user's hooks whose commands merely contain `continuity hook` survive install and uninstall, and
    the file comes back byte for byte."""
    user = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": c} for c in USER_HOOKS]}],
                      "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": USER_HOOKS[1]}]}]}}
    settings = proj / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(user, indent=2) + "\n")
    original = settings.read_bytes()
    assert not any(is_ours({"command": command}) for command in USER_HOOKS)
    run(capsys, "install", "claude-code", "--turns")  # our Stop entry beside the user's
    config = json.loads(settings.read_text())
    assert config["hooks"]["Stop"][0] == user["hooks"]["Stop"][0] and len(config["hooks"]["Stop"]) == 2
    run(capsys, "uninstall", "claude-code")
    assert settings.read_bytes() == original


def test_uninstall_restores_unusual_formatting_byte_for_byte(proj: Path, capsys: Capture) -> None:
    """Four-space indents, escaped non-ASCII, an empty "hooks", CRLF and no final newline all come back."""
    settings = proj / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = b'{\r\n    "theme": "caf\\u00e9",\r\n    "hooks": {},\r\n    "env": {"A": "1"}\r\n}'
    settings.write_bytes(original)
    notes = proj / "CLAUDE.md"
    notes.write_bytes(b"# Notes\n\nno final newline")
    run(capsys, "install", "claude-code")
    assert settings.read_bytes() != original
    data = run(capsys, "uninstall", "claude-code")
    assert [f["status"] for f in data["files"]] == ["updated", "removed", "updated"]  # + our settings.local.json
    assert settings.read_bytes() == original and notes.read_bytes() == b"# Notes\n\nno final newline"


def test_uninstall_after_other_edits_keeps_them(proj: Path, capsys: Capture) -> None:
    """When the user changed the file after install, uninstall removes only our entries and keeps the edit."""
    settings = proj / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "opus"}\n')
    run(capsys, "install", "claude-code")
    config = json.loads(settings.read_text())
    config["permissions"] = {"allow": ["Bash(make)"]}
    settings.write_text(json.dumps(config, indent=2) + "\n")
    run(capsys, "uninstall", "claude-code")
    assert json.loads(settings.read_text()) == {"model": "opus", "permissions": {"allow": ["Bash(make)"]}}


def test_legacy_entries_are_replaced_and_removed(proj: Path, capsys: Capture) -> None:
    """Entries an earlier version wrote (absolute path, no exit 0) are ours: install replaces, uninstall removes."""
    old = 'cd "${CLAUDE_PROJECT_DIR:-.}" && /home/alice/venv/bin/continuity hook claude-code'
    settings = proj / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": old}]}]}}))
    assert is_ours({"command": old}) and is_ours({"command": "'/a b/continuity' hook codex"})
    run(capsys, "install", "claude-code")
    assert "/home/alice" not in settings.read_text()
    assert command_of(settings).endswith(" continuity hook claude-code; exit 0")
    run(capsys, "uninstall", "claude-code")
    assert not settings.exists()  # it held nothing but our entries


def test_post_tool_use_failure_is_installed_for_claude_code_only(proj: Path, capsys: Capture) -> None:
    """Claude Code gets a PostToolUseFailure group (same matcher as PostToolUse); Codex, which has no such
    event, does not; uninstall takes it out."""
    run(capsys, "install", "claude-code")
    config = json.loads((proj / ".claude" / "settings.json").read_text())
    [group] = config["hooks"]["PostToolUseFailure"]
    assert group["matcher"] == config["hooks"]["PostToolUse"][0]["matcher"] == "Edit|MultiEdit|Write|NotebookEdit|Bash"
    assert group["hooks"][0]["timeout"] == 10 and is_ours(group["hooks"][0])
    run(capsys, "install", "codex")
    assert "PostToolUseFailure" not in json.loads((proj / ".codex" / "hooks.json").read_text())["hooks"]
    run(capsys, "uninstall", "claude-code")
    assert not (proj / ".claude" / "settings.json").exists()


@pytest.mark.skipif(shutil.which("git", path="/usr/bin:/bin") is None, reason="git is not installed")
def test_backups_go_to_the_store_and_git_stays_clean(project: Path, capsys: Capture) -> None:
    """With a store, copies go to its local/backups/<stamp>/ and git shows no backup file."""
    subprocess.run(["/usr/bin/env", "PATH=/usr/bin:/bin", "git", "init", "-q", str(project)], check=True)
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "opus"}\n')
    (project / "CLAUDE.md").write_text("# Notes\n")
    data = run(capsys, "install", "claude-code")
    backups = project / ".agent" / "runtime-continuity" / "local" / "backups"
    saved = [Path(f["backup"]) for f in data["files"] if f["backup"]]
    assert [p.relative_to(backups).parts[1:] for p in saved] == [(".claude", "settings.json"), ("CLAUDE.md",)]
    assert saved[0].read_text() == '{"model": "opus"}\n' and saved[1].read_text() == "# Notes\n"
    assert list(project.rglob("*.continuity-backup-*")) == []
    status = subprocess.run(["/usr/bin/env", "PATH=/usr/bin:/bin", "git", "status", "--porcelain",
                             "--untracked-files=all"], cwd=project, capture_output=True, text=True, check=True)
    assert "backup" not in status.stdout and ".agent" not in status.stdout


def test_old_backups_beside_files_move_into_the_store(project: Path, capsys: Capture) -> None:
    """`<file>.continuity-backup-<stamp>` copies left by earlier versions move to local/backups/<stamp>/;
    a dry run moves nothing."""
    (project / ".claude").mkdir()
    old_settings = project / ".claude" / "settings.json.continuity-backup-20250101T000000Z"
    old_notes = project / "CLAUDE.md.continuity-backup-20250101T000000Z-1"
    old_settings.write_text("{}\n")
    old_notes.write_text("# Old\n")
    assert run(capsys, "install", "claude-code", "--dry-run")["moved_backups"] == []
    assert old_settings.exists() and old_notes.exists()
    data = run(capsys, "install", "claude-code")
    backups = project / ".agent" / "runtime-continuity" / "local" / "backups" / "20250101T000000Z"
    assert sorted(data["moved_backups"]) == sorted([str(backups / ".claude" / "settings.json"),
                                                    str(backups / "CLAUDE.md")])
    assert (backups / "CLAUDE.md").read_text() == "# Old\n"
    assert not old_settings.exists() and not old_notes.exists()


def test_without_a_store_backups_go_to_the_state_folder(proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: Capture) -> None:
    """A project without a store gets no half-made store: copies go under $XDG_STATE_HOME, and install says so."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (proj / "CLAUDE.md").write_text("# Notes\n")
    data = run(capsys, "install", "claude-code")
    [backup] = [f["backup"] for f in data["files"] if f["backup"]]
    assert backup.startswith(str(tmp_path / "state" / "continuity" / "backups" / "proj-"))
    assert Path(backup).read_text() == "# Notes\n"
    assert not (proj / ".agent").exists()
    assert any("no continuity store" in note and "continuity init" in note for note in data["notes"])
    assert any("backups are kept in" in note for note in data["notes"])
