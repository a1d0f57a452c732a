"""The brief's "earlier, on the same subject" section: recall hits for the next action and blockers."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from continuity.recall import index
from continuity.sessions.brief import EARLIER_HEADING

Capture = pytest.CaptureFixture[str]
STORE = Path(".agent") / "runtime-continuity"


def run(capsys: Capture, *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def as_json(capsys: Capture, *argv: str) -> Any:
    return json.loads(run(capsys, *argv, "--json"))


def section(brief: str, heading: str) -> list[str]:
    """The lines of one section of a Markdown brief ([] when absent)."""
    lines = brief.splitlines()
    if heading not in lines:
        return []
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return [line for line in lines[start:end] if line]


@pytest.fixture
def history(project: Path, capsys: Capture) -> dict[str, str]:
    """Old events about a push race, 30 unrelated ones, then a checkpoint whose next step and blocker name it."""
    ids = {
        "pinned": as_json(capsys, "log", "-m", "tried pinning git to 2.39 to fix the push race; no help",
                          "--agent", "bob")["event_id"],
        "retry": as_json(capsys, "log", "-m", "retry with backoff makes the push race rarer")["event_id"],
        "other": as_json(capsys, "log", "-m", "renamed the docs folder")["event_id"],
    }
    for i in range(30):
        run(capsys, "log", "-m", f"routine edit {i} of the parser")
    ids["checkpoint"] = as_json(capsys, "checkpoint", "-m", "sync still flaky", "--next", "fix the push race in sync",
                                "--blocker", "git push race on CI")["event_id"]
    run(capsys, "recall", "push race")  # builds the index (never built by the brief itself)
    return ids


def test_the_brief_shows_earlier_events_on_its_subject(history: dict[str, str], capsys: Capture) -> None:
    """The old events about the push race appear, best first; the checkpoint the brief shows does not."""
    brief = run(capsys, "resume-bundle")
    lines = section(brief, EARLIER_HEADING)
    assert len(lines) == 2
    assert history["pinned"] in lines[0] and "by bob" in lines[0] and "[push] [race]" in lines[0]
    assert history["retry"] in lines[1]
    assert history["checkpoint"] not in brief.split(EARLIER_HEADING)[1].split("##")[0]
    assert brief.index("## Next action") < brief.index("## Blockers") < brief.index(EARLIER_HEADING)
    earlier = as_json(capsys, "resume-bundle", "--format", "json")["earlier"]
    assert [hit["event_id"] for hit in earlier] == [history["pinned"], history["retry"]]


def test_the_section_can_be_switched_off_and_sized(history: dict[str, str], project: Path, capsys: Capture) -> None:
    """`brief_recall: false` in config.json: no section, no hits; `brief_recall: 1`: one hit."""
    config_path = project / STORE / "config.json"
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps({**config, "brief_recall": False}))
    brief = run(capsys, "resume-bundle")
    assert EARLIER_HEADING not in brief and "Earlier" not in brief
    assert as_json(capsys, "resume-bundle", "--format", "json")["earlier"] == []
    config_path.write_text(json.dumps({**config, "brief_recall": 1}))
    assert len(section(run(capsys, "resume-bundle"), EARLIER_HEADING)) == 1


def test_no_index_means_no_section_and_no_warning(project: Path, capsys: Capture) -> None:
    """Before any recall there is no index: the brief has no section, says nothing about it, builds nothing."""
    run(capsys, "log", "-m", "tried pinning git to fix the push race")
    for i in range(25):
        run(capsys, "log", "-m", f"routine edit {i}")
    run(capsys, "checkpoint", "-m", "x", "--next", "fix the push race")
    capsys.readouterr()
    assert main(["resume-bundle"]) == 0
    out = capsys.readouterr()
    assert EARLIER_HEADING not in out.out and "recall" not in out.err.lower()
    assert not (project / STORE / "local" / index.INDEX_NAME).exists()


def test_a_stale_index_answers_from_what_it_holds_and_is_not_caught_up(history: dict[str, str], project: Path,
                                                                       capsys: Capture) -> None:
    """Events written after the last recall: the brief uses the index as it stands and leaves it as it was."""
    path = project / STORE / "local" / index.INDEX_NAME
    before = index.position_of(sqlite3.connect(path))
    newer = as_json(capsys, "log", "-m", "a newer note on the push race")["event_id"]
    for i in range(25):
        run(capsys, "log", "-m", f"more routine edits {i}")
    brief = run(capsys, "resume-bundle")
    lines = "\n".join(section(brief, EARLIER_HEADING))
    assert history["pinned"] in lines and newer not in lines
    assert index.position_of(sqlite3.connect(path)) == before


def test_the_section_never_pushes_the_next_action_out(history: dict[str, str], project: Path,
                                                      capsys: Capture) -> None:
    """At the smallest budget, with a 1,000-character next action and ten hits: the next action is whole."""
    config_path = project / STORE / "config.json"
    config_path.write_text(json.dumps({**json.loads(config_path.read_text()), "brief_recall": 10}))
    for i in range(12):
        run(capsys, "log", "-m", f"push race attempt {i}: " + "details " * 40)
    for i in range(25):
        run(capsys, "log", "-m", f"routine {i}")
    run(capsys, "recall", "push")
    long_next = "fix the push race " + "x" * 982
    run(capsys, "checkpoint", "-m", "y", "--next", long_next, "--blocker", "push race on CI " * 20)
    for max_chars in ("2500", "4000", "8000"):
        brief = run(capsys, "resume-bundle", "--max-chars", max_chars)
        assert len(brief) <= int(max_chars)
        assert long_next in section(brief, "## Next action")
    assert len(section(run(capsys, "resume-bundle", "--max-chars", "100000"), EARLIER_HEADING)) == 10


def test_a_served_brief_replays_with_the_hits_it_showed(history: dict[str, str], capsys: Capture) -> None:
    """--as-of the context.served event: the same bytes, recall section included, after the index moved on."""
    served_text = run(capsys, "resume-bundle", "--record")
    assert history["pinned"] in "\n".join(section(served_text, EARLIER_HEADING))
    [served] = as_json(capsys, "events", "list", "--kind", "context.served")["events"]
    assert served["brief_sha256"] == hashlib.sha256(served_text.encode()).hexdigest()
    assert [hit["event_id"] for hit in served["inputs"]["recall"]] == [history["pinned"], history["retry"]]
    for i in range(3):
        run(capsys, "log", "-m", f"push race finally understood, note {i}")
    run(capsys, "recall", "push race")
    assert run(capsys, "resume-bundle") != served_text
    capsys.readouterr()
    assert main(["resume-bundle", "--as-of", served["event_id"]]) == 0
    again = capsys.readouterr()
    assert again.out == served_text and "does not match" not in again.err


def test_a_corrupt_index_costs_the_brief_nothing_but_the_section(history: dict[str, str], project: Path,
                                                                  capsys: Capture) -> None:
    """Garbage in local/recall.sqlite3: the brief is served whole, without the section or a warning."""
    (project / STORE / "local" / index.INDEX_NAME).write_bytes(b"garbage" * 500)
    for suffix in ("-wal", "-shm"):
        (project / STORE / "local" / (index.INDEX_NAME + suffix)).unlink(missing_ok=True)
    capsys.readouterr()
    assert main(["resume-bundle"]) == 0
    out = capsys.readouterr()
    assert "## Next action" in out.out and EARLIER_HEADING not in out.out and out.err == ""


def test_text_data_sqlite_cannot_decode_costs_the_brief_nothing_but_the_section(
        history: dict[str, str], project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Damaged FTS5 data makes SQLite answer NOMEM, which Python raises as MemoryError (tests/integration/
    test_recall.py damages a real index that way); the brief's search, standing in for it here, is served whole."""
    from continuity.recall import service

    def damaged(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(service, "search", damaged)
    capsys.readouterr()
    assert main(["resume-bundle"]) == 0
    out = capsys.readouterr()
    assert "## Next action" in out.out and EARLIER_HEADING not in out.out


def test_earlier_hits_count_their_age_from_the_writers_clock(project: Path, capsys: Capture,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """After a teammate's fast clock (an event stamped two hours ahead, synced in), the events logged here carry
    their writer's clock; the brief's other ages count from it, and its earlier hits showed their stamps' age
    ("59m ago" three hours on). They count from it too, and the bundle's hits keep their shape."""
    import continuity.core.store as store_module
    from continuity.readside import query
    from continuity.sessions import service

    real = store_module.now_us
    with monkeypatch.context() as fast:
        fast.setattr(store_module, "now_us", lambda: real() + 2 * 3600 * 1_000_000)
        run(capsys, "log", "-m", "from the fast machine", "--host", "fast")
    pinned = as_json(capsys, "log", "-m", "tried pinning git to 2.39 to fix the push race; no help")["event_id"]
    for i in range(30):
        run(capsys, "log", "-m", f"routine edit {i} of the parser")
    run(capsys, "checkpoint", "-m", "sync still flaky", "--next", "fix the push race in sync")
    run(capsys, "recall", "push race")
    for module in (store_module, query, service):  # three hours on, by this machine's clock
        monkeypatch.setattr(module, "now_us", lambda: real() + 3 * 3600 * 1_000_000)
    earlier = as_json(capsys, "resume-bundle", "--format", "json")["earlier"]
    assert [hit["event_id"] for hit in earlier] == [pinned] and earlier[0]["age"] == "3h ago", earlier
    assert set(earlier[0]) == {"event_id", "created_at", "kind", "agent_id", "snippet", "age"}
    assert "3h ago" in section(run(capsys, "resume-bundle"), EARLIER_HEADING)[0]
    fast = as_json(capsys, "recall", "pinning")["hits"]  # the fast path and the command answer alike
    typed = as_json(capsys, "recall", "pinning", "--kind", "work.logged")["hits"]
    assert fast == typed and [hit["event_id"] for hit in fast] == [pinned] and "written_at" not in fast[0]


def test_a_window_as_of_a_point_counts_back_from_that_point(project: Path, capsys: Capture,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`recall --as-of <event> --since 10m` counted back from the reader's clock: the same audit query named the
    events before the point when asked at once and none three hours later. It counts back from the point's time
    (its writer's clock), as every view as of a point answers at."""
    import continuity.core.store as store_module
    from continuity.recall import service

    for i in range(3):
        run(capsys, "log", "-m", f"widget parser step {i}")
    point = as_json(capsys, "log", "-m", "widget parser done")["event_id"]
    argv = ("recall", "widget", "--as-of", point, "--since", "10m", "--json")
    now = json.loads(run(capsys, *argv))
    real = store_module.now_us
    for module in (store_module, service):  # three hours on
        monkeypatch.setattr(module, "now_us", lambda: real() + 3 * 3600 * 1_000_000)
    later = json.loads(run(capsys, *argv))
    assert now["count"] == later["count"] == 4 and now["hits"] == later["hits"], (now, later)
