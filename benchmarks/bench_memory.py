"""Peak memory (and wall time) of every command that reads the log, across log sizes.

    .venv/bin/python benchmarks/bench_memory.py [--sizes 1000,100000] [--rounds N] [--only NAME,...]

Each size's store (bench_projections.py builds them once under $TMPDIR/continuity-bench/<size>)
is copied into a temporary folder first: almost every command catches the read models up,
and `archive` and the hooks append. The copy is caught up once (`rebuild`), then every case
runs `rounds` times, round-robin; peak RSS is the child's own (GNU time's %M), wall time the
median. The floor is `python -c "import msgspec, orjson"` in the same run. A command whose
peak grows with the log where it should not shows a ratio well above 1.00x between sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_log import compile_project  # noqa: E402
from benchmarks.bench_projections import EXE, env_for, generate  # noqa: E402

Argv = list[str]
#: A case: (argv, stdin bytes) for a store root.
Case = Callable[[Path], tuple[Argv, bytes]]


#: GNU time reports a child's own peak. `os.wait4` counts, for a child forked from this process,
#: the pages it shared with this process before exec: a floor as high as this driver's own size.
GNU_TIME = "/usr/bin/time"


def measure(argv: Argv, stdin: bytes, env: dict[str, str], cwd: Path) -> tuple[int, float]:
    """Peak RSS in KiB and wall seconds of one run; fails loudly when the command fails."""
    with tempfile.TemporaryFile() as given, tempfile.NamedTemporaryFile() as peak:
        given.write(stdin)
        given.seek(0)
        timed = [GNU_TIME, "-f", "%M", "-o", peak.name, *argv] if os.path.exists(GNU_TIME) else argv
        start = time.perf_counter()
        process = subprocess.Popen(timed, stdin=given, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   env=env, cwd=cwd)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        errors = process.stderr.read() if process.stderr else b""
        if process.stderr:
            process.stderr.close()
        if process.returncode != 0:
            raise SystemExit(f"benchmark command failed ({process.returncode}): {' '.join(argv)}: {errors[-300:]!r}")
        reported = peak.read().split()
    return int(reported[-1]) if timed is not argv else usage.ru_maxrss, elapsed


def mcp_session(*calls: tuple[str, dict[str, object]]) -> bytes:
    """JSON-RPC lines for an MCP client: initialize, then one tools/call each, then end of input."""
    lines: list[dict[str, object]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    for number, (name, arguments) in enumerate(calls, start=1):
        lines.append({"jsonrpc": "2.0", "id": number, "method": "tools/call",
                      "params": {"name": name, "arguments": arguments}})
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def points(root: Path) -> tuple[str, str]:
    """An early and a late event id of the store (the first event; the tenth from the end)."""
    events = root / ".agent" / "runtime-continuity" / "events"
    days = sorted(day for day in os.listdir(events) if day.isdigit())
    first = sorted(os.listdir(events / days[0]))[0]
    late = sorted(os.listdir(events / days[-1]))
    late_name = late[-10] if len(late) >= 10 else late[0]

    def event_id(name: str) -> str:
        stamp, node = name.split("-")[:2]
        return f"RCE-{stamp}-{node}"

    return event_id(first), event_id(late_name)


def cli(*words: str) -> Case:
    """A `continuity` command run with `--root` on the store."""
    return lambda root: ([EXE, *words, "--root", str(root)], b"")


def as_of(command: tuple[str, ...], which: int) -> Case:
    """A command with `--as-of` the store's early (0) or late (1) point."""
    return lambda root: ([EXE, *command, "--root", str(root), "--as-of", points(root)[which]], b"")


def hook_start(root: Path) -> tuple[Argv, bytes]:
    """The Claude Code SessionStart hook, run in the project."""
    payload = {"session_id": "8f2c1e9a-4b7d-4c1e-9a3f-2d6b8e0c5a71", "transcript_path": "/tmp/t.jsonl",
               "cwd": str(root), "hook_event_name": "SessionStart", "source": "startup"}
    return [EXE, "hook", "claude-code"], json.dumps(payload).encode()


CASES: dict[str, Case] = {
    "status": cli("status"),
    "resume-bundle": cli("resume-bundle"),
    "resume-bundle --as-of early": as_of(("resume-bundle",), 0),
    "resume-bundle --as-of late": as_of(("resume-bundle",), 1),
    "status --as-of late": as_of(("status",), 1),
    "events list": cli("events", "list"),
    "events list --json": cli("events", "list", "--json"),
    "events list --limit 10": cli("events", "list", "--limit", "10"),
    "events list --last 10": cli("events", "list", "--last", "10"),
    "events list --kind archive.created --last 3 --json": cli("events", "list", "--kind", "archive.created",
                                                              "--last", "3", "--json"),
    "events tail": cli("events", "tail"),
    "verify": cli("verify"),
    "rebuild": cli("rebuild"),
    "archive": cli("archive", "--gate", "agent", "--reason", "bench"),
    "restore --list": cli("restore", "--list"),
    "restore --list --as-of late": as_of(("restore", "--list"), 1),
    "task list": cli("task", "list"),
    "memory list": cli("memory", "list"),
    "briefing core": cli("briefing", "core"),
    "health core": cli("health", "core"),
    "work status": cli("work", "status"),
    "recall": cli("recall", "edited file"),
    "timeline": cli("timeline"),
    "doctor": cli("doctor", "--no-probe"),
    "mcp status + resume_bundle + events": lambda root: (
        [EXE, "mcp", "--root", str(root)],
        mcp_session(("status", {}), ("resume_bundle", {}), ("events", {"limit": 20}))),
    "hook claude-code SessionStart": hook_start,
}


def copy_store(size: int, into: Path) -> Path:
    """A caught-up copy of the size's benchmark store (the original is never written)."""
    copy = into / str(size)
    shutil.copytree(generate(size), copy, symlinks=True)
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", help="comma-separated case names (default: all)")
    parser.add_argument("--store", action="append", default=[], metavar="SIZE=DIR",
                        help="use this already-copied store for SIZE instead of copying one")
    args = parser.parse_args()
    compile_project()  # compiling on first import would count in the first run's peak
    sizes = [int(size) for size in args.sizes.split(",")]
    chosen = {name: case for name, case in CASES.items() if not args.only or name in args.only.split(",")}
    given = dict(item.split("=", 1) for item in args.store)
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as scratch:
        home = Path(scratch, "home")  # `archive` writes Markdown under ~/.agent: a home of its own
        home.mkdir()
        env = env_for(home)
        stores = {size: Path(given[str(size)]) if str(size) in given else copy_store(size, Path(scratch))
                  for size in sizes}
        for root in stores.values():
            subprocess.run([EXE, "rebuild", "--root", str(root)], env=env, check=True, capture_output=True)
        floor = [measure([sys.executable, "-c", "import msgspec, orjson"], b"", env, Path(scratch))
                 for _ in range(args.rounds)]
        floor_kib = statistics.median(rss for rss, _ in floor)
        print(f"floor (python -c 'import msgspec, orjson'): {floor_kib / 1024:.1f} MiB")
        print("| command | " + " | ".join(f"{size:,} events: peak MiB, wall ms" for size in sizes)
              + f" | peak {sizes[-1]:,} / {sizes[0]:,} |")
        print("|---|" + "---|" * len(sizes) + "---|")
        for name, case in chosen.items():
            samples: dict[int, list[tuple[int, float]]] = {size: [] for size in sizes}
            for _ in range(args.rounds):
                for size, root in stores.items():
                    argv, stdin = case(root)
                    samples[size].append(measure(argv, stdin, env, root))
            peaks = {size: statistics.median(rss for rss, _ in runs) for size, runs in samples.items()}
            walls = {size: statistics.median(wall for _, wall in runs) for size, runs in samples.items()}
            cells = [f"{peaks[size] / 1024:.1f}, {walls[size] * 1000:.0f}" for size in sizes]
            print(f"| `{name}` | " + " | ".join(cells) + f" | {peaks[sizes[-1]] / peaks[sizes[0]]:.2f}x |",
                  flush=True)


if __name__ == "__main__":
    main()
