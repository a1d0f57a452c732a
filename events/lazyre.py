"""Regular expressions compiled when first used instead of when their module loads.

Compiling a pattern costs 50-300 µs. A module that compiles its patterns at import makes every
process that loads it pay for all of them, though most commands use few: the SessionStart hook
loaded about twenty it never used (over 2 ms). `pattern(source)` gives a function that compiles
on its first call and returns the same compiled pattern from then on.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import AnyStr


def pattern(source: AnyStr, flags: int = 0) -> Callable[[], re.Pattern[AnyStr]]:
    """A function returning `re.compile(source, flags)`, compiled on its first call."""
    compiled: list[re.Pattern[AnyStr]] = []

    def get() -> re.Pattern[AnyStr]:
        if not compiled:
            compiled.append(re.compile(source, flags))
        return compiled[0]

    return get
