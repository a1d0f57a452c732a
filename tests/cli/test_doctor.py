"""`continuity doctor` and `continuity --version`, with real installs in temp projects and real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from continuity.adapters import install
from tests.helpers import make_read_only

VENV_BIN = Path(str(install.executable())).parent
CONTINUITY = str(VENV_BIN / "continuity")
HARNESSES = ("claude-code", "codex", "cursor", "gemini")
#: An older continuity: knows --version, refuses `hook cursor|gemini` with argparse's exit 2.
OLD = """#!/bin/sh
case "$1" in
  --version) echo "continuity 0.0.1";;
  hook) case "$2" in claude-code|codex) cat >/dev/null;; *) echo "continuity: error: invalid choice: '$2'" >&2; exit 2;;
        esac;;
esac
"""


def run(*args: str, cwd: Path, path: str, program: str = CONTINUITY) -> subprocess.CompletedProcess[str]:
    """A real `continuity` process with a temp HOME and the given PATH."""
    env = {"HOME": os.environ["HOME"], "PATH": path}
    if "PYTHONPATH" in os.environ:  # a checkout run against another checkout's environment tests its own code
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run([program, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under a folder with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root


def doctor(cwd: Path, path: str, *extra: str) -> tuple[int, dict[str, Any]]:
    result = run("doctor", "--json", *extra, cwd=cwd, path=path)
    assert "Traceback" not in result.stderr
    return result.returncode, json.loads(result.stdout)


def test_version_prints_the_package_metadata_version(proj: Path) -> None:
    """`continuity --version` prints `continuity <version>` from the installed package's metadata."""
    result = run("--version", cwd=proj, path="/usr/bin:/bin")
    assert (result.returncode, result.stdout, result.stderr) == (0, f"continuity {version('continuity')}\n", "")
    code = ("import sys; from continuity.cli import main; main(['--version']); "
            "print(sorted(m for m in sys.modules if m in ('argparse', 'msgspec', 'continuity.cli.common')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=proj, capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "[]"


def test_all_four_harnesses_installed_and_healthy(proj: Path) -> None:
    """Installed the README way: every harness's hooks resolve to this continuity, probe exit 0, store untouched."""
    path = f"{VENV_BIN}:/usr/bin:/bin"
    assert run("init", "--project", "demo", cwd=proj, path=path).returncode == 0
    for harness in HARNESSES:
        assert run("install", harness, cwd=proj, path=path).returncode == 0
    store = proj / ".agent" / "runtime-continuity"
    before = tree(store / "events"), (store / "local" / "hooks.log").exists()
    code, report = doctor(proj, path)
    assert code == 0 and report["ok"] is True and report["problems"] == []
    assert report["version"] == version("continuity") and report["path"]["continuity"] == CONTINUITY
    assert report["store"] == {"found": True, "path": str(store), "project": "demo", "problem": None,
                               "record_prompts": False, "settings": []}
    installed = [h for h in report["harnesses"] if h["installed"]]
    assert [(h["harness"], h["scope"]) for h in installed] == [(h, "project") for h in HARNESSES]
    for entry in installed:
        [command] = entry["commands"]
        assert (command["program"], command["runs"]) == ("continuity on PATH", CONTINUITY)
        assert (command["version"], command["harness_exit"], command["hook_exit"]) == (
            f"continuity {version('continuity')}", 0, 0)
    # without the turn markers (install --turns): cursor 5 of 7 events, gemini 4 of 6
    assert len(installed[2]["commands"][0]["events"]) == 5 and len(installed[3]["commands"][0]["events"]) == 4
    assert (tree(store / "events"), (store / "local" / "hooks.log").exists()) == before  # the probe wrote nothing
    human = run("doctor", cwd=proj, path=path)
    assert human.returncode == 0 and human.stdout.rstrip().endswith("ok")
    assert "cursor (project): 5 hooks -> " + CONTINUITY in human.stdout


def test_record_prompts_without_the_turn_hooks_is_a_problem(proj: Path) -> None:
    """record_prompts on in config.json while a harness has no turn hooks: no prompt would be recorded."""
    path = f"{VENV_BIN}:/usr/bin:/bin"
    run("init", "--project", "demo", cwd=proj, path=path)
    run("install", "claude-code", cwd=proj, path=path)
    run("install", "cursor", "--turns", cwd=proj, path=path)
    config = proj / ".agent" / "runtime-continuity" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "record_prompts": True}))
    code, report = doctor(proj, path, "--no-probe")
    assert code == 1 and report["store"]["record_prompts"] is True
    assert report["problems"] == [
        "claude-code (project): record_prompts is on in config.json but the turn hooks are not installed, so no "
        "prompt is recorded (`continuity install claude-code --turns`)"]
    assert run("install", "claude-code", cwd=proj, path=path).returncode == 0  # install reads record_prompts
    code, report = doctor(proj, path, "--no-probe")
    assert (code, report["problems"]) == (0, [])
    config.write_text("{not json")  # a broken config is the store's problem, not this one
    code, report = doctor(proj, path, "--no-probe")
    assert report["store"]["record_prompts"] is False  # the folder's name holds "record_prompts": match the line
    assert not any("record_prompts is on" in p for p in report["problems"])


def test_a_codex_block_past_the_32_kib_codex_reads_is_said_at_install_and_a_doctor_problem(proj: Path) -> None:
    """Codex reads the first 32 KiB of AGENTS.md: install appended its block after 36 KiB of the user's text, exit 0,
    and doctor said ok, so Codex never saw the instructions. Install notes it; doctor reports it (exit 1) until the
    block is moved up."""
    path = f"{VENV_BIN}:/usr/bin:/bin"
    run("init", "--project", "demo", cwd=proj, path=path)
    agents = proj / "AGENTS.md"
    agents.write_text("# Team rules\n" + "- keep the code tidy and documented, please.\n" * 820)
    done = run("install", "codex", cwd=proj, path=path)
    assert done.returncode == 0 and "past the first 32 KiB of AGENTS.md that Codex reads" in done.stdout + done.stderr
    code, report = doctor(proj, path, "--no-probe")
    assert code == 1 and [p for p in report["problems"] if "32 KiB" in p], report["problems"]
    text = agents.read_text()
    start = text.index("<!-- continuity:begin")
    agents.write_text(text[start:] + "\n" + text[:start])  # the block moved to the top
    code, report = doctor(proj, path, "--no-probe")
    assert (code, report["problems"]) == (0, [])
    agents.rename(proj / "kept.md")
    agents.symlink_to("AGENTS.md")  # a file that cannot be read is no reason for doctor to stop (it exited 5)
    done = run("doctor", "--json", "--no-probe", cwd=proj, path=path)
    assert done.returncode in (0, 1) and json.loads(done.stdout)["harnesses"], done.stderr
    agents.unlink()
    home = Path(os.environ["HOME"])  # the home folder's AGENTS.md is read apart from the project's 32 KiB
    (home / ".codex").mkdir(exist_ok=True)
    (home / ".codex" / "AGENTS.md").write_text("- a personal rule, kept short and clear.\n" * 900)
    done = run("install", "codex", "--scope", "user", cwd=proj, path=path)
    assert done.returncode == 0 and "32 KiB" not in done.stdout + done.stderr


def test_settings_read_as_something_else_than_they_say_are_problems(proj: Path) -> None:
    """Each setting of the wrong type or out of range (read as its default or nearest bound: a command never fails
    on one) and each key no command reads is one problem line saying what is read instead; every setting as
    docs/architecture.md documents it is none; a secret-like value is not shown."""
    path = f"{VENV_BIN}:/usr/bin:/bin"
    run("init", "--project", "demo", cwd=proj, path=path)
    config = proj / ".agent" / "runtime-continuity" / "config.json"
    written = json.loads(config.read_text())
    good = {"sync_remote": "backup", "sync_branch": "ctx", "sync_timeout": 30, "sync_retry_seconds": 0,
            "sync_after": ["archive", "session_end"], "sync_layout": "full", "commit_events_with_code": False,
            "contexts_dir": "../contexts", "hook_max_chars": 9000, "brief_recall": False, "record_prompts": False,
            "archive_on_session_end": True, "work_registry": "repos.yaml", "work_repository": "app-1",
            "language": "zh"}
    config.write_text(json.dumps({**written, **good}))
    code, report = doctor(proj, path, "--no-probe")
    assert (code, report["problems"], report["store"]["settings"]) == (0, [], [])
    token = "gh" + "p_" + "a1B2" * 9
    config.write_text(json.dumps({**written, "record_prompt": True, "archive_on_session_end": "true",
                                  "brief_recall": 50, "hook_max_chars": "9000", "sync_after": ["sessionend", "park"],
                                  "sync_timeout": 0, "language": "fr", "work_repository": "a b",
                                  "contexts_dir": token, "brief_recall\u202e": 1}))
    code, report = doctor(proj, path, "--no-probe")
    assert code == 1 and report["problems"] == report["store"]["settings"] == [  # in config.json's order
        'config.json: language is "fr", not one of en, zh: read as en',
        'config.json: "record_prompt" is no setting, so nothing reads it (did you mean record_prompts?)',
        'config.json: archive_on_session_end is "true", not JSON true or false: read as false',
        "config.json: brief_recall is 50, out of range (0 to 10): read as 10",
        'config.json: hook_max_chars is "9000", not a whole number: read as 8000',
        'config.json: sync_after is ["sessionend", "park"], "sessionend" is none of archive, session_end, park: '
        'read as ["park"]',
        "config.json: sync_timeout is 0, out of range (1 to 86400): read as 120",
        'config.json: work_repository is "a b", not a repository id: read as none',
        # the bidi override shown as U+FFFD
        'config.json: "brief_recall\ufffd" is no setting, so nothing reads it (did you mean brief_recall?)',
    ]
    assert token not in json.dumps(report)
    human = run("doctor", "--no-probe", cwd=proj, path=path)
    assert human.returncode == 1 and "config.json: sync_timeout is 0" in human.stdout + human.stderr


def test_hooks_that_would_do_nothing_are_a_problem(proj: Path) -> None:
    """Without `continuity` on PATH, the project's portable hooks do nothing: doctor says so and exits 1."""
    path = f"{VENV_BIN}:/usr/bin:/bin"
    run("init", "--project", "demo", cwd=proj, path=path)
    run("install", "gemini", cwd=proj, path=path)
    code, report = doctor(proj, "/usr/bin:/bin")
    assert code == 1 and report["ok"] is False and report["path"]["continuity"] is None
    [entry] = [h for h in report["harnesses"] if h["installed"]]
    assert entry["commands"][0]["runs"] is None and entry["commands"][0]["harness_exit"] == 0
    assert report["problems"] == [f"gemini (project): {entry['problems'][0]}"]
    assert entry["problems"][0].startswith("PATH has no `continuity`: these hooks (SessionStart, AfterTool")


def test_claude_codes_fallback_for_a_machine_without_continuity_on_path_is_no_problem(proj: Path) -> None:
    """Installed while PATH has no `continuity`, Claude Code's hooks get this machine's fallback in
    settings.local.json (install's own setup for the case). doctor called that exit 1 ("these hooks do nothing
    here") while its own probe showed the fallback run every event; it is ok now, and says who runs them."""
    run("init", "--project", "demo", cwd=proj, path="/usr/bin:/bin")
    assert run("install", "claude-code", cwd=proj, path="/usr/bin:/bin").returncode == 0
    assert (proj / ".claude" / "settings.local.json").exists()
    code, report = doctor(proj, "/usr/bin:/bin")
    assert code == 0 and report["ok"] is True and report["problems"] == [], report["problems"]
    portable, fallback = sorted(next(h for h in report["harnesses"] if h["installed"])["commands"],
                                key=lambda command: command["program"] != "continuity on PATH")
    assert portable["runs"] is None and portable["covered_by"] == CONTINUITY
    assert fallback["runs"] == CONTINUITY and fallback["hook_exit"] == 0
    text = run("doctor", cwd=proj, path="/usr/bin:/bin")
    assert text.returncode == 0 and "the fallback below runs these events" in text.stdout
    (proj / ".claude" / "settings.local.json").unlink()  # without the fallback, the problem stands
    code, report = doctor(proj, "/usr/bin:/bin")
    assert code == 1 and report["problems"][0].startswith("claude-code (project): PATH has no `continuity`")


def test_an_older_continuity_is_caught_behind_the_exit_0_guard(proj: Path, tmp_path: Path) -> None:
    """An old continuity on PATH refuses `hook cursor` with exit 2: the harness sees 0, doctor shows the 2."""
    old_bin = tmp_path / "old-bin"
    old_bin.mkdir()
    (old_bin / "continuity").write_text(OLD)
    (old_bin / "continuity").chmod(0o755)
    run("init", "--project", "demo", cwd=proj, path=f"{VENV_BIN}:/usr/bin:/bin")
    for harness in ("codex", "cursor"):
        run("install", harness, cwd=proj, path=f"{VENV_BIN}:/usr/bin:/bin")
    code, report = doctor(proj, f"{old_bin}:/usr/bin:/bin")
    assert code == 1 and report["path"] == {"continuity": str(old_bin / "continuity"), "version": "continuity 0.0.1"}
    codex, cursor = (h["commands"][0] for h in report["harnesses"] if h["installed"])
    assert (codex["hook_exit"], codex["problems"]) == (0, [])
    assert (cursor["version"], cursor["harness_exit"], cursor["hook_exit"]) == ("continuity 0.0.1", 0, 2)
    assert "invalid choice: 'cursor'" in cursor["problems"][0]


def test_user_scope_paths_are_resolved_and_checked(proj: Path, tmp_path: Path) -> None:
    """A user-scope hook names this machine's path: doctor runs that one, and flags a path that is gone."""
    run("init", "--project", "demo", cwd=proj, path=f"{VENV_BIN}:/usr/bin:/bin")
    assert run("install", "cursor", "--scope", "user", cwd=proj, path="/usr/bin:/bin").returncode == 0
    code, report = doctor(proj, "/usr/bin:/bin")
    [entry] = [h for h in report["harnesses"] if h["installed"]]
    assert (entry["scope"], entry["commands"][0]["program"], entry["commands"][0]["runs"]) == (
        "user", CONTINUITY, CONTINUITY)
    assert (code, entry["commands"][0]["hook_exit"]) == (0, 0)
    gone = tmp_path / "old-venv" / "bin" / "continuity"  # the venv install recorded, since deleted
    hooks = Path(os.environ["HOME"]) / ".cursor" / "hooks.json"
    hooks.write_text(hooks.read_text().replace(CONTINUITY, str(gone)))
    code, report = doctor(proj, "/usr/bin:/bin")
    assert code == 1 and report["problems"][0].startswith(f"cursor (user): {gone} is not an executable file")


def test_run_in_the_home_folder_user_hooks_are_reported_once(tmp_path: Path) -> None:
    """From the home folder, the project's settings file is the home folder's: the user-scope hooks were listed as
    both scopes' and, taken for project hooks, wanted a store there (exit 1 that one folder down did not give)."""
    home = Path(os.environ["HOME"])
    path = f"{VENV_BIN}:/usr/bin:/bin"
    assert run("install", "claude-code", "--scope", "user", cwd=home, path=path).returncode == 0
    code, report = doctor(home, path, "--no-probe")
    assert (code, report["problems"]) == (0, [])
    assert [(h["harness"], h["scope"]) for h in report["harnesses"] if h["installed"]] == [("claude-code", "user")]
    below = home / "below"
    below.mkdir()
    assert doctor(below, path, "--no-probe")[0] == 0


def test_hooks_in_both_scopes_are_a_problem(proj: Path) -> None:
    """One harness hooked from the project and the home folder runs both: every event would be recorded twice."""
    path = f"{VENV_BIN}:/usr/bin:/bin"
    run("init", "--project", "demo", cwd=proj, path=path)
    assert run("install", "gemini", cwd=proj, path=path).returncode == 0
    assert run("install", "claude-code", cwd=proj, path=path).returncode == 0
    done = run("install", "gemini", "--scope", "user", cwd=proj, path=path)
    assert done.returncode == 0 and "note: gemini: installed in the project and in the home folder" in done.stdout
    code, report = doctor(proj, path, "--no-probe")
    assert code == 1 and report["problems"] == [
        "gemini: installed in the project and in the home folder, and Gemini CLI runs both: each event is "
        "recorded twice (`continuity uninstall gemini --scope user` takes out the home folder's)"]
    assert run("uninstall", "gemini", "--scope", "user", cwd=proj, path=path).returncode == 0
    assert doctor(proj, path, "--no-probe")[0] == 0


def test_hooks_without_a_store_and_broken_settings_are_reported(proj: Path) -> None:
    """Installed hooks with no store, and a settings file that is not JSON: problems, exit 1, no traceback."""
    path = f"{VENV_BIN}:/usr/bin:/bin"
    run("install", "codex", cwd=proj, path=path)
    (proj / ".gemini").mkdir()
    (proj / ".gemini" / "settings.json").write_text("{not json")
    code, report = doctor(proj, path)
    assert code == 1 and report["store"]["found"] is False
    assert any("no continuity store" in line for line in report["problems"])
    assert any(line.startswith("gemini (project): ") and "not valid JSON" in line for line in report["problems"])
    human = run("doctor", cwd=proj, path=path)
    assert human.returncode == 1 and "problem: " in human.stdout and human.stderr == ""


@pytest.mark.parametrize(("constant", "problem"), [("NaN", True), ("-Infinity", True), ("9" * 5000, False)])
def test_settings_no_json_reader_reads_are_a_problem_and_a_huge_number_is_not(proj: Path, constant: str,
                                                                               problem: bool) -> None:
    """`NaN` or `Infinity` in a settings file (Python reads them, JSON does not: the harness loads no hook of it) was
    "ok"; a number of 5,000 digits (JavaScript reads it as a double) was "not valid JSON, even with comments"."""
    path = f"{VENV_BIN}:/usr/bin:/bin"
    assert run("install", "gemini", cwd=proj, path=path).returncode == 0
    settings = proj / ".gemini" / "settings.json"
    settings.write_text(settings.read_text().replace("{", '{"x": ' + constant + ", // a comment\n", 1))
    code, report = doctor(proj, path)
    said = [line for line in report["problems"] if line.startswith("gemini (project): ")]
    assert bool(said) == problem, report["problems"]  # (the fixture's project has no store: that is a problem too)
    assert not problem or (code == 1 and "not valid JSON" in said[0])


def test_a_store_the_hooks_cannot_write_is_a_problem(proj: Path, tmp_path: Path) -> None:
    """A broken config.json, or a store folder that is a symlink: the installed hooks record nothing, so exit 1."""
    path = f"{VENV_BIN}:/usr/bin:/bin"
    run("init", "--project", "demo", cwd=proj, path=path)
    run("install", "claude-code", cwd=proj, path=path)
    store = proj / ".agent" / "runtime-continuity"
    (store / "config.json").write_text("{not json")
    code, report = doctor(proj, path, "--no-probe")
    assert code == 1 and report["ok"] is False
    assert report["problems"] == [f"store {store}: {report['store']['problem']}; the installed hooks record "
                                  "nothing until it is fixed"]
    assert "config.json is not valid JSON" in report["problems"][0]
    human = run("doctor", "--no-probe", cwd=proj, path=path)
    assert human.returncode == 1 and f"store: {store} (" in human.stdout and "(project " not in human.stdout
    moved = tmp_path / "elsewhere"
    store.rename(moved)
    store.symlink_to(moved)
    code, report = doctor(proj, path, "--no-probe")
    assert code == 1 and len(report["problems"]) == 1 and "is a symlink" in report["problems"][0]


def test_a_read_only_store_is_a_problem(proj: Path) -> None:
    """A store the hooks cannot write (a read-only mount; a store `sudo continuity init` made root's): doctor said
    ok while every hook said "event not written". The probe writes nothing, so the folders are checked."""
    path = f"{VENV_BIN}:/usr/bin:/bin"
    run("init", "--project", "demo", cwd=proj, path=path)
    run("install", "claude-code", cwd=proj, path=path)
    assert run("log", "-m", "a day folder", cwd=proj, path=path).returncode == 0
    store = proj / ".agent" / "runtime-continuity"
    mounted = make_read_only(store)
    try:
        assert run("log", "-m", "x", cwd=proj, path=path).returncode == 5
        code, report = doctor(proj, path, "--no-probe")
        assert code == 1 and len(report["problems"]) == 1, report["problems"]
        assert "is not writable by this user: the hooks record nothing" in report["problems"][0]
    finally:
        for folder in mounted:
            subprocess.run(["umount", str(folder)], check=True)
        for folder in (store / "events", store / "local"):
            os.chmod(folder, 0o755)
    code, report = doctor(proj, path, "--no-probe")
    assert (code, report["problems"]) == (0, [])


def test_a_command_naming_a_path_with_a_nul_is_not_ours(proj: Path) -> None:
    """A committed command whose path holds a NUL (no path install writes can): not ours, so no crash, not run."""
    command = install.hook_command("claude-code", "/opt/x\0y/continuity")
    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}}
    (proj / ".claude").mkdir()
    (proj / ".claude" / "settings.json").write_text(json.dumps(settings))
    before = (proj / ".claude" / "settings.json").read_bytes()
    code, report = doctor(proj, f"{VENV_BIN}:/usr/bin:/bin")
    assert code == 0 and not any(h["installed"] for h in report["harnesses"])
    done = run("uninstall", "claude-code", cwd=proj, path=f"{VENV_BIN}:/usr/bin:/bin")
    assert done.returncode == 0 and (proj / ".claude" / "settings.json").read_bytes() == before


def test_no_probe_runs_no_hook(proj: Path) -> None:
    """--no-probe reads settings and versions only: no probe exit codes."""
    path = f"{VENV_BIN}:/usr/bin:/bin"
    run("init", "--project", "demo", cwd=proj, path=path)
    run("install", "claude-code", cwd=proj, path=path)
    code, report = doctor(proj, path, "--no-probe")
    [command] = next(h for h in report["harnesses"] if h["installed"])["commands"]
    assert code == 0 and (command["harness_exit"], command["hook_exit"]) == (None, None)


#: A program named continuity that a hostile project ships: it leaves a mark when run and prints terminal controls.
HOSTILE = """#!/bin/sh
echo "ran $*" >> "{mark}"
[ "$1" = --version ] && printf 'continuity \\033]0;owned\\007\\033[31m9.9\\n' && exit 0
printf '\\033[2J\\033]52;c;ZXZpbA==\\007cleared\\n' >&2
exit 1
"""


@pytest.mark.parametrize("program", ["tools/continuity", "/proc/self/cwd/tools/continuity", "{root}/tools/continuity"])
def test_a_program_the_project_ships_is_never_run(proj: Path, tmp_path: Path, program: str) -> None:
    """A committed hooks file of our exact shape naming a program inside the project (relative, through
    /proc/self/cwd, or absolute): doctor runs nothing it names, not even its --version, and says why."""
    mark = tmp_path / "ran.txt"
    (proj / "tools").mkdir()
    (proj / "tools" / "continuity").write_text(HOSTILE.format(mark=mark))
    (proj / "tools" / "continuity").chmod(0o755)
    (proj / ".cursor").mkdir()
    program = program.format(root=proj)
    command = f"[ -x {program} ] && {program} hook cursor; exit 0"
    assert install.is_ours({"command": command})  # uninstall would take it out: it has the shape of ours
    (proj / ".cursor" / "hooks.json").write_text(json.dumps({"version": 1, "hooks": {"stop": [{"command": command}]}}))
    for extra in ((), ("--no-probe",)):
        code, report = doctor(proj, f"{VENV_BIN}:/usr/bin:/bin", *extra)
        [entry] = [h for h in report["harnesses"] if h["installed"]]
        [found] = entry["commands"]
        assert (found["runs"], found["version"], found["harness_exit"], found["hook_exit"]) == (None, None, None, None)
        assert code == 1 and "neither this continuity nor the one on PATH: not run" in found["problems"][0]
    assert not mark.exists()


def test_a_project_file_naming_this_continuity_by_path_is_probed(proj: Path) -> None:
    """An older install's absolute path in a project file, when it is this very continuity, is still probed."""
    run("init", "--project", "demo", cwd=proj, path=f"{VENV_BIN}:/usr/bin:/bin")
    (proj / ".cursor").mkdir()
    command = f"[ -x {CONTINUITY} ] && {CONTINUITY} hook cursor; exit 0"
    (proj / ".cursor" / "hooks.json").write_text(json.dumps({"version": 1, "hooks": {"stop": [{"command": command}]}}))
    code, report = doctor(proj, "/usr/bin:/bin")
    [found] = next(h for h in report["harnesses"] if h["installed"])["commands"]
    assert (code, found["runs"], found["harness_exit"], found["hook_exit"]) == (0, CONTINUITY, 0, 0)


def test_what_a_program_prints_reaches_the_terminal_without_its_controls(proj: Path, tmp_path: Path) -> None:
    """A user-scope hook's program that prints escape sequences in its version and its errors: the report for
    people shows them as visible stand-ins, never raw."""
    mark = tmp_path / "ran.txt"
    program = tmp_path / "weird-bin" / "continuity"
    program.parent.mkdir()
    program.write_text(HOSTILE.format(mark=mark))
    program.chmod(0o755)
    assert run("install", "cursor", "--scope", "user", cwd=proj, path="/usr/bin:/bin").returncode == 0
    hooks = Path(os.environ["HOME"]) / ".cursor" / "hooks.json"
    hooks.write_text(hooks.read_text().replace(CONTINUITY, str(program)))
    human = run("doctor", cwd=proj, path="/usr/bin:/bin")
    assert human.returncode == 1 and "Traceback" not in human.stderr
    assert "\x1b" not in human.stdout and "\x07" not in human.stdout
    assert f"-> {program} continuity \u241b]0;owned\u2407\u241b[31m9.9" in human.stdout
    assert "exits 1: \u241b[2J\u241b]52;c;ZXZpbA==\u2407cleared" in human.stdout


def test_a_probe_that_hangs_is_stopped_with_its_children(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A probe past its timeout is reported as timed out, and the processes the hook's sh started are gone too."""
    from continuity.adapters import doctor as doctor_module

    monkeypatch.setattr(doctor_module, "PROBE_TIMEOUT", 3)  # time for sh to start its child on a loaded machine
    pid_file = tmp_path / "pid"
    result = doctor_module._run(["/bin/sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait; exit 0"], b"{}",
                                dict(os.environ), tmp_path)
    assert result == {"exit": None, "stdout": "", "stderr": "timed out after 3 s"}
    pid = int(pid_file.read_text())
    for _ in range(100):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            break
        if state == "Z":
            break
        import time

        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        pytest.fail(f"the probe's child {pid} outlived the timeout")


def test_a_hooks_file_that_is_a_fifo_is_a_finding_not_a_hang(proj: Path) -> None:
    """A project's hooks file that is a FIFO: doctor reports it and goes on instead of waiting for a writer."""
    (proj / ".gemini").mkdir()
    os.mkfifo(proj / ".gemini" / "settings.json")
    env = {"HOME": os.environ["HOME"], "PATH": f"{VENV_BIN}:/usr/bin:/bin"}
    done = subprocess.run([CONTINUITY, "doctor", "--json"], cwd=proj, env=env, capture_output=True, text=True,
                          timeout=30)
    report = json.loads(done.stdout)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert any(line.startswith("gemini (project): ") and "not a regular file" in line for line in report["problems"])


def test_an_unreadable_settings_file_is_named_once(proj: Path) -> None:
    """Each settings file doctor cannot read is one problem line naming the file once, whatever the reason."""
    for folder, name, content in ((".claude", "settings.json", None), (".codex", "hooks.json", b"\xff{}"),
                                  (".gemini", "settings.json", b'{"hooks": {"AfterTool": 1}}')):
        (proj / folder).mkdir()
        if content is None:
            os.mkfifo(proj / folder / name)
        else:
            (proj / folder / name).write_bytes(content)
    code, report = doctor(proj, f"{VENV_BIN}:/usr/bin:/bin", "--no-probe")
    assert code == 1 and report["problems"] == [
        f"claude-code (project): {proj / '.claude' / 'settings.json'}: not a regular file",
        f"codex (project): {proj / '.codex' / 'hooks.json'}: not valid UTF-8",
        f"gemini (project): {proj / '.gemini' / 'settings.json'}: its \"hooks\".AfterTool is not a JSON array"]


def test_a_hook_that_never_finishes_is_said_so(proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `continuity` on PATH that hangs: doctor said "the installed command exits None" (Python's None for a
    process it had to kill)."""
    from continuity.adapters import doctor as doctor_module

    hung_bin = tmp_path / "hung-bin"
    hung_bin.mkdir()
    (hung_bin / "continuity").write_text('#!/bin/sh\n[ "$1" = --version ] && echo "continuity 9.9.9" && exit 0\n'
                                         "exec sleep 300\n")
    (hung_bin / "continuity").chmod(0o755)
    monkeypatch.setattr(doctor_module, "PROBE_TIMEOUT", 1)
    monkeypatch.setenv("PATH", f"{hung_bin}:/usr/bin:/bin")
    command = install.hook_command("codex")
    report = doctor_module.command_report("codex", command, ["SessionStart"], proj, probe=True, scope="project",
                                          versions={})
    assert (report["harness_exit"], report["hook_exit"]) == (None, None)
    assert report["problems"][-2:] == [
        "the installed command did not run to its end: timed out after 1 s",
        f"`{hung_bin / 'continuity'} hook codex` did not run to its end: timed out after 1 s"]
    assert not any("None" in problem for problem in report["problems"])


def test_settings_files_their_harness_reads_are_read_as_it_reads_them(proj: Path) -> None:
    """A home Gemini CLI settings file with comments (Gemini CLI reads them), a byte order mark, a key given twice:
    `doctor` reported each as a problem (exit 1) for a harness with no continuity hooks at all, and hooks added by
    hand to such a file (docs/adapters.md's way when install cannot merge) read as none installed."""
    path = f"{VENV_BIN}:/usr/bin:/bin"
    home = Path(os.environ["HOME"])
    run("init", "--project", "demo", cwd=proj, path=path)
    assert run("install", "claude-code", cwd=proj, path=path).returncode == 0
    gemini = home / ".gemini" / "settings.json"
    gemini.parent.mkdir(exist_ok=True)
    claude = home / ".claude" / "settings.json"
    claude.parent.mkdir(exist_ok=True)
    try:
        gemini.write_text('{\n  // my Gemini CLI settings\n  "theme": "GitHub", /* dark */\n}\n')
        claude.write_text('\ufeff{"model": "a", "model": "b"}\n')
        code, report = doctor(proj, path, "--no-probe")
        assert (code, report["problems"]) == (0, []), report["problems"]
        assert run("install", "gemini", cwd=proj, path=path).returncode == 0
        hooks = proj / ".gemini" / "settings.json"
        hooks.write_text("// the team's hooks\n" + hooks.read_text())
        code, report = doctor(proj, path, "--no-probe")
        hooked = [entry for entry in report["harnesses"] if entry["harness"] == "gemini" and entry["installed"]]
        assert code == 0 and hooked, report
    finally:
        gemini.unlink(missing_ok=True)
        claude.unlink(missing_ok=True)


@pytest.mark.parametrize("tail", ["", "\\"], ids=["open-string", "open-string-and-escape"])
def test_a_settings_file_with_a_string_left_open_is_a_finding_not_a_hang(proj: Path, tail: str) -> None:
    """A string that never closes, full of escaped quotes: reading it again as JSON with comments tried the string
    from each quote to the end (174 s for 100 KB; this file would have taken hours, here stopped by the timeout)."""
    path = f"{VENV_BIN}:/usr/bin:/bin"
    (proj / ".claude").mkdir()
    (proj / ".claude" / "settings.json").write_text('{"a": "' + '\\"' * 200_000 + tail)
    code, report = doctor(proj, path, "--no-probe")
    assert code == 1
    assert any(line.startswith("claude-code (project): ") and "not valid JSON, even with comments" in line
               for line in report["problems"]), report["problems"]
    (proj / ".claude" / "settings.json").unlink()  # then in the user's scope, read by every install of a project
    user = Path(os.environ["HOME"]) / ".claude"
    user.mkdir(exist_ok=True)
    (user / "settings.json").write_text('{"a": "' + '\\"' * 200_000 + tail)
    installed = run("install", "claude-code", cwd=proj, path=path)
    assert installed.returncode == 0, installed.stderr
