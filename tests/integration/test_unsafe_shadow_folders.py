"""A link planted where a shadow folder of the store goes (team member documents, memory files).

The event is the record; these files are derived. A write whose event is saved answers 0 with a
warning, reads answer (fail open), and nothing is listed, written or removed where the link points.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import cli_process

STORE = Path(".agent/runtime-continuity")


def _events(root: Path) -> list[dict[str, object]]:
    listed = cli_process("events", "list", "--json", cwd=root)
    assert listed.returncode == 0, listed.stderr
    found: list[dict[str, object]] = json.loads(listed.stdout)["events"]
    return found


def test_snapshot_saved_under_a_linked_member_folder_exits_0_with_a_warning(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    member = project / STORE / "team" / "core" / "member"
    member.mkdir(parents=True)
    (member / "zed").symlink_to(outside)
    before = len(_events(project))
    done = cli_process("snapshot", "core", "zed", "t", "--objective", "y", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "team documents not written" in done.stderr and "symlink" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert len(_events(project)) == before + 1  # saved once: a caller has nothing to retry
    assert list(outside.iterdir()) == []
    resumed = cli_process("resume", "core", "zed", cwd=project)
    assert resumed.returncode == 0 and "y" in resumed.stdout


def test_a_linked_memories_folder_never_blocks_reads_nor_loses_files_where_it_points(
        project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    bystander = outside / "mem-00000000000000000000-keep.md"
    bystander.write_text("not continuity's\n")
    (project / STORE / "memories").symlink_to(outside, target_is_directory=True)
    created = cli_process("task", "create", "--title", "symt", cwd=project)
    assert created.returncode == 0, created.stderr
    task_id = created.stdout.split()[0] if created.stdout.split() else ""
    listed = cli_process("task", "list", cwd=project)
    assert listed.returncode == 0, listed.stderr
    assert "symt" in listed.stdout
    if task_id:
        cli_process("task", "update", task_id, "--status", "completed", cwd=project)
    for argv in (["task", "list"], ["memory", "list"], ["resume-bundle"], ["briefing", "core", "--agent", "amy"]):
        answered = cli_process(*argv, cwd=project)
        assert answered.returncode == 0, (argv, answered.stderr)
    assert cli_process("task", "create", "--title", "another", cwd=project).returncode == 0
    assert bystander.read_text() == "not continuity's\n"
    assert sorted(p.name for p in outside.iterdir()) == [bystander.name]
