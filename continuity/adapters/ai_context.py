"""`continuity install ai-context`: seed 002's member launchers and policy block, over `continuity work`.

Writes `.ai/context/context.sh` and `.ai/context/context.ps1` (thin calls of `continuity work
<action>` for start, status, checkpoint, audit, export, import, reconnect), a marked policy block
in AGENTS.md (the eight rules seed 002 requires of a member), and with `--repository ID` the
member config `.ai/context/config.json` ({schemaVersion 1, projectId, repositoryId}; in an existing
one only repositoryId is set, its other keys kept). So a member whose agents run `bash
.ai/context/context.sh start` keeps working. A launcher that is not ours is refused unless --force;
uninstall removes only what is ours.
"""

from __future__ import annotations

import json
from pathlib import Path

from continuity.adapters.install import (
    Earlier,
    FileChange,
    add_block,
    md_change,
    parse_config,
    read_text,
    refuse_dangling_links,
    remove_block,
    render_config,
)
from continuity.core.errors import UsageError

ACTIONS = ("start", "status", "checkpoint", "audit", "export", "import", "reconnect")
SH_REL = Path(".ai", "context", "context.sh")
PS1_REL = Path(".ai", "context", "context.ps1")
CONFIG_REL = Path(".ai", "context", "config.json")
MARK = "AI context launcher, written by `continuity install ai-context`."
BEGIN = "<!-- continuity:ai-context:begin -->"
END = "<!-- continuity:ai-context:end -->"


def sh_text() -> str:
    """`context.sh`: `continuity work <action> [args]` (CONTINUITY_BIN overrides the command)."""
    actions = "|".join(ACTIONS)
    return f"""#!/usr/bin/env bash
# {MARK}
# Seed 002's member lifecycle on POSIX: bash .ai/context/context.sh <action> [args]
# Each action runs `continuity work <action>` for this repository. `continuity uninstall ai-context` removes it.
set -eu
root="$(cd -- "$(dirname -- "$0")/../.." && pwd)"
action="${{1:-}}"
case "$action" in
  {actions}) shift ;;
  *) echo "usage: bash .ai/context/context.sh {actions} [args]" >&2; exit 2 ;;
esac
exec "${{CONTINUITY_BIN:-continuity}}" work "$action" --root "$root" "$@"
"""


def ps1_text() -> str:
    """`context.ps1`: the same on Windows PowerShell."""
    actions = ", ".join(f"'{action}'" for action in ACTIONS)
    return f"""# {MARK}
# Seed 002's member lifecycle on Windows:
#   powershell -NoProfile -ExecutionPolicy Bypass -File .ai/context/context.ps1 <action> [args]
# Each action runs `continuity work <action>` for this repository. `continuity uninstall ai-context` removes it.
$ErrorActionPreference = 'Stop'
$actions = @({actions})
if ($args.Count -lt 1 -or $actions -notcontains $args[0]) {{
  [Console]::Error.WriteLine("usage: context.ps1 {'|'.join(ACTIONS)} [args]")
  exit 2
}}
$root = (Resolve-Path (Join-Path $PSScriptRoot '..\\..')).Path
$exe = if ($env:CONTINUITY_BIN) {{ $env:CONTINUITY_BIN }} else {{ 'continuity' }}
$rest = @()
if ($args.Count -gt 1) {{ $rest = $args[1..($args.Count - 1)] }}
& $exe work $args[0] --root $root @rest
exit $LASTEXITCODE
"""


def policy_block() -> str:
    """The AGENTS.md block: seed 002's member policy, in continuity's commands."""
    return "\n".join([
        BEGIN,
        "## AI context continuity (seed 002 policy)",
        "",
        "Managed by `continuity install ai-context` (rerun it to update this block; `continuity uninstall "
        "ai-context` removes it).",
        "",
        "1. Before substantive work, run `bash .ai/context/context.sh start` (Windows: `powershell -NoProfile "
        "-ExecutionPolicy Bypass -File .ai/context/context.ps1 start`) once.",
        "2. Read `.ai-bridge/context-runtime.md`: its active workstream, cursor, unresolved work items, "
        "validation freshness and membership diagnostics are the resume contract.",
        "3. Write new substantive checkpoints with checkpoint schemaVersion 2 to "
        "`.ai-bridge/context-checkpoint.json`, then run `context.sh checkpoint`.",
        "4. Use `continuity.mode: tracked` while unresolved work exists; snapshot mode only when nothing "
        "tracked is unresolved.",
        "5. Preserve work-item ids, dependencies, blockers, acceptance criteria and the cursor explicitly; "
        "never compress tracked work into a free-form summary.",
        "6. Treat validation as fingerprint-bound: STALE evidence is history, not current validation; add "
        "ledger entries only for gates actually run.",
        "7. Offline: `export`, `import`, and leave offline mode only by `reconnect`, which fails closed on "
        "diverged histories.",
        "8. Preserve unrelated dirty work: never reset, clean, stash, rebase or force-push to make "
        "automation pass; when an invariant refuses, fix the checkpoint model.",
        END,
    ])


def config_text(project: str, repository: str) -> str:
    """The member config `.ai/context/config.json` (its own config schema, version 1)."""
    return json.dumps({"schemaVersion": 1, "projectId": project, "repositoryId": repository}, indent=2) + "\n"


def _ours(text: str | None) -> bool:
    return text is not None and MARK in "\n".join(text.split("\n", 3)[:3])


def _launcher(path: Path, text: str, *, force: bool) -> FileChange:
    before = read_text(path)
    if before is not None and before != text and not _ours(before) and not force:
        raise UsageError(f"{path} exists and is not continuity's launcher; nothing changed "
                         "(use --force to replace it; the old file is backed up)")
    return FileChange(path, before, text, shared=True)


def _member_config(path: Path, project: str, repository: str) -> FileChange:
    """The member config naming this repository. An existing one keeps every other key, its projectId too (a
    member may share one with other repositories, or carry keys of its own such as "remote"); schemaVersion and
    projectId are filled in only where missing."""
    before = read_text(path)
    if before is None:
        return FileChange(path, before, config_text(project, repository), shared=True)
    try:
        config = parse_config(before)
    except UsageError as error:
        raise UsageError(f"{path}: {error}; nothing changed") from None
    new = {"schemaVersion": 1, "projectId": project, **config, "repositoryId": repository}
    return FileChange(path, before, before if new == config else render_config(new, before), shared=True)


def plan_install(root: Path, *, project: str, repository: str | None, force: bool) -> list[FileChange]:
    """The launchers, the policy block, and the member config when a repository id is given."""
    changes = [_launcher(root / SH_REL, sh_text(), force=force), _launcher(root / PS1_REL, ps1_text(), force=force)]
    if repository is not None:
        changes.append(_member_config(root / CONFIG_REL, project, repository))
    block = policy_block()
    changes.append(md_change(root / "AGENTS.md", lambda text: add_block(text, block, BEGIN, END), shared=True))
    refuse_dangling_links(changes)  # as install's: never made through a link that names nothing (`.ai -> x`)
    return changes


def plan_uninstall(root: Path, *, earlier: Earlier) -> list[FileChange]:
    """Our launchers removed (a foreign file stays), the policy block taken out. The member config stays."""
    changes = []
    for rel in (SH_REL, PS1_REL):
        before = read_text(root / rel)
        changes.append(FileChange(root / rel, before, None if _ours(before) else before, shared=True))
    changes.append(md_change(root / "AGENTS.md", lambda text: remove_block(text, begin=BEGIN, end=END),
                             shared=True, earlier=earlier))  # back to its original bytes, as the harnesses' are
    return changes
