"""What the `runtime-continuity` modes share (contract §1, §4): values, listings, git, output.

Everything here reads the live project the way seed 004's CLI did; the writes go through
continuity's log and decisions (writes.py) and `continuity.core.fsio`.
"""

from __future__ import annotations

import math
import os
import re
import time
from typing import Any

from continuity.core.paths import SEED_COMMAND, STORE_REL

#: N of the contract (§18): the command line every output recommends.
N = SEED_COMMAND
PROGRAM = "runtime-continuity"


class Failure(Exception):
    """An error envelope `{ok: false, error, message}`, exit 2 (contract §14)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# -- time -----------------------------------------------------------------------------------
def iso_of_us(micros: int) -> str:
    """UTC `YYYY-MM-DDTHH:MM:SS.mmmZ`, milliseconds truncated."""
    seconds, rest = divmod(micros, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest // 1000:03d}Z"


def iso_ms(iso: str) -> str:
    """A continuity time (microseconds) as the contract's millisecond time."""
    return iso[:23] + "Z" if len(iso) > 24 and iso.endswith("Z") else iso


def now_us() -> int:
    """The wall clock in microseconds."""
    return time.time_ns() // 1000


# -- the project root (I8) -------------------------------------------------------------------
def project_root() -> str:
    """R: the nearest folder up holding the store, else `.agent/` (not the home folder's), else cwd."""
    explicit = os.environ.get("CONTINUITY_ROOT")
    if explicit:
        return os.path.abspath(explicit)
    cwd = os.path.abspath(os.getcwd())
    home = os.path.abspath(os.path.expanduser("~"))
    agent_dir: str | None = None
    here = cwd
    while True:
        if os.path.isdir(os.path.join(here, STORE_REL)):
            return here
        if agent_dir is None and here != home and os.path.isdir(os.path.join(here, ".agent")):
            agent_dir = here
        parent = os.path.dirname(here)
        if parent == here:
            return agent_dir or cwd
        here = parent


def contexts_root() -> str:
    """C: `$HOME/.agent/contexts` (or CONTINUITY_CONTEXTS_DIR, as for `continuity`)."""
    configured = os.environ.get("CONTINUITY_CONTEXTS_DIR")
    if configured:
        return os.path.abspath(os.path.expanduser(configured))
    return os.path.join(os.path.expanduser("~"), ".agent", "contexts")


# -- values (§4) -----------------------------------------------------------------------------
def js_string(value: Any) -> str:
    """`String(value)` as JavaScript prints it."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if isinstance(value, dict):
        return "[object Object]"
    if isinstance(value, list):
        return ",".join("" if item is None else js_string(item) for item in value)
    return str(value)


def truthy(value: Any) -> bool:
    """JavaScript truthiness: `""`, 0, false, null skipped; `[]` and `{}` count."""
    if value is None or value is False:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True


def first(*values: Any) -> Any:
    """`a || b || ...`: the first truthy value, else the last."""
    for value in values:
        if truthy(value):
            return value
    return values[-1] if values else None


def js_list(value: Any) -> list[str]:
    """List(v) of §4: a JSON list stringified, or text split into lines without bullets."""
    if isinstance(value, list):
        return [text for text in (js_string(item) for item in value) if text]
    if value is None or value == "":
        return []
    if not isinstance(value, str):
        value = js_string(value)
    items = []
    for line in re.split(r"\r?\n", value):
        text = re.sub(r"^\s*[-*]?\s*", "", line, count=1).strip()
        if text:
            items.append(text)
    return items


def csv(value: str | None) -> list[str]:
    """A comma-separated flag: split, trimmed, empties dropped."""
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def note_of(text: str | None) -> tuple[dict[str, Any], bool]:
    """The --note-json object (empty when unparseable or not an object) and whether it was `null`."""
    if text is None:
        return {}, False
    import msgspec

    try:
        value = msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return {}, False
    if value is None:
        return {}, True
    return (value if isinstance(value, dict) else {}), False


#: ASCII digits only (`\d` would take other scripts' digits, which JavaScript's Number() does not read).
_JS_NUMBER = re.compile(r"^[+-]?([0-9]+\.?[0-9]*([eE][+-]?[0-9]+)?|\.[0-9]+([eE][+-]?[0-9]+)?|Infinity)\Z")


def js_number(text: str) -> int | float | None:
    """`Number(text)` for an exit code: hex/octal/binary, decimals, exponents; else None."""
    stripped = text.strip()
    if stripped == "":
        return 0
    if not stripped.isascii() or "_" in stripped:  # Python's int() reads both; Number() reads neither
        return None
    lowered = stripped.lower()
    try:
        if lowered.startswith(("0x", "0o", "0b")):
            return int(stripped, 0)
        if not _JS_NUMBER.match(stripped) or "Infinity" in stripped:
            return None
        number = float(stripped)
    except ValueError:
        return None
    if math.isinf(number):
        return None
    return int(number) if number.is_integer() else number


def dump_json(value: Any) -> bytes:
    """2-space JSON as `JSON.stringify(value, null, 2)` prints it (non-ASCII raw), no final newline."""
    import msgspec

    return msgspec.json.format(msgspec.json.encode(clean_json(value)), indent=2)


def clean_json(value: Any) -> Any:
    """Integral floats as integers (JavaScript prints `1`, not `1.0`)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: clean_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [clean_json(item) for item in value]
    return value


# -- git (§4) --------------------------------------------------------------------------------
GIT_BRANCH = ("rev-parse", "--abbrev-ref", "HEAD")
GIT_HEAD = ("rev-parse", "--short", "HEAD")
GIT_STATUS = ("status", "--short")
GIT_RECENT = ("log", "--oneline", "-3")
GIT_DIRTY = ("diff", "--name-only", "HEAD")


def git_all(root: str, *commands: tuple[str, ...]) -> list[str]:
    """Each git command's stdout in R, trimmed at both ends (`""` on any failure); run side by side."""
    import subprocess

    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    running: list[subprocess.Popen[bytes] | None] = []
    for args in commands:
        try:
            running.append(subprocess.Popen(["git", *args], cwd=root, env=env, stdin=subprocess.DEVNULL,
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL))
        except OSError:
            running.append(None)
    outputs = []
    for proc in running:
        if proc is None:
            outputs.append("")
            continue
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            outputs.append("")
            continue
        outputs.append(out.decode("utf-8", errors="replace").strip() if proc.returncode == 0 else "")
    return outputs


def lines(text: str) -> list[str]:
    """Non-empty lines of git output."""
    return [line for line in text.splitlines() if line]
