"""Timing helpers: interleaved runs and medians, so a noisy machine hits both sides alike."""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable, Sequence


def time_command(argv: Sequence[str], cwd: str | None = None, env: dict[str, str] | None = None) -> float:
    """Wall time of one process run, in seconds; fails loudly if the command fails."""
    start = time.perf_counter()
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"benchmark command failed: {' '.join(argv)}: {result.stderr.decode()[-300:]}")
    return elapsed


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
