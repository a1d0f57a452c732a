"""Ids a harness (or the environment) gives that are not valid ids: never made into another agent's id.

A hook used to drop the characters it could not keep, so `../amy` or `amy` + U+202E became
`amy`, and PreCompact parked the roles the real `amy` holds. An id that has to be changed
is now a hashed id (`id-<12 hex>`), distinct for distinct ids, and the hook notes it in
hooks.log; a valid id is kept as it is.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from continuity.adapters.hooks import run_hook
from continuity.cli import main
from continuity.core.idfields import clean_name
from events.base import Name
from tests.helpers import all_event_files

STORE = Path(".agent", "runtime-continuity")

#: Bad ids by class, each one that dropping characters turned into `amy` (or another valid id).
BAD = {
    "c0": ["amy\x00", "amy\x1b", "\x07amy", "amy\n", "am\ty"],
    "c1": ["amy\x85", "\x9bamy"],
    "del": ["amy\x7f"],
    "bidi-format": ["amy\u202e", "\u202eamy", "amy\u200b", "\u2066amy\u2069", "\ufeffamy"],
    "path": ["../amy", "..\\amy", "/amy", "amy/..", "./amy", "a..my"],
    "whitespace": [" amy", "amy ", "\tamy", "amy\u00a0", "\u3000amy"],
    "empty-after-cleaning": ["///", "\u202e", "...", " ", "-"],
    "long": ["amy" + "x" * 200, "a" * 129, "a" * 128 + "\u202e"],
    "edge": ["-amy", ".amy", "amy\ud800"],
}
#: Ids that look like secrets (hashed before this change too): in the same set, so no two collide.
SECRETS = ["ghp_" + "a1B2c3D4e5" * 4, "ghp_" + "a1B2c3D4e5" * 4 + "\u202e", "AKIA" + "ABCDEFGHIJKLMNOP"]
VALID = ["amy", "bo", "a" * 128, "amy.", "a.my", "amy-", "8f2c1e9a-4b7d-4c1e-9a3f-2d6b8e0c5a71", "me@host:1+2=3"]
EVERY_BAD = [value for values in BAD.values() for value in values]


def is_valid(value: str) -> bool:
    try:
        msgspec.convert(value, Name)
    except msgspec.ValidationError:
        return False
    return True


def test_a_valid_id_is_kept() -> None:
    assert all(is_valid(value) and clean_name(value) == value for value in VALID)


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_changed_id_is_a_hashed_id_no_agent_holds(kind: str) -> None:
    """Each bad id becomes a valid `id-<12 hex>`, never a valid id it reads as, never another bad id's."""
    made = {value: clean_name(value) for value in BAD[kind]}
    assert all(not is_valid(value) for value in made)
    for value, cleaned in made.items():
        assert cleaned is not None and is_valid(cleaned), repr(value)
        assert cleaned.startswith("id-") and len(cleaned) == 15, (value, cleaned)
        assert cleaned not in VALID
    assert len(set(made.values())) == len(made)


def test_no_two_bad_ids_meet_and_none_meets_a_valid_one() -> None:
    """Across every class (the secret-like ids too): distinct ids stay distinct, and apart from the valid ones."""
    values = EVERY_BAD + SECRETS + VALID
    made = [clean_name(value) for value in values]
    assert len(set(made)) == len(values)
    assert not set(made[: len(EVERY_BAD) + len(SECRETS)]) & set(VALID)


# -- the hooks -------------------------------------------------------------------------------------------------
def claim(team: str, role: str, agent: str = "amy") -> None:
    assert main(["role", "create", team, role]) == 0
    assert main(["role", "claim", team, role, "--agent", agent]) == 0


def kinds_after(project: Path, before: list[Path]) -> list[str]:
    return [json.loads(path.read_bytes())["kind"] for path in all_event_files(project) if path not in before]


def hooks_log(project: Path) -> list[dict[str, str]]:
    path = project / STORE / "local" / "hooks.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


#: One or two of each class (as the environment cannot hold a NUL or a lone surrogate, those only in the payload).
HOOK_IDS = ["amy\x1b", "amy\x85", "amy\x7f", "amy\u202e", "\u2066amy\u2069", "amy\u200b", "../amy", " amy",
            "amy ", "///", "amy" + "x" * 200, "-amy"]


@pytest.mark.parametrize("source", ["payload", "environment"])
@pytest.mark.parametrize("hook", ["PreCompact", "SessionEnd"])
@pytest.mark.parametrize("agent", HOOK_IDS)
def test_a_hook_with_a_bad_agent_id_parks_nothing_of_amys(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str], agent: str, hook: str,
                                                          source: str) -> None:
    """PreCompact and SessionEnd with an agent id that reads as `amy`: amy's roles stay unparked, the id is
    recorded as a hashed one, and hooks.log says so (the id as given is not written there)."""
    claim("core", "reviewer")
    claim("infra", "oncall")
    assert main(["checkpoint", "-m", "halfway", "--next", "merge #12", "--agent", "amy"]) == 0
    capsys.readouterr()
    before = all_event_files(project)
    payload = {"hook_event_name": hook, "session_id": "s1", "cwd": str(project), "trigger": "auto"}
    if source == "payload":
        payload["agent_id"] = agent
    else:
        monkeypatch.setenv("CONTINUITY_AGENT", agent)
    result = run_hook("claude-code", json.dumps(payload).encode(), root=str(project))
    assert result.recorded and capsys.readouterr().err == ""
    kinds = kinds_after(project, before)
    assert "snapshot.taken" not in kinds and "role.checkpointed" not in kinds, kinds
    assert not (project / STORE / "team" / "core" / "member" / "amy").exists()
    recorded = [json.loads(path.read_bytes()) for path in all_event_files(project) if path not in before]
    assert {event["agent_id"] for event in recorded} == {clean_name(agent)}
    notes = [line for line in hooks_log(project) if "agent_id" in line["message"]]
    assert len(notes) == 1 and str(clean_name(agent)) in notes[0]["message"] and notes[0]["hook"] == hook
    assert agent not in json.dumps(hooks_log(project), ensure_ascii=False)


@pytest.mark.parametrize("agent", ["amy\x00", "amy\ud800"])
def test_a_payload_id_the_environment_cannot_hold(project: Path, agent: str) -> None:
    """A NUL or a lone surrogate in the payload's agent id (JSON escapes): a hashed id, nothing of amy's parked."""
    claim("core", "reviewer")
    before = all_event_files(project)
    raw = json.dumps({"hook_event_name": "PreCompact", "session_id": "s1", "cwd": str(project), "agent_id": agent})
    assert run_hook("claude-code", raw.encode(), root=str(project)).recorded
    kinds = kinds_after(project, before)
    assert kinds == ["checkpoint.recorded"], kinds
    recorded = [json.loads(path.read_bytes()) for path in all_event_files(project) if path not in before]
    assert recorded[0]["agent_id"].startswith("id-")  # a lone surrogate is read as U+FFFD: another hashed id


def test_a_bad_payload_id_does_not_fall_back_to_the_environment(project: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A payload id that cleaned to nothing used to leave CONTINUITY_AGENT (amy) to name the agent."""
    claim("core", "reviewer")
    monkeypatch.setenv("CONTINUITY_AGENT", "amy")
    before = all_event_files(project)
    raw = json.dumps({"hook_event_name": "PreCompact", "session_id": "s1", "cwd": str(project), "agent_id": "///"})
    assert run_hook("claude-code", raw.encode(), root=str(project)).recorded
    assert kinds_after(project, before) == ["checkpoint.recorded"]


@pytest.mark.parametrize(("given", "recorded"), [(5, "5"), (1.5, "1.5"), (0, "0"), ([1], None), ({"a": "amy"}, None),
                                                  (True, None), (False, None), ([], None), ({}, None)])
def test_a_payload_id_that_is_not_text_does_not_fall_back_to_the_environment(
        project: Path, monkeypatch: pytest.MonkeyPatch, given: object, recorded: str | None) -> None:
    """A number is its text; a list, an object or true is a hashed id: never CONTINUITY_AGENT's `amy`."""
    claim("core", "reviewer")
    monkeypatch.setenv("CONTINUITY_AGENT", "amy")
    before = all_event_files(project)
    raw = json.dumps({"hook_event_name": "PreCompact", "session_id": "s1", "cwd": str(project), "agent_id": given})
    assert run_hook("claude-code", raw.encode(), root=str(project)).recorded
    assert kinds_after(project, before) == ["checkpoint.recorded"]  # nothing of amy's parked
    agent = json.loads(sorted(set(all_event_files(project)) - set(before))[-1].read_bytes())["agent_id"]
    assert agent == recorded if recorded is not None else (agent.startswith("id-") and len(agent) == 15)
    assert clean_name(given) == agent


@pytest.mark.parametrize("field", ["agent_id", "session_id"])
@pytest.mark.parametrize("hook", ["Stop", "PostToolUse", "UserPromptSubmit"])
def test_record_only_hooks_note_a_changed_id_too(project: Path, field: str, hook: str) -> None:
    """The record-only hooks (the plain path) record a changed id as the hashed one and note it in hooks.log."""
    bad = "../amy"
    payload = {"hook_event_name": hook, "session_id": "s1", "cwd": str(project), field: bad, "prompt": "hi",
               "tool_name": "Bash", "tool_input": {"command": "make test"}, "tool_response": {"exit_code": 0}}
    result = run_hook("codex", json.dumps(payload).encode(), root=str(project))
    assert result.recorded
    stored = [json.loads(path.read_bytes()) for path in all_event_files(project)]
    assert {event[field] for event in stored} == {clean_name(bad)}
    notes = [line for line in hooks_log(project) if field in line["message"]]
    assert len(notes) == 1 and str(clean_name(bad)) in notes[0]["message"]


def test_a_valid_id_is_recorded_as_given_and_not_noted(project: Path) -> None:
    payload = {"hook_event_name": "Stop", "session_id": "s1", "cwd": str(project), "agent_id": "amy."}
    assert run_hook("codex", json.dumps(payload).encode(), root=str(project)).recorded
    assert [json.loads(path.read_bytes())["agent_id"] for path in all_event_files(project)] == ["amy."]
    assert hooks_log(project) == []
