"""`continuity install` / `uninstall`: hook merges, the Markdown block, backups, dry runs, errors."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from continuity.adapters.install import add_block, add_hooks, hook_groups, is_ours, remove_block, remove_hooks
from continuity.cli import main
from continuity.core.errors import EXIT_USAGE
from tests.helpers import put_continuity_on_path

Capture = pytest.CaptureFixture[str]

#: What `install` hooks by default; the turn markers (TURN) only with `--turns` or `record_prompts`.
CLAUDE_EVENTS = ["SessionStart", "PostToolUse", "PostToolUseFailure", "PreCompact", "PostCompact", "SubagentStop",
                 "SessionEnd"]
CODEX_EVENTS = ["SessionStart", "PostToolUse", "PreCompact", "PostCompact", "SubagentStop"]
TURN = ["UserPromptSubmit", "Stop"]
OTHER_GROUP = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5}]}
OTHER_START = {"matcher": "startup", "hooks": [{"type": "command", "command": "echo welcome"}]}
SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {"PreToolUse": [OTHER_GROUP], "SessionStart": [OTHER_START]},
    "env": {"FOO": "1"},
}
NOTES = "# Project notes\n\nUse tabs.\n"


@pytest.fixture(autouse=True)
def _commands(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the two commands as continuity.cli.common will."""
    from continuity.cli import common

    monkeypatch.setitem(common.COMMAND_MODULES, "install", "continuity.cli.install_cmd")
    monkeypatch.setitem(common.COMMAND_MODULES, "uninstall", "continuity.cli.install_cmd")


@pytest.fixture(autouse=True)
def _continuity_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    put_continuity_on_path(tmp_path, monkeypatch)


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder as the working directory."""
    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


def run(capsys: Capture, *args: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def ours(config: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [g for g in config["hooks"].get(event, []) if any(is_ours(h) for h in g["hooks"])]


def backups(name: str) -> list[Path]:
    """Backup copies named `name` kept for a project without a store (under ~/.local/state)."""
    state = Path(os.environ["HOME"]) / ".local" / "state" / "continuity" / "backups"
    return sorted(state.rglob(name))


def beside(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.continuity-backup-*"))


def test_install_claude_code_keeps_everything_else(proj: Path, capsys: Capture) -> None:
    """install adds one group per event and keeps other keys, other hooks and the text outside the block."""
    settings = proj / ".claude" / "settings.json"
    write_json(settings, SETTINGS)
    original = settings.read_bytes()
    (proj / "CLAUDE.md").write_text(NOTES)
    code, data = run(capsys, "install", "claude-code")
    assert code == 0 and data["ok"] is True and data["action"] == "install"
    assert (data["harness"], data["scope"]) == ("claude-code", "project")
    assert [(f["path"], f["changed"]) for f in data["files"]] == [(str(settings), True),
                                                                 (str(proj / "CLAUDE.md"), True)]
    config = json.loads(settings.read_text())
    assert {k: v for k, v in config.items() if k != "hooks"} == {k: v for k, v in SETTINGS.items() if k != "hooks"}
    assert list(config) == list(SETTINGS)
    assert config["hooks"]["PreToolUse"] == [OTHER_GROUP]
    assert config["hooks"]["SessionStart"][0] == OTHER_START
    for event in CLAUDE_EVENTS:
        [group] = ours(config, event)
        [hook] = group["hooks"]
        assert hook["type"] == "command" and hook["command"].endswith(" continuity hook claude-code; exit 0")
        assert hook["command"].startswith('cd "${CLAUDE_PROJECT_DIR:-.}" >/dev/null 2>&1 && ')
        assert hook["timeout"] == (2 if event == "SessionEnd" else 10)
    assert all(ours(config, event) == [] for event in TURN)
    assert ours(config, "PostToolUse")[0]["matcher"] == "Edit|MultiEdit|Write|NotebookEdit|Bash"
    assert ours(config, "PostToolUseFailure")[0]["matcher"] == "Edit|MultiEdit|Write|NotebookEdit|Bash"
    assert "matcher" not in ours(config, "SessionStart")[0]
    text = (proj / "CLAUDE.md").read_text()
    assert text.startswith(NOTES) and "<!-- continuity:begin -->" in text and "continuity:end -->\n" in text
    assert "checkpoint -m" in text and "--next" in text and "archive --gate agent" in text
    assert [p.read_bytes() for p in backups("settings.json")] == [original]
    assert [p.read_text() for p in backups("CLAUDE.md")] == [NOTES]
    assert beside(proj) == []


def test_install_twice_adds_nothing(proj: Path, capsys: Capture) -> None:
    """A second install changes no file, adds no duplicate and makes no second backup."""
    write_json(proj / ".codex" / "hooks.json", SETTINGS)
    (proj / "AGENTS.md").write_text(NOTES)
    assert run(capsys, "install", "codex")[0] == 0
    snapshot = {p: p.read_bytes() for p in proj.rglob("*") if p.is_file()}
    code, data = run(capsys, "install", "codex")
    assert code == 0 and [f["changed"] for f in data["files"]] == [False, False]
    assert [f["backup"] for f in data["files"]] == [None, None]
    assert {p: p.read_bytes() for p in proj.rglob("*") if p.is_file()} == snapshot
    config = json.loads((proj / ".codex" / "hooks.json").read_text())
    assert all(len(ours(config, event)) == 1 for event in CODEX_EVENTS)
    assert set(config["hooks"]) == set(CODEX_EVENTS) | {"PreToolUse"}
    assert (proj / "AGENTS.md").read_text().count("<!-- continuity:begin -->") == 1


@pytest.mark.parametrize(("harness", "settings_name", "md_name"),
                         [("claude-code", ".claude/settings.json", "CLAUDE.md"),
                          ("codex", ".codex/hooks.json", "AGENTS.md")])
def test_uninstall_restores_the_originals(proj: Path, capsys: Capture, harness: str, settings_name: str,
                                          md_name: str) -> None:
    """uninstall after install gives back both original files byte for byte."""
    settings, md = proj / settings_name, proj / md_name
    write_json(settings, SETTINGS)
    md.write_text(NOTES)
    original = settings.read_bytes()
    assert run(capsys, "install", harness)[0] == 0
    code, data = run(capsys, "uninstall", harness)
    assert code == 0 and data["action"] == "uninstall" and [f["changed"] for f in data["files"]] == [True, True]
    assert all(f["backup"] for f in data["files"])
    assert settings.read_bytes() == original
    assert md.read_text() == NOTES
    code, data = run(capsys, "uninstall", harness)
    assert code == 0 and [f["changed"] for f in data["files"]] == [False, False]


def test_install_and_uninstall_keep_each_files_owner_and_mode(proj: Path, capsys: Capture) -> None:
    """`sudo continuity install` replaced a user's 0600 settings and CLAUDE.md with files of root's, which their
    owner could then not read. Run as root, the files keep their owner (and mode); run as anyone else, they stay
    that user's own, as they were."""
    import os

    settings, md = proj / ".claude/settings.json", proj / "CLAUDE.md"
    write_json(settings, SETTINGS)
    md.write_text(NOTES)
    owner = (65534, 65534) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    for path in (settings, md):
        if os.geteuid() == 0:
            os.chown(path, *owner)
        path.chmod(0o600)
    for action in ("install", "uninstall"):
        assert run(capsys, action, "claude-code")[0] == 0
        for path in (settings, md):
            found = path.stat()
            assert ((found.st_uid, found.st_gid), found.st_mode & 0o777) == (owner, 0o600), (action, path)


@pytest.mark.parametrize(("umask", "wanted"), [(0o077, 0o600), (0o022, 0o644)])
@pytest.mark.parametrize("harness", ["claude-code", "codex", "cursor", "gemini", "ai-context"])
def test_files_install_makes_follow_the_umask(proj: Path, capsys: Capture, harness: str, umask: int,
                                                wanted: int) -> None:
    """Every file install made was 0666 whatever the umask (an existing file's mode was kept by a chmod that also
    ran for a new one): a hook file any local user could put a command in. A new file follows the umask now."""
    before = {path for path in proj.rglob("*") if path.is_file()}
    old = os.umask(umask)
    try:
        code, _ = run(capsys, "install", harness)
    finally:
        os.umask(old)
    assert code == 0
    made = {path for path in proj.rglob("*") if path.is_file()} - before
    made = {path for path in made if ".agent" not in path.parts}  # the store's own files are not install's
    assert made and {str(path.relative_to(proj)): path.stat().st_mode & 0o777 for path in made} == {
        str(path.relative_to(proj)): wanted for path in made}


def test_files_install_created_are_removed_by_uninstall(proj: Path, capsys: Capture) -> None:
    """Files install created hold only continuity's part; uninstall removes them."""
    code, data = run(capsys, "install", "codex")
    assert code == 0 and [f["status"] for f in data["files"]] == ["created", "created"]
    assert [f["backup"] for f in data["files"]] == [None, None]
    assert (proj / "AGENTS.md").read_text().startswith("<!-- continuity:begin -->")
    code, data = run(capsys, "uninstall", "codex")
    assert code == 0 and [f["status"] for f in data["files"]] == ["removed", "removed"]
    assert not (proj / ".codex" / "hooks.json").exists() and not (proj / "AGENTS.md").exists()
    assert not (proj / ".codex").exists(), "the folder install made goes with its last file"
    (proj / ".codex").mkdir()
    (proj / ".codex" / "config.toml").write_text("model = 'x'\n")  # the user's own file: the folder stays
    assert run(capsys, "install", "codex")[0] == 0 and run(capsys, "uninstall", "codex")[0] == 0
    assert sorted(path.name for path in (proj / ".codex").iterdir()) == ["config.toml"]


def test_dry_run_prints_a_diff_and_changes_nothing(proj: Path, capsys: Capture) -> None:
    """--dry-run shows unified diffs and writes no file, not even a backup."""
    write_json(proj / ".claude" / "settings.json", SETTINGS)
    (proj / "CLAUDE.md").write_text(NOTES)
    snapshot = {p: p.read_bytes() for p in proj.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(["install", "claude-code", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"--- {proj / '.claude' / 'settings.json'}" in out and "+++ " in out and "@@ " in out
    assert "+<!-- continuity:begin -->" in out and "would be updated" in out
    assert {p: p.read_bytes() for p in proj.rglob("*") if p.is_file()} == snapshot
    code, data = run(capsys, "install", "claude-code", "--dry-run")
    assert code == 0 and data["dry_run"] is True and all(f["diff"].startswith("--- ") for f in data["files"])
    assert {p: p.read_bytes() for p in proj.rglob("*") if p.is_file()} == snapshot


def test_malformed_json_is_refused_untouched(proj: Path, capsys: Capture) -> None:
    """A settings file that is not JSON: exit 2, one error line, no file written or created."""
    settings = proj / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "opus",,}\n')
    capsys.readouterr()
    assert main(["install", "claude-code"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "settings.json" in err and "not valid JSON" in err
    assert settings.read_text() == '{"model": "opus",,}\n'
    assert sorted(p.name for p in proj.rglob("*")) == [".claude", "settings.json"]
    assert main(["uninstall", "claude-code"]) == EXIT_USAGE
    assert settings.read_text() == '{"model": "opus",,}\n'


def test_a_lone_surrogate_escape_is_kept_as_an_escape(proj: Path, capsys: Capture) -> None:
    """A settings value holding a lone UTF-16 surrogate escape (valid JSON) is merged and kept as that escape."""
    settings = proj / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = '{\n  "env": {"NAME": "a\\ud800b", "\\udfff": "key"}\n}\n'
    settings.write_text(original)
    code, data = run(capsys, "install", "claude-code", "--dry-run")
    assert code == 0 and "\\ud800" in data["files"][0]["diff"]
    code, data = run(capsys, "install", "claude-code")
    assert code == 0 and data["files"][0]["status"] == "updated"
    installed = json.loads(settings.read_bytes().decode("utf-8"))
    assert installed["env"] == {"NAME": "a\ud800b", "\udfff": "key"} and ours(installed, "SessionStart")
    for copy in (proj / ".agent").rglob("settings.json"):  # the backup: uninstall must write the file itself
        copy.unlink()
    code, data = run(capsys, "uninstall", "claude-code")
    assert code == 0 and json.loads(settings.read_text()) == {"env": {"NAME": "a\ud800b", "\udfff": "key"}}


@pytest.mark.parametrize(("content", "says"), [
    (b'\xef\xbb\xbf{"model": "opus"}\n', "starts with a byte order mark (U+FEFF)"),
    (b'{"n": ' + b"9" * 5000 + b"}\n", "a number with more than 4300 digits"),
    (b'{"a": 1e999}\n', "the number 1e999 is too large to be written back as JSON"),
    (b'{"a": [-1.5E+400]}\n', "the number -1.5E+400 is too large"),
    (b'{"a": NaN}\n', "NaN is not a JSON value"),
    (b'{"a": -Infinity}\n', "-Infinity is not a JSON value"),
])
def test_a_bom_or_a_huge_number_is_refused_in_words_of_its_own(proj: Path, capsys: Capture, content: bytes,
                                                                says: str) -> None:
    """A BOM, a 5000-digit number, a number past a double (it was written back as `Infinity`, which no JSON reader
    takes) or Python's NaN/Infinity (not JSON): exit 2, one line saying which, the file as it was."""
    settings = proj / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_bytes(content)
    capsys.readouterr()
    assert main(["install", "claude-code"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "sys.set_int_max_str_digits" not in err
    assert settings.read_bytes() == content and not (proj / "CLAUDE.md").exists()


def test_a_long_command_of_a_users_hook_takes_no_long_time(proj: Path) -> None:
    """A user's hook whose command is 300,000 characters with no space: install and uninstall finish at once
    (the match of our commands was quadratic in the length: hours here), keeping it."""
    import subprocess
    import sys

    theirs = {"type": "command", "command": "x" * 300_000}
    write_json(proj / ".claude" / "settings.json", {"hooks": {"Stop": [{"hooks": [theirs]}]}})
    original = (proj / ".claude" / "settings.json").read_bytes()
    for action in ("install", "uninstall"):
        done = subprocess.run([sys.executable, "-m", "continuity", action, "claude-code"], cwd=proj,
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
    assert (proj / ".claude" / "settings.json").read_bytes() == original


def test_many_unpaired_markers_are_refused_at_once(proj: Path) -> None:
    """A CLAUDE.md of 60,000 begin markers and no end: refused in a moment (each marker rescanned the text)."""
    import subprocess
    import sys

    (proj / "CLAUDE.md").write_text("<!-- continuity:begin -->\n" * 60_000)
    done = subprocess.run([sys.executable, "-m", "continuity", "install", "claude-code"], cwd=proj,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == EXIT_USAGE and "markers do not pair up" in done.stderr
    assert not (proj / ".claude").exists()


def test_hooks_of_the_wrong_type_are_refused(proj: Path, capsys: Capture) -> None:
    """A "hooks" that is not an object is a usage error and the file stays as it was."""
    write_json(proj / ".codex" / "hooks.json", {"hooks": ["x"]})
    before = (proj / ".codex" / "hooks.json").read_bytes()
    assert main(["install", "codex"]) == EXIT_USAGE
    assert (proj / ".codex" / "hooks.json").read_bytes() == before


def test_unpaired_markers_are_refused(proj: Path, capsys: Capture) -> None:
    """An AGENTS.md with a begin marker and no end marker is left alone, and so is the hooks file."""
    (proj / "AGENTS.md").write_text("intro\n<!-- continuity:begin -->\nhalf a block\n")
    assert main(["install", "codex"]) == EXIT_USAGE
    assert (proj / "AGENTS.md").read_text() == "intro\n<!-- continuity:begin -->\nhalf a block\n"
    assert not (proj / ".codex").exists()


def test_rerun_replaces_the_block_in_place(proj: Path, capsys: Capture) -> None:
    """An old block in the middle of AGENTS.md is replaced where it stands; the text around it is kept."""
    head, tail = "# Agents\n\nBefore.\n\n", "\n\n## Later\n\nAfter.\n"
    (proj / "AGENTS.md").write_text(head + "<!-- continuity:begin -->\nold advice\n<!-- continuity:end -->" + tail)
    assert run(capsys, "install", "codex")[0] == 0
    text = (proj / "AGENTS.md").read_text()
    assert text.startswith(head + "<!-- continuity:begin -->\n## Continuity") and text.endswith(tail)
    assert "old advice" not in text and text.count("continuity:begin") == 1
    assert run(capsys, "uninstall", "codex")[0] == 0
    assert (proj / "AGENTS.md").read_text() == "# Agents\n\nBefore.\n\n## Later\n\nAfter.\n"


def test_user_scope_writes_under_home(proj: Path, capsys: Capture) -> None:
    """--scope user writes ~/.claude/settings.json and ~/.claude/CLAUDE.md and nothing in the project."""
    home = Path(os.environ["HOME"])
    code, data = run(capsys, "install", "claude-code", "--scope", "user")
    assert code == 0 and data["scope"] == "user"
    assert [f["path"] for f in data["files"]] == [str(home / ".claude" / "settings.json"),
                                                 str(home / ".claude" / "CLAUDE.md")]
    assert all(len(ours(json.loads((home / ".claude" / "settings.json").read_text()), e)) == 1
               for e in CLAUDE_EVENTS)
    assert list(proj.iterdir()) == []
    assert run(capsys, "uninstall", "claude-code", "--scope", "user")[0] == 0
    assert not (home / ".claude" / "settings.json").exists() and not (home / ".claude" / "CLAUDE.md").exists()


def test_human_output_is_one_line_per_file(proj: Path, capsys: Capture) -> None:
    """Without --json, install prints one line per file with its status, then the files to commit."""
    capsys.readouterr()
    assert main(["install", "codex"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [f"{proj / '.codex' / 'hooks.json'}: created", f"{proj / 'AGENTS.md'}: created",
                         "commit (shared with the team): .codex/hooks.json, AGENTS.md"]
    assert all(line.startswith("note: ") for line in lines[3:])


def test_symlinked_settings_keep_the_link_and_the_mode(proj: Path, tmp_path: Path, capsys: Capture) -> None:
    """A symlinked settings file is updated through the link; its mode is kept."""
    target = tmp_path / "dotfiles" / "settings.json"
    write_json(target, SETTINGS)
    target.chmod(0o600)
    (proj / ".claude").mkdir()
    (proj / ".claude" / "settings.json").symlink_to(target)
    assert run(capsys, "install", "claude-code")[0] == 0
    assert (proj / ".claude" / "settings.json").is_symlink()
    assert len(ours(json.loads(target.read_text()), "SessionEnd")) == 1
    assert target.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("link", [".claude/settings.json", ".claude", "CLAUDE.md"])
def test_a_symlink_naming_nothing_is_refused(proj: Path, tmp_path: Path, capsys: Capture, link: str) -> None:
    """A settings file, folder or Markdown file that is a symlink to nothing: refused, nothing made where it points."""
    (proj / link).parent.mkdir(exist_ok=True)
    (proj / link).symlink_to(tmp_path / "dotfiles" / "missing")
    capsys.readouterr()
    assert main(["install", "claude-code"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a symlink to" in err and "which does not exist" in err
    assert not (tmp_path / "dotfiles").exists()
    assert sorted(str(p.relative_to(proj)) for p in proj.rglob("*")) == sorted({link, str(Path(link).parent)} - {"."})
    assert main(["uninstall", "claude-code"]) == 0  # nothing to take out: the link is left as it is
    assert (proj / link).is_symlink() and not (tmp_path / "dotfiles").exists()


def test_a_home_that_is_not_an_absolute_path_is_refused(proj: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: Capture) -> None:
    """HOME relative (or empty, which Python reads as `/`): install, uninstall and doctor refuse; nothing written."""
    from continuity.cli import common
    from continuity.core.errors import UsageError

    monkeypatch.setitem(common.COMMAND_MODULES, "doctor", "continuity.cli.doctor_cmd")
    monkeypatch.setenv("HOME", "home-here")
    for args in (["install", "claude-code", "--scope", "user"], ["install", "codex"], ["uninstall", "gemini"],
                 ["doctor", "--no-probe"]):
        capsys.readouterr()
        assert main(args) == EXIT_USAGE
        assert "HOME is 'home-here', not an absolute path" in capsys.readouterr().err
    assert list(proj.iterdir()) == []
    from continuity.cli.install_cmd import home_folder

    monkeypatch.setenv("HOME", "")  # checked here only: on a defect it would write under /
    with pytest.raises(UsageError, match="HOME is '', not an absolute path"):
        home_folder()


def test_an_unsafe_store_for_the_backups_stops_install_before_any_write(project: Path, tmp_path: Path,
                                                                         capsys: Capture) -> None:
    """The store's local/ is a symlink, so no backup can be kept: install writes no file at all (was: one of two)."""
    from continuity.core.errors import EXIT_UNSAFE_STORE

    local = project / ".agent" / "runtime-continuity" / "local"
    outside = tmp_path / "outside"
    outside.mkdir()
    for item in local.iterdir():
        item.rename(outside / item.name)
    local.rmdir()
    local.symlink_to(outside)
    (project / "CLAUDE.md").write_text(NOTES)
    before = sorted(p.name for p in outside.rglob("*"))
    capsys.readouterr()
    assert main(["install", "claude-code"]) == EXIT_UNSAFE_STORE
    assert capsys.readouterr().err.count("\n") == 1
    assert not (project / ".claude").exists() and (project / "CLAUDE.md").read_text() == NOTES
    assert sorted(p.name for p in outside.rglob("*")) == before


@pytest.mark.parametrize("action", ["install", "uninstall"])
def test_a_file_that_cannot_be_written_leaves_none_changed(proj: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: Capture, action: str) -> None:
    """The Markdown cannot be written (EIO): the settings file written before it is put back, exit 5, one line."""
    import errno

    from continuity.adapters import install
    from events.errors import WriteFailed

    write_json(proj / ".claude" / "settings.json", SETTINGS)
    (proj / "CLAUDE.md").write_text(NOTES)
    if action == "uninstall":
        assert main(["install", "claude-code"]) == 0
    before = {p: p.read_bytes() for p in (proj / ".claude" / "settings.json", proj / "CLAUDE.md")}
    import os

    places = {proj.parent, Path(os.environ["HOME"]), Path(os.environ.get("XDG_STATE_HOME") or os.environ["HOME"])}

    def files() -> set[Path]:
        return {path for place in places for path in place.rglob("*") if path.is_file()}

    kept = files()
    real = install.write_text_atomic

    def failing(path: Path, text: str) -> None:
        if path.name == "CLAUDE.md":
            raise OSError(errno.EIO, "Input/output error")
        real(path, text)

    monkeypatch.setattr(install, "write_text_atomic", failing)
    capsys.readouterr()
    assert main([action, "claude-code"]) == WriteFailed.exit_code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "CLAUDE.md: cannot write" in err and "were put back" in err
    assert {p: p.read_bytes() for p in before} == before
    # nothing changed, so no copy is kept of it (each retry on a full disk kept another whole set)
    assert files() == kept


def test_install_waits_for_an_uninstall_running_beside_it(proj: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: Capture) -> None:
    """`install codex` run while `uninstall cursor` writes AGENTS.md: it waits, so the block Codex needs stays."""
    import contextlib
    import subprocess
    import sys

    from continuity.adapters import install

    (proj / "AGENTS.md").write_text(NOTES)
    assert main(["install", "cursor"]) == 0
    real, racing = install.write_text_atomic, []

    def meanwhile(path: Path, text: str) -> None:
        if path.name == "AGENTS.md" and not racing:  # uninstall cursor planned: no other hooks, the block goes
            racing.append(subprocess.Popen([sys.executable, "-m", "continuity", "install", "codex"], cwd=proj,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
            with contextlib.suppress(subprocess.TimeoutExpired):
                racing[0].wait(timeout=3)  # with the lock it cannot finish before this write
        real(path, text)

    monkeypatch.setattr(install, "write_text_atomic", meanwhile)
    assert main(["uninstall", "cursor"]) == 0
    _, err = racing[0].communicate(timeout=60)
    assert racing[0].returncode == 0 and b"Traceback" not in err
    assert json.loads((proj / ".codex" / "hooks.json").read_text())["hooks"]
    assert "<!-- continuity:begin -->" in (proj / "AGENTS.md").read_text()


def test_agents_md_linked_to_claude_md_keeps_the_block_claude_code_needs(proj: Path, capsys: Capture) -> None:
    """AGENTS.md a symlink to CLAUDE.md (a common setup): uninstall codex keeps the block while Claude Code is
    installed, and the last uninstall gives back CLAUDE.md's bytes."""
    (proj / "CLAUDE.md").write_text(NOTES)
    (proj / "AGENTS.md").symlink_to("CLAUDE.md")
    assert main(["install", "claude-code"]) == 0 and main(["install", "codex"]) == 0
    assert main(["uninstall", "codex"]) == 0
    assert "<!-- continuity:begin -->" in (proj / "CLAUDE.md").read_text()
    assert main(["uninstall", "claude-code"]) == 0
    assert (proj / "CLAUDE.md").read_text() == NOTES and (proj / "AGENTS.md").is_symlink()


def test_install_replaces_a_stale_entry_and_uninstall_spares_shared_groups() -> None:
    """A changed command replaces our old entry; a group shared with other hooks loses only ours."""
    stale = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/old/bin/continuity hook codex"}]}],
                       "Notification": [{"hooks": [{"type": "command", "command": "continuity hook codex"},
                                                   {"type": "command", "command": "notify-send hi"}]}]}}
    assert "Stop" not in add_hooks(stale, hook_groups("codex"))["hooks"]  # no turn markers by default
    groups = hook_groups("codex", turns=True)
    merged = add_hooks(stale, groups)
    assert merged["hooks"]["Stop"] == [groups["Stop"]]
    assert merged["hooks"]["Notification"] == [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]
    assert add_hooks(merged, groups) == merged
    assert remove_hooks(merged) == {"hooks": {"Notification": merged["hooks"]["Notification"]}}
    assert is_ours({"command": "'/path with space/continuity' hook codex"})
    assert not is_ours({"command": "continuity hooks-report"})


@pytest.mark.parametrize("harness", ["claude-code", "codex"])
def test_turn_markers_only_with_turns_or_record_prompts(project: Path, capsys: Capture, harness: str) -> None:
    """`--turns` adds UserPromptSubmit and Stop beside the default hooks; installing again without it takes
    them out; config.json's `record_prompts` (the prompt is recorded at a turn's start) implies them."""
    settings = project / (".claude/settings.json" if harness == "claude-code" else ".codex/hooks.json")
    defaults = CLAUDE_EVENTS if harness == "claude-code" else CODEX_EVENTS
    assert run(capsys, "install", harness, "--turns")[0] == 0
    config = json.loads(settings.read_text())
    assert set(config["hooks"]) == {*defaults, *TURN}
    assert all(len(ours(config, event)) == 1 for event in [*defaults, *TURN])
    code, data = run(capsys, "install", harness)
    assert code == 0 and data["files"][0]["changed"] is True
    assert set(json.loads(settings.read_text())["hooks"]) == set(defaults)
    config_path = project / ".agent" / "runtime-continuity" / "config.json"
    config_path.write_text(json.dumps({**json.loads(config_path.read_text()), "record_prompts": True}))
    assert run(capsys, "install", harness)[0] == 0
    assert set(json.loads(settings.read_text())["hooks"]) == {*defaults, *TURN}
    assert run(capsys, "uninstall", harness)[0] == 0
    assert not settings.exists()


def test_uninstall_after_turns_gives_back_the_original_bytes(proj: Path, capsys: Capture) -> None:
    """A file whose own (empty) Stop list an install with --turns filled comes back byte for byte."""
    settings = proj / ".claude" / "settings.json"
    write_json(settings, {"hooks": {"Stop": []}, "model": "x"})
    original = settings.read_bytes()
    assert run(capsys, "install", "claude-code", "--turns")[0] == 0
    assert run(capsys, "uninstall", "claude-code")[0] == 0
    assert settings.read_bytes() == original


def test_block_round_trips_on_text_without_a_final_newline() -> None:
    """Adding then removing the block gives the text back (a missing final newline is the one change)."""
    block = "<!-- continuity:begin -->\nx\n<!-- continuity:end -->"
    for text in ("", "a\n", "a\n\n", "# T\n\nbody\n"):
        assert remove_block(add_block(text, block)) == text
        assert add_block(add_block(text, block), block) == add_block(text, block)
    assert remove_block(add_block("a", block)) == "a\n"


def test_project_scope_targets_the_store_root_from_a_subfolder(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: Capture) -> None:
    """Run from a subfolder, install writes next to the store found upward, not into the subfolder."""
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    code, data = run(capsys, "install", "claude-code")
    assert code == 0 and data["root"] == str(project)
    assert (project / ".claude" / "settings.json").is_file() and (project / "CLAUDE.md").is_file()
    assert not (sub / ".claude").exists()


@pytest.mark.parametrize("action", ["install", "uninstall"])
def test_a_backup_that_cannot_be_kept_names_the_backups_folder(proj: Path, capsys: Capture, action: str) -> None:
    """The copy of the settings file could not be made (here `local/backups` is a file): the one line said
    `.claude/settings.json: cannot write`, blaming the file that was never touched; it names the backups folder."""
    assert main(["init", "--project", "demo"]) == 0
    write_json(proj / ".claude" / "settings.json", SETTINGS)
    if action == "uninstall":
        assert main(["install", "claude-code"]) == 0
    backups = proj / ".agent" / "runtime-continuity" / "local" / "backups"
    if backups.exists():
        import shutil

        shutil.rmtree(backups)
    backups.write_text("not a folder\n")
    before = (proj / ".claude" / "settings.json").read_bytes()
    capsys.readouterr()
    assert main([action, "claude-code"]) == 5
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "its backup copy cannot be kept in" in err and "backups" in err, err
    assert (proj / ".claude" / "settings.json").read_bytes() == before


DEAD_PID = 4_194_304 + 7  # above Linux's largest pid: no process has it


def test_install_removes_the_temps_a_killed_install_left_beside_the_settings(proj: Path, capsys: Capture) -> None:
    """An install killed mid-write left `.settings.json.<pid>.tmp` (a partial copy of the settings) in a folder
    meant to be committed, for good. The next install or uninstall removes those of dead writers; a live
    writer's and the user's own files stay."""
    settings = proj / ".claude" / "settings.json"
    write_json(settings, {"model": "x"})
    dead = settings.parent / f".settings.json.{DEAD_PID}.tmp"
    mine = settings.parent / ".notes.json.123.tmp"
    for path in (dead, mine):
        path.write_text('{"model": "x", "hoo')
    running = subprocess.Popen(["sleep", "30"])  # a writer still at work
    live = settings.parent / f".settings.json.{running.pid}.tmp"
    live.write_text("{}")
    try:
        assert run(capsys, "install", "claude-code")[0] == 0
        assert not dead.exists() and live.exists() and mine.exists()
        dead.write_text("{")
        assert run(capsys, "uninstall", "claude-code")[0] == 0
        assert not dead.exists() and live.exists()
    finally:
        running.kill()
        running.wait()


def test_a_backup_that_cannot_be_written_whole_is_not_kept(proj: Path, tmp_path: Path) -> None:
    """A full disk while install copied the settings aside left a truncated copy in the backups folder, while
    the error said nothing changed; the partial copy is removed now (the settings stay as they were)."""
    import resource
    import sys

    from continuity.core.initialize import init_store

    init_store(proj, project="demo", language=None)
    settings = proj / ".claude" / "settings.json"
    write_json(settings, {"x": "y" * 20_000})
    before = settings.read_bytes()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    done = subprocess.run([sys.executable, "-m", "continuity", "install", "claude-code"], cwd=proj, env=env,
                          capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (10_240, 10_240)))
    assert done.returncode == 5 and "backup copy cannot be kept" in done.stderr, done.stderr
    assert settings.read_bytes() == before
    kept = proj / ".agent" / "runtime-continuity" / "local" / "backups"
    assert [path for path in kept.rglob("*") if path.is_file()] == []
