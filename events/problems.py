"""What a refused field breaks, said in words: msgspec names a broken pattern by its regex.

`Expected `str` matching regex '^(?!.*\\.\\.)[A-Za-z0-9]...' - at `$.agent_id`` tells a user
nothing; `agent_id 'a b' is not a valid id: letters, digits and ._:@+=- ...` does. The value
is shown with every character that is not printable (controls, bidi marks) as `\\uXXXX`, so
the line itself cannot move the cursor or reorder what the terminal shows.
"""

from __future__ import annotations

import re

from events import lazyre

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_PATTERN = lazyre.pattern(r"^Expected `str` matching regex '(?P<pattern>.*)' - at `\$(?P<path>[^`]*)`$")
#: (a fragment of the regex as msgspec prints it, what the value must be), most specific first.
#: What a refused Name is told (events/base.py's Name, the ids continuity's own commands take).
NAME_RULE = ("is not a valid id: letters, digits and ._:@+=-, starting with a letter or digit, no '..', at most 128 "
             "characters")
_RULES = (
    ("A-Za-z0-9._:@+=-", NAME_RULE),
    ("A-Za-z0-9._:/ -", "is not a valid label: letters, digits, spaces and ._:/-, starting with a letter or "
                        "digit, at most 64 characters"),
    ("A-Za-z0-9._-", "is not a valid id: letters, digits and ._-, starting with a letter or digit"),
    ("/\\\\\\\\\\\\[", "is not a valid name: no /, \\, [, ], control characters or '..', at most {1,N} characters"),
    ("^[^\\\\s\\\\x00-", "is not a valid label: one line without control characters, not starting with a space, "
                       "at most 64 characters"),
    ("0-9a-f]{64}", "is not a SHA-256 (64 lowercase hex digits)"),
    ("[0-9]{8}_[0-9]{6}_[0-9]{6}", "is not a stamp (YYYYMMDD_HHMMSS_ffffff)"),
)
_LENGTH = lazyre.pattern(r"^Expected `str` of length <= (?P<most>[0-9]+) - at `\$(?P<path>[^`]*)`$")
_BOUND = lazyre.pattern(r"^Expected `(?P<type>str|array|object|int|float)`(?P<of> of length)? (?P<op>[<>]=?) "
                    r"(?P<bound>-?[0-9.]+) - at `\$(?P<path>[^`]*)`$")
_OPS = {"<=": "at most", "<": "less than", ">=": "at least", ">": "more than"}
#: Shown of a refused value at most (characters).
SHOWN = 60


def readable(line: str, document: Any = None) -> str:
    """msgspec's one-line validation message in words (other messages as they are).

    `document`: the plain-JSON form of what was validated, to name the value and its first
    offending character.
    """
    longest = _LENGTH().match(line)
    if longest is not None:
        path = longest["path"].lstrip(".") or "the value"
        return f"{path} {_shown(_at(document, longest['path']))}is too long: at most {longest['most']} characters"
    bound = _BOUND().match(line)
    if bound is not None:
        return _bound_line(bound)
    found = _PATTERN().match(line)
    if found is None:
        return line
    pattern, path = found["pattern"], found["path"].lstrip(".") or "the value"
    value = _at(document, found["path"])
    for fragment, rule in _RULES:
        if fragment in pattern:
            longest = re.search(r"\{1,([0-9]+)\}", pattern)  # a name's length: a project's 128, an id's 192
            return f"{path} {_shown(value)}{rule.replace('{1,N}', longest[1] if longest else '128')}"
    if "\\\\x00-" in pattern:  # a text field: no control characters (some allow tab and line breaks)
        breaks = "\\\\x0b" in pattern  # the class skips \t, \n (and \r): those are allowed
        bad = first_control(value, breaks)
        if "\\\\S" in pattern and bad is None:
            return f"{path} must hold some text (not only spaces)"
        return _control_line(path, bad, breaks)
    return f"{path} {_shown(value)}does not have the required form"


def _bound_line(found: re.Match[str]) -> str:
    """A length or a number out of its bounds, in words: `next has too many items: at most 256`."""
    path, kind, op, bound = found["path"].lstrip(".") or "the value", found["type"], found["op"], found["bound"]
    if kind == "str":
        return f"{path} must not be empty" if op == ">=" and bound == "1" else \
            f"{path} must have {_OPS[op]} {bound} characters"
    if found["of"]:
        return f"{path} has too many items: {_OPS[op]} {bound}" if op.startswith("<") else \
            f"{path} must have {_OPS[op]} {bound} item(s)"
    return f"{path} must be {_OPS[op]} {bound}"


def _at(document: Any, path: str) -> Any:
    """The value at msgspec's path (`.refs.files[0]`) in the plain document, or None."""
    value = document
    for key, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path):
        if key and isinstance(value, dict):
            value = value.get(key)
        elif index and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            return None
    return value


#: How far past the shown part `quoted` redacts: more than any token a rule matches is long.
REDACTED_REACH = 4096


def quoted(value: str, limit: int = 64, *, redact: bool = False) -> str:
    """A value a user gave, for a one-line refusal: quoted, cut at `limit` characters, what is not printable
    as `\\uXXXX`, and never a value that looks like a secret: not shown, or with `redact` (an unknown id, say)
    each match made `[REDACTED:<rule>]` before the cut (a token cut short no longer matches its rule, and the cut
    showed most of it), in as much of the value as a token starting within the shown part can reach (a 10 MB
    argument is not scanned whole to show 40 characters of it)."""
    from events.guard import find_secret, redact_text

    if redact:
        value = redact_text(value[:limit + REDACTED_REACH])[0]
    elif find_secret(value) is not None:
        return "(a value that looks like a secret, not shown)"
    text = "".join(char if char.isprintable() else f"\\u{ord(char):04x}" for char in value[:limit])
    return f"'{text}{'…' if len(value) > limit else ''}'"


def _shown(value: Any) -> str:
    """`quoted(value) ` for a refused text value; "" when the value is no text."""
    return f"{quoted(value, SHOWN)} " if isinstance(value, str) else ""


def _control_line(where: str, bad: str | None, breaks_allowed: bool) -> str:
    """`<field> holds a control character (U+0001 at character 4); ...`: what the field allows."""
    allowed = "only tab and line breaks are allowed" if breaks_allowed else "it is one line of text"
    return f"{where} holds a control character{f' ({bad})' if bad else ''}; {allowed}"


def first_control(value: Any, breaks_allowed: bool = False) -> str | None:
    """`U+0001 at character 4` for the first control character of the value (None: none, or no text)."""
    if not isinstance(value, str):
        return None
    for position, char in enumerate(value, 1):
        code = ord(char)
        if (code < 0x20 or code == 0x7F) and not (breaks_allowed and char in "\t\n\r"):
            return f"U+{code:04X} at character {position}"
    return None


#: Fields whose pattern (`...*\S...*`) lets one control character through, where `\S` matches it: checked
#: again on write (a stored event that has one still decodes). Field name -> whether line breaks are allowed.
ONE_LINE_FIELDS = {"title": False, "next_action": True}


def one_line_problem(document: Any, path: str = "", fields: dict[str, bool] = ONE_LINE_FIELDS) -> str | None:
    """The first title or next action in an event's plain form holding a control character, in words.

    The event's fields only: the free-form `note` (a caller's own JSON) is not looked into. `fields`: the names
    checked, each with whether line breaks are allowed (a seed-002 document's are `title` and `nextAction`).
    """
    if isinstance(document, dict):
        for key, value in document.items():
            where = f"{path}.{key}" if path else str(key)
            if not path and key == "note":
                continue
            if key in fields and isinstance(value, str):
                bad = first_control(value, fields[key])
                if bad is not None:
                    return _control_line(where, bad, fields[key])
            elif isinstance(value, (dict, list)):
                found = one_line_problem(value, where, fields)
                if found is not None:
                    return found
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found = one_line_problem(value, f"{path}[{index}]", fields)
            if found is not None:
                return found
    return None
