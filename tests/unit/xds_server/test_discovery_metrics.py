"""What streams report to the discovery server, as /metrics shows it."""

from __future__ import annotations

from prometheus_client import generate_latest

from pilothouse.admin.metrics import server_metrics
from pilothouse.protocol.type_urls import CDS, EDS
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.server.admission import Refusal
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView
from tests.integration.metrics_scrape import Scrape, parse


def scraped(discovery: DiscoveryServer) -> Scrape:
    return parse(generate_latest(server_metrics(DiscoveryDebugView(discovery)).registry).decode())


def test_failed_writes_count_as_senderr_pushes_and_push_errors() -> None:
    discovery = DiscoveryServer(MemoryStore("test"))
    discovery.record_written(CDS, 0.2, 0.05)
    discovery.record_send_error(CDS)
    discovery.record_send_error(EDS)
    discovery.record_send_error("networking.istio.io/v1/ServiceEntry")  # no senderr label
    discovery.stats.push_failures += 1
    found = scraped(discovery)
    assert found.sample("pilot_xds_pushes", type="cds") == 1
    assert found.sample("pilot_xds_pushes", type="cds_senderr") == 1
    assert found.sample("pilot_xds_pushes", type="eds_senderr") == 1
    assert found.sample("pilot_xds_push_errors", type="unrecoverable") == 4
    assert found.count("pilot_xds_push_time", type="cds") == 1
    assert found.sample("pilot_xds_push_time_sum", type="cds") == 0.2
    assert found.count("pilot_xds_send_time") == 1
    assert {k for s in found.families["pilot_xds_pushes"].samples for k in s.labels} == {"type"}


def test_refusals_from_any_number_of_sources_add_up_by_reason() -> None:
    discovery = DiscoveryServer(MemoryStore("test"))
    discovery.admission.refuse(Refusal.NOT_READY)
    discovery.admission.refuse(Refusal.BAD_NODE)
    discovery.admission.refuse(Refusal.BAD_NODE)
    metrics = server_metrics(DiscoveryDebugView(discovery))
    metrics.admission.add(lambda: {"rate_limited": 5, "bad_node": 1})
    found = parse(generate_latest(metrics.registry).decode())
    name = "pilothouse_xds_admission_rejections_total"
    assert found.sample(name, reason="not_ready") == 1
    assert found.sample(name, reason="bad_node") == 3
    assert found.sample(name, reason="rate_limited") == 5
    assert found.type_of("pilothouse_xds_admission_rejections") == "counter"


def test_a_registry_per_server() -> None:
    one, two = DiscoveryServer(MemoryStore("a")), DiscoveryServer(MemoryStore("b"))
    one.record_internal_error()
    assert scraped(one).sample("pilot_total_xds_internal_errors") == 1
    assert scraped(two).sample("pilot_total_xds_internal_errors") == 0
    view = DiscoveryDebugView(one)
    assert server_metrics(view).registry is not server_metrics(view).registry
