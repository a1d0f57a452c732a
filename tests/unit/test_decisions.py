"""Each decision on its own: state, facts and a request in, events out; no disk, no clock."""

from __future__ import annotations

import pytest

from continuity.core.errors import UsageError
from continuity.core.identity import Identity
from continuity.sessions.decide import (
    ArchiveFacts,
    ArchiveRequest,
    Served,
    archived_state,
    decide_archive,
    decide_context_served,
    decide_pre_compact,
    decide_session_end,
    decide_session_start,
)
from continuity.worklog.decide import WorkRequest, decide_checkpoint, decide_log
from events.archive import ArchiveCreated, GitFacts, HostSwitched
from events.context import ContextServed, ViewInputs
from events.sealing import sha256_hex
from events.session import SessionEnded, SessionStarted
from events.worklog import CheckpointRecorded, WorkLogged
from projections.worklog import WorkState

WHO = Identity(project="demo", host="claude-code", agent_id="a1", session_id="s1", run_id="r1", task_id="t1")


def test_log_becomes_one_work_logged_event_with_the_identity() -> None:
    """`log`: one work.logged carrying every identity field and what was asked."""
    [event] = decide_log(WHO, WorkRequest(message="fixed parser", done=("parser",), files=("a.py",)))
    assert isinstance(event, WorkLogged)
    assert (event.project, event.host, event.agent_id, event.session_id, event.run_id, event.task_id) == (
        "demo", "claude-code", "a1", "s1", "r1", "t1")
    assert event.message == "fixed parser" and event.summary.done == ("parser",) and event.refs.files == ("a.py",)
    assert (event.event_id, event.created_at) == ("", "")  # the log stamps id and time on append, not the decision


def test_checkpoint_becomes_a_checkpoint_and_command_flags_need_a_command() -> None:
    """`checkpoint`: one checkpoint.recorded; an exit code without a command is refused."""
    [event] = decide_checkpoint(WHO, WorkRequest(next=("ship",), command="pytest", exit_code=1))
    assert isinstance(event, CheckpointRecorded) and event.summary.next == ("ship",)
    assert event.refs.commands[0].command == "pytest" and event.refs.commands[0].exit_code == 1
    with pytest.raises(UsageError):
        decide_log(WHO, WorkRequest(exit_code=3))


def test_archive_records_the_work_state_and_the_facts_it_was_given() -> None:
    """`archive`: the work state (note overrides it), git facts and read-first files passed in."""
    work = WorkState(current_goal="g", done=["a"], in_progress="b", next=["c"], blockers=["d"])
    facts = ArchiveFacts(git=GitFacts(root="/p", head="abc", dirty_files=("x.py",)), read_first=("AGENTS.md",))
    [event] = decide_archive(work, facts, WHO, ArchiveRequest(gate="user", reason="eod", note={"next": "e"}))
    assert isinstance(event, ArchiveCreated)
    assert event.git.head == "abc" and event.read_first == ("AGENTS.md",) and event.gate == "user"
    assert (event.state.current_goal, event.state.done, event.state.next) == ("g", ("a",), ("e",))
    assert event.source_host == "claude-code" and event.target_host is None and not event.full


def test_host_switch_adds_the_switch_after_its_archive() -> None:
    """`host-switch`: a full archive, then host.switched from -> to."""
    request = ArchiveRequest(gate="agent", from_host="claude-code", to_host="codex", switch=True)
    archive, switch = decide_archive(WorkState(), ArchiveFacts(), WHO, request)
    assert isinstance(archive, ArchiveCreated) and archive.full and archive.target_host == "codex"
    assert isinstance(switch, HostSwitched) and (switch.from_host, switch.to_host) == ("claude-code", "codex")


@pytest.mark.parametrize("request_", [
    ArchiveRequest(gate="nobody"),
    ArchiveRequest(switch=True, from_host="claude-code"),
    ArchiveRequest(note={"done": 3}),
])
def test_archive_refuses_bad_requests(request_: ArchiveRequest) -> None:
    """An unknown gate, a switch without a target, a malformed note: UsageError, no events."""
    with pytest.raises(UsageError):
        decide_archive(WorkState(), ArchiveFacts(), WHO, request_)


def test_archived_state_note_keys() -> None:
    """A note's goal, done, next, blockers/pitfalls and in_progress/blocked override the state."""
    state = archived_state(WorkState(next=["old"]), {"goal": "", "pitfalls": ["p"], "blocked": "waiting"})
    assert (state.current_goal, state.blockers, state.in_progress, state.next) == (None, ("p",), "waiting", ("old",))


def test_session_start_and_end() -> None:
    """Session start carries source, cwd and model; session end its reason."""
    [start] = decide_session_start(WHO, source="compact", cwd="/p", message="m", model="opus")
    assert isinstance(start, SessionStarted) and (start.source, start.cwd, start.model) == ("compact", "/p", "opus")
    [end] = decide_session_end(WHO, reason="logout")
    assert isinstance(end, SessionEnded) and end.reason == "logout" and end.session_id == "s1"


def test_pre_compact_checkpoints_what_is_in_progress() -> None:
    """Before compaction: a checkpoint of in progress, next and blockers, with the trigger."""
    work = WorkState(in_progress="x", next=["y"], blockers=["z"])
    [event] = decide_pre_compact(work, WHO, {"trigger": "manual"})
    assert isinstance(event, CheckpointRecorded) and event.phase == "pre-compact"
    assert (event.summary.in_progress, event.summary.next, event.summary.blockers) == ("x", ("y",), ("z",))
    assert "manual" in event.message


def test_context_served_records_the_hash_and_the_inputs() -> None:
    """context.served: the brief's hash and size, where the projection stood, and the outside inputs."""
    inputs = ViewInputs(now="2026-07-23T01:02:03.000000Z", read_first=("AGENTS.md",))
    served = Served(text="# Resume\n", format="md", max_chars=8000, as_of="RCE-x", events_folded=12)
    [event] = decide_context_served(WHO, inputs, served)
    assert isinstance(event, ContextServed)
    assert event.brief_sha256 == sha256_hex(b"# Resume\n") and event.chars == 9 and event.events_folded == 12
    assert event.inputs == inputs and event.served_to == "s1" and event.as_of == "RCE-x"
