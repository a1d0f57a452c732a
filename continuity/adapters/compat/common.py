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


def mtime_ms(stat: os.stat_result) -> float:
    """A file's mtime as Node's `mtimeMs`: seconds × 1000 + nanoseconds / 10⁶, in doubles."""
    seconds, nanoseconds = divmod(stat.st_mtime_ns, 1_000_000_000)
    return seconds * 1000 + nanoseconds / 1e6


def iso_of_ms(millis: float) -> str:
    """`new Date(millis).toISOString()`: the fraction of a millisecond dropped (toward zero)."""
    return iso_of_us(int(millis) * 1000)


def now_us() -> int:
    """The wall clock in microseconds."""
    return time.time_ns() // 1000


# -- the project root (I8) -------------------------------------------------------------------
def project_root() -> str:
    """R: the nearest folder up holding the store, else `.agent/` (not the home folder's), else cwd."""
    explicit = os.environ.get("CONTINUITY_ROOT")
    if explicit:
        return os.path.abspath(explicit)
    try:
        cwd = os.path.abspath(os.getcwd())
    except FileNotFoundError:  # seed 004's crash shape (exit 1, one line), saying what happened
        raise FileNotFoundError(2, "the working folder no longer exists (removed under this shell?)") from None
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
    """C: `$HOME/.agent/contexts`, or where R's store writes its Markdown archives instead, as `continuity` does
    (CONTINUITY_CONTEXTS_DIR, `contexts_dir` in R's config.json; an empty or relative HOME read as the account's
    home). The reads look where the archives are written: restore, status and list-contexts looked in
    `~/.agent/contexts` while archive wrote where config.json said."""
    from continuity.core.paths import contexts_dir, default_contexts
    from continuity.core.store import Store

    try:
        root = project_root()
    except OSError:  # the working folder is gone: no store to ask
        return default_contexts()
    return contexts_dir(Store(root))


# -- values (§4) -----------------------------------------------------------------------------
#: What JavaScript's trim() and `\s` take (WhiteSpace and LineTerminator): not NEL or U+001C-U+001F, which
#: Python's strip() and `\s` take, but the byte order mark, which they keep.
JS_SPACE = "\t\n\v\f\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_SPACE_CLASS = "[" + re.escape(JS_SPACE) + "]"
_BULLET = re.compile(f"^{_JS_SPACE_CLASS}*[-*]?{_JS_SPACE_CLASS}*")


def js_trim(text: str) -> str:
    """`text.trim()` as JavaScript trims."""
    return text.strip(JS_SPACE)


def js_string(value: Any) -> str:
    """`String(value)` as JavaScript prints it."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):  # JSON.parse reads every number as a double
        if abs(value) <= 2**53:
            return str(value)
        try:
            value = float(value)
        except OverflowError:
            return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, float):
        return js_number_text(value)
    if isinstance(value, dict):
        return "[object Object]"
    if isinstance(value, list):
        return _js_join(value)
    return str(value)


def _js_join(value: list[Any]) -> str:
    """`array.join()` (String of an array): items as strings, null as "", nested arrays joined in place.

    Without recursion: a note nested thousands deep is text like any other, not a crash.
    """
    parts: list[str] = []
    stack = [iter(value)]
    started = [False]
    while stack:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
            started.pop()
            continue
        if started[-1]:
            parts.append(",")
        started[-1] = True
        if isinstance(item, list):
            stack.append(iter(item))
            started.append(False)
        elif item is not None:
            parts.append(js_string(item))
    return "".join(parts)


_END = object()


def js_number_text(number: float) -> str:
    """A double as JavaScript's Number::toString prints it: the shortest digits, positional from 1e-6 up to
    1e21, else an exponent with its sign and no zero padding (`1e-7`, `1.5e+300`)."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"
    mantissa, _, exponent = repr(abs(number)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    text = whole + fraction
    digits = text.strip("0")
    # the number is 0.<digits> x 10**point
    point = len(whole) + int(exponent or 0) - (len(text) - len(text.lstrip("0")))
    sign = "-" if number < 0 else ""
    if len(digits) <= point <= 21:
        return sign + digits + "0" * (point - len(digits))
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * -point + digits
    power = point - 1
    head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{head}e{'+' if power >= 0 else '-'}{abs(power)}"


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
        text = js_trim(_BULLET.sub("", line, count=1))
        if text:
            items.append(text)
    return items


def csv(value: str | None) -> list[str]:
    """A comma-separated flag: split, trimmed, empties dropped."""
    return [part for part in (js_trim(part) for part in (value or "").split(",")) if part]


def note_of(text: str | None) -> tuple[dict[str, Any], bool]:
    """The --note-json object (empty when unparseable or not an object) and whether it was `null`.

    Read as JSON.parse reads it: a number past a double's range is Infinity and a lone surrogate escape
    is kept (as U+FFFD, which is how Node writes it out); neither makes the whole note unparseable.
    A note nested too deeply to read (about 1,000 levels) is refused (EventInvalid: the mode's failure
    envelope), not taken as empty: JSON.parse reads it, and an empty note would drop its content
    without a word.
    """
    if text is None:
        return {}, False
    import msgspec

    try:
        value = msgspec.json.decode(text)
    except RecursionError:
        from events.errors import EventInvalid

        raise EventInvalid("invalid event: --note-json is nested too deeply to read") from None
    except msgspec.DecodeError:  # msgspec refuses 1e400 and "\ud800"; JSON.parse reads both
        value = _parse_like_javascript(text)
        if value is _UNPARSEABLE:
            return {}, False
    if value is None:
        return {}, True
    return (value if isinstance(value, dict) else {}), False


_UNPARSEABLE = object()
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _parse_like_javascript(text: str) -> Any:
    """`JSON.parse(text)` by Python's reader (no NaN or Infinity literals), lone surrogates as U+FFFD."""
    import json

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    def fixed(value: Any) -> Any:
        if isinstance(value, str):
            return _LONE_SURROGATE.sub("\ufffd", value)
        if isinstance(value, dict):
            return {fixed(key): fixed(item) for key, item in value.items()}
        if isinstance(value, list):
            return [fixed(item) for item in value]
        return value

    try:
        return fixed(json.loads(text, parse_constant=refuse))
    except ValueError:
        return _UNPARSEABLE
    except RecursionError:
        from events.errors import EventInvalid

        raise EventInvalid("invalid event: --note-json is nested too deeply to read") from None


def stored_note(value: Any) -> Any:
    """A note as JSON.stringify writes what JSON.parse read: Infinity is null and an integer past 64 bits
    the double it was read as, so the log takes it (its event rejects both). A note too deep to walk is
    left as it is (the log refuses a note nested that deep)."""
    try:
        return _stringified(value)
    except RecursionError:
        return value


def _stringified(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        try:
            return float(value)
        except OverflowError:
            return None
    if isinstance(value, dict):
        return {key: _stringified(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_stringified(item) for item in value]
    return value


#: ASCII digits only (`\d` would take other scripts' digits, which JavaScript's Number() does not read).
#: `[0-9]+(\.[0-9]*)?`, not `[0-9]+\.?[0-9]*`: digits could split between those two every way before `\Z` failed (46 s
#: for 50,000 digits and a letter).
_JS_NUMBER = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?|\.[0-9]+([eE][+-]?[0-9]+)?|Infinity)\Z")
#: Number()'s hex, octal and binary literals, unsigned (int() would also skip the whitespace Python knows).
_JS_RADIX = re.compile(r"^0([xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)\Z")


def js_number(text: str) -> int | float | None:
    """`Number(text)` for an exit code: hex/octal/binary, decimals, exponents; else None."""
    stripped = js_trim(text)
    if stripped == "":
        return 0
    if not stripped.isascii() or "_" in stripped:  # Python's int() reads both; Number() reads neither
        return None
    lowered = stripped.lower()
    try:
        if lowered.startswith(("0x", "0o", "0b")):
            return int(stripped, 0) if _JS_RADIX.match(stripped) else None
        if not _JS_NUMBER.match(stripped) or "Infinity" in stripped:
            return None
        number = float(stripped)
    except ValueError:
        return None
    if math.isinf(number):
        return None
    return int(number) if number.is_integer() else number


def shown(text: str) -> str:
    """Text as Node reads a file name of bytes that are no UTF-8 (each such byte U+FFFD); other text as it is."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:  # a lone surrogate that stands for no byte
            return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def dump_json(value: Any) -> bytes:
    """2-space JSON as `JSON.stringify(value, null, 2)` prints it (non-ASCII raw), no final newline."""
    import msgspec

    return msgspec.json.format(msgspec.json.encode(clean_json(value)), indent=2)


def clean_json(value: Any) -> Any:
    """Numbers as JSON.stringify prints them: the double's JavaScript text (`1`, not `1.0`; `1e+21`; `0.000001`),
    an integer past 2**53 as the double JSON.parse reads, Infinity and NaN as null."""
    import msgspec

    if isinstance(value, str):
        return shown(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int) and abs(value) <= 2**53:
        return value
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:
            return None
        return msgspec.Raw(js_number_text(number).encode()) if math.isfinite(number) else None
    if isinstance(value, dict):
        return {shown(key) if isinstance(key, str) else key: clean_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
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

    from continuity.facts import git_environ

    env = git_environ(GIT_OPTIONAL_LOCKS="0")  # the project's own repository, whatever GIT_DIR says
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
        outputs.append(js_trim(out.decode("utf-8", errors="replace")) if proc.returncode == 0 else "")
    return outputs


def lines(text: str) -> list[str]:
    """Non-empty lines of git output, ended by "\n" only (a file name may hold U+0085 or U+2028)."""
    return [line for line in text.split("\n") if line]
