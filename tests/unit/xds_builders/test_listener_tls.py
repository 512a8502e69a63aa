"""ServerTLSSettings → DownstreamTlsContext for every mode and certificate source."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import gateway_pb2
from pilothouse.xds.builders.listener_tls import build_downstream_tls, terminates_tls

ADS = {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"}
ALPN_HTTP = ["h2", "http/1.1"]
FILES = {"serverCertificate": "/certs/cert.pem", "privateKey": "/certs/key.pem"}
CERTIFICATE = {
    "certificate_chain": {"filename": "/certs/cert.pem"},
    "private_key": {"filename": "/certs/key.pem"},
}


def settings(spec: dict[str, Any]) -> gateway_pb2.ServerTLSSettings:
    return json_format.ParseDict(spec, gateway_pb2.ServerTLSSettings())


def context(spec: dict[str, Any], *, http: bool = True) -> dict[str, Any]:
    built = build_downstream_tls(settings(spec), http=http)
    return json_format.MessageToDict(built, preserving_proto_field_name=True)


def sds(name: str) -> dict[str, Any]:
    return {"name": name, "sds_config": ADS}


def test_listener_tls_simple_files() -> None:
    assert context({"mode": "SIMPLE", **FILES, "caCertificates": "/certs/ca.pem"}) == {
        "common_tls_context": {"tls_certificates": [CERTIFICATE], "alpn_protocols": ALPN_HTTP},
        "require_client_certificate": False,
    }


def test_listener_tls_mutual_files_with_client_checks() -> None:
    result = context(
        {
            "mode": "MUTUAL",
            **FILES,
            "caCertificates": "/certs/ca.pem",
            "caCrl": "/certs/crl.pem",
            "subjectAltNames": ["client.example.com", "spiffe://cluster.local/ns/a/sa/b"],
            "verifyCertificateSpki": ["spki-hash"],
            "verifyCertificateHash": ["cert-hash"],
        }
    )
    assert result == {
        "common_tls_context": {
            "tls_certificates": [CERTIFICATE],
            "validation_context": {
                "trusted_ca": {"filename": "/certs/ca.pem"},
                "crl": {"filename": "/certs/crl.pem"},
                "match_typed_subject_alt_names": [
                    {"san_type": "DNS", "matcher": {"exact": "client.example.com"}},
                    {"san_type": "URI", "matcher": {"exact": "spiffe://cluster.local/ns/a/sa/b"}},
                ],
                "verify_certificate_spki": ["spki-hash"],
                "verify_certificate_hash": ["cert-hash"],
            },
            "alpn_protocols": ALPN_HTTP,
        },
        "require_client_certificate": True,
    }


def test_listener_tls_optional_mutual_validates_without_requiring() -> None:
    result = context({"mode": "OPTIONAL_MUTUAL", **FILES, "caCertificates": "/certs/ca.pem"})
    assert result["require_client_certificate"] is False
    assert result["common_tls_context"]["validation_context"] == {
        "trusted_ca": {"filename": "/certs/ca.pem"}
    }


def test_listener_tls_several_certificates() -> None:
    result = context(
        {
            "mode": "MUTUAL",
            "tlsCertificates": [
                {"serverCertificate": "/rsa.pem", "privateKey": "/rsa-key.pem"},
                {
                    "serverCertificate": "/ec.pem",
                    "privateKey": "/ec-key.pem",
                    "caCertificates": "/ca.pem",
                },
            ],
        }
    )
    common = result["common_tls_context"]
    assert common["tls_certificates"] == [
        {
            "certificate_chain": {"filename": "/rsa.pem"},
            "private_key": {"filename": "/rsa-key.pem"},
        },
        {"certificate_chain": {"filename": "/ec.pem"}, "private_key": {"filename": "/ec-key.pem"}},
    ]
    assert common["validation_context"] == {"trusted_ca": {"filename": "/ca.pem"}}


def test_listener_tls_protocol_versions_and_ciphers() -> None:
    result = context(
        {
            "mode": "SIMPLE",
            **FILES,
            "minProtocolVersion": "TLSV1_2",
            "maxProtocolVersion": "TLSV1_3",
            "cipherSuites": [
                "ECDHE-ECDSA-AES256-GCM-SHA384",
                "ECDHE-RSA-AES256-GCM-SHA384",
                "ECDHE-ECDSA-AES256-GCM-SHA384",
            ],
        }
    )
    assert result["common_tls_context"]["tls_params"] == {
        "tls_minimum_protocol_version": "TLSv1_2",
        "tls_maximum_protocol_version": "TLSv1_3",
        "cipher_suites": ["ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384"],
    }


def test_listener_tls_credential_name() -> None:
    assert context({"mode": "SIMPLE", "credentialName": "gateway-cert"}) == {
        "common_tls_context": {
            "tls_certificate_sds_secret_configs": [sds("kubernetes://gateway-cert")],
            "alpn_protocols": ALPN_HTTP,
        },
        "require_client_certificate": False,
    }


def test_listener_tls_credential_name_mutual() -> None:
    result = context(
        {"mode": "MUTUAL", "credentialName": "gateway-cert", "subjectAltNames": ["client"]}
    )
    assert result["common_tls_context"]["combined_validation_context"] == {
        "default_validation_context": {
            "match_typed_subject_alt_names": [{"san_type": "DNS", "matcher": {"exact": "client"}}]
        },
        "validation_context_sds_secret_config": sds("kubernetes://gateway-cert-cacert"),
    }
    assert result["require_client_certificate"] is True


def test_listener_tls_credential_names_and_ca_credential() -> None:
    result = context(
        {
            "mode": "MUTUAL",
            "credentialNames": ["rsa-cert", "kubernetes-gateway://ns/ec-cert"],
            "caCertCredentialName": "client-ca",
        }
    )
    common = result["common_tls_context"]
    assert common["tls_certificate_sds_secret_configs"] == [
        sds("kubernetes://rsa-cert"),
        sds("kubernetes-gateway://ns/ec-cert"),
    ]
    assert common["combined_validation_context"] == {
        "default_validation_context": {},
        "validation_context_sds_secret_config": sds("kubernetes://client-ca"),
    }


@pytest.mark.parametrize(("http", "alpn"), [(True, ALPN_HTTP), (False, ["istio"])])
def test_listener_tls_istio_mutual(http: bool, alpn: list[str]) -> None:
    result = context(
        {"mode": "ISTIO_MUTUAL", "subjectAltNames": ["spiffe://td/ns/a/sa/b"]}, http=http
    )
    assert result == {
        "common_tls_context": {
            "tls_certificate_sds_secret_configs": [sds("default")],
            "combined_validation_context": {
                "default_validation_context": {
                    "match_typed_subject_alt_names": [
                        {"san_type": "URI", "matcher": {"exact": "spiffe://td/ns/a/sa/b"}}
                    ]
                },
                "validation_context_sds_secret_config": sds("ROOTCA"),
            },
            "alpn_protocols": alpn,
        },
        "require_client_certificate": True,
    }


def test_listener_tls_tcp_termination_offers_no_http_alpn() -> None:
    result = context({"mode": "SIMPLE", **FILES}, http=False)
    assert "alpn_protocols" not in result["common_tls_context"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"mode": "PASSTHROUGH"}, "does not terminate"),
        ({"mode": "AUTO_PASSTHROUGH"}, "does not terminate"),
        ({"mode": "SIMPLE", "serverCertificate": "/c.pem"}, "privateKey"),
        ({"mode": "MUTUAL", **FILES}, "caCertificates"),
        ({"mode": "MUTUAL", "tlsCertificates": [{"serverCertificate": "/c.pem"}]}, "privateKey"),
    ],
)
def test_listener_tls_rejects(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_downstream_tls(settings(spec))


@pytest.mark.parametrize(
    ("mode", "terminates"),
    [
        ("PASSTHROUGH", False),
        ("AUTO_PASSTHROUGH", False),
        ("SIMPLE", True),
        ("MUTUAL", True),
        ("OPTIONAL_MUTUAL", True),
        ("ISTIO_MUTUAL", True),
    ],
)
def test_listener_tls_terminates(mode: str, terminates: bool) -> None:
    assert terminates_tls(settings({"mode": mode})) is terminates
