"""The "newest" documents never go back: `archives/latest.json`, `state.json`, `projects.json` and
the Markdown `latest.md` link, when catch-ups that folded different amounts finish out of order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from continuity.cli import main
from continuity.core.store import find_store
from continuity.readside import writers
from continuity.readside.replay import models_until
from continuity.readside.views import SESSION_MODELS
from events import names
from tests.helpers import REPO

STORE = Path(".agent") / "runtime-continuity"


def _archive_event_names(store_path: Path) -> list[str]:
    found = []
    for path in sorted((store_path / "events").glob("*/*.json")):
        if json.loads(path.read_bytes()).get("kind") == "archive.created":
            found.append(path.name)
    return found


def _documents(store_path: Path) -> dict[str, bytes]:
    return {name: (store_path / name).read_bytes()
            for name in ("state.json", "projects.json", "archives/latest.json")}


def test_a_catch_up_that_folded_less_keeps_the_newer_documents(project: Path) -> None:
    """Models folded only to the first of three archives, written after the store's own catch-up
    wrote the third, change none of the documents; models folded to the end still write."""
    for reason in ("one", "two", "three"):
        assert main(["archive", "--reason", reason]) == 0
    store = find_store()
    store_path = Path(store.path)
    first, *_, last = _archive_event_names(store_path)
    before = _documents(store_path)
    assert json.loads(before["archives/latest.json"])["reason"] == "three"

    older = models_until(store.open_reader(), first, [], SESSION_MODELS)
    writers._write_documents(store.path, older, schema=False, newer_only=True, contexts=writers.contexts_dir(store))
    assert _documents(store_path) == before

    # A replay's folder (newer_only not given) takes what it is handed.
    (project / "out").mkdir()
    writers._write_documents(str(project / "out"), older, schema=False)
    assert json.loads((project / "out" / "archives" / "latest.json").read_text())["reason"] == "one"

    # Models that folded as much (or more) write: the check keeps only newer documents.
    (store_path / "archives" / "latest.json").unlink()
    everything = models_until(store.open_reader(), last, [], SESSION_MODELS)
    writers._write_documents(store.path, everything, schema=False, newer_only=True,
                             contexts=writers.contexts_dir(store))
    assert _documents(store_path) == before
    assert names.id_of_name(last) == json.loads(before["archives/latest.json"])["event_id"]


def test_latest_md_is_never_pointed_back_at_an_older_archive(tmp_path: Path) -> None:
    folder = tmp_path / "contexts" / "demo"
    folder.mkdir(parents=True)
    old, new = folder / "ctx_20261201_100000_000001.md", folder / "ctx_20261201_100000_000002-node0001.md"
    old.write_text("old\n")
    new.write_text("new\n")
    link = folder / "latest.md"
    writers.link_latest(str(link), str(new))
    assert os.readlink(link) == new.name
    writers.link_latest(str(link), str(old))
    assert os.readlink(link) == new.name  # the older one finished last: kept
    newer = folder / "ctx_20261202_000000_000000.md"
    newer.write_text("newer\n")
    writers.link_latest(str(link), str(newer))
    assert os.readlink(link) == newer.name
    # A name that is not one of ours (an imported file) is replaced as before.
    os.unlink(link)
    os.symlink("notes.md", link)
    writers.link_latest(str(link), str(old))
    assert os.readlink(link) == old.name


RACE = """
import sys
from continuity.adapters.compat.runtime_continuity import main
raise SystemExit(main(sys.argv[1:]))
"""


@pytest.mark.stress
@pytest.mark.parametrize("round_", range(4))
def test_concurrent_archives_leave_the_newest_as_latest(tmp_path: Path, round_: int) -> None:
    """Eight `runtime-continuity archive` and eight `log` processes at once: latest.json and latest.md
    name the newest archive, and state.json its id."""
    work = tmp_path / "work"
    work.mkdir()
    home = Path(os.environ["HOME"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    env["PYTHONPATH"] = str(REPO)

    def start(*args: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-c", RACE, *args], cwd=work, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    first = start("log", "--project", "demo", "--gate", "agent", "--message", "start")
    assert first.wait(timeout=60) == 0
    procs = []
    for i in range(8):
        procs.append(start("archive", "--project", "demo", "--gate", "user", "--reason", f"r{i}"))
        procs.append(start("log", "--project", "demo", "--gate", "agent", "--message", f"m{i}"))
    results = [(proc.wait(timeout=120), proc.stderr.read() if proc.stderr else b"") for proc in procs]
    assert all(code == 0 for code, _ in results), results
    archives = sorted((work / STORE / "archives").glob("RC-*.json"))
    assert len(archives) == 8
    newest = json.loads(archives[-1].read_text())
    latest = json.loads((work / STORE / "archives" / "latest.json").read_text())
    assert latest["archive_id"] == newest["archive_id"]
    state = json.loads((work / STORE / "state.json").read_text())
    assert state["latest_archive"] == f".agent/runtime-continuity/archives/{newest['archive_id']}.json"
    newest_event = sorted((work / STORE / "events").glob("*/*.json"))[-1]
    assert state["latest_event"].endswith("/" + newest_event.name)
    link = home / ".agent" / "contexts" / "demo" / "latest.md"
    assert os.path.basename(os.readlink(link)) == f"ctx_{newest['archive_id'].removeprefix('RC-')}.md"


def test_state_json_keeps_the_newer_event_and_archive_of_the_two() -> None:
    """seedstate.newest_of: each of the newest event (with its project, time and Markdown) and the
    newest archive is taken from whichever document names the newer one; foreign values are not compared."""
    from continuity.readside.seedstate import newest_of, seed_state

    def doc(name: str | None, archive: str | None, project: str) -> dict[str, object]:
        return seed_state(project=project, last_name=name, created_at="2026-12-01T10:00:00.000001Z",
                          newest_archive_id=archive, markdown=f"/c/{project}/latest.md")

    old_event, new_event = "20261201_100000_000001-node0001-aaaaaaaaaaaa.json", \
        "20261201_100000_000002-node0002-bbbbbbbbbbbb.json"
    old_archive, new_archive = "RC-20261201_090000_000000", "RC-20261201_095000_000000-node0002"
    on_disk = doc(new_event, old_archive, "b")
    mine = doc(old_event, new_archive, "a")
    merged = newest_of(on_disk, mine)
    assert merged["latest_event"] == on_disk["latest_event"] and merged["project"] == "b"
    assert merged["latest_markdown_archive"] == "/c/b/latest.md"
    assert merged["latest_archive"] == mine["latest_archive"]
    assert newest_of(mine, on_disk) == merged  # the order of the two does not matter
    for foreign in (None, [], "x", {"latest_event": "../../etc/passwd", "latest_archive": "archives/RC-9.json"},
                    {"latest_event": 5, "latest_archive": {"a": 1}},
                    {"latest_event": ".agent/runtime-continuity/events/20991231/not-an-event.json"}):
        assert newest_of(foreign, mine) == mine


def test_latest_md_as_a_copy_is_never_of_an_older_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where links cannot be made (a fake here: `os.symlink` raising, as on a file system without links),
    latest.md is a copy; a catch-up that finished last with an older archive copied that one over the newer."""
    folder = tmp_path / "contexts" / "demo"
    folder.mkdir(parents=True)
    old, new = folder / "ctx_20261201_100000_000001.md", folder / "ctx_20261201_100000_000002-node0001.md"
    old.write_text("# Work archive: demo\n\n- Archive: `RC-20261201_100000_000001`\n")
    new.write_text("# 工作存档：demo\n\n- 存档：`RC-20261201_100000_000002`\n")

    def no_links(*_: object, **__: object) -> None:
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "symlink", no_links)
    link = folder / "latest.md"
    writers.link_latest(str(link), str(new))
    assert not link.is_symlink() and link.read_bytes() == new.read_bytes()
    writers.link_latest(str(link), str(old))
    assert link.read_bytes() == new.read_bytes()  # the older one finished last: the newer copy stays
    newer = folder / "ctx_20261202_000000_000000.md"
    newer.write_text("# Work archive: demo\n\n- Archive: `RC-20261202_000000_000000`\n")
    writers.link_latest(str(link), str(newer))
    assert link.read_bytes() == newer.read_bytes()
    link.write_text("my own notes, no archive named\n")  # not one of ours: replaced as before
    writers.link_latest(str(link), str(old))
    assert link.read_bytes() == old.read_bytes()
