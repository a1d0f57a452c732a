"""`continuity rebuild` and `continuity replay --until X --out DIR`."""

from __future__ import annotations

import argparse
import os
from typing import Any

from continuity.cli.common import Output, open_store


def register(commands: Any, name: str, *, common: argparse.ArgumentParser, **_: Any) -> None:
    """Add `rebuild` or `replay`."""
    if name == "rebuild":
        parser = commands.add_parser(
            "rebuild", help="rebuild every projection from the events", parents=[common],
            description="Fold the whole log again and rewrite every derived file (state.json, projects.json, "
            "archives/, the user-level Markdown, and the recall index when there is one), then remove the temp "
            "files a killed writer left in the store, the Markdown folder or `.ai-bridge/` (`.<name>.<pid>.tmp` "
            "whose process is gone or that are over an hour old). Progress shows on stderr when it is a terminal "
            "(never with --json). A file of the store it cannot write (a full disk) is exit 5 naming what failed; "
            "the log is untouched, and the next catch-up or rebuild writes what is missing. The user-level Markdown "
            "(outside the store: a read-only home folder) that cannot be written is a warning.",
        )
        parser.set_defaults(handler=_rebuild)
        return
    parser = commands.add_parser(
        "replay", help="materialize the projections as of an earlier point", parents=[common],
        description="Write state.json, projects.json, archives/, the Markdown archives and the team, handoff and "
        "workstream documents as the log stood at a point, into a folder of your choice, for inspection after an "
        "incident (memory files and the recall index are not written).",
    )
    parser.add_argument("--until", required=True, metavar="EVENT_ID|ISO_TIME", help="the last point included")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="folder to write into: a new or empty one, or one an earlier replay wrote (what it "
                        "wrote is replaced; never a store, a project's own folder or the live Markdown archives' "
                        "folder)")
    parser.set_defaults(handler=_replay)


def _clear_planted_models(store: Any, names: tuple[str, ...]) -> list[str]:
    """Remove what stands where a saved model belongs and is no file (a FIFO, a link, an empty folder): every
    catch-up refused to save over it ("projections not saved", exit 5 for `rebuild` too), and the recovery command
    could not recover. A saved model is rebuilt from the log, so nothing is lost; a folder that holds anything is
    left, and the save names it. The lines say what was removed."""
    import stat

    from continuity.readside.catchup import model_path, models_dir
    from projections.registry import REGISTRY

    for folder in (store.local_dir, models_dir(store)):  # never through a linked folder (out of the store)
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                return []
        except OSError:
            return []
    removed = []
    for name in names:
        path = model_path(store, REGISTRY[name])
        try:
            found = os.lstat(path)
            if stat.S_ISDIR(found.st_mode):
                os.rmdir(path)
            elif not stat.S_ISREG(found.st_mode):
                os.unlink(path)
            else:
                continue
        except OSError:
            continue
        removed.append(f"removed what stood where the saved {name} model belongs (not a file): {path}")
    return removed


def _rebuild(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.cli.progress import for_output
    from continuity.readside.writers import refresh

    store = open_store(args)
    from projections.registry import REGISTRY

    cleared = _clear_planted_models(store, tuple(REGISTRY))
    progress = for_output("rebuilding projections", as_json=out.as_json)
    try:
        outcome = refresh(store, tuple(REGISTRY), rebuild=True, progress=progress)  # memory files are swept in full
    finally:
        if progress is not None:
            progress.close()
    if not outcome.saved:
        from events.errors import WriteFailed

        raise WriteFailed(next(w for w in outcome.warnings if w.startswith("projections not saved")))
    if outcome.unwritten:  # what a rebuild is for: the documents, written again from the log
        from events.errors import WriteFailed

        raise WriteFailed(f"rebuild not finished: {outcome.unwritten[0]}; the log is intact, and `continuity "
                          "rebuild` writes them once they can be written")
    indexed = _rebuild_recall_index(store, out)
    from continuity.core.leftovers import remove_stale_temps_everywhere
    from continuity.core.store import now_us

    removed, not_removed = remove_stale_temps_everywhere(store, now_us() / 1e6)
    warnings = [*cleared, *outcome.warnings, *(indexed[1] if indexed else []), *not_removed]
    warn(warnings)
    out.emit({"ok": True, "action": "rebuild", "events": outcome.folded, "warnings": warnings,
              "recall_indexed": indexed[0] if indexed else None, "temps_removed": removed},
             f"rebuilt from {outcome.folded} events" + (f"; recall index: {indexed[0]} events" if indexed else "")
             + (f"; removed {len(removed)} left-over temp file(s)" if removed else ""))
    return 0


def _rebuild_recall_index(store: Any, out: Output) -> tuple[int, list[str]] | None:
    """Rebuild the recall index when there is one (it is made by the first `recall`); (rows, warnings)."""
    from continuity.recall.index import index_path

    if not os.path.lexists(index_path(store)):
        return None
    from continuity.cli.progress import for_output
    from continuity.recall.service import rebuild_index

    progress = for_output("indexing for recall", as_json=out.as_json)
    try:
        outcome = rebuild_index(store, progress=progress)
    finally:
        if progress is not None:
            progress.close()
    return outcome.indexed, outcome.warnings


def _replay(args: argparse.Namespace, out: Output) -> int:
    from continuity.cli.output import warn
    from continuity.readside.writers import replay_into

    if args.out == "":  # `--out "$DIR"` with DIR unset: never the working folder in its place
        from continuity.core.errors import UsageError

        raise UsageError("--out is empty: name the folder to replay into")
    store = open_store(args)
    result = replay_into(store, args.until, os.path.abspath(args.out))
    warn(result["warnings"])  # said on stderr too, as every read says what it left out (--json carries them)
    out.emit({"ok": True, "action": "replay", **result},
             f"replayed {result['events']} events up to {args.until} into {result['out']}")
    return 0
