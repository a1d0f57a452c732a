"""The value rules of the runtime-continuity contract (§2, §4, §7), as pure functions."""

from __future__ import annotations

import pytest

from continuity.adapters.compat.args import ArgumentError, parse
from continuity.adapters.compat.common import csv, dump_json, first, js_list, js_number, js_string
from continuity.adapters.compat.contexts import parse_since


@pytest.mark.parametrize(("value", "text"), [
    (None, "null"), (True, "true"), (2.0, "2"), (1.5, "1.5"), ({"a": 1}, "[object Object]"), ([1, None, "x"], "1,,x"),
    (float("inf"), "Infinity"), ("s", "s"), (7, "7"),
])
def test_js_string(value: object, text: str) -> None:
    """String(v) as JavaScript prints it."""
    assert js_string(value) == text


@pytest.mark.parametrize(("value", "text"), [
    (1e-7, "1e-7"), (0.00001, "0.00001"), (0.000001, "0.000001"), (1e21, "1e+21"), (1.5e300, "1.5e+300"),
    (-2.5e-10, "-2.5e-10"), (1e16, "10000000000000000"), (123.456, "123.456"), (-0.0, "0"), (0.1, "0.1"),
    (12345678901234567890, "12345678901234567000"), (123456789012345678901234567890, "1.2345678901234568e+29"),
    pytest.param(10**400, "Infinity", id="int-past-a-double"), pytest.param(-(10**400), "-Infinity", id="negative"),
    (2**53, "9007199254740992"), (-7, "-7"),
])
def test_js_string_of_numbers_as_a_javascript_number(value: object, text: str) -> None:
    """A number prints as JavaScript's Number prints it: exponents without zero padding from 1e21 and below
    1e-6, integers as the double JSON.parse reads (Python's repr wrote 1e-07, 1e-05 and every digit)."""
    assert js_string(value) == text


@pytest.mark.parametrize(("text", "number"), [
    ("0", 0), (" 0x10 ", 16), ("0b101", 5), ("0o17", 15), ("1e1", 10), ("-2", -2), ("  ", 0), ("1.5", 1.5),
    ("abc", None), ("Infinity", None), ("1e400", None), ("1_000", None), ("--1", None),
    ("\uff11\uff12", None), ("\u0661", None), ("0x\uff11", None), ("0x1_0", None), ("12\n", 12), ("1.5\u00b2", None),
])
def test_js_number(text: str, number: float | None) -> None:
    """Number(text): hex, octal, binary, exponents and blanks as JavaScript reads them; else None."""
    assert js_number(text) == number


def test_js_list_and_truthiness() -> None:
    """List(v) splits text into bulleted lines; `a || b` skips "", 0, false and null but keeps [] and {}."""
    assert js_list("* one\r\n -  two \n\n--three") == ["one", "two", "-three"]
    assert js_list(["", 0, "a"]) == ["0", "a"]
    assert js_list(None) == [] and js_list("") == []
    assert first("", 0, False, None, [], "x") == []
    assert first("", None) is None


def test_dump_json_prints_numbers_as_json_stringify() -> None:
    """Numbers print as JSON.stringify prints the double (Node's output for this very list): an integral float
    from 1e21 up in exponent form (1.5e300 printed its 301 digits), 1e-6 positionally, an integer past 2**53 as
    the double JSON.parse would read, Infinity as null; integral numbers without `.0`."""
    values = [1e-7, 1e21, 1.5e300, 5e-324, 0.1, 1e16, 1.2345678901234568e20, 1e-6, 0.000123, -0.0, 2.5e-10,
              1.7976931348623157e308, 12345678901234567890, 9007199254740993, 2.0, 7, float("inf"), 10**400]
    assert dump_json(values).decode().split() == ["[", "1e-7,", "1e+21,", "1.5e+300,", "5e-324,", "0.1,",
                                                  "10000000000000000,", "123456789012345680000,", "0.000001,",
                                                  "0.000123,", "0,", "2.5e-10,", "1.7976931348623157e+308,",
                                                  "12345678901234567000,", "9007199254740992,", "2,", "7,",
                                                  "null,", "null", "]"]


def test_lists_csv_and_numbers_trim_javascript_whitespace() -> None:
    """List(), CSV and Number() trim what JavaScript's trim() and `\\s` take (each checked against Node): a byte
    order mark and U+3000 go, but NEL (U+0085) and the C0 separators U+001C-U+001F stay, as does the bullet
    after them (Python's strip() and `\\s` took those and kept the byte order mark)."""
    assert js_list("\u0085b\n\u2028 - c \u2028\n\x1f- d\n\ufeff* e") == ["\u0085b", "c", "\x1f- d", "e"]
    assert csv("\ufeffx.py, \x1fy.py ,\u0085") == ["x.py", "\x1fy.py", "\u0085"]
    assert [js_number(text) for text in ("\ufeff5", "\x1f5", "\u00855", "\u30005\u2028", "\x1c", "\ufeff")] == [
        5, None, None, 5, None, 0]
    assert [js_number(text) for text in ("0x10\x1f", "0x10\u2028", "0b2")] == [None, 16, None]


def test_parse_first_value_wins_and_modes() -> None:
    """First value wins, `--flag=` counts, presence flags take no value, the mode skips flag values."""
    args = parse(["--project", "p", "--auto", "status", "--project", "q", "--gate=", "--gate", "user", "--list"])
    assert (args.mode, args.get("project"), args.get("gate"), args.has("auto"), args.has("list")) == (
        "status", "p", None, True, True)
    with pytest.raises(ArgumentError, match="--reason needs a value"):
        parse(["archive", "--reason", "--gate", "user"])
    assert parse(["log", "--unknown", "--project", "p"]).get("project") == "p"


@pytest.mark.parametrize(("text", "seconds"), [
    ("0000-01-01", -62_167_219_200), ("+000000-01-01", -62_167_219_200), ("-000001-02-29", -62_193_657_600),
    ("+010000-01-01", 253_402_300_800), ("+275760-09-13", 8_640_000_000_000),
    ("-271821-04-20T00:00:00Z", -8_640_000_000_000),
    ("2020-02-30", 1_583_020_800), ("2020-02-31", 1_583_107_200), ("2020-01-01T24:00:00.000Z", 1_577_923_200),
    ("2020-01-31T24:00Z", 1_580_515_200), ("2020-01-01T00:00:00.123456789Z", 1_577_836_800.123),
    ("2020-01-01T00:00:00-23:59", 1_577_923_140),
    ("-000000-01-01", None), ("+275760-09-13T00:00:00.001Z", None), ("2020-02-32", None), ("2020-13-01", None),
    ("2020-01-01T24:00:00.001Z", None), ("2020-01-01T24:01Z", None), ("2020-01-01T00:00:00+24:00", None),
    ("2020-01-01T00:00:00+05:60", None), ("2020-01-01T00:00:60Z", None), ("2020-01-01T00:00:00.Z", None),
])
def test_parse_since_reads_every_iso_date_javascript_reads(text: str, seconds: float | None) -> None:
    """Date.parse's ISO format as Node reads it (each value checked against Node): years 0, negative and past
    9999 (six digits with a sign), the whole ±8.64e15 ms range, days 29-31 of any month rolling over, 24:00,
    milliseconds truncated; an offset minute of 60 is not a date (Python's datetime read neither way right)."""
    assert parse_since(text) == seconds


def test_parse_since_reads_a_local_time_of_year_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """A date-time without offset is local time, also where Python's datetime does not reach (Node agrees)."""
    import time

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert parse_since("0000-01-01T00:00:00") == -62_167_201_438  # local mean time, -4:56:02
        assert parse_since("2020-06-01T00:00:00") == 1_590_984_000
        # a time the change to summer time skips, and one the change back repeats: the offset before it
        assert parse_since("2020-03-08T02:30:00") == 1_583_652_600
        assert parse_since("2020-11-01T01:30:00") == 1_604_208_600
    finally:
        monkeypatch.undo()
        time.tzset()


def test_parse_since_like_date_parse() -> None:
    """An ISO date is UTC midnight, an offset time is exact, RFC 2822 works, nonsense is None."""
    assert parse_since("2023-11-16") == 1_700_092_800
    assert parse_since("2023-11-16T01:00:00Z") == 1_700_096_400
    assert parse_since("2023-11-16T03:00:00+02:00") == 1_700_096_400
    assert parse_since("Thu, 16 Nov 2023 01:00:00 GMT") == 1_700_096_400
    assert parse_since("yesterday") is None
    # other scripts' digits are not a date to JavaScript either (a trailing newline is: see LEGACY)
    assert parse_since("\uff12\uff10\uff12\uff13-11-16") is None


#: (text, Date.parse in seconds with TZ=UTC, with TZ=America/New_York), each read by Node: the forms V8 reads
#: besides the ISO format (a space before the time, Date.prototype.toString, a month's name, AM/PM, M/D/Y, zone
#: names and offsets, the defaults for a missing day or year), and forms it refuses.
LEGACY = [
    ("2026-12-02 23:00", 1796252400, 1796270400),
    ("2026-12-02 23:00:15.5", 1796252415.5, 1796270415.5),
    ("2026-12-02 23:00Z", 1796252400, 1796252400),
    ("2026-12-02 23:00 +0530", 1796232600, 1796232600),
    ("Wed Dec 02 2026 23:00:00 GMT+0100 (Central European Standard Time)", 1796248800, 1796248800),
    ("Dec 2, 2026 11:00 PM", 1796252400, 1796270400),
    ("Dec 2, 2026 12:30 AM", 1796171400, 1796189400),
    ("2 December 2026 10:00 UTC", 1796205600, 1796205600),
    ("12/02/2026 10:00", 1796205600, 1796223600),
    ("2026/12/02", 1796169600, 1796187600),
    ("Thu, 16 Nov 2023 01:00:00 EST", 1700114400, 1700114400),
    ("1/2/99", 915235200, 915253200),
    ("Dec 2 26", 1796169600, 1796187600),
    ("Tuesday, December 1, 2026 10:00 AM", 1796119200, 1796137200),
    ("02.12.2026", 1770854400, 1770872400),
    ("2026-12-02 24:00", 1796256000, 1796274000),
    ("2026-12-02 23:00 GMT+01:30", 1796247000, 1796247000),
    ("bogus 2026", 1767225600, 1767243600),
    ("12/02", 1007251200, 1007269200),
    ("Dec 2026", 1796083200, 1796101200),
    ("5", 988675200, 988689600),
    ("32", 1956528000, 1956546000),
    ("yesterday", None, None),
    # a year under 100 is 19xx or 20xx by its value, however many digits; a first number that can be a day is one
    ("Dec 31, 0026", 1798675200, 1798693200),
    ("12/31/026", 1798675200, 1798693200),
    ("0026/12/31", None, None),
    ("12/31/0099", 946598400, 946616400),
    ("Dec 31, 0050", -599702400, -599684400),
    ("31 Dec 0049", 2524521600, 2524539600),
    ("100/12/31", -58980009600, -58979991838),
    # a word glued to the first number is no date to V8 (a month's name may be); a zone's name counts after a number
    ("M12", None, None),
    ("T12/31/2026", None, None),
    ("Wed12/02/2026", None, None),
    ("UTC12/02/2026", None, None),
    ("GMT+0100 12/02/2026", None, None),
    ("UTC 12/02/2026", 1796169600, 1796187600),
    ("Dec2 2026", 1796169600, 1796187600),
    # AM/PM glued to the minutes or seconds is no date to V8; after milliseconds it is
    ("12/02/2026 10:00PM", None, None),
    ("12/02/2026 10:00:00PM", None, None),
    ("12/02/2026 10:00:00.5PM", 1796248800.5, 1796266800.5),
    ("2026-12-02 25:00", None, None),
    ("2026-12-02 13:00 PM", None, None),
    ("13/02/2026", None, None),
    ("Dec 2 2026 bogus", None, None),
    ("10:00", None, None),
    ("31", None, None),
    ("12/2026", None, None),
    ("2026-12-02 24:01", None, None),
    ("Dec 32 2026", None, None),
    ("02-Dec-2026", 1796169600, 1796187600),
    ("2026//12/02", 1796169600, 1796187600),
    ("2026-12-02 10:00 .", 1796205600, 1796223600),
    ("2023-11-16\n", 1700092800, 1700110800),  # not the ISO form: V8's other parser reads it, as local time
    ("2023-11-16 10:00:00.", None, None),
    ("Dec 2 2026 10:00 PM GMT+2", 1796241600, 1796241600),
    ("Dec 2 " + "9" * 5000, None, None),  # Node: NaN; int() of 5,000 digits raised ValueError (exit 1)
    ("Dec 2 2026 10:00 +" + "1" * 5000, None, None),
    ("Dec 2 ." + "9" * 5000, None, None),
    ("Dec 2 2026 10:00:00.1234567890123", 1796205600.123, 1796223600.123),
    # a lone 0 is the year 2000; a sign before the first number is skipped; after a date as ISO writes it, a
    # `T` starts V8's strict form (lowercase t and z, an offset without its colon) and nothing else reads
    ("0", 946684800, 946702800),
    ("+1", 978307200, 978325200),
    ("+0", 946684800, 946702800),
    ("+2026", 1767225600, 1767243600),
    ("0 1", 946684800, 946702800),
    ("0 1 2", 946771200, 946789200),
    ("1 0 2", None, None),
    ("+1 Dec", 1007164800, 1007182800),
    ("Dec +1", 1007164800, 1007182800),
    ("+12/3/2026", 1796256000, 1796274000),
    ("12/+3/2026", None, None),
    ("+2026-12-03", 1796256000, 1796274000),
    ("2026-12-03T10:00:00+01", None, None),
    ("2026-12-03T10:00:00 GMT", None, None),
    ("2026-12-03 T10:00", None, None),
    ("2026-12-03T10:00 Z", None, None),
    ("12/03/2026 T10:00", None, None),
    ("Dec 3 2026 T10:00", None, None),
    ("2026-12-03t10:00", 1796292000, 1796310000),
    ("2026-12-03T10:00z", 1796292000, 1796292000),
    ("2026-12-03T10:00:00+0100", 1796288400, 1796288400),
    ("2026-12-03T10:00:00-0130", 1796297400, 1796297400),
    ("2026-12-03T10:00+01:0", None, None),
    ("2026-1-3T10:00", None, None),
    ("2026-12T10:00", 1796119200, 1796137200),
    ("2026T10:00", 1767261600, 1767279600),
]


@pytest.mark.parametrize(("text", "utc", "new_york"), LEGACY)
def test_parse_since_reads_the_other_forms_node_reads(monkeypatch: pytest.MonkeyPatch, text: str,
                                                      utc: float | None, new_york: float | None) -> None:
    """§7: T is read as Date.parse reads it, not only in the ISO and RFC 2822 forms."""
    import time

    for zone, expected in (("UTC", utc), ("America/New_York", new_york)):
        monkeypatch.setenv("TZ", zone)
        time.tzset()
        try:
            assert parse_since(text) == expected, zone
        finally:
            monkeypatch.undo()
            time.tzset()
