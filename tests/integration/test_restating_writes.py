"""Writes that restate the work state (an archive, a host switch, the PreCompact checkpoint) are decided again
under the log's lock: an entry another process logs between the read and the append is in what they restate.

Each test runs the write in process and, between its decision and its append, a real second `continuity log`
process (the decision function wrapped to start it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from continuity.core.identity import Identity
from continuity.core.store import Store
from tests.helpers import all_event_files, cli_process

Capture = pytest.CaptureFixture[str]


def work_of(capsys: Capture, *flags: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["resume-bundle", "--format", "json", *flags]) == 0
    work: dict[str, Any] = json.loads(capsys.readouterr().out)["work"]
    return work


def logs_once_after(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, root: Path, *args: str) -> list[int]:
    """Wrap `module.name` (a decision): after its first call, a second process runs `continuity log ARGS`."""
    real = getattr(module, name)
    calls: list[int] = []

    def racing(*given: Any, **named: Any) -> Any:
        drafts = real(*given, **named)
        if not calls:
            done = cli_process("log", *args, cwd=root)
            assert done.returncode == 0, done.stderr
        calls.append(len(drafts))
        return drafts

    monkeypatch.setattr(module, name, racing)
    return calls


@pytest.mark.parametrize("switch", [False, True])
def test_an_archive_restates_an_entry_logged_while_it_was_deciding(project: Path, capsys: Capture,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   switch: bool) -> None:
    """The archive restates the work state whole and the work log folds it as the state from then on: an entry
    logged between its read and its append was lost from the brief, the archive and state.json, with no word."""
    from continuity.sessions import service
    from continuity.sessions.decide import ArchiveRequest

    assert main(["log", "first", "--done", "first item", "--next", "old next"]) == 0
    calls = logs_once_after(monkeypatch, service, "decide_archive", project,
                            "second process", "--done", "shipped the fix", "--next", "write release notes")
    request = ArchiveRequest(reason="racing", switch=switch, from_host="claude-code" if switch else None,
                             to_host="codex" if switch else None)
    stored, _ = service.archive(Store(str(project)), Identity(project="demo", host="claude-code"), request)
    assert len(calls) == 3  # decided, again under the lock (the state moved), then from a fresh catch-up
    archived = stored[0].event
    assert archived.state.done[-1] == "shipped the fix" and list(archived.state.next) == ["write release notes"]
    assert [item.event.kind for item in stored] == (["archive.created", "host.switched"] if switch
                                                    else ["archive.created"])
    work = work_of(capsys)
    assert work["done"] == ["first item", "shipped the fix"] and work["next"] == ["write release notes"]
    latest = json.loads((project / ".agent/runtime-continuity/archives/latest.json").read_text())
    assert "shipped the fix" in json.dumps(latest)


def test_an_archive_with_nothing_new_is_decided_once(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No other writer: one decision, no second catch-up."""
    from continuity.sessions import service
    from continuity.sessions.decide import ArchiveRequest

    assert main(["log", "first", "--done", "first item"]) == 0
    real = service.decide_archive
    calls: list[int] = []
    monkeypatch.setattr(service, "decide_archive", lambda *a, **k: calls.append(1) or real(*a, **k))
    service.archive(Store(str(project)), Identity(project="demo", host="test"), ArchiveRequest(reason="quiet"))
    assert calls == [1]


@pytest.mark.parametrize("agent", ["alice", None])
def test_the_pre_compact_checkpoint_restates_a_blocker_logged_while_it_was_deciding(
        project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch, agent: str | None) -> None:
    """The checkpoint replaces in-progress, next and blockers: the agent's own `log --blocker` landing between the
    hook's read and its append was set back (the post-compaction brief said to carry on with the old step)."""
    import continuity.sessions.decide as decide
    from continuity.adapters import hooks

    named = ["--agent", agent] if agent else []
    assert main(["log", "working", *named, "--in-progress", "refactor", "--next", "step A"]) == 0
    calls = logs_once_after(monkeypatch, decide, "decide_pre_compact", project,
                            "CI broke", *named, "--blocker", "CI is red on main", "--next", "fix CI first")
    payload = {"hook_event_name": "PreCompact", "session_id": "S1", "trigger": "auto",
               **({"agent_id": agent} if agent else {})}
    before = len(all_event_files(project))
    result = hooks.pre_compact("claude-code", payload, Store(str(project)))
    assert len(calls) == 3 and len(result.recorded) == 1
    assert len(all_event_files(project)) == before + 2  # the log and the checkpoint
    work = work_of(capsys, *named)
    assert work["blockers"] == ["CI is red on main"] and work["next"] == ["fix CI first"]
