"""Progress for long work (rebuild, sync, clone-store, the recall index) on stderr, when it is a terminal.

Nothing is printed when stderr is piped or redirected, or in `--json` mode (`for_output`
gives None then), so scripts and logs never see a bar. tqdm is imported only when a bar
is first drawn: a command with nothing to do pays nothing, and no other command loads it.
Bars are cleared when the work ends (`leave=False`): the result lines stay clean.
"""

from __future__ import annotations

import sys
from typing import Any


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class Bar:
    """A progress callback `(done, total)`: a bar on stderr from its first call, if stderr is a terminal."""

    def __init__(self, label: str, *, stream: Any = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self._bar: Any = None
        self._enabled = _is_terminal(self.stream)

    def __call__(self, done: int, total: int | None) -> None:
        """Show `done` of `total` (None: a count with no end known)."""
        if not self._enabled:
            return
        if self._bar is None:
            from tqdm import tqdm  # type: ignore[import-untyped]

            self._bar = tqdm(total=total, desc=self.label, unit=" events", file=self.stream, leave=False,
                             dynamic_ncols=True, mininterval=0.1)
        if total is not None and self._bar.total != total:
            self._bar.total = total
        self._bar.update(done - self._bar.n)  # through update(), so the rate shown is real

    def message(self, text: str) -> None:
        """Show a line of news in place of the bar (sync's stages: fetching, writing, restoring)."""
        if not self._enabled:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=None, file=self.stream, leave=False, dynamic_ncols=True,
                             bar_format="{desc}")
        from continuity.core.text import one_line

        self._bar.set_description_str(one_line(f"{self.label}: {text}"))

    def close(self) -> None:
        """Clear the bar (if one was drawn)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def for_output(label: str, *, as_json: bool) -> Bar | None:
    """A progress bar for a command's long work, or None with --json (or when stderr is not a terminal)."""
    if as_json or not _is_terminal(sys.stderr):
        return None
    return Bar(label)


def bar(label: str) -> Bar:
    """A progress callback for `label` on stderr (silent unless stderr is a terminal)."""
    return Bar(label)
