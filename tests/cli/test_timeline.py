"""`continuity timeline`: the page on disk, its window, its output, and refusals (one line, documented code)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from continuity.cli import main
from tests import timeline_fixture as fixture
from tests.helpers import plant_impersonation

STORE = Path(".agent", "runtime-continuity")


@pytest.fixture
def logged(project: Path) -> Path:
    """The timeline fixture's events written into the project's store."""
    fixture.write(project / STORE / "events")
    return project


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_default_page_is_written_in_the_store_and_named(logged: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With no --out the page goes to local/timeline.html in the store, and the command says where."""
    code, out, err = run(capsys, "timeline")
    page = logged / STORE / "local" / "timeline.html"
    assert code == 0 and err == ""
    assert out == (f"timeline of {fixture.EVENTS} events ({fixture.MARKS} marks, one mark per event; 3 lanes, "
                   f"3 sessions) written to {page}\n")
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and html.count('<g class="mark"') == fixture.MARKS


def test_json_output_counts_the_marks(logged: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--json: the path, the size, the events and the marks per category."""
    target = tmp_path / "page.html"
    code, out, _ = run(capsys, "timeline", "--out", str(target), "--json")
    answer = json.loads(out)
    assert code == 0 and answer["ok"] is True and answer["action"] == "timeline"
    assert answer["path"] == str(target) and answer["bytes"] == target.stat().st_size
    assert answer["counts"] == fixture.COUNTS and answer["marks"] == fixture.MARKS
    assert answer["events"] == fixture.EVENTS and answer["summarized"] is None


def test_out_dash_prints_the_page_on_stdout(logged: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--out -` wrote a file named `-` in the working folder: `-` is stdout, as for every tool that writes a file;
    the summary goes to stderr, `--json` (which would share stdout with the page) is refused, and a stdout that
    takes nothing is exit 5 (`./-` still names a file)."""
    code, out, err = run(capsys, "timeline", "--out", "-")
    assert code == 0 and out.startswith("<!DOCTYPE html>") and out.count('<g class="mark"') == fixture.MARKS
    assert err == (f"timeline of {fixture.EVENTS} events ({fixture.MARKS} marks, one mark per event; 3 lanes, "
                   "3 sessions) written to stdout\n")
    assert not (logged / "-").exists() and not (logged / STORE / "local" / "timeline.html").exists()
    code, out, err = run(capsys, "timeline", "--out", "-", "--json")
    assert code == 2 and json.loads(out)["ok"] is False and "leave --json out" in err
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "continuity", "timeline", "--out", "-"], cwd=logged,
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert done.returncode == 5 and done.stderr == ("continuity: error: timeline not written: stdout: No space left "
                                                    "on device\n"), done.stderr
    assert run(capsys, "timeline", "--out", "./-")[0] == 0 and (logged / "-").is_file()


def test_since_and_until_read_only_the_window(logged: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """ISO bounds keep the events between them, both included; the second day alone is its three events."""
    target = str(tmp_path / "window.html")
    code, out, _ = run(capsys, "timeline", "--out", target, "--json", "--since", "2026-11-30T09:20:00Z",
                       "--until", "2026-11-30T10:35:00Z")
    assert code == 0 and json.loads(out)["events"] == 13
    code, out, _ = run(capsys, "timeline", "--out", target, "--json", "--since", "2026-12-01")
    answer = json.loads(out)
    assert answer["events"] == 4 and answer["since"] == "2026-12-01T00:00:00.000000Z"
    # a year before 1000 is spelled with four digits, so it bounds the window like any other time
    code, out, _ = run(capsys, "timeline", "--out", target, "--json", "--until", "0999-01-01")
    answer = json.loads(out)
    assert code == 0 and answer["events"] == 0 and answer["until"] == "0999-01-01T00:00:00.000000Z"
    code, out, _ = run(capsys, "timeline", "--out", target, "--json", "--since", "0999-01-01")
    since_999 = json.loads(out)["events"]
    code, out, _ = run(capsys, "timeline", "--out", target, "--json")
    assert since_999 == json.loads(out)["events"] > 0


@pytest.mark.parametrize("argv, code, message", [
    (["--since", "yesterday"], 2, "--since: 'yesterday' is neither an ISO time nor a duration"),
    (["--until", "-3d"], 2, "--until: '-3d' is neither an ISO time nor a duration"),
    (["--since", "0001-01-01T00:00:00+14:00"], 2, "--since: '0001-01-01T00:00:00+14:00' is neither"),
    (["--since", "2026-12-02", "--until", "2026-12-01"], 2, "is after --until"),
    (["--since", "999999999d"], 2, "--since: '999999999d' reaches back before the year 1"),
    (["--out", "."], 2, "is a folder"),
    (["--out", "pages/"], 2, "is a folder"),
    (["--out", "page.html/."], 2, "is a folder"),
    (["--out", "missing/page.html"], 5, "timeline not written: the folder"),
    (["--bogus"], 2, "unrecognized arguments"),
])
def test_bad_arguments_get_one_line_and_a_documented_code(logged: Path, capsys: pytest.CaptureFixture[str],
                                                          argv: list[str], code: int, message: str) -> None:
    """Refusals are one line on stderr with the documented exit code, and nothing is written."""
    got, out, err = run(capsys, "timeline", *argv)
    assert got == code and out == ""
    assert err.count("\n") == 1 and err.startswith("continuity: error: ") and message in err
    assert "Traceback" not in err
    assert not (logged / STORE / "local" / "timeline.html").exists()


def test_a_symlinked_folder_in_the_store_is_refused(logged: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A page inside the store never goes through a symlinked folder (exit 6); nothing lands outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (logged / STORE / "pages").symlink_to(outside)
    code, _, err = run(capsys, "timeline", "--out", str(logged / STORE / "pages" / "t.html"))
    assert code == 6 and "unsafe store" in err
    # the store reached through a link to it: the same folder, the same refusal
    alias = tmp_path / "store-alias"
    alias.symlink_to(logged / STORE)
    code, _, err = run(capsys, "timeline", "--out", str(alias / "pages" / "t.html"))
    assert code == 6 and "unsafe store" in err
    code, _, err = run(capsys, "timeline", "--out", str(alias / "events" / "t.html"))
    assert code == 2 and "would replace a file of the store" in err
    assert list(outside.iterdir()) == []
    assert run(capsys, "timeline", "--out", str(alias / "page.html"))[0] == 0  # a real folder: written there
    assert (logged / STORE / "page.html").read_text().startswith("<!DOCTYPE html>")


def test_a_symlink_at_the_out_path_is_replaced_not_followed(logged: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """--out naming a symlink replaces the link with the page; its target is untouched."""
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "page.html"
    link.symlink_to(target)
    code, _, _ = run(capsys, "timeline", "--out", str(link))
    assert code == 0 and target.read_text() == "keep me"
    assert not link.is_symlink() and link.read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("link", [False, True], ids=["pipe", "link-to-pipe"])
def test_out_never_replaces_a_device_or_a_pipe(logged: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               link: bool) -> None:
    """--out naming a pipe (as /dev/null names a device), or a link to one, is exit 2: it stays what it was."""
    pipe = tmp_path / "pipe.html"
    os.mkfifo(pipe)
    out = pipe
    if link:
        out = tmp_path / "link.html"
        out.symlink_to(pipe)
    code, stdout, err = run(capsys, "timeline", "--out", str(out))
    assert code == 2 and stdout == "" and err.count("\n") == 1 and "not a regular file" in err
    assert pipe.is_fifo() and out.is_symlink() == link


def test_out_never_replaces_a_link_to_an_open_file(logged: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """--out naming a link into /proc/self/fd (as /dev/stdout is) is exit 2, even when the fd is a file."""
    opened = tmp_path / "opened.txt"
    with opened.open("w") as handle:
        link = tmp_path / "stdout.html"
        link.symlink_to(f"/proc/self/fd/{handle.fileno()}")
        code, stdout, err = run(capsys, "timeline", "--out", str(link))
    assert code == 2 and stdout == "" and "/dev/stdout" in err
    assert link.is_symlink() and opened.read_text() == ""


def test_an_unreadable_event_is_skipped_with_a_warning(logged: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Reads fail open: a file that does not decode is left out, with one warning line; exit 0."""
    day = logged / STORE / "events" / "20261130"
    (day / "20261130_120000_000000-fixture1-000000000000.json").write_bytes(b"{not json")
    code, out, err = run(capsys, "timeline", "--out", str(tmp_path / "p.html"), "--json")
    assert code == 0 and json.loads(out)["events"] == fixture.EVENTS
    assert err.startswith("continuity: warning: skipped 1 unreadable event(s) in the timeline")


def test_an_empty_log_still_makes_a_page(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No events: a page that says so, not an error."""
    code, out, _ = run(capsys, "timeline", "--json")
    assert code == 0 and json.loads(out)["events"] == 0
    assert "0 events" in (project / STORE / "local" / "timeline.html").read_text()


def test_timeline_progress_shows_on_a_terminal_only(logged: Path) -> None:
    """A bar on stderr on a terminal; nothing on a pipe."""
    from tests.cli.test_progress import on_pty, piped

    code, out, terminal = on_pty("timeline", cwd=logged)
    assert code == 0 and "written to" in out
    assert "reading the log for the timeline" in terminal and f"/{fixture.EVENTS}" in terminal
    done = piped("timeline", cwd=logged)
    assert done.returncode == 0 and done.stderr == ""


@pytest.mark.parametrize("argv, stdin", [
    (["log", "-m", "hello"], None),
    (["hook", "claude-code"], "claude_post_tool_use_edit"),
])
def test_the_hook_path_never_loads_jinja2(logged: Path, argv: list[str], stdin: str | None) -> None:
    """`continuity log` and a record-only hook, as real processes, load neither jinja2 nor the timeline."""
    from tests.integration.test_hooks import payload

    probe = ("import sys, runpy; sys.argv = ['continuity', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('continuity', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "sys.stderr.write(repr(sorted(m for m in sys.modules if m.startswith(('jinja2', 'markupsafe', "
             "'continuity.timeline')))))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    done = subprocess.run([sys.executable, "-c", probe, *argv], cwd=logged, env=env, capture_output=True, text=True,
                          input=payload(stdin, logged) if stdin else None, timeout=60)
    assert done.returncode == 0 and done.stderr.strip().splitlines()[-1] == "[]", done.stderr
    done = subprocess.run([sys.executable, "-c", probe, "timeline"], cwd=logged, env=env,
                          capture_output=True, text=True, timeout=60)
    assert "'jinja2'" in done.stderr.strip().splitlines()[-1]  # the probe does see it where it is loaded


@pytest.mark.parametrize("relative", ["config.json", "local/lock", "local/node", "event", "events/20261130/page.html"])
@pytest.mark.parametrize("through_link", [False, True])
def test_out_never_replaces_a_file_of_the_store(logged: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                relative: str, through_link: bool) -> None:
    """Inside the store (named directly or through a symlinked folder outside it) only an .html page outside
    events/ may be written: the log, config, lock and node id are refused with exit 2 and left as they were."""
    store = logged / STORE
    (store / "local" / "node").write_text("fixture1\n")
    (store / "local" / "lock").touch()
    target = sorted((store / "events").rglob("*.json"))[0] if relative == "event" else store / relative
    before = {path: path.read_bytes() for path in store.rglob("*") if path.is_file()}
    named = target
    if through_link:
        (tmp_path / "door").symlink_to(target.parent)
        named = tmp_path / "door" / target.name
    code, out, err = run(capsys, "timeline", "--out", str(named))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "inside the store a page must be an .html file outside events/" in err
    after = {path: path.read_bytes() for path in store.rglob("*") if path.is_file()}
    assert after == before


def test_an_html_page_elsewhere_in_the_store_is_written(logged: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A page inside the store but outside events/ (an .html name) is written there."""
    code, _, _ = run(capsys, "timeline", "--out", str(logged / STORE / "local" / "mine.html"))
    assert code == 0 and (logged / STORE / "local" / "mine.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("created_at", ["garbage", "", "2026-13-45T99:00:00Z"])
def test_an_event_whose_time_is_not_a_time_is_skipped_with_a_warning(
        logged: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], created_at: str) -> None:
    """Reads fail open: an event that decodes but whose created_at is no time (a foreign clone's; never the time its
    file name spells, so it is renamed or forged) is left out with one warning, and the rest of the page is made
    (exit 0, no internal error)."""
    day = logged / STORE / "events" / "20261130"
    first = sorted(day.iterdir())[1]
    event = json.loads(first.read_bytes())
    event["created_at"] = created_at
    (day / first.name.replace("-fixture1-", "-fixture9-")).write_bytes(json.dumps(event).encode())
    for argv in ([], ["--since", "2026-11-30T09:00:00Z"]):
        code, out, err = run(capsys, "timeline", "--out", str(tmp_path / "p.html"), "--json", *argv)
        assert code == 0, err
        assert json.loads(out)["events"] == fixture.EVENTS
        assert err.startswith("continuity: warning: skipped 1 unreadable event(s) in the timeline")
        assert "-fixture9-" in err and "renamed or forged" in err and err.count("\n") == 1


def test_an_event_larger_than_any_writer_makes_is_skipped(logged: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A foreign event past MAX_EVENT_BYTES (padded with a field no Struct reads) is left out with a warning: it
    neither summarizes the whole page nor lands in it whole."""
    from events.base import MAX_EVENT_BYTES

    day = logged / STORE / "events" / "20261130"
    switch = next(path for path in sorted(day.iterdir()) if b'"host.switched"' in path.read_bytes())
    event = json.loads(switch.read_bytes())
    event["padding"] = "<x>" * MAX_EVENT_BYTES
    (day / switch.name.replace("-fixture1-", "-fixture9-")).write_bytes(json.dumps(event).encode())
    target = tmp_path / "p.html"
    code, out, err = run(capsys, "timeline", "--out", str(target), "--json")
    answer = json.loads(out)
    assert code == 0 and answer["summarized"] is None and answer["marks"] == fixture.MARKS
    assert answer["events"] == fixture.EVENTS and target.stat().st_size < 100_000
    assert err.startswith("continuity: warning: skipped 1 unreadable event(s) in the timeline") and "-fixture9-" in err


def test_control_characters_in_the_out_path_never_reach_the_terminal(
        logged: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The human line names the page with its control characters shown as stand-ins (no escape sequence runs)."""
    target = tmp_path / "page\x1b]0;owned\x07.html"
    code, out, _ = run(capsys, "timeline", "--out", str(target))
    assert code == 0 and target.read_text().startswith("<!DOCTYPE html>")
    assert "written to " in out and "\x1b" not in out and "\x07" not in out


@pytest.mark.parametrize("ends", [("first",), ("last",), ("first", "last")])
def test_events_at_the_ends_of_time_still_make_a_page(logged: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      ends: tuple[str, ...]) -> None:
    """An event stamped in year 1 (a remote's broken clock; `verify` calls the log intact) made the page's padded
    axis leave the times a date can spell: exit 70 (OverflowError). One at the end of 9999 is stamped early: left
    out with the read models' warning. A `created_at` whose offset puts it past 9999 in UTC is not the time its
    name spells: left out with the warning."""
    from events import clock, names
    from events.codec import default_codec
    from events.sealing import seal
    from events.worklog import WorkLogged

    at = {"first": clock.FIRST_US + 1_000_000, "last": clock.LAST_US - 1_000_000}
    for end in ends:
        stored = seal(WorkLogged(project=fixture.PROJECT, message=f"the {end} time"), at_us=at[end], node="fixture8",
                      prev=None, codec=default_codec())
        folder = logged / STORE / "events" / names.shard_of(stored.name)
        folder.mkdir(exist_ok=True)
        (folder / stored.name).write_bytes(stored.raw)
    day = logged / STORE / "events" / "20261130"
    event = json.loads(sorted(day.iterdir())[1].read_bytes())
    event["created_at"] = "9999-12-31T23:59:59.999999-14:00"
    (day / sorted(day.iterdir())[1].name.replace("-fixture1-", "-fixture9-")).write_bytes(json.dumps(event).encode())
    code, out, err = run(capsys, "timeline", "--out", str(tmp_path / "p.html"), "--json")
    assert code == 0, err
    assert json.loads(out)["events"] == fixture.EVENTS + ("first" in ends)
    assert "-fixture9-" in err and "renamed or forged" in err
    assert ("stamped more than a day ahead" in err) == ("last" in ends)
    assert err.count("\n") == 1 + ("last" in ends)
    page = (tmp_path / "p.html").read_text()
    assert ("0001-01-01" in page) == ("first" in ends) and "9999-12-" not in page


def test_the_project_name_in_the_header_is_neutralized(project: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A project name holding a bidi override, a line separator and a C1 control (`runtime-continuity` writes
    any one-line name; a broken config.json answers for the newest event's) shows them as stand-ins in the
    page's title, heading and chart label, as lane labels do; it went through raw."""
    from continuity.adapters.compat.runtime_continuity import main as compat_main

    name = "de\u202emo\u2028x\x9by"
    assert compat_main(["log", "--gate", "agent", "--project", name, "--message", "hi"]) == 0
    (project / STORE / "config.json").write_text("{")
    target = tmp_path / "p.html"
    code, _, err = run(capsys, "timeline", "--out", str(target))
    assert code == 0 and "answering for project" in err
    shown = target.read_text().split('<script type="application/json"')[0]  # the event's bytes follow, as stored
    assert not any(char in shown for char in "\u202e\u2028\x9b")
    assert shown.count("de\ufffdmo\ufffdx\ufffdy") == 3


@pytest.mark.parametrize("claim", ["another event's id", "another time"])
def test_the_events_recall_leaves_out_are_left_out_with_its_warnings(project: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str],
                                                                     claim: str) -> None:
    """A well-named file whose content claims another event's id or time (renamed or forged), and an event stamped
    in 9999 (a day folder far ahead of this clock) were drawn: the forged message shown under a real id, and the
    axis stretched to 9999 so every real event fell on one x. Both are left out, warned of as recall warns."""
    import re

    from events import clock, names
    from events.codec import default_codec
    from events.sealing import seal
    from events.worklog import WorkLogged

    for text in ("genuine entry", "second entry", "third entry"):
        assert run(capsys, "log", "-m", text)[0] == 0
    genuine = sorted((project / STORE / "events").rglob("*.json"))[0]
    name = plant_impersonation(genuine, claim).name
    far = seal(WorkLogged(project="demo", message="from year 9999"), at_us=clock.LAST_US - 1_000_000,
               node="teammate", prev=None, codec=default_codec())
    folder = project / STORE / "events" / names.shard_of(far.name)
    folder.mkdir()
    (folder / far.name).write_bytes(far.raw)
    target = tmp_path / "p.html"
    code, out, _ = run(capsys, "timeline", "--out", str(target), "--json")
    answer = json.loads(out)
    assert code == 0 and answer["events"] == 3 and answer["marks"] == 3
    recalled = json.loads(run(capsys, "recall", "entry", "--json")[1])
    early = [line for line in recalled["warnings"] if "stamped more than a day ahead" in line]
    assert len(early) == 1 and early[0] in answer["warnings"]
    skipped = f"skipped 1 unreadable event(s) in the timeline; first: {name}: {names.FORGED}"
    assert answer["warnings"] == [early[0], skipped]
    assert any(line.endswith(f"{name}: {names.FORGED}") for line in recalled["warnings"])
    page = target.read_text()
    assert "IMPERSONATED" not in page and "9999" not in page and "1960" not in page
    assert len(set(re.findall(r'<circle cx="([0-9.]+)"', page))) == 3  # the real events stand apart on the axis


def page_data(page: Path) -> list[dict[str, object]]:
    """The marks' JSON block of a written page (what a click shows)."""
    text = page.read_text()
    start = text.index('<script type="application/json" id="timeline-data">')
    block = text[text.index(">", start) + 1:text.index("</script>", start)]
    found: list[dict[str, object]] = json.loads(block)
    return found


def test_text_the_page_escapes_counts_as_escaped_against_the_2_mb_bound(project: Path, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`<`, `>` and `&` are 6-byte escapes in the page's JSON block: 56 events of 16,000 `<` were counted as
    0.95 MB of marks, shown one by one, and made a 6.4 MB page. Counted as written, the page is summarized
    and stays under 2 MB."""
    for _ in range(56):
        assert main(["log", "-m", "<" * 16000, "--next", "&" * 1000]) == 0
    capsys.readouterr()
    target = tmp_path / "p.html"
    code, out, _ = run(capsys, "timeline", "--out", str(target), "--json")
    answer = json.loads(out)
    assert code == 0 and answer["events"] == 56 and answer["summarized"] is not None
    assert answer["bytes"] == target.stat().st_size < 2_000_000


def test_at_the_coarsest_level_the_embedded_events_are_cut_to_fit(project: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """One mark per lane, each embedding its most telling event whole, was accepted whatever its size: 30 agents
    each logging a 125 KB note of `<` made a 22 MB page. The embedded events' texts are cut so the page fits, and
    each cut summary says so and names the event `events show` prints whole."""
    note = json.dumps({"text": "<" * 125_000})
    ids = set()
    for agent in range(30):
        capsys.readouterr()
        assert main(["log", "-m", "long note", "--agent", f"agent{agent}", "--note-json", note, "--json"]) == 0
        ids.add(json.loads(capsys.readouterr().out)["event_id"])
    target = tmp_path / "p.html"
    code, out, _ = run(capsys, "timeline", "--out", str(target), "--json")
    answer = json.loads(out)
    assert code == 0 and answer["summarized"] == "lane" and answer["marks"] == 30
    assert answer["bytes"] == target.stat().st_size < 2_000_000
    marks = page_data(target)
    assert all("events show" in str(mark["cut"]) for mark in marks)
    told = [mark["most_telling"] for mark in marks]
    assert {event["event_id"] for event in told if isinstance(event, dict)} == ids
    assert all(isinstance(event, dict) and len(event["note"]["text"]) <= 2001 for event in told)


def test_a_project_the_store_does_not_hold_is_said(logged: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """`--project nope` wrote an empty page with no word (a misspelt name looked like a project with no history)."""
    out = str(tmp_path / "page.html")
    code, _, err = run(capsys, "timeline", "--project", "nope", "--out", out)
    assert code == 0 and err == ("continuity: warning: the store holds no event of project 'nope': the page is "
                                 "empty\n")
    code, _, err = run(capsys, "timeline", "--out", out)
    assert code == 0 and "no event of project" not in err


@pytest.mark.parametrize("argv, message", [
    (["--since", "1d", "--until", "2d"], "is after --until"),
    (["--since", "2026-12-02", "--until", "2026-12-01"], "is after --until"),
    (["--until", "999999999d"], "--until: '999999999d' reaches back before the year 1"),
])
def test_recall_refuses_a_window_as_the_timeline_does(logged: Path, capsys: pytest.CaptureFixture[str],
                                                       argv: list[str], message: str) -> None:
    """`recall x --since 1d --until 2d` answered "no matches" (exit 0) where the timeline refused the same empty
    window; a duration past the year 1 was called "neither an ISO time nor a duration". Both refuse, one line."""
    for args in (["recall", "parser", *argv], ["--json", "recall", "parser", *argv]):
        got, out, err = run(capsys, *args)
        assert got == 2 and err.count("\n") == 1 and message in err, (args, err)
        assert (json.loads(out)["exit_code"] == 2) if args[0] == "--json" else out == ""
    from continuity.api import Continuity
    from continuity.core.errors import UsageError

    with pytest.raises(UsageError, match=r"^since \(.*\) is after until \(.*\): the window is empty$"):
        Continuity(str(logged)).call("recall", query="parser", since="1d", until="2d")
