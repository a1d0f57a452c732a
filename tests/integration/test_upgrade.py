"""A store written by an older continuity, read by this one (DESIGN.md 3.7, "Readable forever").

`tests/fixtures/store_e90970b` was written by continuity at commit e90970b (the last before
names were checked to their very end): `init --project demo`, a `log` by agent "bob\\n", role
"reviewer\\n" created and claimed in team "core\\n", a message to "bob\\n"; then its day folder
was given the time `DAY_MTIME` and `rebuild` saved every read model (local/models) with that
folder's mark. Only the events, config.json, the head hint, the node id and the saved models
are kept (everything else is derived).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from continuity.cli import main
from continuity.recall import plain

Capture = pytest.CaptureFixture[str]

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "store_e90970b"
#: The day folder's mtime when e90970b saved the models (2026-01-02T03:04:05Z), in ns.
DAY_MTIME = 1_767_323_045 * 10**9
#: The recall index format e90970b wrote (schema 4, rows 1).
RECALL_FORMAT_E90970B = 401


@pytest.fixture
def old_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The e90970b store in a fresh project, its day folders as they stood when its models were saved."""
    root = tmp_path / "proj"
    store = root / ".agent" / "runtime-continuity"
    shutil.copytree(FIXTURE, store)
    for day in (store / "events").iterdir():
        os.utime(day, ns=(DAY_MTIME, DAY_MTIME))
    monkeypatch.chdir(root)
    return store


def _models(store: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted((store / "local" / "models").iterdir())}


def test_models_saved_before_names_were_checked_to_their_end_are_rebuilt(old_store: Path, capsys: Capture) -> None:
    """Saved models holding "core\\n" (as e90970b folded it) are not trusted: the role, the inbox and
    the sender read under the names the events now decode to, and catching up equals a rebuild."""
    assert main(["--json", "role", "list", "core"]) == 0
    captured = capsys.readouterr()
    assert [role["role"] for role in json.loads(captured.out)["roles"]] == ["reviewer"]
    assert "rebuilt" in captured.err
    assert main(["--json", "inbox", "core", "--agent", "bob"]) == 0
    assert [message["text"] for message in json.loads(capsys.readouterr().out)["messages"]] == ["please review"]
    assert main(["status"]) == 0 and main(["resume-bundle"]) == 0 and main(["handoff", "list"]) == 0
    assert main(["task", "list"]) == 0 and main(["work", "status"]) == 0 and main(["moments", "list", "core"]) == 0
    caught_up = _models(old_store)
    assert len(caught_up) == 13  # every model: the brief reads agentwork too
    assert main(["rebuild"]) == 0
    assert _models(old_store) == caught_up
    assert main(["verify"]) == 0


def test_a_recall_index_written_before_names_were_checked_to_their_end_is_rebuilt(
    old_store: Path, capsys: Capture,
) -> None:
    """An index whose rows hold agent "bob\\n" (e90970b's rows, format 401) is rebuilt: `--agent bob` finds him."""
    assert main(["recall", "hello"]) == 0
    index = old_store / "local" / plain.INDEX_NAME
    with sqlite3.connect(index) as connection:  # the rows and meta as e90970b wrote them
        connection.execute("UPDATE docs SET agent = agent || char(10) WHERE agent = 'bob'")
        connection.execute("UPDATE meta SET value = ? WHERE key = 'format'", (RECALL_FORMAT_E90970B,))
    connection.close()
    capsys.readouterr()
    assert main(["--json", "recall", "hello", "--agent", "bob"]) == 0
    captured = capsys.readouterr()
    assert [hit["agent_id"] for hit in json.loads(captured.out)["hits"]] == ["bob"]
    assert "recall index" in captured.err


#: The store's .gitignore as continuity wrote it before the registry (c8f36b9): no projects.json.
GITIGNORE_C8F36B9 = """# Derived from events/ and rebuilt by `continuity rebuild`; local to this machine.
local/
state.json
archives/
projections/
*.tmp
"""


def test_the_generated_files_of_an_older_store_are_brought_up_to_date(old_store: Path, capsys: Capture) -> None:
    """The .gitignore, README.md and both JSON Schemas an older version wrote are rewritten by the catch-up
    that rebuilds its models (projects.json is ignored, the schema names today's events), as `rebuild` does."""
    from continuity.core.initialize import GITIGNORE, STORE_README, event_schema
    from continuity.sessions.archives import archive_schema

    (old_store / ".gitignore").write_text(GITIGNORE_C8F36B9)
    (old_store / "README.md").write_text("# runtime-continuity store\n")
    (old_store / "event.schema.json").write_bytes(b'{"title": "continuity event"}\n')
    (old_store / "archive.schema.json").write_bytes(b'{"title": "continuity archive"}\n')
    assert main(["status"]) == 0
    assert "projects.json" in (old_store / ".gitignore").read_text()
    generated = {".gitignore": GITIGNORE.encode(), "README.md": STORE_README.encode(),
                 "event.schema.json": event_schema(), "archive.schema.json": archive_schema()}
    assert {name: (old_store / name).read_bytes() for name in generated} == generated
    caught_up = {path: path.read_bytes() for path in old_store.iterdir() if path.is_file()}
    assert main(["rebuild"]) == 0
    assert {path: path.read_bytes() for path in old_store.iterdir() if path.is_file()} == caught_up
