"""Markdown archive templates (golden, en and zh in step) and the brief's size budget."""

from __future__ import annotations

import re
import string
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.readside.views import Models
from continuity.sessions import brief as bundle
from continuity.sessions.archives import ArchiveGit, ArchiveRecord, ArchiveRefs, ArchiveRestore, ArchiveState
from continuity.sessions.templates import SECTION_ORDER, TEMPLATES, render_archive_markdown
from events.context import GitNow, ViewInputs
from projections.worklog import Noted

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


def sample_record() -> ArchiveRecord:
    return ArchiveRecord(
        archive_id="RC-20260723_010203_000001", project="cortex-agent", created_at="2026-07-23T01:02:03.000001Z",
        source_host="claude-code", target_host="codex", reason="switch implementation to Codex", gate="user",
        full=True,
        git=ArchiveGit(root="/work/cortex-agent", branch="main", head="abc123", status_short=" M a.js"),
        state=ArchiveState(current_goal="Implement Runtime Continuity v2", done=["T-RC01 design"],
                           in_progress="T-RC02 CLI", next=["add resume-bundle", "sync templates"], blockers=[]),
        refs=ArchiveRefs(dirty_files=["a.js"]),
        restore=ArchiveRestore(read_first=["AGENTS.md", ".agent/runtime-continuity/archives/latest.json"],
                               commands=["continuity resume-bundle --project cortex-agent"],
                               next_action="add resume-bundle"),
        event_id="RCE-20260723_010203_000001-node0001",
    )


def test_english_markdown_matches_the_golden_file() -> None:
    """The English archive Markdown is exactly tests/golden/archive.en.md."""
    assert render_archive_markdown(sample_record(), "en") == (GOLDEN / "archive.en.md").read_text()


def test_chinese_markdown_matches_the_golden_file() -> None:
    """The Chinese archive Markdown is exactly tests/golden/archive.zh.md."""
    assert render_archive_markdown(sample_record(), "zh") == (GOLDEN / "archive.zh.md").read_text()


def test_templates_have_the_same_sections_and_fields() -> None:
    """en and zh have the same keys, the same placeholders per key, the same heading levels and line counts."""
    en, zh = TEMPLATES["en"], TEMPLATES["zh"]
    assert en.keys() == zh.keys() and set(SECTION_ORDER) <= en.keys()
    formatter = string.Formatter()
    for key in en:
        fields = [[name for _, name, _, _ in formatter.parse(t[key]) if name] for t in (en, zh)]
        assert fields[0] == fields[1], key
        shapes = [[re.sub(r"[^#\-{} ]", "", line)[:2] for line in t[key].splitlines()] for t in (en, zh)]
        assert shapes[0] == shapes[1], key


words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=0, max_size=400)


@settings(max_examples=150, deadline=None)
@given(
    next_items=st.lists(st.text(min_size=1, max_size=1000, alphabet="ab \u4e2d\U0001f600"), min_size=1, max_size=5),
    blockers=st.lists(words, max_size=30),
    notes=st.lists(words, max_size=40),
    warnings=st.lists(words, max_size=6),
    files=st.lists(words.filter(bool), max_size=50),
    max_chars=st.integers(bundle.MIN_MAX_CHARS, 12000),
)
def test_the_budget_holds_and_the_next_action_is_whole(
    next_items: list[str], blockers: list[str], notes: list[str], warnings: list[str], files: list[str],
    max_chars: int,
) -> None:
    """Whatever the state holds, the brief fits the budget (in UTF-16 units, as the harnesses count: an emoji is two)
    and carries the next action uncut; the warnings give way to it (three long ones and a next action of wide
    characters went past the smallest budget)."""
    project = Models.empty().project("p" * 128)
    project.work.next = next_items
    project.work.blockers = blockers
    project.work.in_progress = "x" * 900
    project.work.decisions = [Noted(event_id="e", created_at="2026-07-23T01:02:03.000000Z", text=n) for n in notes]
    inputs = ViewInputs(
        now="2026-07-23T05:00:00.000000Z", warnings=tuple(warnings),
        git=GitNow(branch="main", head="abc", head_moved=True, changed_since_archive=tuple(files)),
    )
    text = bundle.render_markdown(bundle.build(project, inputs), max_chars)
    assert bundle.units(text) <= max_chars
    assert f"## Next action\n{next_items[0]}\n" in text


def test_at_the_smallest_budget_warnings_give_way_to_a_wide_next_action() -> None:
    """A next action of 1,000 emoji (2,000 UTF-16 units), three 200-character warnings, a 128-character project
    and the compaction line: the brief was 2,543 units for a budget of 2,500. The warnings that do not fit are left
    out (the cut note says where everything is); the next action stays whole."""
    project = Models.empty().project("p" * 128)
    project.work.next = ["\U0001f600" * 1000]
    inputs = ViewInputs(now="2026-07-23T05:00:00.000000Z", warnings=("w" * 400,) * 3)
    built = bundle.build(project, inputs)
    built["compaction"] = {"compactions": 12}
    text = bundle.render_markdown(built, bundle.MIN_MAX_CHARS)
    assert bundle.units(text) <= bundle.MIN_MAX_CHARS
    assert f"## Next action\n{project.work.next[0]}\n" in text and "brief cut to fit" in text
    assert text.count("Warning: ") < 3
    roomy = bundle.render_markdown(built, 8000)
    assert roomy.count("Warning: ") == 3


@settings(max_examples=100, deadline=None)
@given(
    titles=st.lists(words.filter(str.strip), max_size=80),
    memories=st.lists(words.filter(str.strip), max_size=40),
    agent=st.sampled_from([None, "ann"]),
    max_chars=st.integers(bundle.MIN_MAX_CHARS, 12000),
)
def test_tasks_runs_and_memories_never_push_out_the_next_action(
    titles: list[str], memories: list[str], agent: str | None, max_chars: int,
) -> None:
    """However many tasks, open runs and memories there are, the brief fits and the next action and blockers lead."""
    from projections.memories import Memory
    from projections.tasks import Run, Task

    models = Models.empty()
    project = models.project("demo")
    project.work.next = ["n" * 1000]
    project.work.blockers = ["waiting on review"]
    state = models.state("tasks").projects["demo"] = project.tasks  # held by the model, as a fold leaves it
    for index, title in enumerate(titles):
        state.tasks[f"task-{index}"] = Task(task_id=f"task-{index}", title=title, assigned_to="ann",
                                            status=("queued", "in_progress", "blocked")[index % 3])
        state.runs[f"run-{index}"] = Run(run_id=f"run-{index}", task_id=f"task-{index}", session_id="s1",
                                         agent_id="ann", started_at="2026-07-23T01:02:03.000000Z")
    state.book.memories = [Memory(memory_id=f"mem-{i}", kind="task_outcome", title=t, summary=t,
                                  created_at="2026-07-23T01:02:03.000000Z") for i, t in enumerate(memories)]
    inputs = ViewInputs(now="2026-07-23T05:00:00.000000Z")
    text = bundle.render_markdown(bundle.build(project, inputs, session_id="s1", agent_id=agent), max_chars)
    assert len(text) <= max_chars
    assert text.index("## Next action\n" + "n" * 1000 + "\n") < text.index("## Blockers\n- waiting on review")
    if titles:
        assert "## Current run\n- run-" in text or "brief cut to fit" in text


def _git_section(git: GitNow) -> str:
    text = bundle.render_markdown(bundle.build(Models.empty().project("demo"),
                                               ViewInputs(now="2026-07-23T05:00:00.000000Z", git=git)))
    return text.split("## Git\n", 1)[1].split("\n\n", 1)[0]


def test_the_git_section_names_a_repository_without_commits_and_a_detached_head() -> None:
    """No "main at ," for a repository without a commit, no "on None" for a detached HEAD."""
    head = "0123456789abcdef0123"
    assert _git_section(GitNow(branch="main", head=head)) == "- main at 0123456789ab, no drift since the archive"
    assert _git_section(GitNow(branch="main", head=None)) == "- main (no commit yet), no drift since the archive"
    assert _git_section(GitNow(branch=None, head=head)) == \
        "- detached HEAD at 0123456789ab, no drift since the archive"
    moved = _git_section(GitNow(branch=None, head=head, head_moved=True, changed_since_archive=("a.py",)))
    assert moved == "- HEAD moved since the archive; now detached HEAD at 0123456789ab\n- changed since: a.py"
    assert _git_section(GitNow(branch="ma\x1b[2Jin", head=None)).startswith("- ma\u241b[2Jin (no commit yet)")


def test_an_active_session_without_a_host_is_not_on_none() -> None:
    """A session whose events name no host (`log --session S9`) was listed as "S9 on None"."""
    served = bundle.build(Models.empty().project("demo"), ViewInputs(now="2026-07-23T05:00:00.000000Z"))
    served["sessions"]["active"] = [{"session_id": "S9", "host": None, "age": "just now"},
                                    {"session_id": "S8", "host": "codex", "age": "2m ago"}]
    section = bundle.render_markdown(served).split("## Active sessions\n", 1)[1].split("\n\n", 1)[0]
    assert section == "- S9 (just now)\n- S8 on codex (2m ago)"
