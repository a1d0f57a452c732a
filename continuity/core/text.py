"""Text from events and files, made safe to show: on a terminal, in one-line views, inside Markdown.

Stored events keep their text exactly; only what is printed is neutralized. A message
may carry terminal controls (ESC, the C1 CSI/OSC introducers U+009B/U+009D), bidi
overrides that reorder what a reader sees (U+202E), and line breaks that forge an
extra `events list` line or a `## Next action` section in the brief. Each such
character is shown as a visible stand-in of the same length, so budgets counted in
characters hold: a C0 control as its control picture (ESC as U+241B, a newline as
U+240A), DEL as U+2421, anything else (C1, bidi, line and paragraph separators, lone
surrogates) as U+FFFD. Tab is kept: it moves the cursor along the line, never off it.
"""

from __future__ import annotations

import re

from events import lazyre

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook path prints through this module
    from collections.abc import Iterator

#: The code points no view prints raw, as a regex class. Tab is left out on purpose (see above).
UNSAFE = (
    "[\x00-\x08\x0a-\x1f"  # C0 controls but tab, including newline and carriage return
    "\x7f-\x9f"  # DEL and every C1 control (U+009B is CSI, U+009D is OSC, U+0085 is NEL)
    "\u061c\u200e\u200f"  # Arabic letter mark, left-to-right and right-to-left marks
    "\u202a-\u202e"  # bidi embeddings and overrides
    "\u2066-\u2069"  # bidi isolates
    "\u2028\u2029"  # line and paragraph separators
    "\ud800-\udfff]"  # lone surrogates: not printable, not encodable as UTF-8
)
# Patterns stay strings (compiled on first use through re's cache): a brief of ordinary text
# never needs them, and the session-start hook should not pay for compiling them.
_UNSAFE_IN_JSON = "[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
_LINE_BREAK = r"\r\n|\r|\n"
_LIST_NUMBER = r"\d+[.)](?:[ \t]|$)"
#: First characters that let Markdown start a heading, list item, quote, rule, setext
#: underline or HTML block; fences (``` and ~~~) and numbered items are checked apart.
_MARKERS = frozenset("#>*+=_<-")
#: The control characters event text refuses (events/base.py `_NO_CONTROL`) to their control pictures (ESC U+241B,
#: DEL U+2421).
_PICTURES = {code: 0x2400 + code for code in (*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20))} | {0x7F: 0x2421}


def control_pictures(text: str) -> str:
    """`text` with each control character an event refuses (all but tab and line breaks) as its control picture: a
    live fact (a file's name, a run record's status) an event can hold, shown as the brief shows it."""
    return text.translate(_PICTURES)


def _stand_in(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the control pictures block: U+240A for newline, U+241B for ESC
    return "\u2421" if code == 0x7F else "\ufffd"


def shortened(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, an ellipsis marking the cut (a title or item in a one-line entry).

    Cut before a secret the cut would split: its first characters match no rule, so a view redacted after it is
    put together (the brief) would show them."""
    if len(text) <= limit:
        return text
    from events.guard import cut

    return cut(text, limit - 1) + "…"


def one_line(text: str) -> str:
    """`text` for a one-line view: every control, bidi mark and line break replaced by a visible stand-in."""
    if text.isprintable():  # no control, format, separator or surrogate character at all
        return text
    return re.sub(UNSAFE, _stand_in, text)


def terminal_text(text: str) -> str:
    """Text of any number of lines for a terminal: its newlines kept, every other control, bidi mark or separator
    shown as a visible stand-in (as `one_line` shows them)."""
    return "\n".join(map(one_line, text.split("\n")))


def block(text: str, indent: str = "  ", *, exact: bool = False) -> str:
    """`text` for Markdown: its own lines kept, indented after the first, none able to start a section.

    Each line is made safe as by `one_line`; a line that Markdown would read as a heading, a
    list item, a quote, a rule or a fence gets a backslash before its marker. The first line
    is not indented, so `"- " + block(text)` is one list item however many lines it has.
    `exact`: only a line that CommonMark reads as such a block gets it (`**bold**`, `-v` and
    `#1` stay as written: a format whose other text must come out as the original wrote it);
    otherwise every line starting with a marker character does.
    """
    if "\n" not in text and "\r" not in text:
        return _inert(one_line(text), exact)
    lines = [_inert(one_line(line), exact) for line in re.split(_LINE_BREAK, text)]
    return "\n".join([lines[0], *(indent + line if line.strip() else "" for line in lines[1:])])


#: What CommonMark reads as the start of a block (after up to three spaces): an ATX heading, a list item,
#: a quote, a numbered item, a thematic break, a setext underline, a fence, an HTML block.
_BLOCK_START = lazyre.pattern(
    r"#{1,6}(?:[ \t]|$)|[-+*](?:[ \t]|$)|>|\d{1,9}[.)](?:[ \t]|$)"
    r"|(?:\*[ \t]*){3,}$|(?:-[ \t]*){3,}$|(?:_[ \t]*){3,}$|=+[ \t]*$|-+[ \t]*$"
    r"|```|~~~|<[A-Za-z/!?]"
)


def _inert(line: str, exact: bool = False) -> str:
    """`line`, with a backslash before the marker if Markdown would start a block with it."""
    body = line.lstrip(" \t")
    if exact:
        if not _BLOCK_START().match(body):
            return line
    elif not body or not (body[0] in _MARKERS or body.startswith(("```", "~~~"))
                          or (body[0].isdecimal() and re.match(_LIST_NUMBER, body))):
        return line
    start = len(line) - len(body)
    return f"{line[:start]}\\{body}"


def escape_json(encoded: str) -> str:
    """JSON text (as orjson writes it) with DEL, C1, bidi marks and separators as `\\uXXXX`: the same JSON.

    orjson already escapes C0 controls; these others it writes raw, and they can only occur
    inside strings, where an escape decodes to the same character.
    """
    return re.sub(_UNSAFE_IN_JSON, lambda match: f"\\u{ord(match.group()):04x}", encoded)


#: UTF-8 lead bytes of every character `escape_json` rewrites (DEL; C1 is C2 80-9F; U+061C is D8 9C;
#: the marks, overrides, isolates and separators start E2 80 or E2 81): most output holds none of them.
_UNSAFE_LEADS = (b"\x7f", b"\xc2", b"\xd8\x9c", b"\xe2\x80", b"\xe2\x81")


def escape_json_bytes(encoded: bytes) -> bytes:
    """`escape_json` for the UTF-8 bytes a command prints with --json (scanned only when one may be there)."""
    if not any(lead in encoded for lead in _UNSAFE_LEADS):
        return encoded
    return escape_json(encoded.decode()).encode()


def outside_json_strings(text: str) -> Iterator[tuple[int, str]]:
    """Each character of JSON text outside its strings (the quotes neither), with its index."""
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        else:
            yield index, char
