"""The HTTP connection manager: routes, filters, and istiod's per-class settings."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.config.core.v3 import config_source_pb2
from envoy.config.route.v3 import route_pb2
from envoy.extensions.filters.http.buffer.v3 import buffer_pb2
from google.protobuf import json_format

from pilothouse.xds.builders.cluster import RestPolling, rest_config_source
from pilothouse.xds.builders.http_connection_manager import (
    ListenerClass,
    build_http_connection_manager,
    build_router_only_connection_manager,
    http_filter,
)

ADS = {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"}


def typed_entry(name: str, type_name: str) -> dict[str, Any]:
    return {"name": name, "typed_config": {"@type": f"type.googleapis.com/{type_name}"}}


FILTERS = "envoy.extensions.filters.http"
FAULT = typed_entry("envoy.filters.http.fault", f"{FILTERS}.fault.v3.HTTPFault")
CORS = typed_entry("envoy.filters.http.cors", f"{FILTERS}.cors.v3.Cors")
ROUTER = typed_entry("envoy.filters.http.router", f"{FILTERS}.router.v3.Router")
GRPC_WEB = typed_entry("envoy.filters.http.grpc_web", f"{FILTERS}.grpc_web.v3.GrpcWeb")
COMMON = {
    "generate_request_id": True,
    "upgrade_configs": [{"upgrade_type": "websocket"}],
    "stream_idle_timeout": "0s",
    "normalize_path": True,
    "path_with_escaped_slashes_action": "KEEP_UNCHANGED",
}


def as_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def test_listener_hcm_sidecar_outbound_over_rds() -> None:
    manager = build_http_connection_manager("outbound_127.0.0.1_9080", rds_name="9080")
    assert as_dict(manager) == {
        "stat_prefix": "outbound_127.0.0.1_9080",
        "rds": {"config_source": ADS, "route_config_name": "9080"},
        "http_filters": [FAULT, CORS, ROUTER],
        "use_remote_address": False,
        **COMMON,
    }


def test_listener_hcm_gateway_class() -> None:
    manager = build_http_connection_manager(
        "outbound_0.0.0.0_8080", rds_name="http.8080", listener_class=ListenerClass.GATEWAY
    )
    result = as_dict(manager)
    assert result["use_remote_address"] is True
    assert result["server_name"] == "istio-envoy"
    assert result["forward_client_cert_details"] == "SANITIZE_SET"
    assert result["set_current_client_cert_details"] == {
        "subject": True,
        "cert": True,
        "dns": True,
        "uri": True,
    }


def test_listener_hcm_inbound_class() -> None:
    config = route_pb2.RouteConfiguration(name="inbound|8080||")
    manager = build_http_connection_manager(
        "inbound_10.0.0.1_8080", route_config=config, listener_class=ListenerClass.SIDECAR_INBOUND
    )
    result = as_dict(manager)
    assert result["use_remote_address"] is False
    assert result["server_name"] == "istio-envoy"
    assert result["forward_client_cert_details"] == "APPEND_FORWARD"
    assert result["set_current_client_cert_details"] == {"subject": True, "dns": True, "uri": True}
    assert result["route_config"] == {"name": "inbound|8080||"}
    assert "rds" not in result


def test_listener_hcm_outbound_keeps_envoy_header_defaults() -> None:
    result = as_dict(build_http_connection_manager("x", rds_name="80"))
    for key in ("server_name", "forward_client_cert_details", "set_current_client_cert_details"):
        assert key not in result


def test_listener_hcm_use_remote_address_override() -> None:
    manager = build_http_connection_manager(
        "x", rds_name="80", listener_class=ListenerClass.GATEWAY, use_remote_address=False
    )
    assert manager.use_remote_address.value is False
    assert manager.HasField("use_remote_address")


@pytest.mark.parametrize(
    ("protocol", "http2", "filters"),
    [
        ("HTTP", False, [FAULT, CORS, ROUTER]),
        ("http", False, [FAULT, CORS, ROUTER]),
        ("HTTP2", True, [FAULT, CORS, ROUTER]),
        ("GRPC", True, [FAULT, CORS, ROUTER]),
        ("GRPC-Web", True, [GRPC_WEB, FAULT, CORS, ROUTER]),
    ],
)
def test_listener_hcm_protocol(protocol: str, http2: bool, filters: list[Any]) -> None:
    manager = build_http_connection_manager("x", rds_name="80", protocol=protocol)
    assert manager.HasField("http2_protocol_options") is http2
    assert as_dict(manager)["http_filters"] == filters


def test_listener_hcm_extra_filters_go_before_the_router() -> None:
    extra = http_filter("envoy.filters.http.buffer", buffer_pb2.Buffer())
    manager = build_http_connection_manager("x", rds_name="80", extra_http_filters=[extra])
    assert [item.name for item in manager.http_filters] == [
        "envoy.filters.http.fault",
        "envoy.filters.http.cors",
        "envoy.filters.http.buffer",
        "envoy.filters.http.router",
    ]


def test_listener_hcm_access_log() -> None:
    manager = build_http_connection_manager("x", rds_name="80", access_log=True)
    assert as_dict(manager)["access_log"] == [
        typed_entry(
            "envoy.access_loggers.stdout",
            "envoy.extensions.access_loggers.stream.v3.StdoutAccessLog",
        )
    ]
    assert not build_http_connection_manager("x", rds_name="80").access_log


def test_listener_hcm_rest_config_source() -> None:
    source = rest_config_source(RestPolling(cluster="xds-rest"))
    manager = build_http_connection_manager("x", rds_name="80", config_source=source)
    assert manager.rds.config_source == source
    assert manager.rds.config_source.api_config_source.api_type == (
        config_source_pb2.ApiConfigSource.REST
    )


@pytest.mark.parametrize(
    "routes",
    [
        {},
        {"rds_name": "80", "route_config": route_pb2.RouteConfiguration(name="r")},
        {"rds_name": ""},
    ],
)
def test_listener_hcm_needs_exactly_one_route_specifier(routes: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="rds_name"):
        build_http_connection_manager("x", **routes)


def test_listener_hcm_router_only() -> None:
    manager = build_router_only_connection_manager("greeter.local", rds_name="greeter-routes")
    assert as_dict(manager) == {
        "stat_prefix": "greeter.local",
        "rds": {"config_source": ADS, "route_config_name": "greeter-routes"},
        "http_filters": [ROUTER],
    }
