"""Hostile text of some length is read in time about proportional to it.

Each case ran for minutes or hours before its fix: a regular expression that can split a run of characters many
ways, or that is tried from every position of a long run and scans to its end each time. Each runs here in a
child process that is given a minute: on the code before the fix, none would end in that time (the figures are
the ones measured then, at a tenth or less of the sizes used here)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

CASES = {
    # 30 separators after a cookie took 43 s (four times as long for each two more)
    "cookie header": "from events.guard import find_secret, redact_text\n"
                     "for text in ('Cookie: a=' + ';' * 2000, 'Set-Cookie: a=' + ' ' * 2000 + 'x',\n"
                     "             'curl -b a=' + '=;' * 1000, \"curl -b 'a=\" + '; ' * 1000 + 'x'):\n"
                     "    assert find_secret(text) is None and redact_text(text)[0] == text",
    # 100,000 letters took 20 s
    "remote URL": "from continuity.sync.credentials import has_secret, mask_text, mask_url\n"
                  "text = 'a' * 1_000_000\n"
                  "mask_text(text); has_secret(text); mask_url('https://example.invalid/' + text)",
    # 100,000 characters took 0.8 s, a megabyte 83 s; with a `.eyJ` after them, 20,000 pieces took 15 s
    "jwt": "from events.guard import find_secret, redact_text\n"
           "run = '-eyJaaaaaaaa' * 200_000\n"
           "for text in (run, run + '.eyJ', run.replace('-', 'x_') + '.eyJ'):\n"
           "    assert find_secret(text) is None and redact_text(text)[0] == text",
    # 80,000 credential parameters (1.6 MB) took 19 s: the URL was made again for each one masked
    "remote URL of many parameters": "from continuity.sync.credentials import mask_url, without_secrets\n"
                                     "url = 'https://example.invalid/r.git?' + '&'.join(['access_token=v'] * 200_000)\n"
                                     "assert mask_url(url).count('=***') == 200_000\n"
                                     "without_secrets('https://' + 'u:p@' * 100_000 + 'example.invalid/r.git')",
    # 100,000 digits took 197 s
    "exit code": "from continuity.adapters.compat.common import js_number\n"
                 "assert js_number('1' * 200_000 + 'x') is None",
    # an MCP refusal echoing an argument's name of 32,000 `(continuity ` took 7 s
    "tool error": "from continuity.adapters.mcp.server import _in_argument_names\n"
                  "from continuity.core.errors import UsageError\n"
                  "for text in ('(continuity ' * 200_000, '`continuity ' * 200_000):\n"
                  "    _in_argument_names(UsageError('unknown field ' + text + ' --to AGENT'), 'log')",
    # 100,000 line breaks took 55 s
    "pre-flight checklist": "from continuity.team.doctrine import has_preflight, says_import_not_done\n"
                            "assert not has_preflight(['operator pre-flight' + '\\n' * 500_000 + 'x'])\n"
                            "assert not says_import_not_done(['IMPORT NOT DONE ' * 100_000])",
}


@pytest.mark.parametrize("code", CASES.values(), ids=CASES.keys())
def test_hostile_text_is_read_in_linear_time(code: str) -> None:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet="ab1+.-:/ @\"x\t", max_size=40))
def test_urls_are_found_where_the_regular_expressions_found_them(text: str) -> None:
    """The scheme and URL finders that replaced two regular expressions find exactly what those found."""
    from continuity.sync import credentials

    assert list(credentials._schemes(text)) == [match.span() for match in _SCHEME.finditer(text)]
    assert list(credentials._urls(text)) == [match.span() for match in _URL.finditer(text)]


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet="0123456789.eE+-xI", max_size=12))
def test_exit_codes_read_as_number_read_them(text: str) -> None:
    """The exit-code pattern without its ambiguity accepts exactly what it accepted."""
    from continuity.adapters.compat import common

    before = re.compile(r"^[+-]?([0-9]+\.?[0-9]*([eE][+-]?[0-9]+)?|\.[0-9]+([eE][+-]?[0-9]+)?|Infinity)\Z")
    assert bool(common._JS_NUMBER.match(text)) == bool(before.match(text))
