"""The load generator reads a refusal's ``grpc-retry-pushback-ms`` trailer as gRPC
defines it: whole milliseconds; anything else (negative, malformed, absent) is no hint."""

from __future__ import annotations

import pytest

from pilothouse.loadtest.proxy import pushback_hint


@pytest.mark.parametrize(
    ("trailers", "seconds"),
    [
        ((("grpc-retry-pushback-ms", "1250"),), 1.25),
        ((("other", "x"), ("grpc-retry-pushback-ms", b"0")), 0.0),
        ((("grpc-retry-pushback-ms", "-1"),), None),
        ((("grpc-retry-pushback-ms", "1.5"),), None),
        ((("grpc-retry-pushback-ms", ""),), None),
        ((("retry-after", "3"),), None),
        ((), None),
        (None, None),
    ],
)
def test_the_hint_is_whole_milliseconds_or_nothing(trailers: object, seconds: float | None) -> None:
    assert pushback_hint(trailers) == seconds
