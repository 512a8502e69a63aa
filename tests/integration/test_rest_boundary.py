"""REST discovery's per-request boundary, over a real socket: bad input gets a 4xx that
says what was wrong in our words, a fault of ours gets a generic 500, and either way the
next request is answered as usual.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pilothouse.boundary.contain import INTERNAL_ERROR
from pilothouse.boundary.json_body import MAX_JSON_DEPTH, MAX_NUMBER_DIGITS
from pilothouse.protocol.type_urls import CDS
from tests.fuzz.answers import internals_in
from tests.integration.test_rest_discovery import (
    CART,
    Plane,
    clusters_of,
    endpoints_of,
    envoy_request,
    running_plane,
)


@pytest.fixture
async def plane() -> AsyncIterator[Plane]:
    async with running_plane() as running:
        yield running


def error_of(raw: bytes) -> str:
    body = json.loads(raw)
    assert isinstance(body["error"], str) and body["error"]
    assert internals_in(body["error"]) == []
    return body["error"]


def encoded(request: dict[str, Any]) -> bytes:
    return json.dumps(request).encode()


def labelled(labels: str) -> dict[str, Any]:
    request = envoy_request()
    request["node"]["metadata"]["LABELS"] = labels
    return request


def nested_metadata(depth: int) -> bytes:
    inner = b'{"a":' * depth + b"1" + b"}" * depth
    return encoded(envoy_request()).replace(
        b'"metadata": {', b'"metadata": {"deep": ' + inner + b", "
    )


async def test_a_fault_in_generation_is_a_500_and_the_next_request_is_answered(
    plane: Plane, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    generator = plane.discovery.generator(CDS)
    assert generator is not None

    def explode(self: object, given: object) -> object:
        raise RuntimeError("generator bug: secret internal detail")

    monkeypatch.setattr(type(generator), "generate", explode)
    with caplog.at_level(logging.ERROR, logger="pilothouse"):
        status, raw = await plane.post("clusters", envoy_request())
    assert status == 500
    assert json.loads(raw) == {"error": INTERNAL_ERROR, "status": 500}
    assert b"secret internal detail" not in raw and b"RuntimeError" not in raw
    faults = [r for r in caplog.records if r.exc_info and r.exc_info[0] is RuntimeError]
    assert len(faults) == 1, "the traceback is logged exactly once"
    assert plane.rest.stats.errors == {500: 1}
    # Other types are unaffected while CDS is broken.
    status, raw = await plane.post("endpoints", envoy_request(names=(CART,)))
    assert status == 200 and endpoints_of(json.loads(raw)) == {CART: [("10.1.0.1", 18080)]}

    monkeypatch.undo()
    status, raw = await plane.post("clusters", envoy_request())
    assert status == 200 and CART in clusters_of(json.loads(raw))
    assert await plane.get("/ready") == (200, "ok\n")


async def test_a_fault_outside_the_rest_handler_is_contained_by_the_app(
    plane: Plane, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A fault that escapes RestDiscovery.answer (here: in the HTTP handler around it)
    is caught by the admin app's middleware: a generic 500, and the server serves on."""
    rest = plane.rest

    def explode(kind: str, body: bytes) -> object:
        raise KeyError("unforeseen")

    monkeypatch.setattr(rest, "answer", explode)
    with caplog.at_level(logging.ERROR, logger="pilothouse"):
        status, raw = await plane.post("clusters", envoy_request())
    assert status == 500
    assert json.loads(raw) == {"error": INTERNAL_ERROR, "status": 500}
    assert len([r for r in caplog.records if r.exc_info]) == 1
    monkeypatch.undo()
    status, raw = await plane.post("clusters", envoy_request())
    assert status == 200 and CART in clusters_of(json.loads(raw))


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 10, 1_000, 100_000])
async def test_deep_json_is_400_naming_the_limit(plane: Plane, depth: int) -> None:
    status, raw = await plane.post("clusters", nested_metadata(depth))
    assert status == 400
    assert error_of(raw) == f"request body: JSON nested deeper than {MAX_JSON_DEPTH} levels"


async def test_json_within_the_depth_limit_is_read(plane: Plane) -> None:
    # Deeper than protobuf's own Struct limit (100), so refused by the mapping, cleanly.
    status, raw = await plane.post("clusters", nested_metadata(MAX_JSON_DEPTH - 10))
    assert status == 400 and "Message too deep" in error_of(raw)
    status, raw = await plane.post("clusters", nested_metadata(20))
    assert status == 200 and CART in clusters_of(json.loads(raw))


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            encoded(envoy_request()).replace(b'"node"', b'"n": ' + b"9" * 5000 + b', "node"'),
            f"request body: a number with more than {MAX_NUMBER_DIGITS} digits",
        ),
        (
            encoded({**envoy_request(), "error_detail": {"code": "9" * 5000}}),
            "request is not a DiscoveryRequest: field error_detail.code: Couldn't parse",
        ),
        (
            encoded(envoy_request()).replace(b'"metadata": {', b'"metadata": {"n": 1e999, '),
            "request body: a number beyond the range of a double",
        ),
        (
            encoded(envoy_request()).replace(
                b'"metadata": {', b'"metadata": {"n": 1' + b"0" * 399 + b", "
            ),
            "request is not a DiscoveryRequest: a number out of range for its field",
        ),
        (
            encoded(labelled("[" * 5000)),
            "node 'sidecar~10.0.0.1~app-1.shop~shop.svc.cluster.local': metadata LABELS is not "
            "a JSON object (JSON nested deeper than 256 levels)",
        ),
        (b"\xff\xfe{\x00}\x00", "request body: not UTF-8 text (byte 0xff at offset 0)"),
        ('{"node": {"id": "é"}}'.encode("latin-1"), "request body: not UTF-8 text (byte 0xe9"),
        (b"", "request body: empty"),
        (b"<xml/>", "request body: not JSON: expecting value at line 1 column 1"),
        (b'{"node": NaN}', "request body: NaN is not JSON"),
        (
            encoded({**envoy_request(), "version_info": 7}),
            "request is not a DiscoveryRequest: field version_info: a value of the wrong JSON",
        ),
    ],
)
async def test_bad_input_is_400_in_our_words(plane: Plane, body: bytes, expected: str) -> None:
    status, raw = await plane.post("clusters", body)
    assert status == 400
    assert error_of(raw).startswith(expected)
    # The server is unharmed: the next good request is answered.
    status, raw = await plane.post("clusters", envoy_request())
    assert status == 200


async def test_wrong_method_path_type_and_size(plane: Plane) -> None:
    async with plane.session.get(plane.url("/v3/discovery:clusters")) as response:
        assert response.status == 405
        assert response.headers["Allow"] == "POST"
        assert error_of(await response.read()) == (
            "method GET is not allowed on /v3/discovery:clusters; use POST"
        )
    async with plane.session.put(plane.url("/v3/discovery:clusters"), data=b"{}") as response:
        assert response.status == 405
    async with plane.session.post(plane.url("/v3/nowhere"), data=b"{}") as response:
        assert response.status == 404
        assert error_of(await response.read()) == "no such path: /v3/nowhere"
    status, raw = await plane.post("clusters", encoded(envoy_request()), "text/yaml")
    assert status == 415 and error_of(raw) == "content type 'text/yaml' is not JSON"
    status, raw = await plane.post("clusters", b" " * ((1 << 20) + 1))
    assert status == 413 and error_of(raw) == "request body is larger than 1048576 bytes"
    status, raw = await plane.post("clusters", envoy_request())
    assert status == 200
