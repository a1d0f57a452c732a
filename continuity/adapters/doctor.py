"""`continuity doctor`: what each harness will actually run, found by running it.

For every harness and scope it reads the hook settings install writes, takes our entries
(exactly as `uninstall` recognizes them), resolves the program each command runs (`continuity`
on PATH, or the absolute path a user-scope or local file names), asks it for its version, and
runs the installed command the way the harness does (`sh -c`, a payload on stdin) with a
probe event no handler knows: the hook reads it, records nothing and writes nothing, so the
store is never touched. The same payload is also given to `<program> hook <harness>` without
the `; exit 0` guard, so an old `continuity` that does not know the harness, or one that
crashes, shows as the exit code the guard would have hidden.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from continuity import package_version
from continuity.adapters import install

PROBE_EVENT = "continuity.doctor-probe"
PROBE_TIMEOUT = 20
ON_PATH = "continuity on PATH"


def probe_payload(root: Path) -> bytes:
    """A payload every harness's dialect reads and no handler acts on."""
    return json.dumps({
        "hook_event_name": PROBE_EVENT, "session_id": "doctor-probe", "conversation_id": "doctor-probe",
        "cwd": str(root), "workspace_roots": [str(root)],
    }).encode()


def diagnose(root: Path, home: Path, *, probe: bool = True) -> dict[str, Any]:
    """The whole report: this continuity, the one on PATH, the store, and each harness's installed hooks."""
    on_path = shutil.which("continuity")
    report: dict[str, Any] = {
        "ok": False, "version": package_version(), "python": sys.executable, "root": str(root),
        "this": install.executable(),
        "path": {"continuity": on_path, "version": program_version(on_path) if on_path else None},
        "store": store_report(root),
    }
    versions: dict[str, str | None] = {}
    harnesses = [harness_report(harness, scope, root, home, probe=probe, versions=versions)
                 for harness in install.HARNESSES for scope in install.SCOPES
                 if scope == "user" or not _home_file(harness, root, home)]
    report["harnesses"] = harnesses
    problems = [f"{h['harness']} ({h['scope']}): {line}" for h in harnesses for line in h["problems"]]
    problems.extend(f"{harness}: {install.twice_line(harness)}" for harness in install.HARNESSES
                    if install.installed_twice(harness, root, home))
    if report["store"]["record_prompts"]:
        problems.extend(f"{h['harness']} ({h['scope']}): record_prompts is on in config.json but the turn "
                        f"hooks are not installed, so no prompt is recorded (`continuity install {h['harness']}"
                        f"{'' if h['scope'] == 'project' else ' --scope user'} --turns`)"
                        for h in harnesses if h["installed"] and not h["turns"])
    problems.extend(report["store"]["settings"])
    if any(h["installed"] and h["scope"] == "project" for h in harnesses):
        store = report["store"]
        if not store["found"]:
            problems.append(f"no continuity store in {root}: the installed hooks record nothing until "
                            "`continuity init`")
        elif store["problem"]:  # a broken config.json or an unsafe store: the hooks refuse to write
            problems.append(f"store {store['path']}: {store['problem']}; the installed hooks record nothing "
                            "until it is fixed")
    report["problems"] = problems
    report["ok"] = not problems
    return report


def _home_file(harness: str, root: Path, home: Path) -> bool:
    """Whether the project's settings file is the home folder's (doctor run in the home folder): the hooks there
    are the user scope's, reported once, and no project store is wanted for them."""
    project, user = (install.target_paths(harness, scope, root, home)[0] for scope in install.SCOPES)
    return os.path.realpath(project) == os.path.realpath(user)


def store_report(root: Path) -> dict[str, Any]:
    """The store the hooks would find from the project root, and whether it can be read and written safely."""
    from continuity.core.store import find_store
    from events.errors import ContinuityError

    try:
        store = find_store(start=str(root))
    except ContinuityError as error:
        return {"found": False, "path": None, "project": None, "problem": str(error), "record_prompts": False,
                "settings": []}
    try:
        store.check_safe()
        project, warnings = store.reading_project()
        warnings = warnings or _unwritable(store)
        prompts = store.flag("record_prompts") if not warnings else False
    except (ContinuityError, OSError) as error:
        return {"found": True, "path": store.path, "project": None, "problem": str(error), "record_prompts": False,
                "settings": []}
    from continuity.adapters.doctor_settings import settings_problems

    return {"found": True, "path": store.path, "project": project, "problem": warnings[0] if warnings else None,
            "record_prompts": prompts, "settings": [] if warnings else settings_problems(store.config)}


def _unwritable(store: Any) -> list[str]:
    """Why a hook could not record in this store (a folder it writes that this user cannot: a read-only mount, a
    store `sudo continuity init` made root's), or none. The probe writes nothing, so it cannot tell."""
    folders = [store.path, store.events_dir, store.local_dir]
    newest = max((day for day in _listed(store.events_dir) if len(day) == 8 and day.isdigit()), default=None)
    if newest is not None:
        folders.append(os.path.join(store.events_dir, newest))
    for folder in folders:
        if os.path.isdir(folder) and not os.access(folder, os.W_OK | os.X_OK, effective_ids=os.access in
                                                   os.supports_effective_ids):
            return [f"{folder} is not writable by this user: the hooks record nothing"]
    return []


def _listed(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def harness_report(harness: str, scope: str, root: Path, home: Path, *, probe: bool,
                   versions: dict[str, str | None]) -> dict[str, Any]:
    """Which of our hooks one harness has in one scope, what each runs, and whether it exits 0."""
    settings, _ = install.target_paths(harness, scope, root, home)
    files = [settings]
    local = install.local_settings_path(harness, scope, root)
    if local is not None:
        files.append(local)
    events: dict[str, list[str]] = {}
    problems: list[str] = []
    for path in files:
        try:
            # as its harness reads it (comments, a byte order mark, a key given twice): what it cannot read either
            # is a problem
            config = install.read_config(install.read_text(path) or "")
            for event, entries in install.hooks_of(config).items():
                for hook in (h for entry in entries for h in install.hooks_in(entry)):
                    if install.is_ours(hook):
                        events.setdefault(hook["command"], []).append(event)
        except Exception as error:  # an unreadable file is a finding, not a crash
            line = str(error).removesuffix("; nothing changed")  # read_text's lines name the file already
            problems.append(line if line.startswith(f"{path}: ") else f"{path}: {line}")
    commands = [command_report(harness, command, names, root, probe=probe, versions=versions, scope=scope)
                for command, names in events.items()]
    # Installed while PATH had no `continuity`, Claude Code's portable hooks do nothing here and the machine's
    # fallback (settings.local.json, which steps aside once PATH has one) runs the same events: that is the
    # setup install makes for this case, not a problem.
    fallback = {event: command["runs"] for command in commands if command["program"] != ON_PATH
                and command["runs"] is not None and not command["problems"] for event in command["events"]}
    for command in commands:
        if command["program"] == ON_PATH and command["runs"] is None and all(
                event in fallback for event in command["events"]):
            command["problems"] = [line for line in command["problems"] if not line.startswith("PATH has no")]
            command["covered_by"] = fallback[command["events"][0]] if command["events"] else None
    for command in commands:
        problems.extend(command["problems"])
    unread = install.block_past_cap(harness, scope, root, home) if events else None
    if unread is not None:
        problems.append(unread)
    hooked = {name for names in events.values() for name in names}
    return {"harness": harness, "scope": scope, "files": [str(path) for path in files], "installed": bool(events),
            "turns": set(install.TURN_EVENTS[harness]) <= hooked,
            "commands": commands, "problems": problems}


def command_report(harness: str, command: str, events: list[str], root: Path, *, probe: bool,
                   versions: dict[str, str | None], scope: str) -> dict[str, Any]:
    """One installed command: the program it resolves to, that program's version, and the probe's outcome."""
    program = resolve(command)
    runs = shutil.which("continuity") if program == ON_PATH else program
    if program not in (None, ON_PATH) and not _vouched_for(program, scope):
        report: dict[str, Any] = {"command": command, "events": events, "program": program, "runs": None,
                                  "version": None, "harness_exit": None, "hook_exit": None, "problems": [
                                      f"{program} is neither this continuity nor the one on PATH: not run (a "
                                      "project's files can name a program the project ships); these hooks "
                                      f"({', '.join(events)}) run it"]}
        return report
    if runs is not None and not (os.path.isfile(runs) and os.access(runs, os.X_OK)):
        runs = None
    if runs is not None and runs not in versions:
        versions[runs] = program_version(runs)
    report = {"command": command, "events": events, "program": program, "runs": runs,
              "version": versions.get(runs) if runs else None, "harness_exit": None,
              "hook_exit": None, "problems": []}
    problems: list[str] = report["problems"]
    if runs is None:
        where = "PATH has no `continuity`" if program == ON_PATH else f"{program} is not an executable file"
        problems.append(f"{where}: these hooks ({', '.join(events)}) do nothing here")
    if not probe:
        return report
    payload = probe_payload(root)
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(root), "GEMINI_PROJECT_DIR": str(root),
           "CURSOR_PROJECT_DIR": str(root)}
    outer = _run(["/bin/sh", "-c", command], payload, env, root)
    report["harness_exit"] = outer["exit"]
    if outer["exit"] is None:  # it never ran, or never exited (the harness kills it at its own timeout)
        problems.append(f"the installed command did not run to its end: {outer['stderr']}")
    elif outer["exit"] != 0:
        problems.append(f"the installed command exits {outer['exit']} (the harness may treat 2 as blocking): "
                        f"{outer['stderr']}")
    elif outer["stdout"]:
        problems.append(f"the installed command printed on stdout for an event it does not handle: {outer['stdout']}")
    if runs is not None:
        inner = _run([runs, "hook", harness], payload, env, root)
        report["hook_exit"] = inner["exit"]
        if inner["exit"] is None:
            problems.append(f"`{runs} hook {harness}` did not run to its end: {inner['stderr']}")
        elif inner["exit"] != 0 or inner["stderr"]:
            problems.append(f"`{runs} hook {harness}` exits {inner['exit']}: {inner['stderr'] or 'no message'}"
                            " (the installed command's `exit 0` hides it; is that continuity too old for "
                            f"{harness}?)")
    return report


def _vouched_for(program: str, scope: str) -> bool:
    """Whether doctor may run a program a command names by path.

    Install writes only absolute paths, so a relative one (it depends on the folder the hook
    runs in) is never run. A project's files may come from anyone who can commit: a path
    there (absolute, or through /proc/self/cwd) is run only when it is this continuity or the
    one on PATH. The home folder's files are the user's own.
    """
    if not os.path.isabs(program):
        return False
    if scope != "project":
        return True
    ours = {os.path.realpath(path) for path in (install.executable(), shutil.which("continuity")) if path}
    return os.path.realpath(program) in ours


def resolve(command: str) -> str | None:
    """The program an installed command runs: ON_PATH for the portable form, else the absolute path it names."""
    match = install.TAIL.search(command)
    if match is None:
        return None
    try:
        [exe] = shlex.split(match["exe"])
    except ValueError:
        return None
    return ON_PATH if exe == "continuity" else exe


def program_version(program: str) -> str | None:
    """What `<program> --version` prints (one line), or None when it does not run or says nothing."""
    try:
        done = subprocess.run([program, "--version"], capture_output=True, timeout=PROBE_TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
    return lines[0][:200] if done.returncode == 0 and lines else None


def _run(argv: list[str], stdin: bytes, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Run one probe; its exit code (None when it could not run or timed out), stdout and last stderr line."""
    try:  # its own process group, so a timeout stops what the hook's sh started too, not only sh
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=env, cwd=cwd, start_new_session=True)
    except OSError as error:
        return {"exit": None, "stdout": "", "stderr": f"cannot run: {error.strerror or error}"}
    try:
        out, err = process.communicate(stdin, timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        process.kill()
        process.communicate()
        return {"exit": None, "stdout": "", "stderr": f"timed out after {PROBE_TIMEOUT} s"}
    stderr = [line for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
    return {"exit": process.returncode, "stdout": out.decode("utf-8", "replace").strip()[:500],
            "stderr": stderr[-1][:500] if stderr else ""}
