"""`continuity init`: create a store, or bring an existing one up to date (idempotent)."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Any

from continuity.core.errors import ConfigBroken, UsageError
from continuity.core.fsio import missing_folders, remove_empty_folders, schema_json, write_atomic, write_if_changed
from continuity.core.paths import STORE_REL
from continuity.core.store import CONFIG_LIMIT, Store, check_project_name, config_json, now_us, project_name_for
from continuity.core.text import one_line
from events import clock, osfs
from events.errors import ContinuityError, WriteFailed

LANGUAGES = ("en", "zh")

STORE_README = """# runtime-continuity store

This folder is continuity's store for this project.

- `events/` is the source of truth: one immutable JSON file per event, in
  `<YYYYMMDD>/` day folders. Never edit or delete these files; `continuity verify`
  detects it if anyone does. Corrections are new events.
- The derived files (`state.json`, `projects.json`, `archives/`, `handoffs/`, `memories/`,
  the documents under `team/`) are made from the events and can be deleted at any time;
  `continuity rebuild` writes them again. A checkpoint channel's `team/<team>/_coord/` files
  are written by you, not derived.
- `local/` holds this machine's lock, temp files, node id, saved read models and indexes;
  it never travels.
- `config.json` holds the project name and options; `event.schema.json` describes
  every event type.

Record work with `continuity log` and `continuity checkpoint`; check the log with
`continuity verify`.
"""

GITIGNORE = """# Derived from events/ and rebuilt by `continuity rebuild`; local to this machine.
local/
state.json
projects.json
archives/
projections/
handoffs/
memories/
workstreams/
team/*/roles/
team/*/member/
*.tmp
"""


def init_store(root: str | Path, *, project: str | None, language: str | None,
               repair: bool = False, ignore_in_project: bool = True, adopt: bool = True) -> tuple[Store, bool]:
    """Create or refresh the store under `root`; returns the store and whether it was new.

    `ignore_in_project=False` (the compat CLI, contract I11) leaves the project's `.gitignore` alone.
    `adopt`: carry the original seed-004 tool's work history into the log (continuity/core/seed004.py);
    not for a store about to receive another clone's log (clone-store, a transfer import), which
    would carry it a second time.

    A store whose config.json is broken but which already holds events is never given a
    name guessed from the folder: `repair` takes the name from the newest event (or
    `project`), otherwise ConfigBroken.
    """
    if language is not None and language not in LANGUAGES:
        raise UsageError(f"--language must be one of: {', '.join(LANGUAGES)}")
    store = Store(root)
    store.check_safe()
    created = not os.path.exists(store.config_path)
    config: dict[str, Any] = dict(store.config)
    problem = store.config_problem
    if problem is not None and project is None and _holds_events(store):
        if not repair:
            raise ConfigBroken(f"{problem}: run `continuity init --repair` (or `continuity init --project NAME`)")
        project, _ = store.reading_project()
    # a config.json that did not parse (so reads as {}): the settings typed there are kept, not overwritten
    kept = _keep_unparsed_config(store) if problem is not None and not config else None
    if problem is not None:
        config.pop("project", None)  # whatever it held was not a valid name
    elif project is not None and config.get("project") not in (None, project) and _holds_events(store):
        # a rename would leave the log's events under the old name: every read of the store's project empty
        raise UsageError(f"this store's project is {config['project']!r} (its log holds events): running init again "
                         f"keeps it; leave --project out, or pass --project {config['project']}")
    if project is not None:
        config["project"] = project
    elif created and adopt and "project" not in config:  # over the original seed-004 store: the project its events name
        from continuity.core.seed004 import original_project

        found = original_project(store)
        if found is not None:
            config["project"] = found
    config.setdefault("project", project_name_for(str(root)))
    if language is not None:
        config["language"] = language
    config.setdefault("language", "en")
    config.setdefault("format", 1)
    check_project_name(config["project"])
    from continuity.core import seed004

    adopted = seed004.Adopted()
    made = missing_folders(store.path)  # a new store: taken away whole if init cannot finish it
    try:
        for folder in (store.path, store.events_dir, store.local_dir):
            os.makedirs(folder, exist_ok=True)
        store.check_safe()
        # over the original seed-004 tool's folder: its README, schemas, state.json kept; not over a store of ours
        # that lost its config.json (its log or node id says so): those files are this tool's own
        if created and adopt and not (_holds_events(store) or os.path.lexists(os.path.join(store.local_dir, "node"))):
            seed004.keep_original_files(store, adopted)
        home = Path(store.path)
        if (home / "config.json").is_dir() and not (home / "config.json").is_symlink():  # nothing init removes
            raise WriteFailed(f"store not initialized: {home / 'config.json'} is a folder: move it out of the store, "
                              "then run `continuity init --repair`")
        _write_if_changed(home / "config.json", config_json(config))
        write_generated(store.path, durable=True)
        from continuity.sessions.archives import archive_schema

        _write_if_changed(home / "archive.schema.json", archive_schema())
        store._config, store._config_problem = config, None
        store.config_kept = kept
        store.node()
        _start_projection(store)
    except (OSError, ContinuityError) as error:
        take_back(made, store.events_dir)
        if isinstance(error, ContinuityError):
            raise
        where = os.fsdecode(error.filename) if isinstance(error, OSError) and error.filename else store.path
        done = "store not initialized" if created else "store not updated (it was initialized before)"
        raise WriteFailed(f"{done}: {error.strerror or error} ({where})") from None
    if ignore_in_project and config.get("commit_events_with_code") is not True:  # last: the store is whole
        try:
            ignore_store_in_project(store.root)
        except OSError as error:
            path = os.path.join(store.root, ".gitignore")
            raise WriteFailed(f"store initialized, but {path} was not changed ({error.strerror or error}): the "
                              f"store is not git-ignored; run `continuity init` again, or add {PROJECT_IGNORE} to "
                              "it") from None
    flat = seed004.flat_events(store) if adopt else []
    if flat:  # the original's work history, carried into the log (once: see continuity/core/seed004.py)
        seed004.carry_events(store, flat, adopted)
    store.adopted = adopted.lines()
    return store, created


def take_back(made: list[str], events_dir: str) -> None:
    """Remove a store init made and could not finish (a full disk): a half-made store would be written into by the
    next command as if it were whole. Only folders this init made, and never once events are in it (another
    process finished the store meanwhile and wrote to it; init writes none); best effort."""
    if not made:
        return
    import shutil

    try:
        if os.listdir(events_dir):
            return
    except OSError:  # not made yet, or not a folder: no events of anyone's
        pass
    store_folder = made[0]
    if os.path.isdir(store_folder) and not os.path.islink(store_folder):
        shutil.rmtree(store_folder, ignore_errors=True)
    remove_empty_folders(made[1:])


PROJECT_IGNORE = f"{STORE_REL}/"
_IGNORES_STORE = {"/.agent/runtime-continuity/", "/.agent/runtime-continuity", ".agent/runtime-continuity",
                  PROJECT_IGNORE, ".agent/", "/.agent/", ".agent", "/.agent"}


def _keep_unparsed_config(store: Store) -> str | None:
    """Copy a config.json that does not parse to `local/` before a new one replaces it; its path, or None.

    Settings typed by hand (a sync remote, the brief's budget) are lost otherwise when one typo
    sends the user to `init --repair`. A file that cannot be read is not copied (there is nothing
    to keep); one that fails to copy stops the repair, so nothing is overwritten unkept. A symlink
    is not followed (what it names is not the store's to copy), and the copy is the owner's only.
    """
    try:
        raw = osfs.read_regular(store.config_path, follow=False, limit=CONFIG_LIMIT)
    except OSError as error:
        if error.errno == errno.EFBIG:  # what it holds is not copied, and must not be overwritten unkept either
            raise WriteFailed(f"config.json not repaired: {store.config_path} is bigger than a config holds "
                              f"({CONFIG_LIMIT >> 20} MiB) and is not copied: move it out of the store, then run "
                              "`continuity init --repair`") from None
        return None
    if not raw.strip():
        return None
    kept = os.path.join(store.local_dir, f"config.unparsed-{clock.stamp(now_us())}.json")  # microseconds: never reused
    try:
        write_atomic(kept, raw, within=store.path, mode=0o600)
        osfs.fsync_dir(store.local_dir, os.fsync)  # its name durable before config.json (another folder) is replaced
    except OSError as error:
        raise WriteFailed(f"config.json not repaired: its copy {kept} could not be written "
                          f"({error.strerror or error})") from None
    return kept


def _holds_events(store: Store) -> bool:
    try:
        return store.open_reader().head_name() is not None
    except (OSError, ContinuityError):
        return False


def ignore_store_in_project(root: str) -> None:
    """Add the store to the project's `.gitignore` (once): its events travel on the continuity branch.

    `init` skips this when config.json says `"commit_events_with_code": true`.
    """
    path = os.path.join(root, ".gitignore")
    if os.path.islink(path):  # a link a cloned repository put there: never followed out of the project
        target = os.path.realpath(path)
        if not target.startswith(os.path.realpath(root) + os.sep):
            raise WriteFailed(f"store initialized, but {one_line(path)} is a symlink out of the project "
                              f"({one_line(target)}), which init does not write through: the store is not "
                              f"git-ignored; add {PROJECT_IGNORE} to the file it names yourself")
    try:
        text = osfs.read_regular(path).decode("utf-8", "replace")
    except FileNotFoundError:
        text = ""
    except OSError as error:  # a folder or a FIFO where .gitignore belongs: say so, change nothing
        reason = error.strerror or error
        raise WriteFailed(f"{path} cannot be read ({reason}): the store was not added to it") from None
    if any(line.strip() in _IGNORES_STORE for line in text.splitlines()):
        return
    lead = "\n" if text and not text.endswith("\n") else ""
    added = (f"{lead}# continuity's store: its events travel on the `continuity` git branch "
             f"(continuity sync)\n{PROJECT_IGNORE}\n").encode()
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        size = -1
    made = os.path.realpath(path)  # what O_CREAT makes: a dangling link's target, the link itself left alone
    # Appended in place (a .gitignore that is a link stays one), and cut back to its own bytes when the
    # append fails part-way (a full disk): the user's file never ends in half a line of ours.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        written = os.write(fd, added)
        if written != len(added):
            raise OSError(errno.ENOSPC, f"short write of {path}")
        os.fsync(fd)
    except OSError:
        with contextlib.suppress(OSError):
            if size < 0:
                os.unlink(made)
            else:
                os.ftruncate(fd, size)
        raise
    finally:
        os.close(fd)


def _start_projection(store: Store) -> None:
    """Empty saved read models, so a missing one later means it was deleted (worth a warning)."""
    from continuity.readside.catchup import Saved, model_path, save
    from projections.registry import models

    try:
        for model in models():
            if not os.path.exists(model_path(store, model)):
                save(store, model, Saved(format=model.format, state=model.empty()))
    except OSError as error:
        raise WriteFailed(f"store not initialized: {error.strerror or error}") from None


def write_generated(folder: str, *, durable: bool = False) -> None:
    """The store's README.md, .gitignore and event.schema.json as this version writes them (when they differ).

    `init` writes them; a rebuild, and the catch-up that rebuilds models after an upgrade,
    write them again, so a store an older version made (a .gitignore without projects.json, a
    schema without the newer event kinds) is brought up to date and a catch-up equals a rebuild.
    """
    for name, data in (("README.md", STORE_README.encode()), (".gitignore", GITIGNORE.encode()),
                       ("event.schema.json", event_schema())):
        write_if_changed(os.path.join(folder, name), data, durable=durable, within=folder)


def event_schema() -> bytes:
    """event.schema.json: the JSON Schema of every event type, generated from the Structs."""
    from events.codec import default_codec

    return schema_json(default_codec().schema(), "continuity event")


def _write_if_changed(path: Path, data: bytes) -> None:
    write_if_changed(path, data, durable=True)
