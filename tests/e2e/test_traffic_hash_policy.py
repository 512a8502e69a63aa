"""Consistent hashing through a real Envoy gateway while its DestinationRule is edited.

Routes read a DestinationRule only for its consistent hash, so a push whose rule edit
keeps the hash leaves the routes out (``push/affected_types.py``); one that changes the
hash must still reach them. Real HTTP through a real Envoy, four upstreams behind one
service whose rule hashes on ``x-user``:

- each user sticks to one upstream, and the users spread over several;
- a connection-pool edit of the rule reaches Envoy's cluster (a CDS update), no
  RouteConfiguration is sent, and every user still lands where it did;
- an edit to hash on ``x-team`` instead reaches the route: every user of one team then
  lands on one upstream.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from pilothouse.bootstrap.envoy import XdsTransport
from pilothouse.protocol.type_urls import RDS
from tests.e2e.harness.client import fetch
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.traffic_mesh import (
    TRANSPORTS,
    fqdn,
    gateway,
    render,
    serve,
    service,
    start_gateway,
    to,
    virtual_service,
)

NAMESPACE = "hashing"
USERS = [f"user-{n}" for n in range(16)]
TIMEOUT = 15.0


def rule(header: str, max_connections: int) -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {{name: reviews, namespace: {NAMESPACE}}}
spec:
  host: {fqdn("reviews", NAMESPACE)}
  trafficPolicy:
    loadBalancer: {{consistentHash: {{httpHeaderName: {header}}}}}
    connectionPool: {{tcp: {{maxConnections: {max_connections}}}}}
"""


async def landing(port: int, user: str, team: str = "team-a") -> str:
    """The upstream one request of ``user`` (of ``team``) reaches."""
    response = await fetch(LOOPBACK, port, "/", headers={"x-user": user, "x-team": team})
    assert response.status == 200, response
    upstream = response.header("x-upstream")
    assert upstream is not None
    return upstream


async def landings(port: int, rounds: int = 3) -> dict[str, set[str]]:
    """Each user's upstreams over ``rounds`` requests."""
    found: dict[str, set[str]] = {user: set() for user in USERS}
    for _ in range(rounds):
        for user in USERS:
            found[user].add(await landing(port, user))
    return found


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not await check():
        assert time.monotonic() < deadline, f"{what}: not within {TIMEOUT} s"
        await asyncio.sleep(0.1)


async def cds_updates(envoy: EnvoyProcess) -> int:
    return await envoy.stat("cluster_manager.cds.update_success")


async def max_connections(envoy: EnvoyProcess) -> Any:
    """The circuit breaker Envoy holds for the reviews cluster."""
    for config in (await envoy.config_dump())["configs"]:
        for entry in config.get("dynamic_active_clusters", []):
            cluster = entry["cluster"]
            if cluster["name"] == f"outbound|9080||{fqdn('reviews', NAMESPACE)}":
                return cluster["circuit_breakers"]["thresholds"][0].get("max_connections")
    return None


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_hashing_follows_rule_edits_that_change_it_and_only_those_resend_routes(
    envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool, transport: XdsTransport
) -> None:
    port = free_port()
    upstreams = [await upstream_factory(f"reviews-{n}") for n in range(4)]
    plane = await serve(
        render(
            service("reviews", NAMESPACE, 9080, [(u, {"app": "reviews"}) for u in upstreams]),
            gateway(NAMESPACE, port),
            virtual_service("reviews", NAMESPACE, [{"route": [to(fqdn("reviews", NAMESPACE))]}]),
        )
        + "---\n"
        + rule("x-user", 100)
    )
    try:
        envoy = await start_gateway(envoy_factory, plane, NAMESPACE, port, transport)
        before = await landings(port)
        assert all(len(upstreams) == 1 for upstreams in before.values()), before
        assert len(set().union(*before.values())) > 1, "every user on one upstream"

        connection = plane.only_connection()
        routes_sent = connection.stats.responses.get(RDS, 0)
        updates = await cds_updates(envoy)
        plane.apply_yaml(rule("x-user", 7))

        async def pool_arrived() -> bool:
            return await cds_updates(envoy) > updates and await max_connections(envoy) == 7

        await eventually(pool_arrived, "the connection pool edit")
        assert connection.stats.responses.get(RDS, 0) == routes_sent, "routes were resent"
        assert await landings(port) == before

        plane.apply_yaml(rule("x-team", 7))

        async def by_team() -> bool:
            return len({await landing(port, user) for user in USERS}) == 1

        await eventually(by_team, "hashing on x-team")
        assert connection.stats.responses.get(RDS, 0) > routes_sent
        other = await landing(port, USERS[0], team="team-b")
        assert all([await landing(port, user, team="team-b") == other for user in USERS])
    finally:
        await plane.stop()
