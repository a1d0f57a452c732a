"""Locales whose encoding cannot show every character: text is escaped, JSON stays UTF-8, nothing fails.

A teammate's check mark in the log ended `resume-bundle`, `status`, the SessionStart hook and
`archive` (after it had written) in "internal error: UnicodeEncodeError" under `LANG=en_US`
(ISO-8859-1 on glibc) or `LC_ALL=C` with `PYTHONUTF8=0` (ASCII).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TEXT = "fixed \u2713 \U0001f600 caf\u00e9 \u9879\u76ee"
#: What a locale gives Python for stdout: ASCII (LC_ALL=C without UTF-8 mode) and Latin-1 (glibc's `en_US`).
LOCALES = [{"PYTHONIOENCODING": "ascii"}, {"PYTHONIOENCODING": "latin-1"},
           {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}]


def run(cwd: Path, *args: str, env: dict[str, str], stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    full = {key: value for key, value in os.environ.items()
            if not key.startswith(("CONTINUITY_", "LC_", "PYTHONIOENCODING", "PYTHONUTF8"))}
    return subprocess.run([sys.executable, "-m", "continuity", *args], cwd=cwd, env={**full, **env}, input=stdin,
                          capture_output=True, timeout=60)


@pytest.mark.parametrize("locale", LOCALES, ids=["ascii", "latin-1", "C-no-utf8-mode"])
def test_reads_hooks_and_archive_answer_under_a_narrow_locale(project: Path, locale: dict[str, str]) -> None:
    """Text for people escapes what the encoding lacks; JSON (--json, --format json, the hook's) is UTF-8."""
    assert run(project, "checkpoint", "-m", TEXT, "--next", TEXT, env={}).returncode == 0
    archives = project / ".agent" / "runtime-continuity" / "archives"
    for args in (["resume-bundle"], ["status"], ["events", "list"], ["restore", "--list"], ["recall", "fixed"]):
        result = run(project, *args, env=locale)
        assert result.returncode == 0 and b"Traceback" not in result.stderr and b"internal" not in result.stderr, args
        assert result.stdout.isascii() or locale.get("PYTHONIOENCODING") == "latin-1", args
    brief = run(project, "resume-bundle", env=locale).stdout
    assert b"\\u2713" in brief and b"\\U0001f600" in brief  # escaped, not dropped
    for args in (["resume-bundle", "--format", "json"], ["--json", "resume-bundle"], ["--json", "events", "list"]):
        result = run(project, *args, env=locale)
        assert result.returncode == 0, (args, result.stderr)
        assert TEXT in json.dumps(json.loads(result.stdout.decode("utf-8")), ensure_ascii=False), args
    start = json.dumps({"hook_event_name": "SessionStart", "session_id": "s1", "source": "startup",
                        "cwd": str(project)}).encode()
    hooked = run(project, "hook", "claude-code", env=locale, stdin=start)
    assert hooked.returncode == 0 and hooked.stderr == b""
    assert TEXT in json.loads(hooked.stdout.decode("utf-8"))["hookSpecificOutput"]["additionalContext"]
    before = len(list(archives.glob("RC-*.json")))
    archived = run(project, "archive", "--gate", "agent", "--reason", TEXT, env=locale)
    assert archived.returncode == 0 and archived.stderr == b"", archived.stderr
    assert len(list(archives.glob("RC-*.json"))) == before + 1


@pytest.mark.parametrize("locale", [{}, LOCALES[2]], ids=["utf-8", "C-no-utf8-mode"])
def test_arguments_are_read_as_utf8_whatever_the_locale(project: Path, locale: dict[str, str]) -> None:
    """`café` from an ASCII locale was refused as "not valid UTF-8" (Python had decoded it into escapes);
    bytes that are not UTF-8 are still refused, exit 2, nothing written."""
    assert run(project, "log", "-m", TEXT, env=locale).returncode == 0
    listed = json.loads(run(project, "--json", "events", "list", env={}).stdout.decode("utf-8"))["events"]
    assert [event["message"] for event in listed] == [TEXT]
    bad = subprocess.run([sys.executable, "-m", "continuity", "log", "-m", b"caf\xe9 \xff"], cwd=project,
                         env={**os.environ, **locale}, capture_output=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr == b"continuity: error: argument 3 is not valid UTF-8\n"
    assert len(json.loads(run(project, "--json", "events", "list", env={}).stdout)["events"]) == 1


@pytest.mark.parametrize("argv", [[b"briefing", b"c\xffore"], [b"briefing", b"core", b"--agent", b"u\xff8"],
                                  [b"resume", b"core", b"u\xff8"]], ids=["briefing-team", "briefing-agent", "resume"])
def test_the_reads_that_fail_open_take_a_name_in_bytes_as_one_no_event_holds(project: Path, argv: list[bytes]) -> None:
    """briefing always exits 0 (seed 000) and resume fails open on a name no event holds (`../x`): a name in bytes
    that are not UTF-8 is such a name (shown with U+FFFD, sections degraded), not exit 2 (it was)."""
    done = subprocess.run([sys.executable, "-m", "continuity", *argv], cwd=project, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "invalid" in done.stderr.decode() and "\ufffd" in done.stderr.decode(), done.stderr


@pytest.mark.parametrize(("folder", "locale"), [(b"bad\xff", {}),
                                               ("r\u00e9\u00df\u00fc \u9879\u76ee".encode(), LOCALES[2])],
                         ids=["not-utf8-bytes", "utf8-under-C"])
def test_archive_and_warm_in_a_folder_named_in_bytes_the_locale_does_not_read(
        tmp_path: Path, folder: bytes, locale: dict[str, str]) -> None:
    """`archive` put the work tree's path into its event as Python decoded it (surrogate escapes), which no
    event can hold: exit 2 "event cannot be encoded" in a folder whose name is not UTF-8, or is UTF-8 under an
    ASCII locale. Paths go into events as the UTF-8 their bytes are (U+FFFD for bytes that are none)."""
    root = os.fsencode(tmp_path) + b"/" + folder
    os.mkdir(root)
    subprocess.run([b"git", b"init", b"-q", root], check=True)
    subprocess.run([b"git", b"-C", root, b"-c", b"user.name=a", b"-c", b"user.email=a@b", b"commit", b"-q",
                    b"--allow-empty", b"-m", b"i"], check=True)
    here = Path(os.fsdecode(root))
    for args in (["init"], ["archive", "--gate", "agent", "--reason", "r"], ["warm", "--auto"]):
        result = run(here, *args, env=locale)
        assert result.returncode == 0 and b"Traceback" not in result.stderr, (args, result.stderr)
    listed = json.loads(run(here, "--json", "events", "list", env={}).stdout)["events"]
    shown = folder.decode("utf-8", "replace")
    archived = next(event for event in listed if event["kind"] == "archive.created")
    assert archived["git"]["root"].endswith("/" + shown)
    assert next(event for event in listed if event["kind"] == "session.started")["cwd"].endswith("/" + shown)


def test_run_file_names_go_into_the_brief_as_the_utf8_they_are(project: Path) -> None:
    """`.agent/runs/tâche.json` was shown (and recorded in context.served) as `t\\ufffd\\ufffdche.json` under an ASCII
    locale: the name is text as its bytes are, while the file is still read by its own name."""
    runs = project / ".agent" / "runs"
    runs.mkdir(parents=True)
    (runs / "t\u00e2che.json").write_text('{"status": "running"}')
    for locale in ({}, LOCALES[2]):
        brief = json.loads(run(project, "resume-bundle", "--format", "json", env=locale).stdout.decode("utf-8"))
        assert [(item["path"], item["status"]) for item in brief["runs"]["files"]] == [
            (".agent/runs/t\u00e2che.json", "running")]


def test_a_path_argument_reaches_its_folder_under_an_ascii_locale(tmp_path: Path) -> None:
    """Arguments read as UTF-8 text must still name the same bytes on disk: `--root …/café` under `LC_ALL=C
    PYTHONUTF8=0` found no store (or ended in an internal error) once text arguments were re-read as UTF-8.
    The command runs in Python's UTF-8 mode there, so text and paths agree, as under a UTF-8 locale."""
    root = tmp_path / "caf\u00e9 \u9879\u76ee"
    root.mkdir()
    assert run(tmp_path, "--root", str(root), "init", "--project", "demo", env=LOCALES[2]).returncode == 0
    assert (root / ".agent" / "runtime-continuity" / "config.json").is_file()
    logged = run(tmp_path, "--root", str(root), "log", "-m", TEXT, env=LOCALES[2])
    assert logged.returncode == 0, logged.stderr
    listed = json.loads(run(tmp_path, "--root", str(root), "--json", "events", "list", env={}).stdout)["events"]
    assert [event["message"] for event in listed] == [TEXT]
    shown = run(tmp_path, "--root", str(root), "events", "list", env=LOCALES[2])
    assert shown.returncode == 0 and b"\\u2713" in shown.stdout  # the terminal's encoding, escaped
