"""Traffic management end to end: a real Envoy gateway routes real HTTP between local upstreams.

Each test builds a small mesh in its own namespace, with its own Gateway on its own port,
serves it to the module's gateway Envoy (one per ADS flavour, SotW and delta, shared by
the tests: ``gateway_turn``), and checks what the upstreams received: weighted splits,
header matches, prefix rewrites, redirects and direct responses.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.harness.client import fetch, send_requests
from tests.e2e.harness.ports import LOOPBACK, free_port
from tests.e2e.shared_gateway import GatewayTurn
from tests.e2e.traffic_mesh import (
    destination_rule,
    fqdn,
    gateway,
    prefix,
    render,
    service,
    to,
    virtual_service,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_weighted_split_follows_the_weights(gateway_turn: GatewayTurn) -> None:
    namespace, port = "split", free_port()
    v1 = await gateway_turn.upstream("reviews-v1")
    v2 = await gateway_turn.upstream("reviews-v2")
    reviews = fqdn("reviews", namespace)
    mesh = render(
        service("reviews", namespace, 9080, [(v1, {"version": "v1"}), (v2, {"version": "v2"})]),
        destination_rule("reviews", namespace, {"v1": {"version": "v1"}, "v2": {"version": "v2"}}),
        gateway(namespace, port),
        virtual_service(
            "reviews", namespace, [{"route": [to(reviews, "v1", 70), to(reviews, "v2", 30)]}]
        ),
    )
    async with gateway_turn.serving(mesh, port):
        report = await send_requests(LOOPBACK, port, 400, concurrency=4, total_timeout=20)
    assert report.ok == 400, report.summary()
    # Envoy picks a weighted cluster independently per request, so v1's count is
    # binomial(n=400, p=0.7): its share has a standard deviation of sqrt(.7*.3/400) = 2.3
    # points.  ±8 points is about 3.5 standard deviations: a false failure about once in
    # 2,000 runs, while a split that ignored the weights (50/50) or swapped them (30/70)
    # lands 20 or 40 points away.
    share = 100 * report.upstreams["reviews-v1"] / 400
    assert 62 <= share <= 78, report.summary()
    assert report.upstreams["reviews-v1"] + report.upstreams["reviews-v2"] == 400
    assert (v1.requests, v2.requests) == (
        report.upstreams["reviews-v1"],
        report.upstreams["reviews-v2"],
    )


async def test_header_match_routes_by_header(gateway_turn: GatewayTurn) -> None:
    namespace, port = "headers", free_port()
    v1 = await gateway_turn.upstream("reviews-v1")
    v2 = await gateway_turn.upstream("reviews-v2")
    reviews = fqdn("reviews", namespace)
    mesh = render(
        service("reviews", namespace, 9080, [(v1, {"version": "v1"}), (v2, {"version": "v2"})]),
        destination_rule("reviews", namespace, {"v1": {"version": "v1"}, "v2": {"version": "v2"}}),
        gateway(namespace, port),
        virtual_service(
            "reviews",
            namespace,
            [
                {
                    "match": [{"headers": {"end-user": {"exact": "jason"}}}],
                    "route": [to(reviews, "v2")],
                },
                {
                    "match": [{"headers": {"x-canary": {"prefix": "yes"}}}],
                    "route": [to(reviews, "v2")],
                },
                {"route": [to(reviews, "v1")]},
            ],
        ),
    )
    async with gateway_turn.serving(mesh, port):
        jason = await send_requests(LOOPBACK, port, 20, headers={"end-user": "jason"})
        canary = await send_requests(LOOPBACK, port, 20, headers={"x-canary": "yes-please"})
        others = await send_requests(LOOPBACK, port, 20, headers={"end-user": "jasonx"})
        plain = await send_requests(LOOPBACK, port, 20)
    assert jason.upstreams == {"reviews-v2": 20}, jason.summary()
    assert canary.upstreams == {"reviews-v2": 20}, canary.summary()
    assert others.upstreams == {"reviews-v1": 20}, others.summary()
    assert plain.upstreams == {"reviews-v1": 20}, plain.summary()


async def test_prefix_rewrite_reaches_the_upstream(gateway_turn: GatewayTurn) -> None:
    namespace, port = "rewrite", free_port()
    api = await gateway_turn.upstream("api")
    host = fqdn("api", namespace)
    mesh = render(
        service("api", namespace, 8000, [(api, {})]),
        gateway(namespace, port),
        virtual_service(
            "api",
            namespace,
            [
                {"match": prefix("/old-api/"), "rewrite": {"uri": "/v2/"}, "route": [to(host)]},
                {"route": [to(host)]},
            ],
        ),
    )
    async with gateway_turn.serving(mesh, port):
        rewritten = await fetch(LOOPBACK, port, "/old-api/items/7?q=1")
        untouched = await fetch(LOOPBACK, port, "/other/items")
    assert rewritten.status == 200
    assert rewritten.json()["path"] == "/v2/items/7?q=1"
    assert untouched.json()["path"] == "/other/items"
    assert api.paths == {"/v2/items/7?q=1": 1, "/other/items": 1}


async def test_redirects_answer_with_location(gateway_turn: GatewayTurn) -> None:
    namespace, port = "redirect", free_port()
    web = await gateway_turn.upstream("web")
    host = fqdn("web", namespace)
    mesh = render(
        service("web", namespace, 8000, [(web, {})]),
        gateway(namespace, port),
        virtual_service(
            "web",
            namespace,
            [
                {"match": [{"uri": {"exact": "/moved"}}], "redirect": {"uri": "/new-home"}},
                {
                    "match": prefix("/elsewhere"),
                    "redirect": {
                        "uri": "/landing",
                        "authority": "www.example.org",
                        "redirectCode": 302,
                    },
                },
                {"route": [to(host)]},
            ],
        ),
    )
    async with gateway_turn.serving(mesh, port):
        moved = await fetch(LOOPBACK, port, "/moved", authority="shop.example.com")
        found = await fetch(LOOPBACK, port, "/elsewhere/x", authority="shop.example.com")
    assert moved.status == 301  # the default redirect code
    assert moved.header("location") == "http://shop.example.com/new-home"
    assert found.status == 302
    assert found.header("location") == "http://www.example.org/landing"
    assert web.requests == 0, "a redirect is answered by Envoy, not forwarded"


async def test_direct_response_status_and_body(gateway_turn: GatewayTurn) -> None:
    namespace, port = "direct", free_port()
    web = await gateway_turn.upstream("web")
    host = fqdn("web", namespace)
    mesh = render(
        service("web", namespace, 8000, [(web, {})]),
        gateway(namespace, port),
        virtual_service(
            "web",
            namespace,
            [
                {
                    "match": prefix("/teapot"),
                    "directResponse": {"status": 418, "body": {"string": "short and stout"}},
                },
                {"match": prefix("/gone"), "directResponse": {"status": 410}},
                {"route": [to(host)]},
            ],
        ),
    )
    async with gateway_turn.serving(mesh, port):
        teapot = await fetch(LOOPBACK, port, "/teapot")
        gone = await fetch(LOOPBACK, port, "/gone/forever")
        forwarded = await fetch(LOOPBACK, port, "/still-here")
    assert (teapot.status, teapot.body) == (418, b"short and stout")
    assert (gone.status, gone.body) == (410, b"")
    assert forwarded.status == 200 and json.loads(forwarded.body)["upstream"] == "web"
    assert web.requests == 1
