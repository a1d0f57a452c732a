"""`continuity install` / `uninstall` for Cursor and Gemini CLI: merged beside the user's own hooks and
settings, idempotent, restored byte for byte, and real hooks that exit 0 through sh."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from continuity.adapters import install
from continuity.adapters.install import is_ours
from continuity.cli import main
from continuity.core.errors import EXIT_USAGE
from tests.helpers import all_event_files

Capture = pytest.CaptureFixture[str]
VENV_BIN = str(Path(str(install.executable())).parent)
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hooks"
#: Every event install can hook; the turn markers (the second of each pair) only with `--turns`.
CURSOR_EVENTS = ["sessionStart", "beforeSubmitPrompt", "afterFileEdit", "afterShellExecution", "preCompact", "stop",
                 "sessionEnd"]
GEMINI_EVENTS = ["SessionStart", "BeforeAgent", "AfterTool", "AfterAgent", "PreCompress", "SessionEnd"]
CURSOR_TURNS, GEMINI_TURNS = {"beforeSubmitPrompt", "stop"}, {"BeforeAgent", "AfterAgent"}
#: A user's own Cursor hooks file: its own stop and edit hooks, an unknown key, tabs, no final newline.
CURSOR_ORIGINAL = (b'{\n\t"version": 1,\n\t"hooks": {\n\t\t"stop": [{"command": "./hooks/audit.sh", "loop_limit": 3}],'
                   b'\n\t\t"afterFileEdit": [{"command": "npx prettier --write"}]\n\t},\n\t"x-team": "caf\\u00e9"\n}')
#: A user's own Gemini settings: other settings, an own AfterTool hook, four-space indents, CRLF.
GEMINI_ORIGINAL = (b'{\r\n    "model": {"name": "gemini-2.5-pro"},\r\n    "ui": {"theme": "GitHub"},\r\n    "hooks": '
                   b'{\r\n        "AfterTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": '
                   b'"./lint.sh", "timeout": 5000}]}]\r\n    },\r\n    "hooksConfig": {"notifications": false}'
                   b'\r\n}\r\n')


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real `continuity` on PATH (project files get the portable command) and no XDG_STATE_HOME."""
    monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


def run(capsys: Capture, *args: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main([*args, "--json"]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


def ours(harness: str, config: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Event -> our hooks in a settings file."""
    found: dict[str, list[dict[str, Any]]] = {}
    for event, entries in config["hooks"].items():
        hooks = [h for e in entries for h in e.get("hooks", [e]) if is_ours(h)]
        if hooks:
            found[event] = hooks
    return found


def settings_of(harness: str, root: Path) -> Path:
    return root / (".cursor/hooks.json" if harness == "cursor" else ".gemini/settings.json")


def test_cursor_install_adds_flat_hooks_beside_the_users(proj: Path, capsys: Capture) -> None:
    """hooks.json keeps version 1, the user's hooks and keys; ours are one flat entry per event, in seconds."""
    settings = settings_of("cursor", proj)
    settings.parent.mkdir()
    settings.write_bytes(CURSOR_ORIGINAL)
    data = run(capsys, "install", "cursor", "--turns")  # every event, ours beside the user's own stop hook
    config = json.loads(settings.read_text())
    assert config["version"] == 1 and config["x-team"] == "café"
    assert config["hooks"]["stop"][0] == {"command": "./hooks/audit.sh", "loop_limit": 3}
    assert config["hooks"]["afterFileEdit"][0] == {"command": "npx prettier --write"}
    found = ours("cursor", config)
    assert list(found) == ["stop", "afterFileEdit", "sessionStart", "beforeSubmitPrompt", "afterShellExecution",
                           "preCompact", "sessionEnd"]
    assert set(found) == set(CURSOR_EVENTS)
    command = "command -v continuity >/dev/null 2>&1 && continuity hook cursor; exit 0"
    for event, hooks in found.items():
        assert hooks == [{"command": command, "timeout": 2 if event == "sessionEnd" else 10}]
    assert "<!-- continuity:begin -->" in (proj / "AGENTS.md").read_text()
    assert [(Path(f["path"]).name, f["commit"]) for f in data["files"]] == [("hooks.json", True), ("AGENTS.md", True)]
    assert any("restart Cursor" in note for note in data["notes"])


def test_gemini_install_adds_named_groups_in_milliseconds(proj: Path, capsys: Capture) -> None:
    """settings.json keeps every other setting and the user's AfterTool hook; ours are named, timed in ms."""
    settings = settings_of("gemini", proj)
    settings.parent.mkdir()
    settings.write_bytes(GEMINI_ORIGINAL)
    data = run(capsys, "install", "gemini")
    config = json.loads(settings.read_text())
    assert config["model"] == {"name": "gemini-2.5-pro"} and config["hooksConfig"] == {"notifications": False}
    assert config["hooks"]["AfterTool"][0]["hooks"][0]["command"] == "./lint.sh"
    assert set(ours("gemini", config)) == set(GEMINI_EVENTS) - GEMINI_TURNS  # no turn markers by default
    [group] = [g for g in config["hooks"]["AfterTool"] if g["hooks"][0]["command"] != "./lint.sh"]
    assert group == {"matcher": "write_file|replace|run_shell_command", "hooks": [
        {"name": "continuity", "type": "command",
         "command": "command -v continuity >/dev/null 2>&1 && continuity hook gemini; exit 0", "timeout": 10000}]}
    assert config["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == 2000
    assert "SessionStart" in config["hooks"] and "matcher" not in config["hooks"]["SessionStart"][0]
    assert "<!-- continuity:begin -->" in (proj / "GEMINI.md").read_text()
    assert settings.read_bytes().startswith(b"{\r\n    ")  # the file's own indentation and line breaks
    assert any("trust" in note for note in data["notes"])


@pytest.mark.parametrize(("harness", "original"), [("cursor", CURSOR_ORIGINAL), ("gemini", GEMINI_ORIGINAL)])
def test_install_twice_changes_nothing_and_uninstall_restores_the_bytes(proj: Path, capsys: Capture, harness: str,
                                                                        original: bytes) -> None:
    """A second install leaves every file as it was; uninstall gives back the user's exact bytes."""
    settings = settings_of(harness, proj)
    settings.parent.mkdir()
    settings.write_bytes(original)
    markdown = proj / ("AGENTS.md" if harness == "cursor" else "GEMINI.md")
    markdown.write_bytes(b"# Team notes\r\n\r\nno final newline")
    run(capsys, "install", harness)
    after_first = (settings.read_bytes(), markdown.read_bytes())
    data = run(capsys, "install", harness)
    assert [f["status"] for f in data["files"]] == ["unchanged", "unchanged"]
    assert (settings.read_bytes(), markdown.read_bytes()) == after_first
    run(capsys, "uninstall", harness)
    assert settings.read_bytes() == original
    assert markdown.read_bytes() == b"# Team notes\r\n\r\nno final newline"


@pytest.mark.parametrize("harness", ["cursor", "gemini"])
def test_files_install_created_are_removed(proj: Path, capsys: Capture, harness: str) -> None:
    """Without files before, uninstall removes what install created (Cursor's version-only file too)."""
    run(capsys, "install", harness)
    assert json.loads(settings_of(harness, proj).read_text()).get("version") == (1 if harness == "cursor" else None)
    data = run(capsys, "uninstall", harness)
    assert [f["status"] for f in data["files"]] == ["removed", "removed"]
    assert sorted(p.name for p in proj.rglob("*") if p.is_file()) == []


@pytest.mark.parametrize("harness", ["cursor", "gemini"])
def test_uninstall_after_user_edits_keeps_them(proj: Path, capsys: Capture, harness: str) -> None:
    """A hook or setting the user added after install stays; only ours go."""
    run(capsys, "install", harness, "--turns")
    settings = settings_of(harness, proj)
    config = json.loads(settings.read_text())
    own = {"command": "./mine.sh"} if harness == "cursor" else {"hooks": [{"type": "command", "command": "./mine.sh"}]}
    event = "stop" if harness == "cursor" else "AfterAgent"
    config["hooks"][event].append(own)
    config["added"] = True
    settings.write_text(json.dumps(config, indent=2) + "\n")
    run(capsys, "uninstall", harness)
    expected: dict[str, Any] = {"hooks": {event: [own]}, "added": True}
    if harness == "cursor":
        expected = {"version": 1, **expected}
    assert json.loads(settings.read_text()) == expected


def test_agents_md_stays_while_codex_or_cursor_still_uses_it(proj: Path, capsys: Capture) -> None:
    """Codex and Cursor share AGENTS.md: uninstalling one keeps the block, uninstalling both removes it."""
    agents = proj / "AGENTS.md"
    agents.write_text("# Agents\n")
    run(capsys, "install", "codex")
    run(capsys, "install", "cursor")
    assert agents.read_text().count("<!-- continuity:begin -->") == 1
    run(capsys, "uninstall", "cursor")
    assert "<!-- continuity:begin -->" in agents.read_text()
    run(capsys, "uninstall", "codex")
    assert agents.read_text() == "# Agents\n"


def test_user_scope(proj: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """--scope user: ~/.cursor/hooks.json alone (Cursor keeps user rules in its settings); ~/.gemini/ both files."""
    home = Path(os.environ["HOME"])
    data = run(capsys, "install", "cursor", "--scope", "user")
    assert [f["path"] for f in data["files"]] == [str(home / ".cursor" / "hooks.json")]
    exe = install.executable()
    command = ours("cursor", json.loads((home / ".cursor" / "hooks.json").read_text()))["sessionEnd"][0]["command"]
    assert command == f"[ -x {exe} ] && {exe} hook cursor; exit 0"
    data = run(capsys, "install", "gemini", "--scope", "user")
    assert [f["path"] for f in data["files"]] == [str(home / ".gemini" / "settings.json"),
                                                  str(home / ".gemini" / "GEMINI.md")]
    assert list(proj.iterdir()) == []
    run(capsys, "uninstall", "cursor", "--scope", "user")
    run(capsys, "uninstall", "gemini", "--scope", "user")
    assert not (home / ".cursor" / "hooks.json").exists() and not (home / ".gemini" / "settings.json").exists()


@pytest.mark.parametrize(("harness", "text", "expected"), [
    ("cursor", '{"version": 1, "hooks": [1]}', "is not a JSON object"),
    ("cursor", '{"version": 1, "hooks": {"stop": {"command": "x"}}}', "is not a JSON array"),
    ("gemini", '{"model": {}, // a comment\n}', "holds comments"),
    ("gemini", '/* settings */ {"model": {}}', "holds comments"),
    ("gemini", '{"url": "http://x//y", "a": 1,}', "not valid JSON"),  # `//` in a string is no comment
    ("gemini", "[]", "does not hold a JSON object"),
])
def test_unreadable_settings_are_refused_untouched(proj: Path, capsys: Capture, harness: str, text: str,
                                                   expected: str) -> None:
    """A settings file install cannot read safely: usage error, one line, nothing written."""
    settings = settings_of(harness, proj)
    settings.parent.mkdir()
    settings.write_text(text)
    capsys.readouterr()
    assert main(["install", harness]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1 and "Traceback" not in err
    assert settings.read_text() == text
    assert not (proj / ("AGENTS.md" if harness == "cursor" else "GEMINI.md")).exists()


def sh(command: str, payload: str, *, path: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run an installed command as the harness does (`sh -c`), payload on stdin, in the project."""
    env = {"PATH": path, "HOME": os.environ["HOME"]}
    return subprocess.run(["/bin/sh", "-c", command], input=payload, env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize(("harness", "fixtures"), [
    ("cursor", {"sessionStart": "session_start", "beforeSubmitPrompt": "before_submit_prompt",
                "afterFileEdit": "after_file_edit", "afterShellExecution": "after_shell_execution",
                "preCompact": "pre_compact", "stop": "stop", "sessionEnd": "session_end"}),
    ("gemini", {"SessionStart": "session_start", "BeforeAgent": "before_agent", "AfterTool": "after_tool_shell",
                "AfterAgent": "after_agent", "PreCompress": "pre_compress", "SessionEnd": "session_end"}),
])
def test_every_installed_hook_runs_through_sh_and_exits_0(project: Path, capsys: Capture, harness: str,
                                                          fixtures: dict[str, str]) -> None:
    """Each installed command, run by sh with the documented payload, records its event; without continuity on
    PATH the same command exits 0 and records nothing (installed with the turn markers: every event)."""
    run(capsys, "install", harness, "--turns")
    found = ours(harness, json.loads(settings_of(harness, project).read_text()))
    assert set(found) == set(fixtures)
    for event, name in fixtures.items():
        [hook] = found[event]
        payload = (FIXTURES / harness / f"{name}.json").read_text().replace("{cwd}", str(project))
        before = len(all_event_files(project))
        done = sh(hook["command"], payload, path=f"{VENV_BIN}:/usr/bin:/bin", cwd=project)
        assert (done.returncode, done.stderr) == (0, ""), event
        assert len(all_event_files(project)) == before + (2 if event in ("sessionStart", "SessionStart") else 1)
        if event in ("sessionStart", "SessionStart"):
            assert json.loads(done.stdout)
        missing = sh(hook["command"], payload, path="/usr/bin:/bin", cwd=project)
        assert (missing.returncode, missing.stdout) == (0, "") and len(all_event_files(project)) == before + (
            2 if event in ("sessionStart", "SessionStart") else 1)


@pytest.mark.parametrize("harness", ["cursor", "gemini"])
def test_a_settings_file_that_is_not_a_regular_file_is_refused_at_once(proj: Path, harness: str) -> None:
    """A hooks file that is a FIFO (a repository can hold one, or a symlink to one): install refuses it at once
    with one line instead of waiting forever for a writer, and leaves it in place."""
    settings = settings_of(harness, proj)
    settings.parent.mkdir()
    os.mkfifo(settings)
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": os.environ["HOME"]}
    done = subprocess.run([f"{VENV_BIN}/continuity", "install", harness], cwd=proj, env=env, capture_output=True,
                          text=True, timeout=30)
    assert (done.returncode, done.stdout) == (EXIT_USAGE, "")
    assert "not a regular file" in done.stderr and done.stderr.count("\n") == 1
    assert settings.is_fifo() and sorted(p.name for p in proj.rglob("*")) == [settings.parent.name, settings.name]


def test_a_setting_under_hooks_is_kept_not_refused(proj: Path, capsys: Capture) -> None:
    """Guides for Gemini CLI tell users to add `"hooks": {"enabled": true}`; install refused such a file ("its
    "hooks".enabled is not a JSON array"). A scalar there is a setting: install adds its groups beside it, uninstall
    keeps it, and an object where an event belongs is still refused."""
    settings = settings_of("gemini", proj)
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"enabled": True}, "model": {"name": "m"}}))
    run(capsys, "install", "gemini")
    config = json.loads(settings.read_text())
    assert config["hooks"]["enabled"] is True and "SessionStart" in config["hooks"]
    assert set(ours("gemini", {"hooks": {k: v for k, v in config["hooks"].items() if isinstance(v, list)}}))
    run(capsys, "uninstall", "gemini")
    assert json.loads(settings.read_text()) == {"hooks": {"enabled": True}, "model": {"name": "m"}}
    settings.write_text(json.dumps({"hooks": {"SessionStart": True}}))
    assert main(["install", "gemini"]) == EXIT_USAGE
    assert "is not a JSON array" in capsys.readouterr().err
