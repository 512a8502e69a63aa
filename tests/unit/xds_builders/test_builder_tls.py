"""ClientTLSSettings → the cluster's TLS transport socket (and auto SNI)."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.extensions.transport_sockets.tls.v3 import tls_pb2
from envoy.extensions.upstreams.http.v3 import http_protocol_options_pb2
from google.protobuf import json_format

from pilothouse.xds.builders.cluster import ClusterInputs, build_cluster
from pilothouse.xds.builders.upstream_protocol import HTTP_PROTOCOL_OPTIONS_KEY
from pilothouse.xds.builders.upstream_tls import credential_secret_name, san_matchers
from tests.unit.xds_builders.policies import policy

NAME = "outbound|9080|v1|reviews.default.svc.cluster.local"
SA = "spiffe://cluster.local/ns/default/sa/reviews"
TLS_PARAMS = {"tls_minimum_protocol_version": "TLSv1_2", "tls_maximum_protocol_version": "TLSv1_3"}
ADS = {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"}


def sds(name: str) -> dict[str, Any]:
    return {"name": name, "sds_config": ADS}


def san(kind: str, value: str) -> dict[str, Any]:
    return {"san_type": kind, "matcher": {"exact": value}}


def tls_json(tls: dict[str, Any], **inputs: Any) -> dict[str, Any] | None:
    cluster = build_cluster(ClusterInputs(name=NAME, policy=policy({"tls": tls}), **inputs))
    if not cluster.HasField("transport_socket"):
        return None
    assert cluster.transport_socket.name == "envoy.transport_sockets.tls"
    context = tls_pb2.UpstreamTlsContext()
    assert cluster.transport_socket.typed_config.Unpack(context)
    return json_format.MessageToDict(context, preserving_proto_field_name=True)


def test_builder_tls_disable_and_none() -> None:
    assert tls_json({"mode": "DISABLE"}) is None
    assert not build_cluster(ClusterInputs(name=NAME)).HasField("transport_socket")


@pytest.mark.parametrize(
    ("protocol", "alpn"), [("HTTP", ["istio"]), ("GRPC", ["istio", "h2"]), ("TCP", ["istio"])]
)
def test_builder_tls_istio_mutual(protocol: str, alpn: list[str]) -> None:
    context = tls_json({"mode": "ISTIO_MUTUAL"}, protocol=protocol, service_accounts=(SA,))
    assert context == {
        "common_tls_context": {
            "tls_params": TLS_PARAMS,
            "tls_certificate_sds_secret_configs": [sds("default")],
            "combined_validation_context": {
                "default_validation_context": {"match_typed_subject_alt_names": [san("URI", SA)]},
                "validation_context_sds_secret_config": sds("ROOTCA"),
            },
            "alpn_protocols": alpn,
        },
        "sni": "outbound_.9080_.v1_.reviews.default.svc.cluster.local",
    }


def test_builder_tls_istio_mutual_explicit_sni_and_sans() -> None:
    context = tls_json(
        {"mode": "ISTIO_MUTUAL", "sni": "custom.sni", "subjectAltNames": ["spiffe://x/y"]},
        service_accounts=(SA,),
    )
    assert context is not None
    assert context["sni"] == "custom.sni"
    validation = context["common_tls_context"]["combined_validation_context"]
    assert validation["default_validation_context"] == {
        "match_typed_subject_alt_names": [san("URI", "spiffe://x/y")]
    }


def test_builder_tls_istio_mutual_without_sans() -> None:
    context = tls_json({"mode": "ISTIO_MUTUAL"})
    assert context is not None
    validation = context["common_tls_context"]["combined_validation_context"]
    # An empty default validation context is still present (SANs unchecked, CA from ROOTCA).
    assert validation == {
        "default_validation_context": {},
        "validation_context_sds_secret_config": sds("ROOTCA"),
    }


def test_builder_tls_simple_with_files() -> None:
    context = tls_json(
        {
            "mode": "SIMPLE",
            "caCertificates": "/etc/certs/ca.pem",
            "subjectAltNames": ["api.example.com", "10.0.0.1"],
            "sni": "api.example.com",
            "caCrl": "/etc/certs/crl.pem",
        }
    )
    assert context == {
        "common_tls_context": {
            "tls_params": TLS_PARAMS,
            "validation_context": {
                "trusted_ca": {"filename": "/etc/certs/ca.pem"},
                "match_typed_subject_alt_names": [
                    san("DNS", "api.example.com"),
                    san("IP_ADDRESS", "10.0.0.1"),
                ],
                "crl": {"filename": "/etc/certs/crl.pem"},
            },
        },
        "sni": "api.example.com",
    }


def test_builder_tls_simple_system_ca_and_h2_alpn() -> None:
    context = tls_json({"mode": "SIMPLE"}, protocol="HTTP2", system_ca_file="/ca/bundle.pem")
    assert context == {
        "common_tls_context": {
            "tls_params": TLS_PARAMS,
            "validation_context": {"trusted_ca": {"filename": "/ca/bundle.pem"}},
            "alpn_protocols": ["h2"],
        }
    }


def test_builder_tls_simple_no_ca_at_all_means_no_validation() -> None:
    context = tls_json({"mode": "SIMPLE"}, system_ca_file="")
    assert context == {"common_tls_context": {"tls_params": TLS_PARAMS}}


def test_builder_tls_insecure_skip_verify_drops_validation() -> None:
    context = tls_json(
        {
            "mode": "SIMPLE",
            "caCertificates": "/ca.pem",
            "subjectAltNames": ["a"],
            "insecureSkipVerify": True,
        }
    )
    assert context == {"common_tls_context": {"tls_params": TLS_PARAMS}}


def test_builder_tls_mutual_with_files() -> None:
    context = tls_json(
        {
            "mode": "MUTUAL",
            "clientCertificate": "/c/cert.pem",
            "privateKey": "/c/key.pem",
            "caCertificates": "/c/ca.pem",
        },
        service_accounts=("spiffe://td/ns/x/sa/y",),
    )
    assert context == {
        "common_tls_context": {
            "tls_params": TLS_PARAMS,
            "tls_certificates": [
                {
                    "certificate_chain": {"filename": "/c/cert.pem"},
                    "private_key": {"filename": "/c/key.pem"},
                }
            ],
            "validation_context": {
                "trusted_ca": {"filename": "/c/ca.pem"},
                # The rule lists no SANs, so the service accounts are checked.
                "match_typed_subject_alt_names": [san("URI", "spiffe://td/ns/x/sa/y")],
            },
        }
    }


def test_builder_tls_mutual_without_key_pair_is_rejected() -> None:
    with pytest.raises(ValueError, match="client_certificate and private_key"):
        tls_json({"mode": "MUTUAL", "clientCertificate": "/c/cert.pem"})


@pytest.mark.parametrize(
    ("mode", "certificates"),
    [("SIMPLE", None), ("MUTUAL", [sds("kubernetes://client-creds")])],
)
def test_builder_tls_credential_name(mode: str, certificates: list[Any] | None) -> None:
    context = tls_json({"mode": mode, "credentialName": "client-creds", "subjectAltNames": ["a"]})
    common: dict[str, Any] = {
        "tls_params": TLS_PARAMS,
        "combined_validation_context": {
            "default_validation_context": {"match_typed_subject_alt_names": [san("DNS", "a")]},
            "validation_context_sds_secret_config": sds("kubernetes://client-creds-cacert"),
        },
    }
    if certificates is not None:
        common["tls_certificate_sds_secret_configs"] = certificates
    assert context == {"common_tls_context": common}


def test_builder_tls_credential_name_insecure() -> None:
    context = tls_json({"mode": "MUTUAL", "credentialName": "c", "insecureSkipVerify": True})
    assert context == {
        "common_tls_context": {
            "tls_params": TLS_PARAMS,
            "tls_certificate_sds_secret_configs": [sds("kubernetes://c")],
        }
    }


def test_builder_tls_secret_names() -> None:
    assert credential_secret_name("creds") == "kubernetes://creds"
    assert credential_secret_name("configmap://ns/ca") == "configmap://ns/ca"
    kinds = [m.san_type for m in san_matchers(["a.b", "::1", "spiffe://t/ns/n/sa/s"])]
    assert kinds == [2, 4, 3]  # DNS, IP_ADDRESS, URI


def upstream_http(tls: dict[str, Any]) -> dict[str, Any] | None:
    cluster = build_cluster(ClusterInputs(name=NAME, policy=policy({"tls": tls}), protocol="HTTP"))
    if HTTP_PROTOCOL_OPTIONS_KEY not in cluster.typed_extension_protocol_options:
        return None
    options = http_protocol_options_pb2.HttpProtocolOptions()
    cluster.typed_extension_protocol_options[HTTP_PROTOCOL_OPTIONS_KEY].Unpack(options)
    as_json = json_format.MessageToDict(options, preserving_proto_field_name=True)
    assert as_json.pop("explicit_http_config") == {"http_protocol_options": {}}
    return as_json


@pytest.mark.parametrize(
    ("tls", "expected"),
    [
        pytest.param(
            {"mode": "SIMPLE"},
            {"upstream_http_protocol_options": {"auto_sni": True, "auto_san_validation": True}},
            id="no-sni-no-sans",
        ),
        pytest.param(
            {"mode": "SIMPLE", "subjectAltNames": ["a"]},
            {"upstream_http_protocol_options": {"auto_sni": True}},
            id="sans-given",
        ),
        pytest.param(
            {"mode": "MUTUAL", "credentialName": "c", "insecureSkipVerify": True},
            {"upstream_http_protocol_options": {"auto_sni": True}},
            id="insecure-no-san-validation",
        ),
        pytest.param({"mode": "SIMPLE", "sni": "a"}, None, id="sni-given"),
        pytest.param({"mode": "ISTIO_MUTUAL"}, None, id="istio-mutual"),
        pytest.param({"mode": "DISABLE"}, None, id="disable"),
    ],
)
def test_builder_tls_auto_sni(tls: dict[str, Any], expected: dict[str, Any] | None) -> None:
    assert upstream_http(tls) == expected
