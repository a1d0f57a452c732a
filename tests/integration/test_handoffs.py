"""Handoffs through the real CLI: lifecycle, documents, the resume bundle, races, hostile input, rebuild."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from continuity.core.errors import EXIT_NOT_FOUND, EXIT_USAGE
from events.handoff import HandoffAccepted, HandoffCreated, HandoffRejected
from projections.handoffs import MODEL
from tests.helpers import all_event_files

Capture = pytest.CaptureFixture[str]
STORE = Path(".agent", "runtime-continuity")


def run(capsys: Capture, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def create(capsys: Capture, *extra: str) -> str:
    code, out, err = run(capsys, "handoff", "create", "--agent", "amy", "--message", "take over the review",
                         *extra, "--json")
    assert code == 0, err
    handoff_id: str = json.loads(out)["handoff_id"]
    return handoff_id


def document(project: Path, handoff_id: str) -> Any:
    return json.loads((project / STORE / "handoffs" / f"{handoff_id}.json").read_text())


def test_lifecycle_and_documents(project: Path, capsys: Capture) -> None:
    """create (pending) -> accept -> close; the document follows each step; list filters by state."""
    handoff_id = create(capsys, "--to", "bo", "--task", "T-1", "--artifact", "PR-12")
    assert document(project, handoff_id)["state"] == "pending"
    assert document(project, handoff_id)["to"] == {"agent": "bo", "host": None}
    assert run(capsys, "handoff", "accept", handoff_id, "--agent", "bo")[1] == f"handoff {handoff_id} accepted\n"
    assert document(project, handoff_id)["state"] == "accepted"
    assert run(capsys, "handoff", "close", handoff_id, "--agent", "bo", "--note", "merged")[0] == 0
    shown = document(project, handoff_id)
    assert shown["state"] == "closed" and [note["action"] for note in shown["history"]] == [
        "created", "accepted", "closed"] and shown["history"][-1]["note"] == "merged"
    assert run(capsys, "handoff", "list")[1] == "no handoffs\n"
    assert handoff_id in run(capsys, "handoff", "list", "--state", "closed")[1]


def test_an_unnamed_agent_cannot_take_or_close_a_handoff_between_agents(project: Path, capsys: Capture) -> None:
    """Without --agent (or CONTINUITY_AGENT) nobody is the addressee: accept, reject and close are refused, nothing
    written; the addressee then accepts as always."""
    handoff_id = create(capsys, "--to", "bo")
    before = all_event_files(project)
    for verb in ("accept", "reject", "close"):
        code, _, err = run(capsys, "handoff", verb, handoff_id)
        assert code == EXIT_USAGE and "give --agent or set CONTINUITY_AGENT" in err and err.count("\n") == 1
    assert all_event_files(project) == before
    assert run(capsys, "handoff", "accept", handoff_id, "--agent", "bo")[0] == 0


def test_refusals_write_nothing(project: Path, capsys: Capture) -> None:
    """Accepting someone else's handoff, a second acceptance, an unknown id: refused, nothing written."""
    handoff_id = create(capsys, "--to", "bo")
    before = all_event_files(project)
    code, _, err = run(capsys, "handoff", "accept", handoff_id, "--agent", "cy")
    assert code == EXIT_USAGE and "addressed to bo, not cy" in err
    assert run(capsys, "handoff", "accept", "HO-0000000000", "--agent", "bo")[0] == EXIT_NOT_FOUND
    assert all_event_files(project) == before
    run(capsys, "handoff", "reject", handoff_id, "--agent", "bo", "--note", "no time")
    before = all_event_files(project)
    code, _, err = run(capsys, "handoff", "accept", handoff_id, "--agent", "bo")
    assert code == EXIT_USAGE and "is rejected" in err and all_event_files(project) == before
    for args in (["--to", "bo", "--to-host", "codex"], []):
        assert run(capsys, "handoff", "create", "--message", "m", *args)[0] == EXIT_USAGE


def test_pending_handoffs_show_in_the_resume_bundle(project: Path, capsys: Capture) -> None:
    """A pending handoff is in the brief and the JSON bundle; accepted or rejected ones are not; a seed-004
    handoff file mentioned by `log --handoff` still shows beside it."""
    pending = create(capsys, "--to", "bo")
    rejected = create(capsys, "--to-host", "codex")
    run(capsys, "handoff", "reject", rejected, "--agent", "cy")
    external = project / ".agent" / "handoffs" / "H-1.json"
    external.parent.mkdir(parents=True)
    external.write_text(json.dumps({"status": "pending"}))
    run(capsys, "log", "handed over", "--handoff", ".agent/handoffs/H-1.json")
    code, out, _ = run(capsys, "resume-bundle")
    section = out.split("## Pending handoffs\n", 1)[1].split("\n\n", 1)[0]
    assert code == 0 and f"handoffs/{pending}.json (pending" in section and rejected not in section
    assert ".agent/handoffs/H-1.json (pending" in section
    bundle = json.loads(run(capsys, "resume-bundle", "--format", "json")[1])
    assert {entry["path"] for entry in bundle["pending_handoffs"]} == {
        f".agent/runtime-continuity/handoffs/{pending}.json", ".agent/handoffs/H-1.json"}
    run(capsys, "handoff", "accept", pending, "--agent", "bo")
    bundle = json.loads(run(capsys, "resume-bundle", "--format", "json")[1])
    assert [entry["path"] for entry in bundle["pending_handoffs"]] == [".agent/handoffs/H-1.json"]


def test_concurrent_acceptances_one_wins(project: Path, capsys: Capture) -> None:
    """Four processes accept one handoff at once: exactly one succeeds, one acceptance event in the log."""
    handoff_id = create(capsys, "--to-host", "codex")
    env = {key: value for key, value in os.environ.items() if not key.startswith("CONTINUITY_")}
    procs = [subprocess.Popen([sys.executable, "-m", "continuity", "handoff", "accept", handoff_id, "--agent",
                               f"a{index}"], cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for index in range(4)]
    codes = sorted(proc.wait(timeout=60) for proc in procs)
    assert codes == [0, EXIT_USAGE, EXIT_USAGE, EXIT_USAGE]
    kinds = [json.loads(path.read_text())["kind"] for path in all_event_files(project)]
    assert kinds.count("handoff.accepted") == 1


def test_replicas_agree_by_log_order() -> None:
    """An acceptance and a rejection made apart (two clones): the first in log order holds, the other is noted."""
    events = [HandoffCreated(project="p", handoff_id="HO-1", to_host="h", message="m", created_at="1"),
              HandoffAccepted(project="p", handoff_id="HO-1", agent_id="amy", created_at="2"),
              HandoffRejected(project="p", handoff_id="HO-1", agent_id="bo", created_at="3")]
    state = MODEL.empty()
    for index, event in enumerate(events):
        MODEL.apply(state, f"n{index}", event)
    handoff = MODEL.project(state, "p").get("HO-1")
    assert handoff is not None and handoff.state == "accepted"
    assert [note.action for note in handoff.history] == ["created", "accepted", "rejected-ignored"]


def test_a_move_no_replica_would_allow_after_the_merge_is_noted_not_taken() -> None:
    """Two clones: cy took the handoff on one, dee accepted (ignored: it was taken) and closed it on the other before
    the sync; the close held, though only the sender, the addressee or the taker may close. It is noted as
    `closed-ignored`; the taker's close still holds, as does an acceptance by the addressee of an addressed one."""
    from events.handoff import HandoffClosed

    def folded(*events: Any) -> Any:
        state = MODEL.empty()
        for index, event in enumerate(events):
            MODEL.apply(state, f"n{index}", event)
        return MODEL.project(state, "p").get("HO-1")

    made = HandoffCreated(project="p", handoff_id="HO-1", agent_id="amy", to_host="box1", message="m", created_at="1")
    handoff = folded(made, HandoffAccepted(project="p", handoff_id="HO-1", agent_id="cy", created_at="2"),
                     HandoffAccepted(project="p", handoff_id="HO-1", agent_id="dee", created_at="3"),
                     HandoffClosed(project="p", handoff_id="HO-1", agent_id="dee", created_at="4"))
    assert handoff.state == "accepted"
    assert [note.action for note in handoff.history] == ["created", "accepted", "accepted-ignored", "closed-ignored"]
    handoff = folded(made, HandoffAccepted(project="p", handoff_id="HO-1", agent_id="cy", created_at="2"),
                     HandoffClosed(project="p", handoff_id="HO-1", agent_id="cy", created_at="3"))
    assert handoff.state == "closed"
    addressed = HandoffCreated(project="p", handoff_id="HO-1", agent_id="amy", to_agent="bo", message="m",
                               created_at="1")
    handoff = folded(addressed, HandoffAccepted(project="p", handoff_id="HO-1", agent_id="cy", created_at="2"),
                     HandoffAccepted(project="p", handoff_id="HO-1", agent_id="bo", created_at="3"))
    assert handoff.state == "accepted" and [note.action for note in handoff.history][1:] == ["accepted-ignored",
                                                                                           "accepted"]
    strangers = [move(project="p", handoff_id="HO-1", agent_id=f"x{n}", created_at=f"3{n:02d}")
                 for n in range(15) for move in (HandoffAccepted, HandoffClosed)]
    handoff = folded(made, HandoffAccepted(project="p", handoff_id="HO-1", agent_id="cy", created_at="2"),
                     *strangers, HandoffClosed(project="p", handoff_id="HO-1", agent_id="cy", created_at="4"))
    assert handoff.state == "closed"  # the taker is known past the history's newest notes (it kept only those)
    unnamed = folded(made, HandoffAccepted(project="p", handoff_id="HO-1", created_at="2"),
                     HandoffClosed(project="p", handoff_id="HO-1", created_at="3"))
    assert unnamed.state == "closed"  # moves an earlier version wrote without an agent replay as they were taken


@pytest.mark.parametrize("args", [
    ["create", "--to", "../x", "--message", "m"], ["create", "--to", "a/b", "--message", "m"],
    ["create", "--to-host", "h\x00", "--message", "m"], ["create", "--to", "bo", "--message", "m" * 10_000_000],
    ["create", "--to", "bo", "--task", "a\x1b[2J", "--message", "m"], ["accept", "../../x"], ["show", "a/b"],
    ["close", "x" * 10_000_000],
], ids=["dotdot", "slash", "nul", "10MB", "control", "id-dotdot", "id-slash", "id-10MB"])
def test_hostile_input(project: Path, capsys: Capture, args: list[str]) -> None:
    """Path tricks, NUL, control characters and 10 MB values: exit 2, one short line, nothing written anywhere."""
    before = sorted(str(path) for path in project.parent.rglob("*") if "local" not in path.parts)
    code, _, err = run(capsys, "handoff", *args, "--agent", "amy") if args[0] != "show" else \
        run(capsys, "handoff", *args)
    assert code == EXIT_USAGE and err.count("\n") == 1 and len(err) < 300
    assert sorted(str(path) for path in project.parent.rglob("*") if "local" not in path.parts) == before


def test_documents_rebuild_byte_for_byte_and_as_of(project: Path, capsys: Capture) -> None:
    """Handoff documents equal a full rebuild's; list --as-of answers as the log stood."""
    first = create(capsys, "--to", "bo")
    point = json.loads(all_event_files(project)[-1].read_text())["event_id"]
    second = create(capsys, "--to", "cy")
    run(capsys, "handoff", "accept", first, "--agent", "bo")
    run(capsys, "handoff", "close", second, "--agent", "amy")
    folder = project / STORE / "handoffs"
    before = {path: path.read_bytes() for path in folder.iterdir()}
    assert len(before) == 2
    shutil.rmtree(folder)
    shutil.rmtree(project / STORE / "local" / "models")
    assert run(capsys, "rebuild")[0] == 0
    assert {path: path.read_bytes() for path in folder.iterdir()} == before
    listed = json.loads(run(capsys, "handoff", "list", "--as-of", point, "--json")[1])["handoffs"]
    assert [(entry["handoff_id"], entry["state"]) for entry in listed] == [(first, "pending")]


def test_only_a_named_sender_taker_or_addressee_moves_a_handoff(project: Path, capsys: Capture,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A handoff addressed to a host, or created by no agent, could be closed by anyone, even by a command that
    names no agent, and accepted by an unnamed one. Now: accept and reject need a named agent (any, for a host);
    close is the sender's, the addressee's or the agent's who took it; a command naming no agent is none of them."""
    monkeypatch.delenv("CONTINUITY_AGENT", raising=False)

    def create(*extra: str) -> str:
        code, out, _ = run(capsys, "--json", "handoff", "create", "--message", "m", *extra)
        assert code == 0, out
        handoff_id: str = json.loads(out)["handoff_id"]
        return handoff_id

    before = len(all_event_files(project))
    to_host = create("--agent", "amy", "--to-host", "h1")
    made = len(all_event_files(project))
    for args in (("close", to_host), ("accept", to_host), ("close", to_host, "--agent", "zed")):
        code, _, err = run(capsys, "handoff", *args)
        assert code == EXIT_USAGE and err.count("\n") == 1, (args, err)
    assert "only amy may close" in err
    assert len(all_event_files(project)) == made
    assert run(capsys, "handoff", "accept", to_host, "--agent", "bo")[0] == 0  # any named agent takes it
    code, _, err = run(capsys, "handoff", "close", to_host, "--agent", "zed")
    assert code == EXIT_USAGE and "only amy or bo may close" in err
    assert run(capsys, "handoff", "close", to_host, "--agent", "bo")[0] == 0
    anonymous = create("--to", "bo")
    assert run(capsys, "handoff", "close", anonymous, "--agent", "zed")[0] == EXIT_USAGE
    assert run(capsys, "handoff", "close", anonymous)[0] == EXIT_USAGE
    assert run(capsys, "handoff", "close", anonymous, "--agent", "bo")[0] == 0
    assert len(all_event_files(project)) == before + 5


def test_a_handoff_a_pull_brings_shows_its_state_in_the_first_brief(
        project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """A teammate's handoff that arrives as event files (a `git pull` of committed events, a sync whose other
    models waited) was "missing" in resume-bundle and the SessionStart brief until some handoff command ran: the
    brief reads each handoff's state from `handoffs/<id>.json`, which only the handoffs model's catch-up writes,
    and the brief did not load that model. It does now."""
    other = project.parent / "teammate"
    other.mkdir()
    monkeypatch.chdir(other)
    assert main(["init", "--project", "demo"]) == 0
    capsys.readouterr()
    handoff_id = create(capsys, "--to", "bo")
    monkeypatch.chdir(project)
    for path in all_event_files(other):  # as a union of the two logs brings them
        target = project / STORE / "events" / path.parent.name / path.name
        target.parent.mkdir(exist_ok=True)
        shutil.copy2(path, target)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    done = subprocess.run([sys.executable, "-m", "continuity", "resume-bundle", "--format", "json", "--agent", "bo"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    pending = json.loads(done.stdout)["pending_handoffs"]
    assert [(h["path"].rsplit("/", 1)[-1], h["state"]) for h in pending] == [(f"{handoff_id}.json", "pending")]
    assert document(project, handoff_id)["state"] == "pending"
