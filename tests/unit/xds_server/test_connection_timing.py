"""Each queued response carries the time spent generating it, per type, and its size is
reported: what pilot_xds_push_time and pilot_xds_config_size_bytes are made of."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pilothouse.config.model import ConfigKey
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.cache import Resource
from pilothouse.push.proxy import parse_node
from pilothouse.push.request import PushRequest
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.server.connection import Connection, Queued
from tests.unit.xds_server.test_connection_push import (
    CLUSTERS,
    RULE,
    CountingGenerator,
    FakeGeneration,
    push,
    request,
    resources,
)
from tests.unit.xds_server.test_connection_written import StepClock


@dataclass
class SlowGenerator:
    """A generator that takes ``seconds`` of the step clock per call."""

    inner: CountingGenerator
    clock: StepClock
    seconds: float

    @property
    def type_url(self) -> str:
        return self.inner.type_url

    def generate(self, given: GenerationInput) -> Mapping[str, Resource]:
        self.clock.now += self.seconds
        return self.inner.generate(given)


@dataclass
class SizedGeneration(FakeGeneration):
    sizes: list[tuple[str, int]] = field(default_factory=list)

    def observe_send(self, connection: Connection, type_url: str, size: int) -> None:
        self.sizes.append((type_url, size))


def drain(connection: Connection) -> list[Queued]:
    out = []
    while not connection.outbound.empty():
        queued = connection.outbound.get_nowait()
        assert queued is not None
        out.append(queued)
    return out


def test_generation_time_is_per_type_and_sizes_are_reported() -> None:
    clock = StepClock()
    seconds = {CDS: 1.0, EDS: 2.0, LDS: 4.0, RDS: 8.0}
    inner = {
        CDS: resources(CDS, *CLUSTERS),
        EDS: resources(EDS, *CLUSTERS),
        LDS: resources(LDS, "virtualOutbound"),
        RDS: resources(RDS, "80"),
    }
    generation = SizedGeneration(
        {t: SlowGenerator(g, clock, seconds[t]) for t, g in inner.items()}  # type: ignore[misc]
    )
    proxy = parse_node("sidecar~10.0.0.1~app-1.ns~ns.svc.cluster.local")
    connection = Connection("c-1", "peer", proxy, generation, delta=False, clock=clock)
    for type_url, names in ((CDS, ()), (EDS, CLUSTERS), (LDS, ()), (RDS, ("80",))):
        connection.on_request(request(type_url, names), 1.0)
        (answer,) = drain(connection)
        assert (answer.type_url, answer.generation) == (type_url, seconds[type_url])
        assert answer.queued_at == clock.now
        assert generation.sizes[-1] == (type_url, len(answer.body))

    inner[CDS].set(CLUSTERS[0], "2")
    inner[LDS].set("virtualOutbound", "2")
    # a DestinationRule and a Sidecar: a change that can alter every type
    sidecar = ConfigKey("Sidecar", "ns", "default")
    push(generation, connection, PushRequest.for_configs([RULE, sidecar]), 3.0)
    pushed = {queued.type_url: queued.generation for queued in drain(connection)}
    # every type is generated once; RDS did not change and is not sent, and its
    # generation time is not carried over to the next response of its type; EDS did not
    # change either, but the changed cluster's assignment is sent again (Envoy warms it
    # only on a fresh one), taken from what was generated to find what changed
    assert pushed == {CDS: 1.0, EDS: 2.0, LDS: 4.0}
    inner[EDS].set(CLUSTERS[1], "2")
    push(generation, connection, PushRequest.for_configs([RULE]), 4.0)
    # EDS is generated once for this response: what changed is found in it and sent from it
    assert {q.type_url: q.generation for q in drain(connection)} == {EDS: 2.0}
