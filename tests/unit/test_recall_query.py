"""The recall query language (continuity/recall/plain.py): words quoted by default, FTS5 syntax checked."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from continuity.core.errors import QueryError
from continuity.recall.plain import MAX_QUERY_CHARS, fts_query, marked


def test_words_are_quoted_and_all_must_match() -> None:
    """Each word becomes a quoted term, once; punctuation and operators are only separators or words."""
    assert fts_query('"unclosed') == '"unclosed"'
    assert fts_query("AND") == '"AND"'
    assert fts_query("fix the push-race, fix it") == '"fix" "the" "push" "race" "it"'
    assert fts_query("push race", any_word=True) == '"push" OR "race"'


@pytest.mark.parametrize("query, operators, reason", [
    ("*", False, "has no words"), ("", False, "has no words"), ("   ", True, "empty"),
    ("x" * (MAX_QUERY_CHARS + 1), False, "characters long"), ("x" * 10240, True, "characters long"),
    ("a\x00b", False, "NUL"), ("a\x00b", True, "NUL"), ("\ud800x", True, "surrogate"),
    (" ".join(["w"] * 65), False, "65 words"),
    ('"unclosed', True, "unterminated string"), ("AND", True, "syntax error"), ("*", True, "invalid search syntax"),
    ("NEAR(", True, "syntax error"), ("nosuchcolumn: x", True, "no such column"),
    ("*id", True, "cannot start with"), ("*reads", True, "cannot start with"), ("* id", True, "cannot start with"),
])
def test_malformed_queries_are_query_errors(query: str, operators: bool, reason: str) -> None:
    """Every malformed query is a QueryError (exit 2) naming why, never an SQLite error."""
    with pytest.raises(QueryError, match=reason) as raised:
        fts_query(query, operators=operators)
    assert raised.value.exit_code == 2 and "\n" not in str(raised.value)


@given(st.text(max_size=300))
def test_any_text_is_a_query_or_a_query_error(text: str) -> None:
    """Whatever is typed, in either mode: a query string, or a one-line QueryError."""
    for operators in (False, True):
        try:
            found = fts_query(text, operators=operators)
        except QueryError as error:
            assert "\n" not in str(error)
        else:
            assert found and "\x00" not in found


def test_snippets_mark_matches_and_neutralize_the_rest() -> None:
    """Match markers become brackets; line breaks become spaces; controls and bidi overrides are stand-ins."""
    assert marked("a \x02hit\x03 b") == "a [hit] b"
    shown = marked("x\n\x02y\x03\u202e\x9b31m\r\nz")
    assert shown.startswith("x [y]") and "\u202e" not in shown and "\x9b" not in shown and "\n" not in shown


def test_a_snippet_shows_long_runs_cut_and_runs_of_spaces_as_one() -> None:
    """FTS5 cuts a snippet to 16 words however long each is: a 16,000-character word (or run of punctuation, or of
    spaces) made a 16 KB snippet. Each run with no space is cut to SNIPPET_RUN characters, marks kept around it."""
    from continuity.recall.plain import SNIPPET_RUN

    shown = marked("a \x02" + "W" * 16_000 + "\x03 b" + " " * 5_000 + "<" * 16_000 + "\n\n end")
    assert shown == "a [" + "W" * (SNIPPET_RUN - 1) + "…] b " + "<" * (SNIPPET_RUN - 1) + "… end"
    assert marked("x " + "y" * SNIPPET_RUN + " z") == "x " + "y" * SNIPPET_RUN + " z"  # a run at the bound stays
