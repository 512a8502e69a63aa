"""Make before break under load: route switches to brand-new subsets fail no request.

Steady load runs through a real Envoy gateway while the route is switched, again and
again, to a DestinationRule subset ``vN`` that did not exist a moment before, and back
(the subset is then removed).  A control plane that sends the route before Envoy has
warmed the new cluster, or removes a cluster while a route still points at it, makes
Envoy answer 503 (``no_cluster``): the issue requires zero 5xx and zero connection
errors.
"""

from __future__ import annotations

import time

import pytest

from pilothouse.bootstrap.envoy import XdsTransport
from tests.e2e.harness.control_plane import ControlPlane
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.load import SteadyLoad
from tests.e2e.harness.ports import free_port
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.traffic_mesh import (
    TRANSPORTS,
    destination_rule,
    fqdn,
    gateway,
    render,
    serve,
    service,
    start_gateway,
    to,
    virtual_service,
)

NAMESPACE = "mbb"
ROUNDS = 20
"""Each round: switch to a new subset, then back (and drop the subset): 40 changes."""
MIN_REQUESTS = 2000


def route_to(subset: str, extra: str | None) -> str:
    """The DestinationRule (``stable`` plus ``extra``) and the route to ``subset``."""
    subsets = {"stable": {"track": "stable"}}
    if extra is not None:
        subsets[extra] = {"track": "canary"}
    return render(
        destination_rule("reviews", NAMESPACE, subsets),
        virtual_service(
            "reviews", NAMESPACE, [{"route": [to(fqdn("reviews", NAMESPACE), subset)]}]
        ),
    )


async def switch_back_and_forth(
    envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool, transport: XdsTransport
) -> tuple[SteadyLoad, EnvoyProcess]:
    """Run the rounds under load; returns the load (every sample recorded) and the Envoy."""
    port = free_port()
    stable = await upstream_factory("stable")
    canary = await upstream_factory("canary")
    plane: ControlPlane = await serve(
        render(
            service(
                "reviews",
                NAMESPACE,
                9080,
                [(stable, {"track": "stable"}), (canary, {"track": "canary"})],
            ),
            gateway(NAMESPACE, port),
        )
        + "---\n"
        + route_to("stable", None)
    )
    try:
        envoy = await start_gateway(envoy_factory, plane, NAMESPACE, port, transport)
        async with SteadyLoad(port, workers=4) as load:
            await load.wait_for_upstream("stable", after=time.monotonic())
            for round_number in range(1, ROUNDS + 1):
                subset = f"v{round_number}"
                changed = time.monotonic()
                plane.apply_yaml(route_to(subset, subset))
                await load.wait_for_upstream("canary", after=changed)
                changed = time.monotonic()
                plane.apply_yaml(route_to("stable", None))
                await load.wait_for_upstream("stable", after=changed)
            while len(load.samples) < MIN_REQUESTS:
                await load.wait_for_upstream("stable", after=time.monotonic(), streak=50)
    finally:
        await plane.stop()
    return load, envoy


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_route_switches_to_new_subsets_fail_no_request(
    envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool, transport: XdsTransport
) -> None:
    load, envoy = await switch_back_and_forth(envoy_factory, upstream_factory, transport)
    outcomes = load.outcomes()
    assert len(load.samples) >= MIN_REQUESTS, outcomes
    # every round really moved traffic both ways (wait_for_upstream saw it), 40 RDS updates
    assert outcomes["canary"] > 0 and outcomes["stable"] > 0, outcomes
    no_cluster = sum((await envoy.stats(r"^http\..*\.no_cluster$")).values())
    assert load.failures() == [], (
        f"{len(load.failures())} of {len(load.samples)} requests failed: {dict(outcomes)}; "
        f"Envoy counted {no_cluster} no_cluster"
    )
