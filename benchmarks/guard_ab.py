"""The secret guard of two checkouts, side by side: its first scan in a new process, and a long text.

    .venv/bin/python benchmarks/guard_ab.py <before checkout> <after checkout> [rounds]

Each round starts one interpreter per checkout and text, alternating, that imports `events.guard` from that
checkout and times its first `redact_text` (pattern compilation included: what a hook process pays); then,
in process, the median time to redact a long mixed text (the source of this checkout with secrets planted) and
256 kB runs of tokens glued one to the next (what a quadratic scan would show).
Medians and after/before ratios are printed.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

TEXTS = {
    "work-log line": "edited the parser and ran the tests: 48 passed",
    "a URL": "curl -s https://example.com/api/v1/items | jq .",
    "a key word": "refresh the session token before the request (see auth.py)",
    "a URL and a key word": "git clone https://example.com/org/repo.git && export TOKEN_TTL=3600",
}

FIRST = """
import sys, time
sys.path.insert(0, sys.argv[1])
from events import guard
start = time.perf_counter()
guard.redact_text(sys.argv[2])
print((time.perf_counter() - start) * 1e3)
"""

LONG = """
import json, pathlib, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from events import guard
source = "".join(p.read_text() for p in sorted(pathlib.Path(sys.argv[1], "continuity").rglob("*.py"))[:60])
planted = "ghp" + "_" + "a1B2" * 9 + " password=" + "Tr0ub4" + "dor3x "
texts = {"a 400 kB text": ("token " + source[:200_000] + planted) * 2}
for name, unit in (("xoxb-1-aaaaaaaa_", "xoxb-" + "1-" + "a" * 8 + "_"), ("AKIA...-x", "AKIA" + "B" * 16 + "-x"),
                   ("ghp_...-", "ghp" + "_" + "a" * 36 + "-")):
    texts[f"256 kB of {name}"] = unit * (256 * 1024 // len(unit))  # many tokens in one unbroken run
result = {}
for name, text in texts.items():
    guard.redact_text(text)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        guard.redact_text(text)
        times.append(time.perf_counter() - start)
    result[name] = statistics.median(times) * 1e3
print(json.dumps(result))
"""


def first_scan(checkout: str, text: str) -> float:
    done = subprocess.run([sys.executable, "-c", FIRST, checkout, text], capture_output=True, text=True, check=True)
    return float(done.stdout)


def main() -> None:
    before, after = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 21
    results: dict[str, dict[str, list[float]]] = {name: {"before": [], "after": []} for name in TEXTS}
    for _ in range(rounds):
        for name, text in TEXTS.items():
            for side, checkout in (("before", before), ("after", after)):
                results[name][side].append(first_scan(checkout, text))
    print(f"first redact_text in a new process, ms (median of {rounds}):")
    for name, sides in results.items():
        old, new = statistics.median(sides["before"]), statistics.median(sides["after"])
        print(f"  {name:24} before {old:7.2f}  after {new:7.2f}  ratio {new / old:5.2f}x")
    longs = {side: [json.loads(subprocess.run([sys.executable, "-c", LONG, checkout], capture_output=True, text=True,
                                              check=True).stdout) for _ in range(3)]
             for side, checkout in (("before", before), ("after", after))}
    print("in process, ms (median of 3 processes, each the median of 5):")
    for name in longs["before"][0]:
        old, new = (statistics.median(run[name] for run in longs[side]) for side in ("before", "after"))
        print(f"  {name:30} before {old:7.1f}  after {new:7.1f}  ratio {new / old:5.2f}x")
    print(json.dumps({"rounds": rounds}))


if __name__ == "__main__":
    main()
