"""The depth scan that guards every JSON body agrees with the parser on random JSON whose
strings are made of brackets, quotes and backslashes (the characters the scan must get
right)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pilothouse.boundary.json_body import nests_deeper_than
from tests.fuzz.budget import fuzz_settings


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth_of(child) for child in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(child) for child in value), default=0)
    return 0


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab', max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet='[]{}"\\k', max_size=4), inner, max_size=3)
    ),
    max_leaves=40,
)


@fuzz_settings()
@given(value=JSON_VALUES, ascii_only=st.booleans())
def test_the_scan_agrees_with_the_parser(value: Any, ascii_only: bool) -> None:
    body = json.dumps(value, ensure_ascii=ascii_only).encode()
    depth = depth_of(value)
    assert not nests_deeper_than(body, depth)
    if depth:
        assert nests_deeper_than(body, depth - 1)
