"""Catch-up after 10 new events, in process, for one source tree: compare two commits side by side.

    <tree>/.venv/bin/python benchmarks/catchup_ab.py <tree> <store root> [rounds]

Run it alternately with the checkout of each commit (`git worktree add`), on the same
store (for example $TMPDIR/continuity-bench/<size>, built by bench_projections.py); it
prints the median milliseconds of `refresh` after each batch of 10 appended events. Works
with the module layout before and after the feature folders.
"""

from __future__ import annotations

import statistics
import sys
import time

WARM_UP = 3


def main() -> None:
    tree, root = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 11
    sys.path.insert(0, tree)
    try:
        from continuity.core.store import Store
        from continuity.readside.writers import refresh
        from events.worklog import WorkLogged
    except ImportError:  # the layout before the feature folders
        from continuity.derived import refresh  # type: ignore[no-redef]
        from continuity.store import Store  # type: ignore[no-redef]
        from events.work import WorkLogged  # type: ignore[no-redef]
    from events.filelog import FileEventLog

    store = Store(root)
    refresh(store)
    log = FileEventLog(store.events_dir, store.local_dir, node=store.node(),
                       clock_us=lambda: 1_700_000_000_000_000 + 10**13)
    samples = []
    # Untimed first rounds: a tree whose model formats differ from the saved ones rebuilds them in the first
    # refresh (reading every event), and its first writes of new files settle before the timed ones.
    for i in range(-WARM_UP, rounds):
        log.append_many([WorkLogged(project="bench", message=f"new {i}.{k}") for k in range(10)])
        start = time.perf_counter()
        outcome = refresh(store)
        if i >= 0:
            samples.append(time.perf_counter() - start)
        assert outcome.folded == 10 and not outcome.rebuilt, outcome.warnings
    print(f"{statistics.median(samples) * 1000:.2f}")


if __name__ == "__main__":
    main()
