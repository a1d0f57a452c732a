"""`assess` (§5): a task description's size as optimistic and pessimistic hours, risk and phases."""

from __future__ import annotations

import math
import re
from typing import Any

from continuity.adapters.compat.args import Args
from continuity.adapters.compat.common import JS_SPACE

#: JavaScript's `\s` separates words in seed 004's count.
_WORD = re.compile(f"[^{re.escape(JS_SPACE)}]+")
#: (fewer than this many words, optimistic hours, pessimistic hours); the last band has no bound.
BANDS = ((10, 0.25, 0.5), (50, 0.5, 1.5), (200, 1.0, 3.0), (None, 2.0, 5.0))


def task_words(text: str | None) -> int:
    """Whitespace-separated tokens (unspaced CJK text is one token)."""
    return len(_WORD.findall(text or ""))


def assess(args: Args, project: str | None) -> dict[str, Any]:
    """Estimate from the word count: risk high above an average of 3 hours, medium above 1.5."""
    words = task_words(args.get("task-description"))
    optimistic, pessimistic = next((low, high) for bound, low, high in BANDS if bound is None or words < bound)
    avg = (optimistic + pessimistic) / 2
    risk = "high" if avg > 3 else "medium" if avg > 1.5 else "low"
    return {"ok": True, "action": "assess", "task_words": words, "optimistic": optimistic,
            "pessimistic": pessimistic, "avg": avg, "risk": risk, "phases": math.ceil(pessimistic / 3)}
