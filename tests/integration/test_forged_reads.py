"""Events whose content is not what their file names spell (renamed or forged by hand, or brought in by a sync) are
left out of every read that folds the log: the as-of views and the reads that replay it in memory too."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from continuity.adapters.hooks import run_hook
from continuity.cli import main
from events import clock, names

Capture = pytest.CaptureFixture[str]


def plant_forged(project: Path, created_at: str, message: str, *, claim_id: bool = False) -> str:
    """A copy of the newest event, a second later under its own well-formed name, whose content says another time
    (or the copied event's own id and time, with `claim_id`): its hash matches its bytes, as a synced file's does."""
    day = sorted((project / ".agent/runtime-continuity/events").iterdir())[-1]
    newest = sorted(day.iterdir())[-1]
    event = json.loads(newest.read_bytes())
    parsed = names.parse_name(newest.name)
    assert parsed is not None
    stamp = parsed.stamp[:-1] + str((int(parsed.stamp[-1]) + 1) % 10)
    if not claim_id:
        event["created_at"] = created_at
        event["event_id"] = names.event_id(stamp, parsed.node)
    event.update(message=message, summary={**(event.get("summary") or {}), "next": [message]})
    raw = json.dumps(event, separators=(",", ":")).encode()
    name = names.file_name(stamp, parsed.node, hashlib.sha256(raw).hexdigest())
    (day / name).write_bytes(raw)
    return name


@pytest.mark.parametrize(("created_at", "claim_id"), [("bogus", False), ("2026-12-05T12:00:00Z", False),
                                                      ("", True)])
def test_an_as_of_brief_leaves_a_forged_event_out(project: Path, capsys: Capture, created_at: str,
                                                  claim_id: bool) -> None:
    """`resume-bundle --as-of` folded every decodable event: a time no reader takes ended in exit 70 (`Invalid
    isoformat string`), a plausible one or another event's id showed the forger's next action as the session's."""
    assert main(["checkpoint", "-m", "real work", "--next", "the real next step"]) == 0
    plant_forged(project, created_at, "FORGED NEXT", claim_id=claim_id)
    capsys.readouterr()
    now = clock.iso(int(time.time() * 1_000_000))  # after both files' stamps
    for fmt in ("md", "json"):
        assert main(["resume-bundle", "--as-of", now, "--format", fmt]) == 0
        out, err = capsys.readouterr()
        assert "FORGED" not in out and "the real next step" in out, out
        assert "renamed or forged" in err, err


def test_a_brief_replayed_in_memory_leaves_a_forged_event_out(project: Path, capsys: Capture) -> None:
    """With `local/models` unusable the brief is the log replayed in memory (the as-of replay): the forged event
    made `resume-bundle` exit 70 and the SessionStart hook print nothing at all."""
    assert main(["checkpoint", "-m", "real work", "--next", "the real next step"]) == 0
    plant_forged(project, "bogus", "FORGED NEXT")
    models = project / ".agent/runtime-continuity/local/models"
    for child in models.iterdir():
        child.unlink()
    models.rmdir()
    models.write_text("")  # a file where the folder belongs: the saved models cannot be trusted
    capsys.readouterr()
    assert main(["resume-bundle"]) == 0
    out, _ = capsys.readouterr()
    assert "FORGED" not in out and "the real next step" in out
    payload = {"hook_event_name": "SessionStart", "session_id": "s1", "cwd": str(project)}
    result = run_hook("claude-code", json.dumps(payload).encode(), str(project))
    brief = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "the real next step" in brief and "FORGED" not in brief


def test_a_brief_never_fails_on_a_time_no_reader_takes() -> None:
    """Defence in depth: an age the brief cannot compute is `unknown`, never an internal error."""
    from continuity.sessions.brief import age

    assert age("bogus", "2026-12-05T12:00:00Z") == "unknown"
    assert age("2026-12-05T11:00:00Z", "2026-12-05T12:00:00Z") == "1h ago"


TOKEN = "ghp_" + "Zq8xW2mK9pLr7Tn5Vb3Hc1Jd6Fg4Sa0Qe2Ry8Ui"


def plant_synced(project: Path, message: str, **changes: Any) -> None:
    """A well-formed event of another clone, just after the newest, as a sync writes it: its name spells its
    id and time and its hash matches its bytes. A clone's guard runs on its own writes, not on what comes in.
    `changes`: other fields it holds."""
    day = sorted((project / ".agent/runtime-continuity/events").iterdir())[-1]
    newest = sorted(day.iterdir())[-1]
    event = json.loads(newest.read_bytes())
    parsed = names.parse_name(newest.name)
    assert parsed is not None
    at = clock.parse_stamp(parsed.stamp) + 1_000  # a millisecond later: before the as-of "now" below
    stamp, node = clock.stamp(at), "0badc10e"
    event.update(event_id=names.event_id(stamp, node), created_at=clock.iso(at), message=message,
                 summary={**(event.get("summary") or {}), "next": [message]}, prev=None, **changes)
    raw = json.dumps(event, separators=(",", ":")).encode()
    (day / names.file_name(stamp, node, hashlib.sha256(raw).hexdigest())).write_bytes(raw)


def test_a_secret_a_sync_brought_in_is_never_shown_in_a_brief(project: Path, capsys: Capture) -> None:
    """The brief (and the SessionStart hook, which puts it in the agent's context) showed a token held by an event
    another clone wrote: it is redacted in every brief, Markdown and JSON, now and as of a point."""
    assert main(["checkpoint", "-m", "real work", "--next", "the real next step"]) == 0
    plant_synced(project, f"deploy with {TOKEN} then rotate")
    capsys.readouterr()
    now = clock.iso(int(time.time() * 1_000_000))
    for args in (["resume-bundle"], ["resume-bundle", "--format", "json"], ["resume-bundle", "--as-of", now],
                 ["resume-bundle", "--as-of", now, "--format", "json"]):
        assert main(args) == 0, args
        out, _ = capsys.readouterr()
        assert TOKEN[4:14] not in out and "[REDACTED:github-token]" in out, (args, out)
    payload = {"hook_event_name": "SessionStart", "session_id": "s1", "cwd": str(project)}
    result = run_hook("claude-code", json.dumps(payload).encode(), str(project))
    assert TOKEN[4:14] not in result.stdout and "[REDACTED:github-token]" in result.stdout


def test_a_secret_split_by_a_cut_is_not_shown_in_a_brief(project: Path, capsys: Capture) -> None:
    """The read models keep a recent event's first 300 characters: a synced token the cut splits left its first
    characters, which no rule matches, so the brief's redaction missed them. The cut falls before the token now;
    a message that fits is kept whole, and a long one with no token is cut at 300 as before."""
    from projections.overview import MESSAGE_CHARS

    assert main(["checkpoint", "-m", "real work", "--next", "the real next step"]) == 0
    for inside in (4, 10, 30):
        plant_synced(project, "w " * ((MESSAGE_CHARS - inside) // 2) + TOKEN)
    fits = "word " * 59 + "FINAL"
    long_path = "/very/long/path" * 22
    assert len(fits) == MESSAGE_CHARS and len(long_path) > MESSAGE_CHARS
    assert main(["log", "-m", fits]) == 0 and main(["log", "-m", long_path]) == 0
    capsys.readouterr()
    for args in (["resume-bundle"], ["resume-bundle", "--format", "json"]):
        assert main(args) == 0, args
        out, _ = capsys.readouterr()
        assert TOKEN[:4] not in out, (args, out)
        assert fits in out and long_path[:MESSAGE_CHARS] in out and long_path[:MESSAGE_CHARS + 1] not in out


def test_a_secret_a_sync_brought_in_is_redacted_by_every_view_of_the_log(project: Path, capsys: Capture) -> None:
    """The brief was redacted, but `events list`, `events tail`, `events show` and `watch` (text and JSON) printed
    a token another clone's event held: output that goes to an agent's model as well as to a terminal."""
    assert main(["checkpoint", "-m", "real work", "--next", "the real next step"]) == 0
    plant_synced(project, f"deploy with {TOKEN} then rotate")
    capsys.readouterr()
    assert main(["events", "list"]) == 0
    listed = capsys.readouterr().out
    planted = next(line.split()[0] for line in listed.splitlines() if "deploy with" in line)
    views = [listed]
    for args in (["--json", "events", "list"], ["events", "tail"], ["--json", "events", "tail"],
                 ["events", "show", planted], ["--json", "events", "show", planted]):
        assert main(args) == 0, args
        views.append(capsys.readouterr().out)
    for view in views:
        assert TOKEN[4:14] not in view and "[REDACTED:github-token]" in view and "then rotate" in view, view
    assert json.loads(views[1])["events"][-1]["message"] == "deploy with [REDACTED:github-token] then rotate"
    assert main(["checkpoint", "-m", "clean work"]) == 0  # a view of clean events prints them as they are
    capsys.readouterr()
    assert main(["--json", "events", "tail", "-n", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["message"] == "clean work"


def test_views_redact_values_not_what_joining_them_makes(project: Path, capsys: Capture) -> None:
    """A view's text joins fields (`type: message`, a JSON body's `"key": "value"`): redacting the joined text
    took `password: reset2024 flow` for an assignment, though each value passed the guard alone. Each value is
    redacted alone now (an entry with its key, as the write path reads it: `"next_token": "page2abc"` is refused
    there); an event nested past a walk still prints (`--json events tail` ended in an internal error), its token
    redacted."""
    assert main(["log", "-m", "paging", "--note-json", '{"next_page": "page2abc"}']) == 0
    assert main(["log", "--type", "password", "-m", "reset2024 flow done"]) == 0
    capsys.readouterr()
    assert main(["events", "list"]) == 0
    assert "password: reset2024 flow done" in capsys.readouterr().out
    assert main(["--json", "events", "list"]) == 0
    shown = json.loads(capsys.readouterr().out)["events"][0]
    assert shown["note"] == {"next_page": "page2abc"}
    assert main(["events", "show", shown["event_id"]]) == 0
    assert '"next_page": "page2abc"' in capsys.readouterr().out
    plant_synced(project, f"deploy with {TOKEN} then rotate")
    day = sorted((project / ".agent/runtime-continuity/events").iterdir())[-1]
    newest = sorted(day.iterdir())[-1]
    raw = newest.read_bytes().replace(b'"note":null', b'"note":{"a":' + b"[" * 900 + b"]" * 900 + b"}")
    assert raw != newest.read_bytes()
    newest.unlink()
    stamp, node = newest.name.split("-")[:2]
    (day / names.file_name(stamp, node, hashlib.sha256(raw).hexdigest())).write_bytes(raw)
    capsys.readouterr()
    for args in (["--json", "events", "tail"], ["events", "tail"], ["--json", "events", "list"], ["events", "list"]):
        assert main(args) == 0, args
        out = capsys.readouterr().out
        assert TOKEN[4:14] not in out and "deploy with [REDACTED:github-token] then rotate" in out, (args, out[-300:])


def test_a_secret_after_a_control_character_is_redacted_in_the_stored_bytes_view(project: Path,
                                                                                 capsys: Capture) -> None:
    """`--json events tail` prints an event's stored bytes, checked as JSON text: there a control character is an
    escape (`\\u0007`), where the rules stop as at a space, so a note's `password=abc<BEL>defghijk` read as a
    placeholder (`abc`) and was printed whole. Such text is checked value by value."""
    assert main(["checkpoint", "-m", "real work"]) == 0
    plant_synced(project, "deploy then rotate")
    day = sorted((project / ".agent/runtime-continuity/events").iterdir())[-1]
    newest = sorted(day.iterdir())[-1]
    event = json.loads(newest.read_bytes())
    event["note"] = {"how": "password=abc\x07defghijk"}
    raw = json.dumps(event, separators=(",", ":")).encode()
    newest.unlink()
    stamp, node = newest.name.split("-")[:2]
    (day / names.file_name(stamp, node, hashlib.sha256(raw).hexdigest())).write_bytes(raw)
    capsys.readouterr()
    for args in (["--json", "events", "tail"], ["--json", "events", "list"]):
        assert main(args) == 0, args
        out = capsys.readouterr().out
        assert "defghijk" not in out and "[REDACTED:password-assignment]" in out, (args, out[-400:])


def plant_edited(project: Path, edit: Any) -> str:
    """Another clone's event (name and hash as a sync writes them) made from the newest one by `edit(event)`."""
    plant_synced(project, "edited")
    day = sorted((project / ".agent/runtime-continuity/events").iterdir())[-1]
    newest = sorted(day.iterdir())[-1]
    event = json.loads(newest.read_bytes())
    edit(event)
    raw = json.dumps(event, separators=(",", ":")).encode()
    newest.unlink()
    stamp, node = newest.name.split("-")[:2]
    (day / names.file_name(stamp, node, hashlib.sha256(raw).hexdigest())).write_bytes(raw)
    return str(event["event_id"])


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("where", ["type", "prev", "redacted", "after a line break", "after a tab in a note",
                                   "after a line break, a note nested 900 deep"])
def test_every_field_of_a_synced_event_is_redacted_in_every_view(project: Path, capsys: Capture,
                                                                   where: str) -> None:
    """A token in any field of an event another clone wrote, and after an escaped line break or tab (where, read as
    JSON text, a rule saw the letter `n` or `t` glued before it), is shown by no view; an event nested past Python's
    own recursion limit too."""
    import sys

    edits: dict[str, Any] = {
        "type": lambda e: e.update(type=TOKEN), "prev": lambda e: e.update(prev=TOKEN),
        "redacted": lambda e: e.update(redacted=[TOKEN]),
        "after a line break": lambda e: e.update(message="step one\n" + TOKEN),
        "after a tab in a note": lambda e: e.update(note={"cmd": "export\t" + TOKEN}),
        "after a line break, a note nested 900 deep": lambda e: e.update(message="step one\n" + TOKEN,
                                                                          note={"a": nested(900)}),
    }
    assert main(["checkpoint", "-m", "real work"]) == 0
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)  # json.dumps of the planted note
    try:
        event_id = plant_edited(project, edits[where])
    finally:
        sys.setrecursionlimit(limit)
    capsys.readouterr()
    for args in (["events", "list"], ["--json", "events", "list"], ["events", "tail"], ["--json", "events", "tail"],
                 ["events", "show", event_id], ["--json", "events", "show", event_id]):
        assert main(args) == 0, args
        out = capsys.readouterr().out
        assert event_id in out and TOKEN[4:14] not in out, (args, out[-400:])


def test_a_secret_under_a_key_that_names_it_in_a_synced_event_is_redacted_in_every_view(
        project: Path, capsys: Capture) -> None:
    """The write path reads a note's entry with its key (`"password": "..."`); an event another clone (an older
    release) wrote with one is shown by no view either: each view reads such an entry as the write path does."""
    assert main(["checkpoint", "-m", "real work"]) == 0
    password = "Hunter" + "2222x"
    cookie = "sessionid=Kq7Vb2Nm9X" + "c4Zt6Lp3Rw"
    event_id = plant_edited(project, lambda e: e.update(note={"db": {"password": password, "host": "db1"},
                                                              "headers": {"Cookie": cookie}}))
    capsys.readouterr()
    for args in (["events", "list"], ["--json", "events", "list"], ["events", "tail"], ["--json", "events", "tail"],
                 ["events", "show", event_id], ["--json", "events", "show", event_id], ["resume-bundle"],
                 ["resume-bundle", "--format", "json"]):
        assert main(args) == 0, args
        out = capsys.readouterr().out
        assert password not in out and cookie[-10:] not in out, (args, out[-400:])
    for args in (["--json", "events", "tail"], ["events", "show", event_id]):
        assert main(args) == 0
        out = capsys.readouterr().out
        assert "[REDACTED:password-assignment]" in out and "db1" in out, (args, out[-400:])


def test_events_show_prints_an_event_as_stored(project: Path, capsys: Capture) -> None:
    """`events show` ("print one event as stored") printed the decoded event: a field a newer writer added was
    dropped, and a field the file does not hold was shown with its default, as if it were there."""
    assert main(["checkpoint", "-m", "real work"]) == 0

    def newer(event: dict[str, Any]) -> None:
        event["zzz_extra"] = {"a": 1}
        del event["phase"]

    event_id = plant_edited(project, newer)
    capsys.readouterr()
    assert main(["--json", "events", "show", event_id]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["zzz_extra"] == {"a": 1} and "phase" not in shown and shown["event_id"] == event_id
    assert main(["events", "show", event_id]) == 0
    text = capsys.readouterr().out
    assert '"zzz_extra"' in text and '"phase"' not in text


@pytest.mark.parametrize("edit", [{"v": 2}, {"kind": "future.happened"}])
def test_events_show_prints_an_event_of_a_newer_writer_with_a_warning(project: Path, capsys: Capture,
                                                                     edit: dict[str, Any]) -> None:
    """`verify` names an event of a kind or a version this release does not read; `events show` of it was exit 1
    ("unknown version 2 ..."), the only command that could show it refused to."""
    assert main(["checkpoint", "-m", "real work"]) == 0
    event_id = plant_edited(project, lambda e: e.update(edit))
    capsys.readouterr()
    for args in (["events", "show", event_id], ["--json", "events", "show", event_id]):
        assert main(args) == 0, args
        out, err = capsys.readouterr()
        assert event_id in out and "written by a newer version?" in err and err.count("\n") == 1


def test_a_token_near_a_cut_in_a_handoff_status_or_listing_is_never_shown_in_part(project: Path,
                                                                                   capsys: Capture) -> None:
    """Two texts cut to a length with no regard for a token across the cut: a handoff file's `status` (64
    characters, in the brief and in the `context.served` record) and `handoff list`'s message (80 characters, of a
    handoff another clone wrote). The token's first characters match no rule, so they were shown and stored."""
    (project / "handoff.json").write_text(json.dumps({"status": "waiting on review of the deploy, see " + TOKEN}))
    assert main(["log", "-m", "handed over", "--handoff", "handoff.json"]) == 0
    assert main(["handoff", "create", "--to", "bo", "--message", "review", "--agent", "amy"]) == 0
    plant_synced(project, "x" * 66 + " " + TOKEN)
    capsys.readouterr()
    assert main(["resume-bundle", "--record"]) == 0
    assert main(["handoff", "list"]) == 0
    out = capsys.readouterr().out
    stored = b"".join(path.read_bytes() for path in (project / ".agent").rglob("*.json")
                      if "-0badc10e-" not in path.name)  # all but the other clone's event, which holds it
    for text in (out, stored.decode()):
        assert TOKEN[:8] not in text, text[-600:]
    assert "waiting on review of the deploy, see" in out and "x" * 66 in out


def test_a_synced_secret_is_never_found_or_shown_by_recall_nor_served_and_recorded_by_the_brief(
        project: Path, capsys: Capture) -> None:
    """Recall snippets start where FTS5's word window does: inside a synced token that window showed its body
    without the `ghp_` its rule needs, so no redaction of the answer found it, and the brief's earlier-on-the-subject
    section served it to the agent and recorded it in `context.served`. The index holds the text redacted."""
    assert main(["log", "-m", "first"]) == 0
    filler = " ".join(f"w{n}" for n in range(14))
    plant_synced(project, f"deploy token {TOKEN} {filler} kumquat")
    for number in range(40):  # enough later events that the brief's recent list does not hold the planted one
        assert main(["log", "-m", f"filler {number}"]) == 0
    assert main(["checkpoint", "-m", "cp", "--next", "kumquat review"]) == 0
    capsys.readouterr()
    body = TOKEN[4:14]
    for args in (["recall", "kumquat"], ["recall", "kumquat", "--json"], ["recall", "kumquat", "--kind", "work.logged"],
                 ["recall", "deploy"]):
        assert main(args) == 0, args
        out = capsys.readouterr().out
        assert "kumquat" in out or "deploy" in out, args
        assert body not in out and ("token]" in out if "kumquat" in args else "[REDACTED:github-token]" in out), (
            args, out)
    assert main(["recall", TOKEN[4:], "--json"]) == 0  # the secret is no searchable word
    assert json.loads(capsys.readouterr().out)["hits"] == []
    payload = {"hook_event_name": "SessionStart", "session_id": "s1", "source": "startup", "cwd": str(project)}
    result = run_hook("claude-code", json.dumps(payload).encode(), str(project))
    assert "Earlier, on the same subject" in result.stdout and body not in result.stdout
    stored = [path.name for path in (project / ".agent/runtime-continuity/events").rglob("*.json")
              if body.encode() in path.read_bytes()]
    assert len(stored) == 1  # the planted event, nothing this store wrote


@pytest.mark.parametrize("summarized", [False, True])
def test_a_synced_secret_is_never_written_into_the_timeline_page(project: Path, capsys: Capture,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 summarized: bool) -> None:
    """The page embeds each mark's event (shown on click) and a hover label: both showed a synced token whole. Now
    both are redacted, in single marks and in the summaries' most telling event; the rest of the event is kept."""
    from continuity.timeline import model

    if summarized:  # one mark at most: the page shows summary marks, each with its most telling event
        monkeypatch.setattr(model.Builder.__init__, "__kwdefaults__",
                            {**model.Builder.__init__.__kwdefaults__, "mark_limit": 1})
    assert main(["checkpoint", "-m", "real work", "--next", "the real next step"]) == 0
    # its own lane (a summary's top), named by ids that hold tokens: the lane label and the session bar show them
    plant_synced(project, f"deploy with {TOKEN} then rotate", agent_id=f"x-{TOKEN}", session_id=TOKEN,
                 host=f"h-{TOKEN}")
    out = project / "page.html"
    capsys.readouterr()
    assert main(["timeline", "--out", str(out)]) == 0
    page = out.read_text()
    assert ('"most_telling":' in page) is summarized
    assert TOKEN[4:14] not in page
    assert page.count("[REDACTED:github-token]") >= 2 and "then rotate" in page


def plant_twin(project: Path, message: str, *, lower: bool) -> tuple[str, str]:
    """A second file of the newest event (its id and time, other bytes: a message changed), named as a writer names
    its files, so its name sorts after the first one's (or, `lower`, before: tried until the hash says so). Returns
    (the message of the file that comes first in name order, the other's). Tried up to ATTEMPTS times: a newest
    file whose hash is near either end leaves few hashes on the wanted side (200 tries failed about once in 200
    runs; this many, about once in 200,000)."""
    day = sorted((project / ".agent/runtime-continuity/events").iterdir())[-1]
    newest = sorted(day.iterdir())[-1]
    event = json.loads(newest.read_bytes())
    for attempt in range(ATTEMPTS):
        changed = {**event, "message": f"{message} {attempt}"}
        raw = json.dumps(changed, separators=(",", ":")).encode()
        name = f"{newest.name[:32]}{hashlib.sha256(raw).hexdigest()[:12]}.json"
        if (name < newest.name) == lower:
            (day / name).write_bytes(raw)
            first, second = (changed["message"], event["message"]) if lower else (event["message"],
                                                                                  changed["message"])
            return first, second
    raise AssertionError(f"no hash on the wanted side in {ATTEMPTS} tries")


#: How many messages plant_twin tries for a hash on the wanted side of the newest file's.
ATTEMPTS = 200_000


@pytest.mark.parametrize("lower", [False, True])
def test_a_second_file_of_one_event_is_left_out_by_every_read(project: Path, capsys: Capture, lower: bool) -> None:
    """Two files named for one event (the same stamp and node, other bytes): the brief, status and the task and
    recall views folded both, `events list` listed both, while `events show` and `--as-of` saw the first. Every
    read now takes the first in name order and says why it left the other out; `verify` names the pair."""
    assert main(["checkpoint", "-m", "real work", "--next", "the real next step"]) == 0
    assert main(["log", "-m", "genuine entry"]) == 0
    assert main(["status"]) == 0  # folded before the second file lands: a catch-up after it must not fold it
    first, second = plant_twin(project, "TWINNED entry", lower=lower)
    capsys.readouterr()
    for turn, args in enumerate((["resume-bundle"], ["events", "list"], ["events", "list", "--last", "1"],
                                 ["events", "tail"], ["events", "tail", "-n", "1"], ["recall", "entry"],
                                 ["status", "--json"], ["rebuild"], ["resume-bundle"])):
        assert main(args) == 0, args
        out, err = capsys.readouterr()
        assert second not in out, (args, out)
        if args[0] not in ("status", "recall", "rebuild"):
            assert first in out, (args, out)
        if turn == 0 or args[0] in ("events", "recall", "rebuild"):  # the first catch-up after it, and each read
            assert "a second file of the event" in err, (args, err)
    assert main(["recall", "entry", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["hits"]) == 1
    assert main(["events", "list", "--last", "1", "--json"]) == 0
    [kept] = json.loads(capsys.readouterr().out)["events"]
    assert main(["events", "list", "--after", kept["event_id"], "--last", "5"]) == 0  # none after it: not its twin
    out, _ = capsys.readouterr()
    assert out.strip() in ("", "(no events)") and second not in out
    now = clock.iso(int(time.time() * 1_000_000))
    assert main(["resume-bundle", "--as-of", now]) == 0
    out, err = capsys.readouterr()
    assert second not in out and "a second file of one event" in err
    page = project / "page.html"
    assert main(["timeline", "--out", str(page)]) == 0
    assert second not in page.read_text() and first in page.read_text()
    assert main(["verify"]) == 1


@pytest.mark.parametrize("written_at", ["2026-02-30T00:00:00.000000Z", "9999-12-31T23:59:59.000000Z",
                                        "2030-01-01T00:00:00.000000Z", "2001-01-01T00:00:00.000000Z", "later"])
def test_a_written_at_no_writer_makes_is_not_taken(project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch,
                                                   written_at: str) -> None:
    """`written_at` (the writer's clock, where the log's time ran ahead of it) is not vouched for by the file's name
    as `created_at` is: one a sync brought in that is no real time, not before `created_at` or far before it made
    every roles read, `health`, `briefing` and `rebuild` end in an internal error, or held a lease for years. Such a
    value is not taken: the event counts from its `created_at`."""
    monkeypatch.setenv("CONTINUITY_SESSION_ID", "s9")  # the session's activity counts from it too
    assert main(["role", "create", "core", "rev"]) == 0
    assert main(["role", "claim", "core", "rev", "--agent", "mallory", "--ttl", "60s"]) == 0
    capsys.readouterr()
    day = sorted((project / ".agent/runtime-continuity/events").iterdir())[-1]
    created = json.loads(sorted(day.iterdir())[-1].read_bytes())["created_at"]
    forged = clock.iso(clock.parse_iso(created) + 3_600_000_000) if written_at == "later" else written_at
    plant_synced(project, "claimed again", written_at=forged)
    for argv in (["role", "show", "core", "rev", "--json"], ["health", "core", "--json"],
                 ["briefing", "core", "--json"], ["resume-bundle", "--format", "json"], ["rebuild"],
                 ["role", "show", "core", "rev", "--json"]):
        assert main(argv) == 0, argv
        out, err = capsys.readouterr()
        assert "internal error" not in err and "Traceback" not in err, (argv, err)
        if argv[0] == "role":
            shown = json.loads(out)
            assert clock.parse_iso(shown["lease_expires_at"]) - clock.parse_iso(created) <= 61_000_000, shown
    # and `verify` names it (the chain holds: the event is linked as any other)
    code = main(["verify", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and [problem["reason"].split(":")[0] for problem in report["problems"]] == ["forged"], report
    assert "written_at" in report["problems"][0]["reason"]


@pytest.mark.parametrize("depth", [100, 600, 800])
@pytest.mark.parametrize("summarized", [False, True])
def test_a_synced_note_nested_deeper_than_any_writer_makes_is_left_out_of_the_timeline(
        project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch, depth: int, summarized: bool) -> None:
    """No writer of ours nests a note past 63 levels; the reader takes up to about 986. One such event (a sync
    brings it) made `continuity timeline` end in "internal error: RecursionError" (exit 70) for everyone once the
    page was summarized or cut. It is left out, named as unreadable events are; the rest of the page is made."""
    from continuity.timeline import model

    if summarized:
        monkeypatch.setattr(model.Builder.__init__, "__kwdefaults__",
                            {**model.Builder.__init__.__kwdefaults__, "mark_limit": 1})
    assert main(["log", "real work"]) == 0
    plant_synced(project, "nested", note={"n": nested(depth)}, agent_id="mallory")
    out = project / "page.html"
    capsys.readouterr()
    code = main(["timeline", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0 and "internal error" not in err, err
    assert "nested more than 63 levels deep" in err and "real work" in out.read_text()
