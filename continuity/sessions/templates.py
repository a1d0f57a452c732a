"""Markdown archive templates, English and Chinese, with the same sections and fields.

A test fails when the two drift apart: same keys, same placeholders in every line.
"""

from __future__ import annotations

from typing import Any

TEMPLATES: dict[str, dict[str, str]] = {
    "en": {
        "title": "# Work archive: {project}",
        "meta": "- Archive: `{archive_id}`\n- Created: {created_at}\n- Hosts: {source_host} -> {target_host}\n"
                "- Reason: {reason}\n- Gate: {gate}",
        "goal": "## Current goal\n\n{current_goal}",
        "next_action": "## Next action\n\n{next_action}",
        "in_progress": "## In progress\n\n{in_progress}",
        "next": "## Next\n\n{next}",
        "blockers": "## Blockers\n\n{blockers}",
        "done": "## Done\n\n{done}",
        "git": "## Git\n\n- Root: {git_root}\n- Branch: {git_branch}\n- HEAD: {git_head}\n"
               "- Dirty files:\n{dirty_files}",
        "read_first": "## Read first\n\n{read_first}",
        "commands": "## Resume with\n\n{commands}",
        "none": "(none)",
    },
    "zh": {
        "title": "# 工作存档：{project}",
        "meta": "- 存档：`{archive_id}`\n- 创建时间：{created_at}\n- 宿主：{source_host} -> {target_host}\n"
                "- 原因：{reason}\n- 闸门：{gate}",
        "goal": "## 当前目标\n\n{current_goal}",
        "next_action": "## 下一步行动\n\n{next_action}",
        "in_progress": "## 进行中\n\n{in_progress}",
        "next": "## 待办\n\n{next}",
        "blockers": "## 阻碍\n\n{blockers}",
        "done": "## 已完成\n\n{done}",
        "git": "## Git\n\n- 根目录：{git_root}\n- 分支：{git_branch}\n- HEAD：{git_head}\n"
               "- 未提交文件：\n{dirty_files}",
        "read_first": "## 优先阅读\n\n{read_first}",
        "commands": "## 恢复命令\n\n{commands}",
        "none": "（无）",
    },
}

SECTION_ORDER = (
    "title", "meta", "goal", "next_action", "in_progress", "next", "blockers", "done", "git",
    "read_first", "commands",
)


def _bullets(items: list[str], none: str, *, exact: bool = False) -> str:
    """One list item per entry (each one item however many lines it holds: `block`), or `none`."""
    from continuity.core.text import block

    return "\n".join(f"- {block(item, exact=exact)}" for item in items) if items else none


def render_archive_markdown(record: Any, language: str) -> str:
    """The user-level Markdown of an archive record, in `language` (en or zh).

    Text from events goes through `block` (or `one_line` inside a line, or a code line): a reason or a
    goal holding `\n## Next action\n...` (a peer's archive, synced in) forged a section agents read first.
    """
    from continuity.core.text import block, one_line

    template = TEMPLATES.get(language, TEMPLATES["en"])
    none = template["none"]
    state = record.state

    def text(value: str | None) -> str:
        return block(value) if value else none

    values = {
        "project": one_line(record.project),
        "archive_id": one_line(record.archive_id),
        "created_at": one_line(record.created_at),
        "source_host": text(record.source_host),
        "target_host": text(record.target_host),
        "reason": text(record.reason),
        "gate": text(record.gate),
        "current_goal": text(state.current_goal),
        "next_action": block(record.restore.next_action),
        "in_progress": text(state.in_progress),
        "next": _bullets(state.next, none),
        "blockers": _bullets(state.blockers, none),
        "done": _bullets(state.done, none),
        "git_root": text(record.git.root),
        "git_branch": text(record.git.branch),
        "git_head": text(record.git.head),
        "dirty_files": _bullets(record.refs.dirty_files, none),
        "read_first": _bullets(record.restore.read_first, none),
        "commands": "\n".join(f"    {one_line(command)}" for command in record.restore.commands) or none,
    }
    return "\n\n".join(template[key].format(**values) for key in SECTION_ORDER) + "\n"


SEED_PLACEHOLDER = "_(由主 Agent 填写)_"
#: Seed 004's Chinese Markdown archive (contract §15); no final newline, as the original writes it.
SEED_TEMPLATE = """# 会话存档 - {project} - {stamp}

## 📍 当前位置
- **目录**: {root}
- **分支**: {branch}
- **最近提交**:
```
{recent}
```

## ✅ 本次已完成

{done}

## 🚧 进行中（卡点）

{in_progress}

## 📌 后续待开始

{next}

## 🔑 关键决策

| 决策 | 结论 | 理由 |
| --- | --- | --- |
|  |  |  |

## ⚠️ 注意事项 & 踩坑记录

{blockers}

## 🔗 关键文件清单

```
{dirty}
```

## 💬 新会话恢复指令

请阅读以上内容,确认当前进度后,列出接下来的 3 个具体步骤。"""


def render_seed_markdown(record: Any, recent_commits: str) -> str:
    """The Markdown of an archive taken through `runtime-continuity`: seed 004's Chinese template.

    Event text goes in as in `render_archive_markdown` (docs/compat.md): an item or the in-progress text holding
    `\n## Next action\n...` or a fence forged a section that `restore` hands the next agent as its resume body.
    Ordinary text (one line, no Markdown marker at its start, no control character) is written as the original
    wrote it; the code blocks (recent commits, dirty files) hold one path or commit per line, controls shown.
    """
    from continuity.core.text import block, one_line

    state = record.state

    def code_lines(text: str) -> str:  # a line starting with ``` would close the block: a backslash before it
        lines = (one_line(line) for line in text.split("\n"))
        return "\n".join(f"\\{line}" if line.lstrip(" ").startswith("```") else line for line in lines)

    return SEED_TEMPLATE.format(
        project=one_line(record.project), stamp=record.archive_id.removeprefix("RC-"),
        root=one_line(record.git.root or ""), branch=one_line(record.git.branch or "(非 Git 目录)"),
        recent=code_lines(recent_commits) or "(无 git 历史)",
        done=_bullets(state.done, SEED_PLACEHOLDER, exact=True),
        in_progress=block(state.in_progress, exact=True) if state.in_progress else SEED_PLACEHOLDER,
        next=_bullets(state.next, SEED_PLACEHOLDER, exact=True),
        blockers=_bullets(state.blockers, SEED_PLACEHOLDER, exact=True),
        dirty=code_lines("\n".join(record.refs.dirty_files)) or "(无)",
    )
