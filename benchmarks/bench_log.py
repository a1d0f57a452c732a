"""Issue 2's figures: the hook path (`continuity log` as a new process) and in-process append.

    .venv/bin/python benchmarks/bench_log.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import interleaved, report, time_command


def hook_path(rounds: int) -> str:
    """`continuity log ...` in a new process vs `python -c "import msgspec, orjson"`."""
    exe = str(Path(sys.executable).with_name("continuity"))
    with tempfile.TemporaryDirectory() as folder:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
        time_command([exe, "init", "--project", "bench"], cwd=folder, env=env)
        argv = [exe, "log", "-m", "edited parser", "--file", "src/parse.py", "--command", "pytest -q",
                "--exit-code", "0", "--agent", "bench", "--host", "claude-code"]
        medians = interleaved(
            {
                "floor": lambda: time_command([sys.executable, "-c", "import msgspec, orjson"], env=env),
                "log": lambda: time_command(argv, cwd=folder, env=env),
            },
            rounds,
        )
    return report("hook path: continuity log (new process)", medians["log"], medians["floor"], "<= 1.5x")


def append_throughput(count: int) -> str:
    """FileEventLog.append vs the raw floor: temp write + fsync + link + dir fsync in a loop."""
    from events.filelog import FileEventLog
    from events.worklog import WorkLogged

    payload = b"x" * 700

    def floor() -> float:
        with tempfile.TemporaryDirectory() as folder:
            tmp, final = Path(folder, "tmp"), Path(folder, "final")
            tmp.mkdir()
            final.mkdir()
            start = time.perf_counter()
            for i in range(count):
                temp = str(tmp / f"{i}.tmp")
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
                os.write(fd, payload)
                os.fsync(fd)
                os.close(fd)
                os.link(temp, str(final / f"{i}.json"))
                dfd = os.open(str(final), os.O_RDONLY | os.O_DIRECTORY)
                os.fsync(dfd)
                os.close(dfd)
                os.unlink(temp)
            return (time.perf_counter() - start) / count

    def ours() -> float:
        with tempfile.TemporaryDirectory() as folder:
            log = FileEventLog(Path(folder, "events"), Path(folder, "local"), node="bench001",
                               clock_us=lambda: time.time_ns() // 1000)
            draft = WorkLogged(project="bench", message="edited parser", agent_id="bench")
            start = time.perf_counter()
            for _ in range(count):
                log.append(draft)
            return (time.perf_counter() - start) / count

    medians = interleaved({"floor": floor, "ours": ours}, 5)
    return report("in-process append (per event)", medians["ours"], medians["floor"], ">= 0.7x throughput",
                  higher_is_better=True)


def compile_project() -> None:
    """Byte-compile the packages, as a wheel install does; an editable install may not."""
    import compileall

    root = Path(__file__).resolve().parent.parent
    for package in ("continuity", "events", "projections"):
        compileall.compile_dir(str(root / package), quiet=1)


def main() -> None:
    compile_project()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20, help="process runs per side (hook path)")
    parser.add_argument("--appends", type=int, default=300, help="appends per measurement")
    args = parser.parse_args()
    print(hook_path(args.rounds))
    print(append_throughput(args.appends))


if __name__ == "__main__":
    main()
