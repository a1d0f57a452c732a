"""`assess`: how risky a task description reads, and in how many phases to do it (text only)."""

from __future__ import annotations

import math
import re
from typing import Any

from continuity.adapters.compat.args import Args

HIGH_RISK_WORDS = 200
MEDIUM_RISK_WORDS = 80
MAX_PHASES = 6
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
#: A word: a run of non-space characters, except that each CJK character counts as one.
_WORD = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")
#: Words that make even a short task worth splitting and checkpointing.
RISK_TERMS = ("migrat", "delete", "drop table", "production", "security", "credential", "schema", "refactor",
              "rewrite", "迁移", "删除", "生产", "安全", "重构")


def word_count(text: str) -> int:
    """Words in a description; each CJK character counts as a word."""
    return len(_WORD.findall(text))


def assess(args: Args, project: str | None) -> dict[str, Any]:
    """Risk (low, medium, high) and phases: over 200 words is high risk with at least 2 phases."""
    text = args.text("task-description") or ""
    words = word_count(text)
    lowered = text.lower()
    terms = [term for term in RISK_TERMS if term in lowered]
    if words > HIGH_RISK_WORDS:
        risk, phases = "high", max(2, min(MAX_PHASES, math.ceil(words / 150)))
    elif words > MEDIUM_RISK_WORDS or terms:
        risk, phases = "medium", 2
    else:
        risk, phases = "low", 1
    advice = ("one pass; log when done" if phases == 1 else
              f"split into {phases} phases; checkpoint after each, archive before switching hosts")
    return {"ok": True, "action": "assess", "project": project, "risk": risk, "phases": phases,
            "word_count": words, "risk_terms": terms, "recommendation": advice}
