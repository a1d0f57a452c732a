"""Helpers shared by tests: running the CLI as a real process."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def gen_docs() -> Any:
    """scripts/gen_docs.py as a module (the generated files are checked against what it renders)."""
    spec = importlib.util.spec_from_file_location("gen_docs", REPO / "scripts" / "gen_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cli_process(*args: str, cwd: Path, env: dict[str, str] | None = None,
                stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python -m continuity ARGS` as a new process."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "continuity", *args],
        cwd=cwd, env=full_env, input=stdin, capture_output=True, text=True, timeout=60,
    )


def default_sigint() -> None:
    """A child's `preexec_fn` that gives it SIGINT's default: a test run started in the background by a
    non-interactive shell (`... &`) ignores SIGINT, and a child inherits an ignored signal, so a test of Ctrl-C
    would wait for good."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def all_event_files(root: Path) -> list[Path]:
    """Every file under the store's events folder."""
    events = root / ".agent" / "runtime-continuity" / "events"
    return sorted(p for p in events.rglob("*") if p.is_file())


def pin_node(root: Path, node: str) -> None:
    """Make `node` the node id of the store under `root` (a node file records the folder it was made in: a copied
    store would otherwise make a new one on its first write)."""
    from events.durable import node_record

    local = root / ".agent" / "runtime-continuity" / "local"
    local.mkdir(exist_ok=True)
    (local / "node").write_bytes(node_record(node, str(local)))


def make_read_only(store: Path) -> list[Path]:
    """Make the store really read-only: a read-only bind mount as root, else permissions."""
    if os.geteuid() != 0:
        for folder in (store / "events", store / "local"):
            os.chmod(folder, 0o555)
        return []
    mounted = subprocess.run(["mount", "--bind", str(store), str(store)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("root without mount rights: read-only is covered by the injected EROFS test")
    remount = subprocess.run(["mount", "-o", "remount,ro,bind", str(store)], capture_output=True)
    if remount.returncode != 0:
        subprocess.run(["umount", str(store)], check=True)
        pytest.skip("cannot remount read-only: covered by the injected EROFS test")
    return [store]


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """Environment variables (a CONTINUITY_* identity, say) for the commands inside, restored after."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def branch_event_paths(repository: Path, ref: str) -> set[str]:
    """The `events/<day>/<name>` paths a ref's whole history holds (a commit's tree holds only what it adds
    under sync's `delta` layout, every event of its history under `full`)."""
    listing = subprocess.run(["git", "-C", str(repository), "rev-list", "--objects", ref], capture_output=True,
                             text=True, check=True).stdout
    paths = (line.partition(" ")[2] for line in listing.splitlines())
    return {path for path in paths if path.startswith("events/") and path.endswith(".json") and path.count("/") == 2}


def set_config(root: Path, **values: object) -> None:
    """Set keys of a project's config.json (its store under `root`), keeping the rest."""
    import json

    config = root / ".agent" / "runtime-continuity" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), **values}))


@contextlib.contextmanager
def release_without(monkeypatch: pytest.MonkeyPatch, kind: str) -> Iterator[None]:
    """This release as one from before the event kind `kind` existed: it does not know it, and reads past it."""
    from events.codec import Codec, default_codec
    from events.errors import UnknownEventType

    decode = Codec.decode
    marker = f'"kind":"{kind}"'.encode()

    def older(self: Codec, raw: bytes) -> object:
        if marker in raw:
            raise UnknownEventType(kind)
        return decode(self, raw)

    with monkeypatch.context() as older_release:
        older_release.setattr(Codec, "decode", older)
        older_release.delitem(default_codec().current, kind)
        yield


def put_continuity_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `continuity` on PATH (so an install's project scope needs no local settings file) and no XDG_STATE_HOME
    from outside."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "continuity").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "continuity").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)


def plant_impersonation(genuine: Path, claim: str, **changes: object) -> Path:
    """Beside a genuine event file, a well-named one (its hash matches its bytes, as a peer's pushed file does)
    whose content is the genuine event's with `changes`, claiming its id and time, or (`claim` "another time") an
    id and a time its name does not spell. The new file's path."""
    import hashlib
    import json

    from events import names

    forged = {**json.loads(genuine.read_bytes()), "message": "IMPERSONATED approval", **changes}
    if claim == "another time":
        forged["event_id"] = "RCE-" + genuine.name[:22] + "-forger01"
        forged["created_at"] = "1960-01-01T00:00:00.000000Z"
    raw = json.dumps(forged).encode()
    path = genuine.parent / names.file_name(genuine.name[:16] + "999999", "forger01", hashlib.sha256(raw).hexdigest())
    path.write_bytes(raw)
    return path
