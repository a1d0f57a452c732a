"""Issue 15's figures: `recall` against `continuity log`, across log sizes, and the index's catch-up.

    .venv/bin/python benchmarks/bench_recall.py [--sizes 1000,100000] [--rounds N]

Stores are generated once under $TMPDIR/continuity-bench/recall-<size> (events written
without fsync: fixtures, not the write path), with text drawn from a 4,000-word vocabulary
at Zipf-like frequencies, so queries match as many events as real logs would: a rare
word a handful, a common one a few percent. Figures are medians of interleaved runs,
as ratios against a floor measured in the same run:

- recall (new process, index current) against `continuity log` (new process, another store);
- index catch-up after 10 new events (in process) on the biggest store against the smallest.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_log import compile_project  # noqa: E402
from benchmarks.bench_projections import BENCH_HOME, EXE, START_US, STEP_US, env_for  # noqa: E402
from benchmarks.common import cached_store, interleaved, time_command  # noqa: E402

VOCABULARY = 4000
#: Queries of one, two and three words, from common to rare (word ranks in the vocabulary).
QUERIES = {"common word": [3], "two common words": [3, 6], "two mid words": [40, 90],
           "rare phrase": [700, 1500, 2500]}


def word(rank: int) -> str:
    """The vocabulary's word of a rank (made-up, pronounceable, stable across runs)."""
    syllables = ("ka", "lo", "mi", "ren", "sto", "vu", "pe", "dra", "zin", "qua")
    out, n = "", rank + 11
    while n:
        n, digit = divmod(n, len(syllables))
        out += syllables[digit]
    return out


def generate(size: int) -> Path:
    """A store with `size` events of varied text (reused when already built)."""
    from events.base import Event, Summary
    from events.worklog import CheckpointRecorded, WorkLogged

    rng = random.Random(15)
    weights = [1 / (rank + 1) for rank in range(VOCABULARY)]
    words = [word(rank) for rank in range(VOCABULARY)]

    def sentence(count: int) -> str:
        return " ".join(rng.choices(words, weights, k=count))

    def drafts() -> Iterator[Event]:
        for i in range(size):
            envelope = {"project": "bench", "host": "claude-code", "agent_id": f"agent{i % 7}"}
            if i % 20 == 0:
                yield CheckpointRecorded(**envelope, message=sentence(8),
                                         summary=Summary(next=(sentence(10),), blockers=(sentence(6),)))
            else:
                yield WorkLogged(**envelope, message=sentence(12))

    return cached_store(BENCH_HOME / f"recall-{size}", drafts, start_us=START_US, step_us=STEP_US)


def query_text(ranks: list[int]) -> str:
    return " ".join(word(rank) for rank in ranks)


def bench_recall(sizes: list[int], rounds: int, home: Path) -> list[str]:
    """recall (new process, index current) at each size, against `continuity log` in a scratch store."""
    env = env_for(home)
    stores = {size: generate(size) for size in sizes}
    for root in stores.values():  # bring each index up to date first: the figure is the query, not a build
        subprocess.run([EXE, "recall", "warm", "--root", str(root)], env=env, check=True, capture_output=True)
    lines = []
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run([EXE, "init", "--project", "floor"], cwd=scratch, env=env, check=True, capture_output=True)
        for label, ranks in QUERIES.items():
            cases = {"log": lambda: time_command([EXE, "log", "-m", "benchmark entry"], cwd=scratch, env=env)}
            for size, root in stores.items():
                argv = [EXE, "recall", query_text(ranks), "--root", str(root)]
                cases[str(size)] = lambda argv=argv: time_command(argv, env=env)
            medians = interleaved(cases, rounds)
            floor = medians["log"]
            figures = ", ".join(f"{size:,}: {medians[str(size)] * 1000:.1f} ms = {medians[str(size)] / floor:.2f}x"
                                for size in sizes)
            flat = medians[str(sizes[-1])] / medians[str(sizes[0])]
            lines.append(f"recall, {label} ({query_text(ranks)!r}): `continuity log` {floor * 1000:.1f} ms; "
                         f"{figures} (goal <= 1.5x); {sizes[-1]:,} vs {sizes[0]:,}: {flat:.2f}x")
    return lines


def bench_catch_up(sizes: list[int], rounds: int) -> str:
    """Index catch-up after 10 new events (in process), biggest store against smallest."""
    from continuity.core.store import find_store
    from continuity.recall import index
    from events.worklog import WorkLogged

    stores = {size: find_store(root=str(generate(size))) for size in (sizes[0], sizes[-1])}

    def case(store: object) -> float:
        log = store.open_log()  # type: ignore[attr-defined]
        for i in range(10):
            log.append(WorkLogged(project="bench", message=f"new event {i} {word(i * 37)} {word(i * 91)}"))
        start = time.perf_counter()
        connection, outcome = index.open_current(store, store.open_reader())  # type: ignore[attr-defined, arg-type]
        connection.close()
        elapsed = time.perf_counter() - start
        assert outcome.read == 10 and not outcome.rebuilt, outcome
        return elapsed

    for store in stores.values():  # current before timing
        connection, _ = index.open_current(store, store.open_reader())  # type: ignore[arg-type]
        connection.close()
    medians = interleaved({str(size): (lambda store=store: case(store)) for size, store in stores.items()}, rounds)
    small, big = medians[str(sizes[0])], medians[str(sizes[-1])]
    return (f"index catch-up after 10 new events: {sizes[0]:,}: {small * 1000:.2f} ms, {sizes[-1]:,}: "
            f"{big * 1000:.2f} ms -> {big / small:.2f}x (goal <= 1.2x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))
    compile_project()
    home = BENCH_HOME / "home"
    home.mkdir(parents=True, exist_ok=True)
    for line in bench_recall(sizes, args.rounds, home):
        print(line)
    print(bench_catch_up(sizes, args.rounds))


if __name__ == "__main__":
    main()
