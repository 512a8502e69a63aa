"""Route policies end to end: fault injection, timeouts, retries and CORS through a real gateway.

The upstreams are the harness's slow and flaky ones, so each policy is checked against
what really happened on the wire (statuses, elapsed time, the upstream's request count),
over SotW and over delta ADS.  Each test has its own namespace, Gateway port and
upstreams on the module's gateway Envoy (one per ADS flavour: ``gateway_turn``).
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.harness.client import fetch, send_requests
from tests.e2e.harness.ports import LOOPBACK, free_port
from tests.e2e.harness.upstreams import Failure, UpstreamBehaviour
from tests.e2e.shared_gateway import GatewayTurn
from tests.e2e.traffic_mesh import (
    fqdn,
    gateway,
    prefix,
    render,
    service,
    to,
    virtual_service,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_fault_abort_at_100_percent(gateway_turn: GatewayTurn) -> None:
    namespace, port = "fault", free_port()
    web = await gateway_turn.upstream("web")
    host = fqdn("web", namespace)
    abort = {"abort": {"httpStatus": 429, "percentage": {"value": 100}}}
    mesh = render(
        service("web", namespace, 8000, [(web, {})]),
        gateway(namespace, port),
        virtual_service(
            "web",
            namespace,
            [
                {"match": prefix("/faulty"), "fault": abort, "route": [to(host)]},
                {"route": [to(host)]},
            ],
        ),
    )
    async with gateway_turn.serving(mesh, port):
        faulty = await send_requests(LOOPBACK, port, 30, path="/faulty/x")
        healthy = await send_requests(LOOPBACK, port, 5, path="/fine")
    assert faulty.statuses == {429: 30}, faulty.summary()
    assert healthy.statuses == {200: 5}, healthy.summary()
    assert web.paths == {"/fine": 5}, "aborted requests must never reach the upstream"


async def test_timeout_against_a_slow_upstream(gateway_turn: GatewayTurn) -> None:
    namespace, port = "timeout", free_port()
    slow = await gateway_turn.upstream("slow", UpstreamBehaviour(delay=1.5))
    host = fqdn("slow", namespace)
    mesh = render(
        service("slow", namespace, 8000, [(slow, {})]),
        gateway(namespace, port),
        virtual_service(
            "slow",
            namespace,
            [
                {"match": prefix("/hurry"), "timeout": "0.3s", "route": [to(host)]},
                {"route": [to(host)]},
            ],
        ),
    )
    async with gateway_turn.serving(mesh, port):
        begun = time.monotonic()
        hurried = await fetch(LOOPBACK, port, "/hurry", timeout=5)
        hurried_after = time.monotonic() - begun
        begun = time.monotonic()
        patient = await fetch(LOOPBACK, port, "/patient", timeout=5)
        patient_after = time.monotonic() - begun
    assert hurried.status == 504
    # the route timeout is also the stream's max duration (istiod's form), so Envoy may
    # name either limit
    assert hurried.body in (b"upstream request timeout", b"downstream duration timeout")
    # the 0.3 s route timeout, not the upstream's 1.5 s delay (slack for a loaded machine)
    assert 0.25 <= hurried_after < 1.0, hurried_after
    # without a timeout the route waits for the slow answer (Istio's default: no timeout)
    assert patient.status == 200
    assert patient_after >= 1.4, patient_after


async def test_retries_hide_a_flaky_upstream(gateway_turn: GatewayTurn) -> None:
    namespace, port = "retries", free_port()
    flaky = await gateway_turn.upstream("flaky", UpstreamBehaviour(fail_first=2))
    resets = await gateway_turn.upstream(
        "resets", UpstreamBehaviour(fail_first=2, failure=Failure.RESET)
    )
    unretried = await gateway_turn.upstream("unretried", UpstreamBehaviour(fail_first=2))
    retries = {"attempts": 3, "retryOn": "5xx,reset,connect-failure", "perTryTimeout": "1s"}
    mesh = render(
        service("flaky", namespace, 8000, [(flaky, {})]),
        service("resets", namespace, 8000, [(resets, {})]),
        service("unretried", namespace, 8000, [(unretried, {})]),
        gateway(namespace, port),
        virtual_service(
            "routes",
            namespace,
            [
                {
                    "match": prefix("/flaky"),
                    "retries": retries,
                    "route": [to(fqdn("flaky", namespace))],
                },
                {
                    "match": prefix("/resets"),
                    "retries": retries,
                    "route": [to(fqdn("resets", namespace))],
                },
                {
                    "match": prefix("/unretried"),
                    "retries": {"attempts": 0},
                    "route": [to(fqdn("unretried", namespace))],
                },
            ],
        ),
    )
    async with gateway_turn.serving(mesh, port):
        first_flaky = await fetch(LOOPBACK, port, "/flaky")
        first_reset = await fetch(LOOPBACK, port, "/resets")
        later = await send_requests(LOOPBACK, port, 5, path="/flaky")
        unretried_first = await fetch(LOOPBACK, port, "/unretried")
    # two failures, then the third attempt (second retry) succeeds: the client sees 200
    assert first_flaky.status == 200
    assert first_flaky.json()["request"] == 3
    assert (flaky.failures, flaky.requests) == (2, 3 + 5)
    assert later.statuses == {200: 5}, later.summary()
    assert first_reset.status == 200
    assert (resets.failures, resets.requests) == (2, 3)
    # the control: retries off, the client sees the upstream's first failure
    assert unretried_first.status == 503
    assert unretried.requests == 1


async def test_cors_preflight_gets_the_allow_headers(gateway_turn: GatewayTurn) -> None:
    namespace, port = "cors", free_port()
    api = await gateway_turn.upstream("api")
    cors = {
        "allowOrigins": [{"exact": "https://shop.example.com"}],
        "allowMethods": ["GET", "POST"],
        "allowHeaders": ["x-shop-token"],
        "exposeHeaders": ["x-shop-trace"],
        "maxAge": "3600s",
    }
    mesh = render(
        service("api", namespace, 8000, [(api, {})]),
        gateway(namespace, port),
        virtual_service(
            "api", namespace, [{"corsPolicy": cors, "route": [to(fqdn("api", namespace))]}]
        ),
    )
    preflight = {
        "origin": "https://shop.example.com",
        "access-control-request-method": "POST",
        "access-control-request-headers": "x-shop-token",
    }
    async with gateway_turn.serving(mesh, port):
        allowed = await fetch(LOOPBACK, port, "/orders", method="OPTIONS", headers=preflight)
        foreign = await fetch(
            LOOPBACK,
            port,
            "/orders",
            method="OPTIONS",
            headers={**preflight, "origin": "https://evil.example.net"},
        )
        simple = await fetch(
            LOOPBACK, port, "/orders", headers={"origin": "https://shop.example.com"}
        )
    assert allowed.status == 200
    assert allowed.header("access-control-allow-origin") == "https://shop.example.com"
    assert allowed.header("access-control-allow-methods") == "GET,POST"
    assert allowed.header("access-control-allow-headers") == "x-shop-token"
    assert allowed.header("access-control-max-age") == "3600"
    assert allowed.header("x-upstream") is None, "Envoy answers the preflight itself"
    # an origin the policy does not allow gets no allow headers
    assert foreign.header("access-control-allow-origin") is None
    # an actual cross-origin request is forwarded and gets the origin and exposed headers
    assert simple.status == 200 and simple.header("x-upstream") == "api"
    assert simple.header("access-control-allow-origin") == "https://shop.example.com"
    assert simple.header("access-control-expose-headers") == "x-shop-trace"
    # the allowed preflight stopped at Envoy; the foreign one is forwarded (Istio's
    # unmatchedPreflights FORWARD default), and so is the real request
    assert api.requests == 2
