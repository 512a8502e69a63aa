"""Self-tests of the Envoy harness and the bootstrap builders against the real Envoy binary.

(a) every bootstrap the builder makes passes ``envoy --mode validate``; (b) a static Envoy
carries real HTTP to local upstreams, its stats parse, and stop() leaves nothing behind;
(c) an Envoy whose ADS server is unreachable stays not-ready with Istio's 0s initial fetch
timeout, and turns ready once a finite timeout expires; (d) the proxyless gRPC bootstrap
survives a JSON round trip with Istio's keys.  Plus TLS through Envoy with a throwaway CA.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pilothouse.bootstrap import (
    ISTIO_SERVER_LISTENER_TEMPLATE,
    EnvoyBootstrapOptions,
    Locality,
    XdsTransport,
    envoy_bootstrap,
    grpc_bootstrap,
)
from tests.e2e.harness.client import send_requests
from tests.e2e.harness.envoy import EnvoyExited, EnvoyProcess, validate_bootstrap
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, port_accepts
from tests.e2e.harness.static import static_bootstrap
from tests.e2e.harness.tls import ThrowawayCa, client_ssl_context
from tests.e2e.harness.upstreams import UpstreamPool

ISTIO_METADATA: dict[str, Any] = {
    "NAMESPACE": "default",
    "CLUSTER_ID": "Kubernetes",
    "ISTIO_VERSION": "1.24.0",
    "LABELS": {"app": "reviews", "version": "v1"},
    "INSTANCE_IPS": "10.0.0.1",
    "GENERATOR": "grpc",
    "POD_PORTS": '[{"containerPort":9080,"protocol":"TCP"}]',
}
SIDECAR_ID = "sidecar~10.0.0.1~reviews-v1-abc.default~default.svc.cluster.local"


# -- (a) every bootstrap the builder makes is one Envoy accepts ---------------------------


@pytest.mark.parametrize("transport", list(XdsTransport))
@pytest.mark.parametrize("with_metadata", [False, True], ids=["bare", "istio-metadata"])
async def test_builder_bootstraps_pass_envoy_validate(
    transport: XdsTransport, with_metadata: bool, tmp_path: Path, envoy_path: Path
) -> None:
    extras: dict[str, Any] = {}
    if with_metadata:
        extras = {
            "node_metadata": ISTIO_METADATA,
            "locality": Locality("us-east1", "us-east1-b", "rack7"),
            "access_log_stdout": True,
        }
    options = EnvoyBootstrapOptions(
        node_id=SIDECAR_ID, transport=transport, xds_port=15010, admin_port=15000, **extras
    )
    path = tmp_path / "bootstrap.json"
    path.write_text(json.dumps(envoy_bootstrap(options)))

    passed, output = await validate_bootstrap(path, envoy_path)

    assert passed, output


async def test_bootstrap_with_xds_host_name_passes_validate(
    tmp_path: Path, envoy_path: Path
) -> None:
    options = EnvoyBootstrapOptions(node_id="n1", xds_host="localhost", xds_port=15010)
    path = tmp_path / "bootstrap.json"
    path.write_text(json.dumps(envoy_bootstrap(options)))

    passed, output = await validate_bootstrap(path, envoy_path)

    assert passed, output


async def test_validate_rejects_a_bootstrap_envoy_cannot_load(
    tmp_path: Path, envoy_path: Path
) -> None:
    broken = envoy_bootstrap(EnvoyBootstrapOptions(node_id="n1"))
    broken["dynamic_resources"]["ads_config"]["api_type"] = "NOT_A_TYPE"
    path = tmp_path / "bootstrap.json"
    path.write_text(json.dumps(broken))

    passed, output = await validate_bootstrap(path, envoy_path)

    assert not passed
    assert "NOT_A_TYPE" in output


# -- (b) a static Envoy carries real HTTP ---------------------------------------------------


async def test_static_envoy_routes_traffic_and_reports_stats(
    envoy_factory: EnvoyFleet,
    upstream_factory: UpstreamPool,
    free_port: Callable[[], int],
) -> None:
    first = await upstream_factory("backend-a")
    second = await upstream_factory("backend-b")
    listener_port = free_port()
    bootstrap = static_bootstrap(
        node_id="static-1",
        admin_port=0,
        listener_port=listener_port,
        cluster_name="backend",
        endpoints=[first.address, second.address],
    )
    envoy = await envoy_factory(bootstrap)
    assert await envoy.listeners() == ["static-http"]
    before = await envoy.stat("cluster.backend.upstream_rq_total")

    report = await send_requests(LOOPBACK, listener_port, 20, path="/hello")

    assert report.statuses == {200: 20}, report.summary()
    assert report.upstreams == {"backend-a": first.requests, "backend-b": second.requests}
    assert first.requests > 0 and second.requests > 0, report.summary()
    assert first.paths == {"/hello": first.requests}
    assert await envoy.wait_stat("cluster.backend.upstream_rq_total", before + 20) == before + 20
    stats = await envoy.stats()
    assert stats["cluster.backend.upstream_rq_200"] == 20
    assert stats["cluster.backend.membership_healthy"] == 2  # a gauge
    clusters = await envoy.clusters_json()
    names = {status["name"] for status in clusters["cluster_statuses"]}
    assert names == {"backend"}
    dump = await envoy.config_dump()
    kinds = {config["@type"].rsplit(".", 1)[-1] for config in dump["configs"]}
    assert {"ClustersConfigDump", "ListenersConfigDump"} <= kinds


async def test_stop_leaves_no_process_behind(
    upstream_factory: UpstreamPool, free_port: Callable[[], int], tmp_path: Path
) -> None:
    upstream = await upstream_factory("backend")
    listener_port = free_port()
    bootstrap = static_bootstrap(
        node_id="static-2",
        admin_port=0,
        listener_port=listener_port,
        cluster_name="backend",
        endpoints=[upstream.address],
    )
    envoy = EnvoyProcess(bootstrap, workdir=tmp_path / "envoy")
    async with envoy:
        await envoy.wait_ready(10)
        pid = envoy.pid
        _, admin_port = await envoy.admin_address()
        assert os.getpgid(pid) == pid  # its own process group
        assert port_accepts(listener_port)

    assert not envoy.running()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not port_accepts(admin_port)
    assert not port_accepts(listener_port)


async def test_wait_ready_reports_a_dead_envoy_with_its_log(
    envoy_factory: EnvoyFleet, free_port: Callable[[], int]
) -> None:
    port = free_port()
    bootstrap = static_bootstrap(
        node_id="static-3",
        admin_port=0,
        listener_port=port,
        cluster_name="backend",
        endpoints=[(LOOPBACK, port)],
    )
    bootstrap["static_resources"]["clusters"][0]["type"] = "NO_SUCH_DISCOVERY_TYPE"
    envoy = await envoy_factory(bootstrap, wait_ready=False)

    with pytest.raises(EnvoyExited, match="NO_SUCH_DISCOVERY_TYPE"):
        await envoy.wait_ready(10)
    assert envoy.returncode not in (None, 0)


async def test_tls_listener_with_throwaway_ca(
    envoy_factory: EnvoyFleet,
    upstream_factory: UpstreamPool,
    free_port: Callable[[], int],
    tmp_path: Path,
) -> None:
    upstream = await upstream_factory("secure-backend")
    ca = ThrowawayCa(tmp_path / "pki")
    server = ca.issue("gateway", ("gateway.example.com",))
    listener_port = free_port()
    bootstrap = static_bootstrap(
        node_id="static-tls",
        admin_port=0,
        listener_port=listener_port,
        cluster_name="backend",
        endpoints=[upstream.address],
        tls=server,
    )
    await envoy_factory(bootstrap)

    trusted = await send_requests(
        LOOPBACK,
        listener_port,
        3,
        ssl_context=client_ssl_context(ca.cert_path),
        server_hostname="gateway.example.com",
        authority="gateway.example.com",
    )
    wrong_name = await send_requests(
        LOOPBACK,
        listener_port,
        1,
        ssl_context=client_ssl_context(ca.cert_path),
        server_hostname="other.example.com",
    )
    stranger = ThrowawayCa(tmp_path / "other-pki", "another CA")
    untrusted = await send_requests(
        LOOPBACK,
        listener_port,
        1,
        ssl_context=client_ssl_context(stranger.cert_path),
        server_hostname="gateway.example.com",
    )

    assert trusted.upstreams == {"secure-backend": 3}, trusted.summary()
    assert wrong_name.statuses == {None: 1} and "certificate" in wrong_name.errors[0].lower()
    assert untrusted.statuses == {None: 1} and "certificate" in untrusted.errors[0].lower()


# -- (c) an unreachable ADS server ----------------------------------------------------------


@pytest.mark.parametrize("transport", [XdsTransport.SOTW, XdsTransport.DELTA])
async def test_unreachable_ads_keeps_envoy_not_ready_with_zero_fetch_timeout(
    transport: XdsTransport, envoy_factory: EnvoyFleet, free_port: Callable[[], int]
) -> None:
    closed_port = free_port()  # nothing listens here
    options = EnvoyBootstrapOptions(
        node_id=f"unreachable-{transport}",
        xds_port=closed_port,
        admin_port=0,
        transport=transport,
        initial_fetch_timeout=0.0,
    )
    envoy = await envoy_factory(envoy_bootstrap(options), wait_ready=False)

    await envoy.wait_stat("cluster_manager.cds.update_failure", 2, timeout=10)
    ready = await envoy.admin("/ready")

    assert envoy.running()
    assert (ready.status, ready.body.strip()) == (503, b"PRE_INITIALIZING")
    assert await envoy.stat("control_plane.connected_state") == 0
    assert await envoy.stat("cluster_manager.cds.update_success") == 0
    assert await envoy.stat("cluster_manager.cds.init_fetch_timeout") == 0
    assert await envoy.stat("cluster.xds-grpc.upstream_cx_connect_fail") >= 1
    with pytest.raises(TimeoutError, match="PRE_INITIALIZING"):
        await envoy.wait_ready(0.3)


async def test_unreachable_ads_with_finite_fetch_timeout_turns_ready(
    envoy_factory: EnvoyFleet, free_port: Callable[[], int]
) -> None:
    options = EnvoyBootstrapOptions(
        node_id="unreachable-finite",
        xds_port=free_port(),
        admin_port=0,
        initial_fetch_timeout=0.3,
    )
    envoy = await envoy_factory(envoy_bootstrap(options), wait_ready=False)

    waited = await envoy.wait_ready(10)

    # CDS then LDS each give up after the timeout before the server goes LIVE.
    assert waited >= 0.5
    assert await envoy.stat("cluster_manager.cds.init_fetch_timeout") == 1
    assert await envoy.stat("listener_manager.lds.init_fetch_timeout") == 1
    assert await envoy.stat("control_plane.connected_state") == 0
    assert (await envoy.admin("/ready")).body.strip() == b"LIVE"


# -- (d) the proxyless gRPC bootstrap -------------------------------------------------------


def test_grpc_bootstrap_json_round_trip(tmp_path: Path) -> None:
    bootstrap = grpc_bootstrap(
        node_id=SIDECAR_ID,
        server_uri="127.0.0.1:15010",
        node_cluster="reviews.default",
        locality=Locality(region="r1", zone="z1"),
        metadata={"NAMESPACE": "default", "LABELS": {"app": "reviews"}},
        certificate_dir=Path("/etc/certs"),
    )
    path = tmp_path / "grpc-bootstrap.json"
    path.write_text(json.dumps(bootstrap))

    loaded = json.loads(path.read_text())

    assert loaded == bootstrap
    assert loaded["xds_servers"] == [
        {
            "server_uri": "127.0.0.1:15010",
            "channel_creds": [{"type": "insecure"}],
            "server_features": ["xds_v3"],
        }
    ]
    assert loaded["node"] == {
        "id": SIDECAR_ID,
        "cluster": "reviews.default",
        "locality": {"region": "r1", "zone": "z1"},
        "metadata": {"GENERATOR": "grpc", "NAMESPACE": "default", "LABELS": {"app": "reviews"}},
    }
    assert loaded["server_listener_resource_name_template"] == ISTIO_SERVER_LISTENER_TEMPLATE
    assert ISTIO_SERVER_LISTENER_TEMPLATE == "xds.istio.io/grpc/lds/inbound/%s"
    assert loaded["certificate_providers"]["default"] == {
        "plugin_name": "file_watcher",
        "config": {
            "certificate_file": "/etc/certs/cert-chain.pem",
            "private_key_file": "/etc/certs/key.pem",
            "ca_certificate_file": "/etc/certs/root-cert.pem",
            "refresh_interval": "900s",
        },
    }


def test_grpc_bootstrap_minimal_and_generator_override() -> None:
    bootstrap = grpc_bootstrap(
        node_id="grpc-client-1",
        server_uri="unix:///etc/istio/proxy/XDS",
        metadata={"GENERATOR": "api"},
        server_features=("xds_v3", "ignore_resource_deletion"),
    )

    assert set(bootstrap) == {"xds_servers", "node", "server_listener_resource_name_template"}
    assert bootstrap["node"] == {"id": "grpc-client-1", "metadata": {"GENERATOR": "api"}}
    assert bootstrap["xds_servers"][0]["server_uri"] == "unix:///etc/istio/proxy/XDS"
    assert bootstrap["xds_servers"][0]["server_features"] == ["xds_v3", "ignore_resource_deletion"]
    with pytest.raises(ValueError):
        grpc_bootstrap(node_id="", server_uri="127.0.0.1:1")
    with pytest.raises(ValueError):
        grpc_bootstrap(node_id="n", server_uri="127.0.0.1:1", metadata={"bad": object()})
