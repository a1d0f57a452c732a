"""Timing helpers: interleaved runs and medians, so a noisy machine hits both sides alike."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

#: `continuity` through argparse and msgspec, with the plain path of `log` off (typed_log.py): the second floor.
TYPED = [sys.executable, str(Path(__file__).resolve().with_name("typed_log.py"))]


def against_both(value: float, plain: float, typed: float) -> str:
    """A figure's ratio to `continuity log` as it runs now and to the typed `log` (docs/performance.md)."""
    return f"{value / plain:.2f}x log, {value / typed:.2f}x typed log"


def time_command(argv: Sequence[str], cwd: str | None = None, env: dict[str, str] | None = None) -> float:
    """Wall time of one process run, in seconds; fails loudly if the command fails."""
    start = time.perf_counter()
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"benchmark command failed: {' '.join(argv)}: {result.stderr.decode()[-300:]}")
    return elapsed


def time_command_cpu(argv: Sequence[str], cwd: str | None = None,
                     env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one process run; fails loudly if the command fails.

    On a machine shared with other work, wall time also counts waiting for a core; CPU time
    does not (nor does it count waiting for the disk), so the two together tell the costs apart.
    """
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time_command(argv, cwd=cwd, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def interleaved(cases: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """Median seconds of each case, running the cases round-robin `rounds` times."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, case in cases.items():
            samples[name].append(case())
    return {name: statistics.median(values) for name, values in samples.items()}


def report(title: str, measured: float, floor: float, goal: str, higher_is_better: bool = False) -> str:
    """One line: the two figures and their ratio against the floor."""
    ratio = floor / measured if higher_is_better else measured / floor
    return f"{title}: {measured * 1000:.2f} ms vs floor {floor * 1000:.2f} ms -> ratio {ratio:.2f}x (goal {goal})"


def write_fixture_events(store: Any, drafts: Iterable[Any], *, start_us: int, step_us: int) -> int:
    """Seal `drafts` one `step_us` apart into `store`'s events folder, chained, without fsync.

    Fixtures, not the write path: benchmarks build stores of up to a million events with it.
    """
    import os
    import sys

    from events.codec import default_codec
    from events.names import shard_of
    from events.sealing import seal, sha256_hex

    node, codec = store.node(), default_codec()
    prev: str | None = None
    made_days: set[str] = set()
    count = 0
    for count, draft in enumerate(drafts, start=1):
        stored = seal(draft, at_us=start_us + (count - 1) * step_us, node=node, prev=prev, codec=codec)
        prev = sha256_hex(stored.raw)
        day = shard_of(stored.name)
        folder = os.path.join(store.events_dir, day)
        if day not in made_days:
            os.makedirs(folder, exist_ok=True)
            made_days.add(day)
        with open(os.path.join(folder, stored.name), "wb") as handle:
            handle.write(stored.raw)
        if count % 100_000 == 0:
            print(f"  generated {count} events", file=sys.stderr)
    return count


def cached_store(root: Path, drafts: Callable[[], Iterable[Any]], *, start_us: int, step_us: int) -> Path:
    """A store at `root` holding `drafts()` (write_fixture_events), built once and reused.

    A `.complete` marker says the store was built whole; without it the folder is built afresh.
    """
    import shutil

    from continuity.core.initialize import init_store

    done_marker = root / ".complete"
    if done_marker.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    store, _ = init_store(root, project="bench", language="en")
    write_fixture_events(store, drafts(), start_us=start_us, step_us=step_us)
    done_marker.touch()
    return root


def creation_probe(folder: Path, files: int = 2000) -> float:
    """Microseconds to create one small file, over `files` in a new folder under `folder` (kept, not deleted).

    On ext4 the cost of making a file moves by 10x and more with the file system's state: right
    after a tree of many files was deleted, new files reuse the freed inodes at a much higher
    cost (about 300 against 20 microseconds on this machine's disk). Benchmarks that write a
    million files print this before each timed step, so a round that ran in such a state shows
    it, and they delete nothing between the steps they compare.
    """
    import itertools
    import os

    for number in itertools.count():
        probe = folder / f"creation-probe-{number}"
        if not probe.exists():
            break
    probe.mkdir(parents=True)
    started = time.perf_counter()
    for index in range(files):
        fd = os.open(probe / f"{index}.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        os.write(fd, b"{}")
        os.close(fd)
    return (time.perf_counter() - started) / files * 1e6
