"""`continuity install` and `continuity uninstall`: hooks and instructions for a harness."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from continuity.cli.common import Output
from continuity.core.text import one_line

HELP = {
    "install": "register continuity's hooks with Claude Code, Codex, Cursor or Gemini CLI, or install the "
    "runtime-continuity launcher",
    "uninstall": "remove what `continuity install` added",
}
LAUNCHER_HELP = (" `install runtime-continuity` writes .agent/skills/runtime-continuity/scripts/index.js, a Node "
                 "launcher that runs this machine's `runtime-continuity` (absolute path recorded at install) with "
                 "the same arguments, directory, environment and streams, so the seed-004 command line `node "
                 ".agent/skills/runtime-continuity/scripts/index.js <mode> ...` works unchanged. A different "
                 "existing file is refused unless --force (then it is backed up first).")
DESCRIPTION = {
    "install": "Merge continuity's hook entries into .claude/settings.json (claude-code), .codex/hooks.json "
    "(codex), .cursor/hooks.json (cursor) or .gemini/settings.json (gemini), and add a marked block to "
    "CLAUDE.md, AGENTS.md (codex, cursor) or GEMINI.md telling the agent when to checkpoint. "
    + LAUNCHER_HELP.strip() + " "
    "`install ai-context` writes seed 002's member launchers .ai/context/context.sh and context.ps1 (each runs "
    "`continuity work <action>`), the policy block in AGENTS.md and, with --repository, .ai/context/config.json. "
    "--scope user writes ~/.claude/, ~/.codex/, ~/.cursor/hooks.json or ~/.gemini/ instead. Every other entry and "
    "key is kept; running it again "
    "changes nothing. Each hook is a sh line that exits 0 whatever happens (missing project folder, missing "
    "binary, failing hook). Project files, meant to be committed, run `continuity` from PATH; when it is not "
    "on PATH here, this machine's path goes to .claude/settings.local.json (not to be committed). The output "
    "says which files to commit. A changed file is first copied to "
    ".agent/runtime-continuity/local/backups/<UTC stamp>/ (without a store, or for --scope user: "
    "$XDG_STATE_HOME/continuity/backups/, default ~/.local/state/continuity/backups/).",
    "uninstall": "Remove exactly what install added: hook entries whose command is one install writes (a "
    "user's own hook that mentions continuity is kept), groups and events left empty by that, and the "
    "marked Markdown block (AGENTS.md keeps it while the other of codex and cursor is still installed). Where "
    "nothing else changed since install, the file gets its original bytes back "
    "from the backup; a file install created is removed. A changed file is first copied as install does. "
    "`uninstall runtime-continuity` removes the launcher (or gives back the file a forced install replaced); "
    "a file that is not continuity's launcher is left alone.",
}


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `install` or `uninstall`."""
    parser = commands.add_parser(name, help=HELP[name], description=DESCRIPTION[name], parents=[common])
    from continuity.adapters.hook_dialects import HARNESSES

    parser.add_argument("harness", choices=[*HARNESSES, "runtime-continuity", "ai-context"],
                        help="the agent harness, runtime-continuity for the seed-004 launcher, or ai-context "
                        "for seed 002's member launchers and policy")
    parser.add_argument("--scope", choices=["project", "user"], default="project",
                        help="project: files in the project root (default); user: files in the home folder")
    parser.add_argument("--dry-run", action="store_true", help="print a unified diff and change nothing")
    if name == "install":
        parser.add_argument("--force", action="store_true",
                            help="runtime-continuity, ai-context: replace a different existing launcher file "
                            "(backed up first)")
        parser.add_argument("--turns", action="store_true",
                            help="also hook each turn's start and end (Claude Code and Codex: UserPromptSubmit "
                            "and Stop; Cursor: beforeSubmitPrompt and stop; Gemini CLI: BeforeAgent and "
                            "AfterAgent), recorded as turn_start (with the prompt when config.json's "
                            "record_prompts is on) and turn_end (with the agent's last message); implied by "
                            "record_prompts. Off by default: one more process on every turn, for records "
                            "only an audit reads")
        parser.add_argument("--repository", metavar="ID",
                            help="ai-context: this repository's id in repositories/repositories.yaml, written to "
                            ".ai/context/config.json")
    parser.set_defaults(handler=_run, install=name == "install")


def project_root(args: argparse.Namespace) -> Path:
    """--root, else the folder holding the store found upward, else the working directory."""
    from continuity.core.errors import StoreNotFound
    from continuity.core.store import find_store

    root = getattr(args, "root", None)
    if root:
        return Path(os.path.abspath(root))
    try:
        return Path(find_store().root)
    except StoreNotFound:
        from continuity.core.store import working_folder

        return Path(working_folder())


def home_folder() -> Path:
    """$HOME when it is an absolute path; when unset, the account's home folder.

    Refused when set to anything else: Python reads an empty HOME as `/` and a relative one
    from the working directory, so user files and backups would land there.
    """
    given = os.environ.get("HOME")
    if given is None:
        return Path.home()
    if not os.path.isabs(given):
        from continuity.core.errors import UsageError

        raise UsageError(f"HOME is {given!r}, not an absolute path: set it to your home folder; nothing changed")
    return Path(given)


def state_home(home: Path) -> Path:
    """$XDG_STATE_HOME when set to an absolute path, else ~/.local/state."""
    given = os.environ.get("XDG_STATE_HOME", "")
    return Path(given) if os.path.isabs(given) else home / ".local" / "state"


def _notes(args: argparse.Namespace, root: Path, home: Path, exe: str | None, on_path: bool, has_store: bool,
           changes: list[Any]) -> list[str]:
    """What the user should know beyond each file's status."""
    from continuity.adapters import install

    notes = []
    if args.install and args.scope == "project" and not has_store:
        notes.append(f"{root} has no continuity store: the hooks record nothing until `continuity init`")
    if args.install and args.harness == "ai-context":
        return [] if on_path else ["`continuity` is not on PATH here: the launchers run `continuity work ...`; put "
                                   "it on PATH or set CONTINUITY_BIN to its path"]
    if args.install and args.scope == "project" and not on_path:
        if args.harness == "claude-code" and exe is not None:
            notes.append(f"`continuity` is not on PATH here: this machine's hooks run {exe} from "
                         f".claude/settings.local.json; teammates need `continuity` on their PATH, and so does "
                         f"the agent to run the commands in CLAUDE.md (add {os.path.dirname(exe)} to PATH)")
        else:
            notes.append("`continuity` is not on PATH here: the project's hooks do nothing on this machine until "
                         "it is (or install with --scope user, which records this machine's path)")
    if args.install and not args.dry_run and install.installed_twice(args.harness, root, home):
        notes.append(f"{args.harness}: {install.twice_line(args.harness)}")
    if args.install and changes[0].changed and args.harness in REVIEW:
        notes.append(REVIEW[args.harness])
    unread = install.block_past_cap(args.harness, args.scope, root, home) if args.install and not args.dry_run \
        else None
    if unread is not None:
        notes.append(unread)
    return notes


#: What a harness asks of the user before new or changed hooks run.
REVIEW = {
    "codex": "Codex runs new or changed hooks only once you have reviewed them: open /hooks in Codex",
    "cursor": "Cursor reads hooks.json when it starts: restart Cursor (its Hooks settings tab lists what it loaded)",
    "gemini": "Gemini CLI asks you to trust new or changed project hooks before it runs them (see /hooks panel)",
}


def _ai_context(args: argparse.Namespace, root: Path, backups: Any) -> list[Any]:
    from continuity.adapters import ai_context

    if not args.install:
        return ai_context.plan_uninstall(root, earlier=backups.earlier)
    repository = getattr(args, "repository", None)
    if repository is not None:
        import re

        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", repository):
            from continuity.core.errors import UsageError
            from events.problems import quoted

            raise UsageError(f"invalid repository id {quoted(repository, 128, redact=True)}: 1-128 of "
                             "A-Za-z0-9._- (not starting with . _ -)")
        from events.guard import refuse_secret_id

        refuse_secret_id("repository", repository)  # it goes into a file the team commits
    project = _project_name(root)
    return ai_context.plan_install(root, project=project, repository=repository, force=args.force)


def _project_name(root: Path) -> str:
    """The store's project name, else the folder's name."""
    from continuity.core.store import Store
    from events.errors import ContinuityError

    try:
        return Store(str(root)).reading_project()[0]
    except (OSError, ContinuityError):
        return root.name


def _records_prompts(root: Path) -> bool:
    """Whether the project's config.json turns `record_prompts` on (the hooks' rule: the prompt is recorded
    at a turn's start)."""
    from continuity.core.store import Store
    from events.errors import ContinuityError

    try:
        return Store(str(root)).flag("record_prompts")
    except (OSError, ContinuityError):
        return False


def _run(args: argparse.Namespace, out: Output) -> int:
    from continuity.adapters import install

    root, home = project_root(args), home_folder()
    with install.locked(root if args.scope == "project" else home):  # from the first read to the last write
        return _install(args, out, root, home)


def _install(args: argparse.Namespace, out: Output, root: Path, home: Path) -> int:
    import shutil
    from datetime import UTC, datetime

    from continuity.adapters import install
    from events.errors import ContinuityError

    if args.harness in ("runtime-continuity", "ai-context") and args.scope != "project":
        from continuity.core.errors import UsageError

        raise UsageError(f"{args.harness}'s launchers are installed into the project (no --scope user)")
    backups = install.backups_for(args.scope, root, home, state_home(home))
    exe, on_path = install.executable(), shutil.which("continuity") is not None
    if args.harness == "runtime-continuity":
        changes = ([install.plan_launcher_install(root, install.launcher_entry(), force=args.force)] if args.install
                   else [install.plan_launcher_uninstall(root, earlier=backups.earlier)])
    elif args.harness == "ai-context":
        changes = _ai_context(args, root, backups)
    elif args.install:
        turns = bool(args.turns) or _records_prompts(root)
        changes = install.plan_install(args.harness, args.scope, root, home, exe, on_path=on_path, turns=turns,
                                       earlier=backups.earlier)
    else:
        changes = install.plan_uninstall(args.harness, args.scope, root, home, earlier=backups.earlier)
    install.refuse_store_targets(changes, root)
    if not args.dry_run and any(change.changed and change.before is not None for change in changes):
        backups.check()  # before the first write: a copy that cannot be kept must not leave the files half changed
        install.refuse_read_only(changes)  # and a read-only file
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    moved = [] if args.dry_run else [copy for change in changes for copy in backups.adopt(change.path)]
    files, lines, saved_any = [], [], False
    base = root if args.scope == "project" else home  # a file a symlink takes out of it is named with its target
    applied: list[install.FileChange] = []
    copies: list[Path] = []
    for change in changes:
        if change.before is None and change.after is None:
            continue  # absent and left absent (settings.local.json when PATH finds continuity)
        try:
            backup = None if args.dry_run else install.apply_change(change, stamp, backups)
        except ContinuityError as error:  # fail closed: the files written before this one are put back
            stuck = install.put_back(applied)
            if not stuck:  # every file is as it was: copies of them are no backups of a change
                backups.discard(copies)
            done = (f"could not put back {', '.join(map(str, stuck))} (copies in {backups.folder})" if stuck
                    else "nothing changed" if not applied else "the files changed before it were put back")
            raise type(error)(f"{error}; {done}") from None
        applied.append(change)
        if backup is not None:
            copies.append(backup)
        saved_any = saved_any or backup is not None
        target = install.outside_target(change.path, base)
        entry: dict[str, Any] = {"path": str(change.path), "changed": change.changed, "commit": change.shared,
                                 "backup": None if backup is None else str(backup), "status": change.status,
                                 "target": target}
        status = change.status if not args.dry_run or not change.changed else f"would be {change.status}"
        named = str(change.path) if target is None else f"{change.path} (-> {one_line(target)})"  # a link: any bytes
        line = f"{named}: {status}" + (f" (backup: {backup})" if backup else "")
        if args.dry_run:
            entry["diff"] = change.diff()
            lines.append(entry["diff"].rstrip("\n"))
        files.append(entry)
        lines.append(line)
    has_store = backups.store_root is not None
    if args.harness == "runtime-continuity":
        notes = [] if changes[0].changed or args.install or changes[0].before is None else [
            f"{changes[0].path} is not continuity's launcher: left alone"]
        if not args.install and not args.dry_run:
            install.remove_empty_launcher_folders(root)
    else:
        notes = _notes(args, root, home, exe, on_path, has_store, changes)
    if backups.note and (saved_any or moved):
        notes.append(backups.note)
    if moved:
        notes.append(f"moved {len(moved)} old backup(s) from beside your files to {backups.folder}")
    listed = [change for change in changes if change.changed or (args.install and change.after is not None)]
    commit = [os.path.relpath(c.path, root) for c in listed if c.shared]
    keep = [os.path.relpath(c.path, root) for c in changes
            if args.install and args.scope == "project" and not c.shared and c.after is not None]
    if commit:
        lines.append(f"commit (shared with the team): {', '.join(commit)}")
    if keep:
        lines.append(f"do not commit (this machine only; git-ignore it if git lists it): {', '.join(keep)}")
    lines.extend(f"note: {note}" for note in notes)
    action = "install" if args.install else "uninstall"
    out.emit({"ok": True, "action": action, "harness": args.harness, "scope": args.scope,
              "dry_run": args.dry_run, "root": str(root), "files": files, "notes": notes,
              "moved_backups": [str(path) for path in moved]},
             "\n".join(line for line in lines if line))
    return 0
