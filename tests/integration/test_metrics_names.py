"""``pilothouse serve`` on the example mesh: ``/metrics`` carries istiod's exact names.

A real ``pilothouse serve`` process (ports chosen by the kernel, read from its log) with
one simulated sidecar that NACKs its listeners, so that every series a Grafana
dashboard for istiod queries exists. The exposition is read as text (the names as
written: prometheus_client's parser would hide an appended ``_total``) and parsed
(types, labels, values).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from pilothouse.config.load import Loader
from pilothouse.kinds.gateway_api.translation import translate
from pilothouse.kinds.table import SCHEMAS
from pilothouse.loadtest.fleet import ProxyFleet
from pilothouse.loadtest.holdings import ReceivedResource
from pilothouse.loadtest.identity import ProxyFlavour, mesh_identity
from pilothouse.metrics.push import specs
from pilothouse.protocol.type_urls import CDS, LDS
from tests.integration.metrics_scrape import Scrape, scrape

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
LISTENING = re.compile(r"\b(xDS|admin)(?: \([^)]*\))? listening on 127\.0\.0\.1:(\d+)")

DASHBOARD_SAMPLES = (
    "istio_build",
    "pilot_xds",
    "pilot_xds_pushes",
    "pilot_total_xds_rejects",
    "pilot_total_xds_internal_errors",
    "pilot_xds_push_time_bucket",
    "pilot_xds_config_size_bytes_bucket",
)
"""What the Istio control-plane dashboard queries (manifests/addons/dashboards)."""
ISTIOD_COUNTERS = (
    "pilot_xds_pushes",
    "pilot_push_triggers",
    "pilot_inbound_updates",
    "pilot_total_xds_rejects",
    "pilot_xds_expired_nonce",
    "pilot_total_xds_internal_errors",
    "pilot_xds_push_errors",
)
ISTIOD_TOTAL_COUNTERS = ("pilot_sds_certificate_errors_total",)
"""istiod counters whose registered name itself ends in ``_total``: typed counters."""


@dataclass
class Served:
    process: asyncio.subprocess.Process
    xds_port: int
    admin_port: int
    log: list[str]


async def serve_examples() -> Served:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pilothouse.cli.main", "serve", "--config", str(EXAMPLES),
        "--xds-address", "127.0.0.1:0", "--admin-address", "127.0.0.1:0",
        "--log-level", "info",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    ports: dict[str, int] = {}
    log: list[str] = []
    async with asyncio.timeout(30):
        while len(ports) < 2:
            line = (await process.stderr.readline()).decode(errors="replace")
            if not line:
                raise RuntimeError("pilothouse serve exited:\n" + "".join(log))
            log.append(line)
            found = LISTENING.search(line)
            if found:
                ports[found.group(1)] = int(found.group(2))
    return Served(process, ports["xDS"], ports["admin"], log)


async def drain(served: Served) -> None:
    assert served.process.stderr is not None
    async for line in served.process.stderr:
        served.log.append(line.decode(errors="replace"))


async def stop(served: Served) -> None:
    if served.process.returncode is None:
        served.process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(served.process.wait(), 15)
        except TimeoutError:
            served.process.kill()
            await served.process.wait()


async def wait_ready(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while True:
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(f"http://127.0.0.1:{port}/ready") as response:
                    if response.status == 200:
                        return
            assert time.monotonic() < deadline, "/ready never turned 200"
            await asyncio.sleep(0.05)


def reject_listeners(type_url: str, resource: ReceivedResource) -> str | None:
    return f"listener {resource.name} refused by the test" if type_url == LDS else None


async def scrape_examples() -> Scrape:
    """Serve the examples, connect a sidecar that NACKs its listeners, and scrape once the
    NACK is counted."""
    served = await serve_examples()
    drainer = asyncio.create_task(drain(served))
    try:
        await wait_ready(served.admin_port)
        sidecar = mesh_identity(ProxyFlavour.SIDECAR, "10.0.0.7", "productpage-v1", "bookinfo")
        fleet = ProxyFleet(f"127.0.0.1:{served.xds_port}", [sidecar], reject=reject_listeners)
        await fleet.start()
        try:
            (proxy,) = fleet.proxies
            await proxy.wait_for(lambda p: p.last_error(LDS) is not None, 20)
            await proxy.wait_for(lambda p: bool(p.holds(CDS)), 20)
            deadline = time.monotonic() + 10
            while True:
                found = await scrape(served.admin_port)
                if found.sample("pilot_total_xds_rejects", type="lds") >= 1:
                    return found
                assert time.monotonic() < deadline, "the NACK never counted"
                await asyncio.sleep(0.05)
        finally:
            await fleet.close()
    finally:
        await stop(served)
        drainer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await drainer


@pytest.fixture(scope="module")
def exposition() -> Scrape:
    return asyncio.run(scrape_examples())


def test_the_dashboard_series_exist_under_istiods_exact_names(exposition: Scrape) -> None:
    names = exposition.sample_names()
    missing = [name for name in DASHBOARD_SAMPLES if name not in names]
    assert not missing, f"{missing} not in {sorted(names)}"
    for name in ISTIOD_COUNTERS:
        assert f"# TYPE {name} untyped" in exposition.text.splitlines()
        assert f"{name}_total" not in names
    # no istiod-named sample got a suffix of prometheus_client's
    suffixed = [
        n
        for n in names
        if n.startswith(("pilot_", "istio"))
        and n.endswith(("_total", "_created"))
        and n not in ISTIOD_TOTAL_COUNTERS
    ]
    for name in ISTIOD_TOTAL_COUNTERS:
        assert f"# TYPE {name} counter" in exposition.text.splitlines()
    assert suffixed == []
    assert exposition.content_type == "text/plain; version=0.0.4; charset=utf-8"


def test_types_and_labels_are_istiods(exposition: Scrape) -> None:
    assert exposition.type_of("pilot_xds") == "gauge"
    assert exposition.type_of("pilot_services") == "gauge"
    assert exposition.type_of("istio_build") == "gauge"
    for name in ISTIOD_COUNTERS:
        assert exposition.type_of(name) == "unknown"  # untyped in the text format
    for histogram in specs():
        assert exposition.type_of(histogram.name) == "histogram"
    assert exposition.sample("pilot_xds", version="1.28.0") == 1
    assert exposition.sample("istio_build", component="pilot", tag="0.1.0") == 1
    assert exposition.sample("pilot_total_xds_rejects", type="lds") >= 1
    assert exposition.sample("pilot_xds_pushes", type="cds") >= 1
    buckets = [
        s.labels["le"]
        for s in exposition.families["pilot_xds_config_size_bytes"].samples
        if s.name.endswith("_bucket") and s.labels["type"] == CDS
    ]
    assert buckets == ["1", "10000", "1e+06", "4e+06", "1e+07", "4e+07", "+Inf"]
    push_buckets = [
        s.labels["le"]
        for s in exposition.families["pilot_xds_push_time"].samples
        if s.name.endswith("_bucket") and s.labels["type"] == "cds"
    ]
    assert push_buckets == ["0.01", "0.1", "1", "3", "5", "10", "20", "30", "+Inf"]


def test_services_and_virtual_services_are_the_example_meshs(exposition: Scrape) -> None:
    loader = Loader(SCHEMAS)
    configs = [
        config
        for path in sorted(EXAMPLES.rglob("*.yaml"))
        for config in loader.load_strict(path.read_text(), str(path))
    ]
    hosts = {
        (config.namespace, host)
        for config in configs
        if config.kind == "ServiceEntry"
        for host in config.spec.hosts  # type: ignore[attr-defined]
    }
    virtual_services = [config for config in configs if config.kind == "VirtualService"]
    # and, as istiod counts them, the VirtualServices made of the Gateway API's routes
    generated = translate(lambda kind: [c for c in configs if c.kind == kind], "cluster.local")
    virtual_services += generated.virtual_services
    assert exposition.sample("pilot_services") == len(hosts) > 0
    assert exposition.sample("pilot_virt_services") == len(virtual_services) > 0
    source = f"fs://{EXAMPLES}"
    assert exposition.sample("pilothouse_config_source_synced", source=source) == 1
    assert exposition.sample("pilothouse_config_source_available", source=source) == 1
    assert exposition.sample("pilothouse_config_source_errors", source=source) == 0
