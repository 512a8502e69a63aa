"""read_json: bounded reading of untrusted JSON, refused in our own words."""

from __future__ import annotations

import json

import pytest

from pilothouse.boundary.json_body import (
    MAX_JSON_DEPTH,
    MAX_NUMBER_DIGITS,
    BadJson,
    nests_deeper_than,
    read_json,
)


def refusal(body: bytes) -> str:
    with pytest.raises(BadJson) as refused:
        read_json(body)
    return refused.value.reason


def nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


def test_ordinary_json_is_read() -> None:
    body = b'{"node": {"id": "a~b~c~d", "n": [1, 2.5, true, null, "x\\"[{"]}}'
    assert read_json(body) == json.loads(body)
    assert read_json(b"\xef\xbb\xbf[]") == []  # a UTF-8 byte-order mark is allowed
    assert read_json(nested(MAX_JSON_DEPTH)) == json.loads(nested(MAX_JSON_DEPTH))
    assert read_json(b"9" * MAX_NUMBER_DIGITS) == int("9" * MAX_NUMBER_DIGITS)


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1_000, 100_000])
def test_deep_nesting_is_refused_before_the_parser_recurses(depth: int) -> None:
    assert refusal(nested(depth)) == f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
    assert refusal(b"[" * depth) == f"JSON nested deeper than {MAX_JSON_DEPTH} levels"


def test_brackets_inside_strings_do_not_nest() -> None:
    inside = json.dumps({"a": "[" * 5000, "b": '\\"{' * 2000}).encode()
    assert read_json(inside) == json.loads(inside)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"\xff\xfe{\x00}\x00", "not UTF-8 text (byte 0xff at offset 0)"),
        (b'{"a": "\xc3"}', "not UTF-8 text (byte 0xc3 at offset 7)"),
        (b"", "empty"),
        (b" \n ", "empty"),
        (b"{not json", "not JSON: expecting property name enclosed in double quotes"),
        (b'{"a": 1} x', "not JSON: extra data at line 1 column 10"),
        (b"[NaN]", "NaN is not JSON"),
        (b'{"a": -Infinity}', "-Infinity is not JSON"),
        (b"1" * 5_000, f"a number with more than {MAX_NUMBER_DIGITS} digits"),
        (b'{"n": -' + b"7" * 401 + b"}", f"a number with more than {MAX_NUMBER_DIGITS} digits"),
        (b"[1e999]", "a number beyond the range of a double"),
        (b"[-1" + b"0" * 400 + b".5]", "a number beyond the range of a double"),
    ],
)
def test_refusals_say_what_is_wrong(body: bytes, reason: str) -> None:
    assert refusal(body).startswith(reason)


def test_refusals_quote_no_python_internals() -> None:
    for body in (b"1" * 5_000, b"\xff", b"[" * 5_000, b"[1e999]"):
        reason = refusal(body)
        for internal in ("sys.", "set_int_max_str_digits", "codec", "Recursion", "Traceback"):
            assert internal not in reason


def test_hostile_bodies_are_scanned_in_linear_time() -> None:
    # Each is 4 MiB; a quadratic scan would take minutes. Their answers prove the scan ran.
    assert nests_deeper_than(b'"\\' * (2 << 20), 10) is False  # one unterminated string
    assert nests_deeper_than(b'["' * (2 << 20), 10) is True  # strings holding brackets
    assert nests_deeper_than(b"[" * (4 << 20), 10) is True
