"""`continuity doctor`: which continuity the installed hooks run, its version, the store, and a probe of each."""

from __future__ import annotations

import argparse
from typing import Any

from continuity.cli.common import Output

DESCRIPTION = (
    "Report what each harness will actually run: this continuity's version, the `continuity` on PATH and its "
    "version, the store the hooks find from the project root, and for claude-code, codex, cursor and gemini in "
    "both scopes (the project's files and the home folder's) the hooks install wrote, the program each command "
    "resolves to and its version. Unless --no-probe, each installed command is run as the harness runs it "
    "(sh -c, JSON on stdin) with a probe event that no handler acts on, so nothing is recorded and the store is "
    "not written; its exit code is what the harness would see, and the same probe given to `<program> hook "
    "<harness>` directly shows what the command's `exit 0` guard would hide (an older continuity that does not "
    "know the harness, a crash). Exits 1 when it finds a problem (hooks that do nothing, a probe that fails, "
    "installed hooks without a store or with one they cannot write (a broken config.json), record_prompts on "
    "in config.json without the turn hooks, a harness hooked both in the project and in the home folder, which "
    "records every event twice, a setting in config.json that is read as something else than it says: a "
    "wrong type, a value out of range, a key no command reads), else 0. "
    "PATH is this shell's: a harness started from a desktop launcher "
    "may see another."
)


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `doctor`."""
    parser = commands.add_parser("doctor", help="report which continuity the installed hooks run and whether "
                                 "each would exit 0", description=DESCRIPTION, parents=[common])
    parser.add_argument("--no-probe", action="store_true", help="read the settings and versions only; run no hook")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace, out: Output) -> int:
    from continuity.adapters.doctor import diagnose
    from continuity.cli.install_cmd import home_folder, project_root

    report = diagnose(project_root(args), home_folder(), probe=not args.no_probe)
    problems = report.get("problems") or ["a problem (see the report)"]
    return out.emit_report(report, render(report), 0 if report["ok"] else 1,
                           f"doctor: {len(problems)} problem(s); first: {problems[0]}")


def render(report: dict[str, Any]) -> str:
    """The report as lines for a person."""
    path = report["path"]
    store = report["store"]
    lines = [f"continuity {report['version']} ({report['this'] or report['python']})",
             f"on PATH: {path['continuity'] or 'none'}" + (f" ({path['version']})" if path["version"] else ""),
             f"store: {store['path']} (project {store['project']})"
             if store["found"] and store["project"] and not store["problem"]
             else f"store: none ({store['problem']})" if not store["found"] else f"store: {store['path']} "
             f"({store['problem']})"]
    for entry in report["harnesses"]:
        if not entry["installed"]:
            continue
        for command in entry["commands"]:
            runs = command["runs"] or ("nothing (PATH has no `continuity`; the fallback below runs these events)"
                                       if command.get("covered_by") else "nothing")
            version = f" {command['version']}" if command["version"] else ""
            probe = "" if command["harness_exit"] is None else f"; probe exit {command['harness_exit']}" + (
                "" if command["hook_exit"] is None else f", hook exit {command['hook_exit']}")
            lines.append(f"{entry['harness']} ({entry['scope']}): {len(command['events'])} hooks -> {runs}"
                         f"{version}{probe}")
    if not any(entry["installed"] for entry in report["harnesses"]):
        lines.append("no continuity hooks installed (continuity install claude-code|codex|cursor|gemini)")
    lines.extend(f"problem: {line}" for line in report["problems"])
    lines.append("ok" if report["ok"] else f"{len(report['problems'])} problem(s)")
    from continuity.core.text import one_line

    # versions, paths and probe output come from programs and files: no terminal control reaches the screen
    return "\n".join(one_line(line) for line in lines)
