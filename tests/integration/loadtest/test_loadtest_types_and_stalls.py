"""`--types` limits what a simulated proxy asks for, and a fleet that does not converge
says why: per type, no response, a NACK, names still missing; failed streams by status."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from pilothouse.cli.loadtest_args import UsageError, spec_from_args
from pilothouse.cli.main import build_parser
from pilothouse.loadtest import (
    ALL_TYPES,
    EnvoyPlan,
    GrpcPlan,
    ProxyFleet,
    Stalls,
    fleet_identities,
    parse_types,
)
from pilothouse.loadtest.report import build_report, render_text
from pilothouse.loadtest.spec import LoadSpec, Scenario, Trigger
from pilothouse.loadtest.stalls import StreamStall, TypeStall
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from tests.unit.loadtest.fake_ads import FakeAds, FakeAdsServer
from tests.unit.loadtest.mesh_fixtures import EDS_CLUSTERS, REVIEWS, sidecar_mesh
from tests.unit.loadtest.test_loadtest_cli_report import push_record


class CdsAndEdsOnly(FakeAds):
    """A server that never answers anything but CDS and EDS."""

    def _on_sotw(self, stream: Any, request: Any) -> None:
        if request.type_url in (CDS, EDS):
            super()._on_sotw(stream, request)


async def started(server: FakeAdsServer, ads: FakeAds | None = None) -> FakeAdsServer:
    if ads is not None:
        server.ads = ads
    await server.start()
    return server


# -- --types -------------------------------------------------------------------


def test_parse_types_reads_short_names_in_any_case() -> None:
    assert parse_types("cds,EDS") == frozenset({CDS, EDS})
    assert parse_types(" lds , rds ,cds,eds") == ALL_TYPES
    with pytest.raises(ValueError, match="unknown type 'sds'"):
        parse_types("cds,sds")
    with pytest.raises(ValueError, match="at least one"):
        parse_types(" , ")


def test_a_type_comes_with_the_type_its_names_come_from() -> None:
    assert EnvoyPlan(types=frozenset({CDS, EDS})).order == (CDS, EDS)
    assert EnvoyPlan(types=frozenset({LDS})).order == (LDS,)
    with pytest.raises(ValueError, match="EDS needs CDS"):
        EnvoyPlan(types=frozenset({EDS, LDS}))
    with pytest.raises(ValueError, match="RDS needs LDS"):
        EnvoyPlan(types=frozenset({CDS, RDS}))
    assert GrpcPlan(frozenset({"a:1"}), types=frozenset({LDS, RDS})).order == (LDS, RDS)
    with pytest.raises(ValueError, match="CDS needs RDS"):
        GrpcPlan(frozenset({"a:1"}), types=frozenset({LDS, CDS}))


def test_the_types_flag_becomes_the_spec_and_survives_json() -> None:
    def spec(*argv: str) -> LoadSpec:
        return spec_from_args(build_parser().parse_args(["loadtest", "--server", "h:1", *argv]))

    assert spec().types == tuple(sorted(ALL_TYPES))
    made = spec("--types", "eds,cds")
    assert made.type_set == frozenset({CDS, EDS})
    assert LoadSpec.from_json(made.to_json()) == made
    with pytest.raises(UsageError, match="--types: EDS needs CDS"):
        spec("--types", "eds")
    with pytest.raises(UsageError, match="--types: unknown type 'xds'"):
        spec("--types", "cds,xds")


async def test_a_cds_and_eds_fleet_converges_without_asking_for_listeners() -> None:
    server = await started(FakeAdsServer(sidecar_mesh()))
    try:
        identities = fleet_identities(20)
        types = frozenset({CDS, EDS})
        async with ProxyFleet(server.target, identities, types=types) as fleet:
            report = await fleet.wait_converged(timeout=10)
            assert report.converged
            assert all(set(proxy.holds(EDS)) == set(EDS_CLUSTERS) for proxy in fleet.proxies)
            assert all(proxy.types == (CDS, EDS) for proxy in fleet.proxies)
        assert server.ads.requests_of(LDS) == []
        assert server.ads.requests_of(RDS) == []
    finally:
        await server.stop()


# -- why a fleet did not converge ------------------------------------------------


async def test_a_server_with_only_cds_and_eds_leaves_every_proxy_without_lds() -> None:
    server = FakeAdsServer(sidecar_mesh())
    await started(server, CdsAndEdsOnly(sidecar_mesh()))
    try:
        async with ProxyFleet(server.target, fleet_identities(30)) as fleet:
            report = await fleet.wait_converged(timeout=1.0)
        assert len(report.unconverged) == 30
        stalls = report.stalls
        assert stalls.unconverged == 30
        assert stalls.types[LDS].no_response == 30
        assert CDS not in stalls.types and EDS not in stalls.types
        assert stalls.describe() == ["30 proxies have no LDS response"]
    finally:
        await server.stop()


async def test_missing_endpoints_are_named_and_a_nack_is_quoted() -> None:
    mesh = sidecar_mesh()
    del mesh[EDS][REVIEWS]
    server = await started(FakeAdsServer(mesh))
    try:
        identities = fleet_identities(6)

        def reject_listeners(type_url: str, resource: Any) -> str | None:
            return "listener refused by the test" if type_url == LDS else None

        types = frozenset({CDS, EDS})
        async with ProxyFleet(server.target, identities[:4], types=types) as waiting:
            stalled = await waiting.wait_converged(timeout=1.0)
        async with ProxyFleet(server.target, identities[4:], reject=reject_listeners) as nacking:
            nacked = await nacking.wait_converged(timeout=1.0)
    finally:
        await server.stop()
    eds = stalled.stalls.types[EDS]
    assert (eds.waiting, eds.missing) == (4, {REVIEWS})
    assert stalled.stalls.describe() == [f"4 proxies still wait for EDS of 1 cluster: {REVIEWS}"]
    lds = nacked.stalls.types[LDS]
    assert (lds.nacked, lds.first_nack) == (2, "listener refused by the test")
    assert "2 proxies NACKed LDS, first error: listener refused by the test" in (
        nacked.stalls.describe()
    )


async def test_failed_streams_are_counted_by_grpc_status() -> None:
    async with ProxyFleet("127.0.0.1:1", fleet_identities(3)) as fleet:
        report = await fleet.wait_converged(timeout=0.5)
    stalls = report.stalls
    assert stalls.types[CDS].no_response == 3
    assert set(stalls.streams) == {"UNAVAILABLE"}
    assert stalls.streams["UNAVAILABLE"].proxies == 3
    lines = stalls.describe()
    assert lines[0] == "3 proxies have no CDS response"
    assert lines[1].startswith("3 proxies' last stream failed with UNAVAILABLE")


def test_stalls_add_up_across_processes_and_survive_json() -> None:
    one = Stalls(3, {EDS: TypeStall(waiting=3, missing={"a", "b"})},
                 {"UNAVAILABLE": StreamStall(1, 4, "UNAVAILABLE: down")})  # fmt: skip
    two = Stalls(2, {EDS: TypeStall(waiting=1, missing={"b", "c"}), LDS: TypeStall(nacked=1,
                 first_nack="bad")}, {"UNAVAILABLE": StreamStall(2, 2, "x")})  # fmt: skip
    total = Stalls().merge(Stalls.from_json(one.to_json())).merge(Stalls.from_json(two.to_json()))
    assert total.unconverged == 5
    assert (total.types[EDS].waiting, total.types[EDS].missing) == (4, {"a", "b", "c"})
    assert total.types[LDS].first_nack == "bad"
    assert (total.streams["UNAVAILABLE"].proxies, total.streams["UNAVAILABLE"].failures) == (3, 6)
    assert total.describe()[0] == "4 proxies still wait for EDS of 3 clusters: a, b, c"
    assert Stalls.from_json(total.to_json()) == total


def test_the_report_says_why_in_words_and_in_json_adding_up_every_process() -> None:
    record = push_record()
    record.spec = replace(
        record.spec, scenario=Scenario.CONNECT, trigger=Trigger(), types=(CDS, EDS, LDS, RDS)
    )
    record.fired = []
    without_lds = Stalls(2, {LDS: TypeStall(no_response=2)})
    record.results = [
        replace(record.results[0], converged=record.results[0].proxies - 2, stalls=without_lds),
        replace(record.results[1], converged=record.results[1].proxies - 1,
                stalls=Stalls(1, {LDS: TypeStall(no_response=1)})),
    ]  # fmt: skip
    report = build_report(record)
    assert report["connect"]["unconverged"] == 3
    assert report["connect"]["stalls"]["types"]["LDS"]["noResponse"] == 3
    assert report["connect"]["stallReasons"] == ["3 proxies have no LDS response"]
    text = render_text(report)
    assert "  still waiting at the end (3 proxies):\n    3 proxies have no LDS response\n" in text
    assert text.endswith(
        "result: FAILED: 3 proxies never converged (3 proxies have no LDS response)\n"
    )
