"""The admission webhook's per-request boundary over real HTTPS: a review that cannot be
read is an HTTP 4xx in our words, an object that cannot be admitted is ``allowed: false``
with its reason (what the API server expects), a fault of ours is a generic HTTP 500, and
the next review is answered as usual.
"""

from __future__ import annotations

import copy
import logging
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from pilothouse.boundary.contain import INTERNAL_ERROR
from pilothouse.boundary.json_body import MAX_JSON_DEPTH, MAX_NUMBER_DIGITS
from pilothouse.config.load import Loader
from pilothouse.webhook.review import AdmissionReviewer
from pilothouse.webhook.server import WebhookServer
from tests.e2e.harness.tls import CertificateFiles, ThrowawayCa
from tests.fuzz.answers import internals_in
from tests.integration.test_webhook_https import (
    HOST,
    VIRTUAL_SERVICE,
    admission_review,
    post,
    url,
)

SERVICE_ENTRY = {
    "apiVersion": "networking.istio.io/v1",
    "kind": "ServiceEntry",
    "metadata": {"name": "ratings", "namespace": "bookinfo"},
    "spec": {
        "hosts": ["ratings.bookinfo.svc.cluster.local"],
        "ports": [{"number": 9080, "name": "http", "protocol": "HTTP"}],
        "resolution": "STATIC",
    },
}


@pytest.fixture
def certificates(tmp_path: Path) -> CertificateFiles:
    return ThrowawayCa(tmp_path).issue("webhook", ("localhost",))


@pytest.fixture
async def server(certificates: CertificateFiles) -> AsyncIterator[WebhookServer]:
    webhook = WebhookServer(certificates.cert, certificates.key, lingering_time=0.3)
    await webhook.start(HOST, 0)
    try:
        yield webhook
    finally:
        await webhook.stop()


@pytest.fixture
async def client(certificates: CertificateFiles) -> AsyncIterator[aiohttp.ClientSession]:
    trusting = ssl.create_default_context(cafile=str(certificates.ca))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=trusting)) as session:
        yield session


def port_number(value: Any) -> bytes:
    obj = copy.deepcopy(SERVICE_ENTRY)
    obj["spec"]["ports"][0]["number"] = value
    return admission_review(obj, "n-1")


async def allowed_again(client: aiohttp.ClientSession, server: WebhookServer) -> None:
    status, answer = await post(
        client, server, "/validate", admission_review(VIRTUAL_SERVICE, "ok")
    )
    assert status == 200 and answer["response"] == {"uid": "ok", "allowed": True}


async def test_a_fault_in_validation_is_a_500_and_the_next_review_is_answered(
    server: WebhookServer,
    client: aiohttp.ClientSession,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def explode(self: Loader, raw: object) -> object:
        raise RuntimeError("validator bug: secret internal detail")

    monkeypatch.setattr(Loader, "load_object", explode)
    with caplog.at_level(logging.ERROR, logger="pilothouse"):
        status, text = await post(
            client, server, "/validate", admission_review(VIRTUAL_SERVICE, "x")
        )
    assert status == 500
    assert text == INTERNAL_ERROR + "\n"
    faults = [r for r in caplog.records if r.exc_info and r.exc_info[0] is RuntimeError]
    assert len(faults) == 1, "the traceback is logged exactly once"
    assert dict(server.stats.snapshot().http_error) == {500: 1}

    monkeypatch.undo()
    await allowed_again(client, server)
    async with client.get(url(server, "/ready"), server_hostname="localhost") as response:
        assert response.status == 200


async def test_a_fault_outside_the_reviewer_is_contained_by_the_app(
    server: WebhookServer,
    client: aiohttp.ClientSession,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Past the reviewer's own boundary (here the reviewer itself raises), the app's
    middleware answers a generic 500 and the server serves on."""

    def explode(self: AdmissionReviewer, body: bytes, content_type: str | None) -> object:
        raise AttributeError("unforeseen")

    monkeypatch.setattr(AdmissionReviewer, "review", explode)
    with caplog.at_level(logging.ERROR, logger="pilothouse"):
        status, text = await post(
            client, server, "/validate", admission_review(VIRTUAL_SERVICE, "x")
        )
    assert (status, text) == (500, INTERNAL_ERROR + "\n")
    assert len([r for r in caplog.records if r.exc_info]) == 1
    monkeypatch.undo()
    await allowed_again(client, server)


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1_000, 100_000])
async def test_a_review_nested_too_deep_is_400_naming_the_limit(
    server: WebhookServer, client: aiohttp.ClientSession, depth: int
) -> None:
    body = admission_review({**VIRTUAL_SERVICE, "spec": {"hosts": ["a"], "deep": "@"}}, "d")
    body = body.replace(b'"@"', b'{"x":' * depth + b'"leaf"' + b"}" * depth)
    status, text = await post(client, server, "/validate", body)
    assert status == 400
    assert text == f"could not decode body: JSON nested deeper than {MAX_JSON_DEPTH} levels\n"
    await allowed_again(client, server)


async def test_an_object_nested_deep_but_readable_is_denied(
    server: WebhookServer, client: aiohttp.ClientSession
) -> None:
    deep: Any = "leaf"
    for _ in range(MAX_JSON_DEPTH - 20):
        deep = {"x": deep}
    obj = {**VIRTUAL_SERVICE, "spec": {"hosts": ["a"], "deep": deep}}
    status, answer = await post(client, server, "/validate", admission_review(obj, "d"))
    assert status == 200
    assert answer["response"]["allowed"] is False
    assert "nesting deeper than 64 levels" in answer["response"]["status"]["message"]


@pytest.mark.parametrize("digits", [MAX_NUMBER_DIGITS + 1, 5_000])
async def test_a_number_of_thousands_of_digits_is_400_in_our_words(
    server: WebhookServer, client: aiohttp.ClientSession, digits: int
) -> None:
    body = port_number(0).replace(b'"number": 0', b'"number": ' + b"9" * digits)
    status, text = await post(client, server, "/validate", body)
    assert status == 400
    assert text == (f"could not decode body: a number with more than {MAX_NUMBER_DIGITS} digits\n")
    assert internals_in(text) == []
    await allowed_again(client, server)


async def test_thousands_of_digits_as_text_into_an_integer_field_are_denied(
    server: WebhookServer, client: aiohttp.ClientSession
) -> None:
    status, answer = await post(client, server, "/validate", port_number("9" * 5000))
    assert status == 200
    response = answer["response"]
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert message.startswith("spec.ports[0].number: ")
    assert internals_in(message) == [] and len(message) < 1000
    await allowed_again(client, server)


async def test_a_long_but_readable_number_is_denied_as_out_of_range(
    server: WebhookServer, client: aiohttp.ClientSession
) -> None:
    status, answer = await post(client, server, "/validate", port_number(int("9" * 30)))
    assert status == 200
    response = answer["response"]
    assert response["allowed"] is False
    assert "spec.ports[0].number" in response["status"]["message"]
    assert internals_in(response["status"]["message"]) == []


@pytest.mark.parametrize(
    ("body", "status", "expected"),
    [
        (
            b"\xff\xfe{\x00}\x00",
            400,
            "could not decode body: not UTF-8 text (byte 0xff at offset 0)",
        ),
        (
            admission_review(VIRTUAL_SERVICE, "u").replace(
                b"reviews", "revi\xe9ws".encode("latin-1")
            ),
            400,
            "could not decode body: not UTF-8 text (byte 0xe9",
        ),
        (b"<AdmissionReview/>", 400, "could not decode body: not JSON: expecting value"),
        (b'{"request": Infinity}', 400, "could not decode body: Infinity is not JSON"),
        (
            admission_review(VIRTUAL_SERVICE, "f").replace(b'"reviews"]', b'"reviews", 1e400]'),
            400,
            "could not decode body: a number beyond the range of a double",
        ),
    ],
)
async def test_unreadable_reviews_are_http_errors_in_our_words(
    server: WebhookServer, client: aiohttp.ClientSession, body: bytes, status: int, expected: str
) -> None:
    got, text = await post(client, server, "/validate", body)
    assert got == status
    assert isinstance(text, str) and text.startswith(expected)
    assert internals_in(text) == []
    await allowed_again(client, server)


async def test_wrong_method_and_path_are_answered_in_our_words(
    server: WebhookServer, client: aiohttp.ClientSession
) -> None:
    async with client.get(url(server, "/validate"), server_hostname="localhost") as response:
        assert response.status == 405
        assert response.headers["Allow"] == "POST"
        assert await response.text() == "method GET is not allowed on /validate; use POST\n"
    status, text = await post(client, server, "/mutate", admission_review(VIRTUAL_SERVICE, "m"))
    assert (status, text) == (404, "no such path: /mutate\n")
    await allowed_again(client, server)
