"""`continuity ARGS` with the plain append path of `log` and `checkpoint` switched off: the typed path.

    python benchmarks/typed_log.py log -m "edited" --agent a

A second floor for the benchmarks whose goals read "within N x of `continuity log`": they
were set when `log` ran through argparse and msgspec, as the commands they measure still
do. Since the hook path's Node goal gave `log` a standard-library path twice as fast, those
benchmarks print both ratios: against `continuity log` as it runs now, and against this,
the same command as the other commands run (docs/performance.md, "The floor moved").
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import continuity.cli as cli


def _typed_only(args: list[str]) -> None:
    """Never take the plain path: argparse and the msgspec handlers decide, as before the plain path existed."""
    del args


def main() -> None:
    cli._log_fast_path = _typed_only  # type: ignore[assignment]
    cli.run()


if __name__ == "__main__":
    main()
