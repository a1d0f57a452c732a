"""`continuity init` and `continuity verify`."""

from __future__ import annotations

import argparse
import os
from typing import Any

from continuity.cli.common import Output, open_store


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `init` or `verify`."""
    if name == "verify":
        _register_verify(commands, common)
        return
    parser = commands.add_parser(
        "init", help="create the store here (idempotent)", parents=[common],
        description="Create .agent/runtime-continuity in the project root (the working "
        "directory, or --root): config.json, README.md, .gitignore, event.schema.json. "
        "Running it again keeps the config (its project too: another --project is refused once the log holds "
        "events; a --language given is set) and refreshes the generated files. The store is added to the "
        "project's .gitignore (never through a symlink out of the project: exit 5, the store made, the line to "
        "add named).",
    )
    parser.add_argument("--project", help="project name (default: the folder's name)")
    parser.add_argument("--language", choices=["en", "zh"], help="language of Markdown archives")
    parser.add_argument("--repair", action="store_true",
                        help="rewrite a missing, empty or invalid config.json, taking the project name "
                        "from --project or from the newest event this clone wrote, else the newest event (never "
                        "from the folder's name, nor from another clone's project a sync brought in); a file that "
                        "does not parse is first copied to local/config.unparsed-<time>.json")
    parser.set_defaults(handler=_init)


def _register_verify(commands: Any, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "verify", help="check the whole log's integrity", parents=[common],
        description="Recompute every event's hash and the prev chain. Prints counts, forks "
        "(merges) and the first broken event with the reason, and the workstream invariants a merge of "
        "clones broke (two active workstreams, a dependency cycle, ...); exits 1 on any of them. Temp files a "
        "killed writer left (in the store, the Markdown folder or `.ai-bridge/`) are a warning (`continuity "
        "rebuild` removes them).",
    )
    parser.set_defaults(handler=_verify)


def _init(args: argparse.Namespace, out: Output) -> int:
    from continuity.core.initialize import init_store
    from continuity.core.store import working_folder
    from continuity.core.text import one_line

    root = os.path.abspath(getattr(args, "root", None) or working_folder())
    store, created = init_store(root, project=args.project, language=args.language, repair=args.repair)
    text = f"{'initialized' if created else 'already initialized'}: {one_line(store.path)} (project {store.project})"
    if store.config_kept is not None:
        text += f"\nthe config.json that did not parse was kept as {store.config_kept}: copy its settings back"
    text += "".join(f"\n{line}" for line in store.adopted)
    out.emit(
        {"ok": True, "action": "init", "created": created, "store": str(store.path),
         "project": store.project, "config_kept": store.config_kept, "seed004": store.adopted},
        text,
    )
    return 0


def _verify(args: argparse.Namespace, out: Output) -> int:
    import msgspec

    from continuity.core.errors import EXIT_INTEGRITY
    from continuity.core.text import one_line

    store = open_store(args)
    from continuity.readside.catchup import adopt_first_release_folders, moved_line
    from events.durable import false_days, hour_folders, misfiled, unread_entries

    moved, not_moved = adopt_first_release_folders(store.open_reader())  # else the first release's events go unread
    unread = hour_folders(store.events_dir)
    report = store.open_reader().verify()
    wrong_day = [f"events/{day}/{name}" for day, name in misfiled(store.events_dir)]
    no_day = [f"events/{day}/" for day in false_days(store.events_dir)]
    stray = unread_entries(store.events_dir)
    links = symlinks_in(store.path)
    from continuity.core.store import now_us
    from continuity.facts import clock_ahead_warning

    ahead = clock_ahead_warning(store.open_reader(), now_us())
    from continuity.readside.catchup import early_warning

    early = store.open_reader().early_days(now_us())
    from continuity.core.leftovers import stale_temps_everywhere

    temps = stale_temps_everywhere(store, now_us() / 1e6)
    data = msgspec.to_builtins(report)
    data["clock_warning"] = ahead
    data["early_day_folders"] = [f"events/{day}/" for day in early]
    data["ok"] = report.ok and not links and not unread and not wrong_day and not no_day and not stray
    data["misfiled"] = wrong_day
    data["hour_folders_moved"] = moved
    data["unread_hour_folders"] = unread
    data["false_day_folders"] = no_day
    data["unread_entries"] = [path for path, _ in stray]
    data["first_problem"] = msgspec.to_builtins(report.first_problem)
    data["symlinks"] = links
    data["leftover_temps"] = temps
    from continuity.tasks.service import merge_problems
    from continuity.workstreams.service import invariant_problems

    broken, settled, work_warnings = invariant_problems(store)
    task_broken, task_warnings = merge_problems(store)
    work_warnings = list(dict.fromkeys(work_warnings + task_warnings))  # the same catch-up warning said once
    data["workstream_problems"] = broken
    data["workstream_problems_resolved"] = settled
    data["task_problems"] = task_broken
    data["ok"] = data["ok"] and not broken and not task_broken
    lines = [
        f"events: {report.events}  nodes: {len(report.nodes)}  roots: {report.roots}  "
        f"forks (merges): {len(report.forks)}",
    ]
    for fork in report.forks[:10]:
        lines.append(f"fork: {fork.parent} -> {', '.join(fork.children)}")
    lines.extend(f"UNSAFE: symlink inside the store: {link}" for link in links[:20])
    if moved:
        lines.append(moved_line(moved))
    why = (f"they could not be moved into their day folders ({not_moved})" if not_moved and not moved
           else "events of another day, or names whose day folder holds other bytes")
    lines.extend(f"UNREAD: events/{folder}/ (the first release's layout) holds files no reader takes: {why}"
                 for folder in unread[:20])
    if ahead:
        lines.append(f"warning: {ahead}")
    said = early_warning(early) if early else None
    if said:
        lines.append(f"warning: {said}")
    if temps:
        lines.append(f"warning: {len(temps)} temp file(s) left by a killed writer ({one_line(', '.join(temps[:5]))}"
                     f"{', ...' if len(temps) > 5 else ''}); `continuity rebuild` removes them")
    lines.extend(f"warning: {warning}" for warning in work_warnings if warning != said)
    lines.extend(f"WORKSTREAM: {problem}" for problem in broken[:20])
    if broken:
        lines.append(f"BROKEN: {len(broken)} workstream problem(s) left by a merge (fix the state, or resolve a "
                     "recorded conflict with a tracked checkpoint or `continuity work resolve`; see `continuity work "
                     "status`)")
    if settled:
        lines.append(f"{len(settled)} workstream problem(s) left by a merge were resolved (`--json`: "
                     "workstream_problems_resolved says by what)")
    lines.extend(f"TASK: {problem}" for problem in task_broken[:20])
    if task_broken:
        lines.append(f"BROKEN: {len(task_broken)} task or run conflict(s) left by a merge (the later update "
                     "stays; check with `continuity task show`, fix with `continuity task update`)")
    lines.extend(one_line(f"MISFILED: {path} belongs in events/{path.rsplit('/', 1)[1][:8]}/ (replayed out of "
                          "order here, never carried by sync: move it there)") for path in wrong_day[:20])
    lines.extend(one_line(f"UNREAD: {folder} is named like a day folder but is no real date: no reader takes "
                          "what it holds") for folder in no_day[:20])
    lines.extend(f"UNREAD: {path} {why}" for path, why in stray[:20])
    if report.ok and not links and not unread and not wrong_day and not no_day and not stray:
        lines.append("ok: the log is intact" if not (broken or task_broken) else "the log itself is intact")
    elif report.ok and not links and not unread and not wrong_day:
        lines.append(f"BROKEN: {len(no_day)} folder(s) named like a day that is no real date" if not stray else
                     f"BROKEN: {len(no_day) + len(stray)} entry(ies) of events/ hold events no reader takes")
    elif report.ok and not links and not unread:
        lines.append(f"BROKEN: {len(wrong_day)} event file(s) filed under another day than their name's")
    elif report.ok and not links:
        lines.append(f"BROKEN: {len(unread)} hour folder(s) of the first release hold files no reader takes")
    elif report.ok:
        lines.append(f"BROKEN: {len(links)} symlink(s) inside the store (reads skip them, writes refuse them)")
    else:
        first = report.problems[0]
        lines.append(f"BROKEN: {len(report.problems)} problem(s); first: {first.name}: {first.reason}")
        lines.extend(f"  {p.name}: {p.reason}" for p in report.problems[1:20])
    # names in the store are anyone's: one line each, whatever they hold (a newline forged a report line)
    lines = [one_line(line) for line in lines]
    verdict = next((line for line in reversed(lines) if line.startswith("BROKEN: ")), "BROKEN: see the report")
    return out.emit_report(data, "\n".join(lines), 0 if data["ok"] else EXIT_INTEGRITY, f"verify: {verdict[8:]}")


def symlinks_in(folder: str) -> list[str]:
    """Every symlink inside the store, relative to it (none belongs there)."""
    found = []
    for parent, dirs, files in os.walk(folder, followlinks=False):
        for name in (*dirs, *files):
            path = os.path.join(parent, name)
            if os.path.islink(path):
                found.append(os.path.relpath(path, folder))
    return sorted(found)
