"""describe(): ParseDict's failures as field path and reason, in words fit for a client."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import json_format

from pilothouse.xds.server.rest_problem import MAX_REASON_CHARS, WRONG_VALUE, describe
from tests.fuzz.answers import internals_in


def failure(data: dict[str, Any]) -> Exception:
    with pytest.raises(Exception) as raised:
        json_format.ParseDict(data, discovery_pb2.DiscoveryRequest(), ignore_unknown_fields=True)
    return raised.value


@pytest.mark.parametrize(
    ("data", "described"),
    [
        ({"node": {"locality": {"zone": 5}}}, f"field node.locality.zone: {WRONG_VALUE}"),
        ({"versionInfo": 7}, f"field versionInfo: {WRONG_VALUE}"),
        ({"resourceNames": "x"}, f"field resourceNames: {WRONG_VALUE}"),
        ({"node": {"metadata": 5}}, f"field node.metadata: {WRONG_VALUE}"),
        ({"node": {"metadata": {"n": 10**400}}}, "a number out of range for its field"),
        ({"node": {"id": "\ud800"}}, "field node.id: Unpaired surrogate"),
        ({"errorDetail": {"code": 1.5}}, "field errorDetail.code: Couldn't parse integer: 1.5"),
    ],
)
def test_failures_are_described_by_field(data: dict[str, Any], described: str) -> None:
    assert describe(failure(data)) == described


def test_a_long_value_is_clipped_and_python_advice_never_shows() -> None:
    text = describe(failure({"errorDetail": {"code": "1" * 5000}}))
    assert text.startswith("field errorDetail.code: Couldn't parse")
    assert len(text) < MAX_REASON_CHARS + 40
    assert internals_in(text) == []
