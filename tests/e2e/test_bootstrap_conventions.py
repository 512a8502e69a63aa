"""The Envoy bootstrap builder follows Istio's bootstrap conventions (conventions.md §9).

These are pure checks of the dict; ``test_harness_envoy.py`` has Envoy itself validate
every variant.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from pilothouse.bootstrap import (
    XDS_GRPC_CLUSTER,
    XDS_REST_CLUSTER,
    EnvoyBootstrapOptions,
    Locality,
    XdsTransport,
    envoy_bootstrap,
    xds_config_source,
)
from pilothouse.bootstrap.envoy import proto_duration

PROTOCOL_OPTIONS = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"


def build(**overrides: Any) -> dict[str, Any]:
    options = {"node_id": "sidecar~10.0.0.1~a.ns~ns.svc.cluster.local", **overrides}
    return envoy_bootstrap(EnvoyBootstrapOptions(**options))


@pytest.mark.parametrize(
    ("transport", "api_type"), [(XdsTransport.SOTW, "GRPC"), (XdsTransport.DELTA, "DELTA_GRPC")]
)
def test_ads_transports_follow_istio(transport: XdsTransport, api_type: str) -> None:
    bootstrap = build(transport=transport, xds_host="10.1.2.3", xds_port=15012)
    dynamic = bootstrap["dynamic_resources"]

    assert dynamic["ads_config"] == {
        "api_type": api_type,
        "transport_api_version": "V3",
        "set_node_on_first_message_only": True,
        "grpc_services": [
            {
                "envoy_grpc": {
                    "cluster_name": "xds-grpc",
                    "retry_policy": {
                        "retry_back_off": {"base_interval": "0.5s", "max_interval": "5s"}
                    },
                }
            }
        ],
    }
    ads_source = {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"}
    assert dynamic["cds_config"] == ads_source
    assert dynamic["lds_config"] == ads_source
    [cluster] = bootstrap["static_resources"]["clusters"]
    assert cluster["name"] == XDS_GRPC_CLUSTER == "xds-grpc"
    assert cluster["type"] == "STATIC"
    http = cluster["typed_extension_protocol_options"][PROTOCOL_OPTIONS]
    assert http["@type"] == f"type.googleapis.com/{PROTOCOL_OPTIONS}"
    assert "http2_protocol_options" in http["explicit_http_config"]
    [locality] = cluster["load_assignment"]["endpoints"]
    address = locality["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]
    assert address == {"address": "10.1.2.3", "port_value": 15012}


def test_rest_transport_polls_through_an_http1_cluster() -> None:
    bootstrap = build(transport=XdsTransport.REST, rest_refresh_delay=0.5, rest_request_timeout=2)
    dynamic = bootstrap["dynamic_resources"]

    assert "ads_config" not in dynamic
    expected = {
        "api_config_source": {
            "api_type": "REST",
            "transport_api_version": "V3",
            "cluster_names": [XDS_REST_CLUSTER],
            "refresh_delay": "0.5s",
            "request_timeout": "2s",
        },
        "initial_fetch_timeout": "0s",
        "resource_api_version": "V3",
    }
    assert dynamic["cds_config"] == expected
    assert dynamic["lds_config"] == expected
    [cluster] = bootstrap["static_resources"]["clusters"]
    assert cluster["name"] == XDS_REST_CLUSTER
    http = cluster["typed_extension_protocol_options"][PROTOCOL_OPTIONS]
    assert http["explicit_http_config"] == {"http_protocol_options": {}}


def test_config_source_for_served_rds_and_eds_matches_the_transport() -> None:
    rest = EnvoyBootstrapOptions(node_id="n", transport=XdsTransport.REST)
    ads = EnvoyBootstrapOptions(node_id="n", transport=XdsTransport.DELTA)

    assert xds_config_source(rest)["api_config_source"]["api_type"] == "REST"
    assert xds_config_source(ads) == {
        "ads": {},
        "initial_fetch_timeout": "0s",
        "resource_api_version": "V3",
    }


def test_node_admin_and_access_log() -> None:
    metadata = {"NAMESPACE": "ns", "LABELS": {"app": "a"}, "INSTANCE_IPS": "10.0.0.1"}
    bootstrap = build(
        node_cluster="a.ns",
        node_metadata=metadata,
        locality=Locality(region="r", zone="z"),
        admin_port=15000,
        access_log_stdout=True,
    )

    assert bootstrap["node"] == {
        "id": "sidecar~10.0.0.1~a.ns~ns.svc.cluster.local",
        "cluster": "a.ns",
        "locality": {"region": "r", "zone": "z"},
        "metadata": metadata,
    }
    admin = bootstrap["admin"]
    assert admin["address"] == {"socket_address": {"address": "127.0.0.1", "port_value": 15000}}
    [log] = admin["access_log"]
    assert log["typed_config"]["@type"].endswith("StdoutAccessLog")


def test_defaults_are_istio_like_and_minimal() -> None:
    bootstrap = build()

    assert bootstrap["node"] == {
        "id": "sidecar~10.0.0.1~a.ns~ns.svc.cluster.local",
        "cluster": "istio-proxy",
    }
    assert "access_log" not in bootstrap["admin"]
    assert bootstrap["admin"]["address"]["socket_address"]["address"] == "127.0.0.1"
    assert bootstrap["dynamic_resources"]["ads_config"]["api_type"] == "GRPC"


def test_xds_host_name_uses_strict_dns() -> None:
    [cluster] = build(xds_host="istiod.istio-system.svc")["static_resources"]["clusters"]

    assert cluster["type"] == "STRICT_DNS"


def test_initial_fetch_timeout_is_carried() -> None:
    bootstrap = build(initial_fetch_timeout=15)

    assert bootstrap["dynamic_resources"]["cds_config"]["initial_fetch_timeout"] == "15s"
    assert bootstrap["dynamic_resources"]["lds_config"]["initial_fetch_timeout"] == "15s"


def test_bootstrap_is_plain_data_for_json_and_yaml() -> None:
    bootstrap = build(node_metadata={"LABELS": {"app": "a"}, "PORTS": [1, 2]})

    assert json.loads(json.dumps(bootstrap)) == bootstrap
    assert yaml.safe_load(yaml.safe_dump(bootstrap)) == bootstrap


def test_metadata_is_copied_not_shared() -> None:
    metadata: dict[str, Any] = {"LABELS": {"app": "a"}}
    options = EnvoyBootstrapOptions(node_id="n", node_metadata=metadata)
    metadata["NAMESPACE"] = "later"
    first = envoy_bootstrap(options)
    first["node"]["metadata"]["LABELS"]["app"] = "changed"

    assert envoy_bootstrap(options)["node"]["metadata"] == {"LABELS": {"app": "a"}}


@pytest.mark.parametrize(
    "overrides",
    [
        {"node_id": ""},
        {"node_cluster": ""},
        {"xds_port": 0},
        {"xds_port": 70000},
        {"admin_port": -1},
        {"admin_host": "localhost"},
        {"initial_fetch_timeout": -1},
        {"initial_fetch_timeout": float("nan")},
        {"connect_timeout": 0},
        {"xds_retry_base": 0},
        {"xds_retry_base": 6, "xds_retry_max": 5},
        {"transport": "grpc-web"},
        {"transport": XdsTransport.REST, "rest_refresh_delay": 0},
        {"node_metadata": {"LABELS": {"app": object()}}},
        {"node_metadata": {1: "x"}},
    ],
)
def test_bad_options_are_refused(overrides: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        EnvoyBootstrapOptions(**{"node_id": "n", **overrides})


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (1, "1s"), (0.25, "0.25s"), (15.0, "15s"), (1e-9, "0.000000001s")],
)
def test_proto_duration(seconds: float, text: str) -> None:
    assert proto_duration(seconds) == text
