"""Inbound listeners under each PeerAuthentication mode."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.extensions.filters.network.http_connection_manager.v3 import (
    http_connection_manager_pb2 as hcm_pb2,
)
from envoy.extensions.filters.network.tcp_proxy.v3 import tcp_proxy_pb2
from envoy.extensions.transport_sockets.tls.v3 import tls_pb2
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import gateway_pb2
from pilothouse.push.peer_authentication import MtlsMode
from pilothouse.xds.builders.listener import TLS_INSPECTOR
from pilothouse.xds.builders.listener_mtls import ISTIO_MTLS_ALPNS
from pilothouse.xds.builders.listener_sidecar import build_inbound_listener

SDS_OVER_ADS = {
    "ads": {},
    "initial_fetch_timeout": "0s",
    "resource_api_version": "V3",
}


def as_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def tls_context(chain: Any) -> tls_pb2.DownstreamTlsContext | None:
    if not chain.HasField("transport_socket"):
        return None
    context = tls_pb2.DownstreamTlsContext()
    assert chain.transport_socket.typed_config.Unpack(context)
    return context


def matches(listener: Any) -> list[dict[str, Any]]:
    return [as_dict(chain.filter_chain_match) for chain in listener.filter_chains]


def listener_filters(listener: Any) -> list[str]:
    return [f.name for f in listener.listener_filters]


def test_strict_requires_a_client_certificate_from_the_mesh_root() -> None:
    listener = build_inbound_listener("10.0.0.1", 8080, "HTTP", mtls=MtlsMode.STRICT)
    assert listener_filters(listener) == [TLS_INSPECTOR]
    assert matches(listener) == [{"destination_port": 8080, "transport_protocol": "tls"}]
    context = tls_context(listener.filter_chains[0])
    assert context is not None
    assert as_dict(context) == {
        "common_tls_context": {
            "alpn_protocols": ["h2", "http/1.1"],
            "tls_params": {"tls_minimum_protocol_version": "TLSv1_2"},
            "tls_certificate_sds_secret_configs": [{"name": "default", "sds_config": SDS_OVER_ADS}],
            "combined_validation_context": {
                "default_validation_context": {},
                "validation_context_sds_secret_config": {
                    "name": "ROOTCA",
                    "sds_config": SDS_OVER_ADS,
                },
            },
        },
        "require_client_certificate": True,
    }


def test_permissive_http_has_an_mtls_and_a_plaintext_chain_behind_the_inspector() -> None:
    listener = build_inbound_listener("10.0.0.1", 8080, "HTTP", mtls=MtlsMode.PERMISSIVE)
    assert listener_filters(listener) == [TLS_INSPECTOR]
    assert matches(listener) == [
        {
            "destination_port": 8080,
            "transport_protocol": "tls",
            "application_protocols": list(ISTIO_MTLS_ALPNS),
        },
        {"destination_port": 8080, "transport_protocol": "raw_buffer"},
    ]
    mtls, plaintext = listener.filter_chains
    context = tls_context(mtls)
    assert context is not None and context.require_client_certificate.value
    assert tls_context(plaintext) is None
    # both run the same HCM to the inbound cluster
    assert mtls.filters == plaintext.filters
    names = [chain.name for chain in listener.filter_chains]
    assert len(set(names)) == 2
    assert list(ISTIO_MTLS_ALPNS) == [
        "istio",
        "istio-peer-exchange",
        "istio-http/1.0",
        "istio-http/1.1",
        "istio-h2",
    ]


def test_permissive_tcp_passes_non_istio_tls_through() -> None:
    listener = build_inbound_listener("10.0.0.1", 5432, "TCP", mtls=MtlsMode.PERMISSIVE)
    assert [m.get("transport_protocol") for m in matches(listener)] == [
        "tls",
        "tls",
        "raw_buffer",
    ]
    mtls, passthrough, plaintext = listener.filter_chains
    context = tls_context(mtls)
    assert context is not None
    assert list(context.common_tls_context.alpn_protocols) == ["istio"]
    assert tls_context(passthrough) is None and tls_context(plaintext) is None
    assert not passthrough.filter_chain_match.application_protocols
    proxy = tcp_proxy_pb2.TcpProxy()
    assert plaintext.filters[0].typed_config.Unpack(proxy)
    assert proxy.cluster == "inbound|5432||"


def test_strict_tcp_has_only_the_mtls_chain() -> None:
    listener = build_inbound_listener("10.0.0.1", 5432, "TCP", mtls=MtlsMode.STRICT)
    assert matches(listener) == [{"destination_port": 5432, "transport_protocol": "tls"}]
    context = tls_context(listener.filter_chains[0])
    assert context is not None and context.require_client_certificate.value


def test_disable_is_plaintext_only_without_the_inspector() -> None:
    listener = build_inbound_listener("10.0.0.1", 8080, "HTTP", mtls=MtlsMode.DISABLE)
    assert listener_filters(listener) == []
    assert matches(listener) == [{"destination_port": 8080}]
    assert tls_context(listener.filter_chains[0]) is None
    assert listener == build_inbound_listener("10.0.0.1", 8080, "HTTP")


@pytest.mark.parametrize("mode", list(MtlsMode))
def test_user_tls_of_a_sidecar_ingress_wins_over_the_mode(mode: MtlsMode) -> None:
    tls = gateway_pb2.ServerTLSSettings(
        mode=gateway_pb2.ServerTLSSettings.SIMPLE,
        server_certificate="/certs/cert.pem",
        private_key="/certs/key.pem",
    )
    listener = build_inbound_listener("10.0.0.1", 8443, "HTTP", tls=tls, mtls=mode)
    (chain,) = listener.filter_chains
    context = tls_context(chain)
    assert context is not None and not context.require_client_certificate.value
    assert listener_filters(listener) == []


@pytest.mark.parametrize("mode", [MtlsMode.STRICT, MtlsMode.PERMISSIVE])
def test_the_server_sidecar_forwards_the_client_identity(mode: MtlsMode) -> None:
    listener = build_inbound_listener("10.0.0.1", 8080, "HTTP", mtls=mode)
    manager = hcm_pb2.HttpConnectionManager()
    assert listener.filter_chains[0].filters[0].typed_config.Unpack(manager)
    assert manager.forward_client_cert_details == hcm_pb2.HttpConnectionManager.APPEND_FORWARD
    assert manager.set_current_client_cert_details.uri
