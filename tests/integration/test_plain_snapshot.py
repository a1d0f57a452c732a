"""`snapshot` on the plain path against argparse + msgspec, on real stores: the same code, output, event files
and documents, for well-formed and hostile argument vectors (clock and node pinned)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuity.cli import main, plain_snapshot
from continuity.core import store as stores
from continuity.core.fsio import pretty_json
from continuity.team.plain import pretty, write_documents
from tests.helpers import all_event_files, pin_node
from tests.integration.test_plain_path import BENIGN, HEAVY, NAMES, NODE, START_US, VALUES, imported_by

STORE = Path(".agent", "runtime-continuity")
LISTS = ["--decision", "--next", "--open-question", "--artifact"]
ODD = ["--obj", "--objective", "--context-percent", "--transcript", "--json", "--debug", "--log-level", "--root",
       "--agent", "-h", "--"]


@st.composite
def snapshot_argvs(draw: Any) -> list[str]:
    """`snapshot` argument vectors: half well-formed, half with hostile values and odd spellings."""
    hostile = draw(st.booleans())
    values = VALUES if hostile else BENIGN
    argv: list[str] = draw(st.lists(st.sampled_from([["--json"], ["--root", "{root}"]]), max_size=2)
                           .map(lambda parts: [arg for part in parts for arg in part]))
    argv.append("snapshot")
    positionals = [draw(NAMES if not hostile else st.one_of(NAMES, values)) for _ in range(3)]
    argv.extend(positionals)
    objective = draw(BENIGN.filter(lambda text: text.strip() and not text.startswith("-")) if not hostile
                     else values)
    argv.extend([f"--objective={objective}"] if draw(st.booleans()) else ["--objective", objective])
    for _ in range(draw(st.integers(0, 5))):
        flag = draw(st.sampled_from(LISTS + (ODD if hostile else ["--context-percent", "--transcript"])))
        if flag == "--context-percent":
            value = draw(st.one_of(st.integers(-5, 120).map(str), values) if hostile else st.integers(0, 100).map(str))
        else:
            value = draw(values)
        argv.extend([f"{flag}={value}"] if draw(st.booleans()) else [flag, value])
    return argv


@pytest.fixture
def template(tmp_path: Path) -> Path:
    root = tmp_path / "template"
    root.mkdir()
    assert main(["--root", str(root), "init", "--project", "demo"]) == 0
    pin_node(root, NODE)
    return root


class Runs:
    def __init__(self, template: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.template, self.root = template, work
        monkeypatch.setattr(stores, "now_us", lambda: START_US)

    def fresh(self) -> None:
        if self.root.exists():
            shutil.rmtree(self.root)
        shutil.copytree(self.template, self.root, symlinks=True)
        pin_node(self.root, NODE)

    def outcome(self) -> dict[str, Any]:
        files = {str(path.relative_to(self.root)): path.read_bytes() for path in all_event_files(self.root)}
        team = self.root / STORE / "team"
        documents = {str(path.relative_to(team)): path.read_bytes() for path in sorted(team.rglob("*"))
                     if path.is_file()} if team.exists() else {}
        return {"files": files, "documents": documents}


@pytest.fixture
def runs(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runs]:
    yield Runs(template, tmp_path / "work", monkeypatch)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=snapshot_argvs())
def test_snapshot_writes_the_same_bytes_and_says_the_same_either_way(
        runs: Runs, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    """Any `snapshot` argv: the plain path and argparse + msgspec give the same code, output, events, documents."""
    argv = [arg.replace("{root}", str(runs.root)) for arg in argv]
    results = []
    for typed in (False, True):
        runs.fresh()
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(runs.root)
            if typed:
                patch.setattr(plain_snapshot, "run", lambda argv: None)
            code = main(list(argv))
        out = capsys.readouterr()
        results.append((code, out.out, out.err, runs.outcome()))
    assert results[0] == results[1]


def test_the_common_forms_take_the_plain_path(runs: Runs, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """What agents and scripts run is handled without argparse; the store verifies and rebuilds to the same files."""
    runs.fresh()
    monkeypatch.chdir(runs.root)
    handled: list[int | None] = []
    real_run = plain_snapshot.run
    monkeypatch.setattr(plain_snapshot, "run", lambda argv: handled.append(real_run(argv)) or handled[-1])
    clock = [START_US]
    monkeypatch.setattr(stores, "now_us", lambda: clock[0])
    forms = [["snapshot", "core", "ash", "build l6", "--objective", "ship the layer", "--next", "land the PR",
              "--next", "write the skill", "--decision", "json", "--context-percent", "40"],
             ["--json", "snapshot", "core", "ash", "other", "--objective=two", "--artifact", "PR-5"],
             ["--root", str(runs.root), "snapshot", "core", "bo", "t", "--open-question", "who?", "--objective", "x",
              "--transcript", "/tmp/t.jsonl"]]
    for argv in forms:
        clock[0] += 1_000_000
        assert main(argv) == 0, argv
    assert handled == [0] * len(forms)
    before = runs.outcome()["documents"]
    capsys.readouterr()
    assert main(["verify"]) == 0 and main(["rebuild"]) == 0
    assert runs.outcome()["documents"] == before
    pointer = json.loads((runs.root / STORE / "team/core/member/ash/continuity/LATEST.json").read_text())
    assert pointer["task"] == "other"


def test_a_newer_document_is_never_replaced(tmp_path: Path) -> None:
    """The plain writer moves a document only forward (created_at, task, checkpoint id), as the fold does."""
    event = {"team": "core", "agent": "ash", "task": "t", "objective": "o", "decisions": [], "next_actions": [],
             "open_questions": [], "artifacts": [], "context_used_percent": None, "transcript_path": None,
             "created_at": "2026-01-01T00:00:00.000000Z"}
    write_documents(str(tmp_path), {**event, "created_at": "2026-01-02T00:00:00.000000Z", "objective": "newer"})
    write_documents(str(tmp_path), event)
    document = json.loads((tmp_path / "team/core/member/ash/continuity/t/latest.json").read_text())
    pointer = json.loads((tmp_path / "team/core/member/ash/continuity/LATEST.json").read_text())
    assert document["objective"] == "newer" and pointer["created_at"] == "2026-01-02T00:00:00.000000Z"
    (tmp_path / "team/core/member/ash/continuity/LATEST.json").write_text("{broken")
    write_documents(str(tmp_path), event)  # an unreadable pointer is replaced
    assert json.loads((tmp_path / "team/core/member/ash/continuity/LATEST.json").read_text())["task"] == "t"


def test_two_snapshots_at_once_never_move_a_document_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The older of two writers finds no newer document, and the newer one writes before the older one does: the
    compare and the write are one step under the store's lock, so the newer writer waits and writes last (both
    found the file empty and the older replaced it last, about one round in ten of ten concurrent snapshots)."""
    import threading

    from continuity.team import plain

    event = {"team": "core", "agent": "ash", "task": "t", "objective": "older", "decisions": [],
             "next_actions": [], "open_questions": [], "artifacts": [], "context_used_percent": None,
             "transcript_path": None, "created_at": "2026-01-01T00:00:00.000000Z"}
    newer = {**event, "created_at": "2026-01-02T00:00:00.000000Z", "objective": "newer"}
    checked, newer_done = threading.Event(), threading.Event()
    compare = plain._newer_there

    def older_compares_then_waits(path: str, key: tuple[str, str, str]) -> bool:
        found = compare(path, key)
        if key[0] == event["created_at"]:
            checked.set()
            newer_done.wait(0.5)  # held up here without the lock; with it, the newer writer waits (at most 2 s)
        return found

    monkeypatch.setattr(plain, "_newer_there", older_compares_then_waits)
    older_writer = threading.Thread(target=write_documents, args=(str(tmp_path), event))
    older_writer.start()
    assert checked.wait(10)
    write_documents(str(tmp_path), newer)
    newer_done.set()
    older_writer.join(10)
    document = json.loads((tmp_path / "team/core/member/ash/continuity/t/latest.json").read_text())
    pointer = json.loads((tmp_path / "team/core/member/ash/continuity/LATEST.json").read_text())
    assert document["objective"] == "newer" and pointer["created_at"] == newer["created_at"]


@given(st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                  max_size=4), max_leaves=12))
def test_pretty_is_pretty_json(data: Any) -> None:
    """The plain documents' bytes are `pretty_json`'s for any JSON value (no floats: events hold none)."""
    assert pretty(data) == pretty_json(data)


def test_snapshot_imports_no_msgspec_in_a_real_process(template: Path) -> None:
    """`continuity snapshot`, run as the installed command, imports neither msgspec nor argparse; with a channel
    config it loads the typed emitter (and the check can fail)."""
    argv = ["snapshot", "core", "ash", "t", "--objective", "ship it", "--next", "land it"]
    modules = imported_by(argv, template)
    assert {"events.plain", "continuity.team.plain"} <= modules
    assert {name.split(".")[0] for name in modules} & HEAVY == set()
    bus = template / STORE / "team" / "core" / "_coord" / "bus-v3"
    bus.mkdir(parents=True)
    (bus / "checkpoints.json").write_text('{"schema": "coord.checkpoints-channel.v1", "data_type": "x"}')
    modules = imported_by(argv, template)
    assert {"msgspec", "continuity.moments.deliver"} <= modules
    assert len((bus / "checkpoints.outbox.jsonl").read_text().splitlines()) == 1
