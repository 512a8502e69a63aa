"""``ClientTLSSettings`` → the cluster's ``envoy.transport_sockets.tls`` transport socket.

Modes:

- DISABLE: no transport socket (plaintext).
- ISTIO_MUTUAL: the workload certificate and the mesh root come over SDS, as
  secrets ``default`` and ``ROOTCA`` fetched on the ADS stream
  (``sds_config{ads{}}``).  pilothouse's identity and SDS service serve them;
  until that exists an Envoy holding such a cluster waits for the secrets.
  The SNI defaults to the DNS-SRV form of the cluster name
  (``outbound_.9080_.v1_.reviews...``), the SANs to the service accounts, and
  ALPN advertises ``istio`` (plus ``h2`` on HTTP/2 clusters).  Istio's
  ``istio-peer-exchange`` ALPN is not offered: it needs Istio's own Envoy build.
- SIMPLE / MUTUAL with ``credential_name``: over SDS as well.  MUTUAL takes its
  key pair from secret ``kubernetes://<name>``, and the CA comes from
  ``kubernetes://<name>-cacert`` unless ``insecure_skip_verify`` is set.  A name
  that already has a scheme (``kubernetes://``, ``configmap://``...) is kept.
- SIMPLE / MUTUAL with files: Envoy reads them directly (Istio routes them
  through its node agent's SDS; pilothouse has no agent).  MUTUAL needs
  ``client_certificate`` and ``private_key``.  Unless ``insecure_skip_verify``
  is set, ``validation_context`` trusts ``ca_certificates`` (or, when empty,
  the system bundle, Istio's ``system`` default) with ``ca_crl`` as CRL.

Subject alt names (the rule's, or the service accounts when the rule has none)
become ``match_typed_subject_alt_names`` exact matchers: URI type for
``scheme://...`` values (SPIFFE ids), IP_ADDRESS for IP literals, DNS otherwise.
Every context pins TLS 1.2 to 1.3, as Istio does.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from envoy.config.core.v3 import (  # type: ignore[import-untyped]
    base_pb2,
    config_source_pb2,
)
from envoy.extensions.transport_sockets.tls.v3 import (  # type: ignore[import-untyped]
    common_pb2,
    secret_pb2,
    tls_pb2,
)
from envoy.type.matcher.v3 import string_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2

TLS_TRANSPORT_SOCKET: Final = "envoy.transport_sockets.tls"
SDS_DEFAULT_SECRET: Final = "default"
SDS_ROOT_SECRET: Final = "ROOTCA"
CREDENTIAL_PREFIX: Final = "kubernetes://"
CA_SECRET_SUFFIX: Final = "-cacert"
DEFAULT_SYSTEM_CA_FILE: Final = "/etc/ssl/certs/ca-certificates.crt"

ALPN_ISTIO: Final = ("istio",)
ALPN_ISTIO_H2: Final = ("istio", "h2")
ALPN_H2: Final = ("h2",)

TLSmode = dr_pb2.ClientTLSSettings.TLSmode
SanType = common_pb2.SubjectAltNameMatcher.SanType


@dataclass(frozen=True, slots=True)
class TlsOrigination:
    """What the cluster builder tells this module about the cluster."""

    istio_sni: str
    http2: bool = False
    service_accounts: tuple[str, ...] = ()
    system_ca_file: str = DEFAULT_SYSTEM_CA_FILE


def build_upstream_tls(
    tls: dr_pb2.ClientTLSSettings | None, origination: TlsOrigination
) -> tls_pb2.UpstreamTlsContext | None:
    """The TLS context for ``tls``, or ``None`` for DISABLE / no settings.

    Raises ``ValueError`` for MUTUAL with files but without a key pair.
    """
    if tls is None or tls.mode == dr_pb2.ClientTLSSettings.DISABLE:
        return None
    if tls.mode == dr_pb2.ClientTLSSettings.ISTIO_MUTUAL:
        return _istio_mutual(tls, origination)
    return _originate(tls, origination, mutual=tls.mode == dr_pb2.ClientTLSSettings.MUTUAL)


def build_transport_socket(context: tls_pb2.UpstreamTlsContext) -> base_pb2.TransportSocket:
    """``transport_socket{name: envoy.transport_sockets.tls, typed_config: context}``."""
    typed = any_pb2.Any()
    typed.Pack(context, deterministic=True)
    return base_pb2.TransportSocket(name=TLS_TRANSPORT_SOCKET, typed_config=typed)


def needs_auto_sni(tls: dr_pb2.ClientTLSSettings | None) -> tuple[bool, bool]:
    """(auto_sni, auto_san_validation) for SIMPLE / MUTUAL origination, as Istio sets them."""
    if tls is None or tls.mode not in (
        dr_pb2.ClientTLSSettings.SIMPLE,
        dr_pb2.ClientTLSSettings.MUTUAL,
    ):
        return False, False
    auto_sni = not tls.sni
    auto_san = auto_sni and not tls.subject_alt_names and not tls.insecure_skip_verify.value
    return auto_sni, auto_san


def sds_secret(name: str) -> secret_pb2.SdsSecretConfig:
    """A secret fetched over ADS (no initial-fetch timeout: wait for it)."""
    source = config_source_pb2.ConfigSource(resource_api_version=config_source_pb2.V3)
    source.ads.SetInParent()
    source.initial_fetch_timeout.SetInParent()
    return secret_pb2.SdsSecretConfig(name=name, sds_config=source)


def credential_secret_name(credential_name: str) -> str:
    """``kubernetes://<name>`` unless the name already carries a scheme."""
    return credential_name if "://" in credential_name else CREDENTIAL_PREFIX + credential_name


def san_matchers(names: Sequence[str]) -> list[common_pb2.SubjectAltNameMatcher]:
    """Exact SAN matchers, typed by the look of each name."""
    return [
        common_pb2.SubjectAltNameMatcher(
            san_type=_san_type(name), matcher=string_pb2.StringMatcher(exact=name)
        )
        for name in names
    ]


def _san_type(name: str) -> int:
    if "://" in name:
        return int(SanType.URI)
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return int(SanType.DNS)
    return int(SanType.IP_ADDRESS)


def _subject_alt_names(tls: dr_pb2.ClientTLSSettings, origination: TlsOrigination) -> Sequence[str]:
    return list(tls.subject_alt_names) or list(origination.service_accounts)


def _common_context() -> tls_pb2.CommonTlsContext:
    context = tls_pb2.CommonTlsContext()
    context.tls_params.tls_minimum_protocol_version = common_pb2.TlsParameters.TLSv1_2
    context.tls_params.tls_maximum_protocol_version = common_pb2.TlsParameters.TLSv1_3
    return context


def _istio_mutual(
    tls: dr_pb2.ClientTLSSettings, origination: TlsOrigination
) -> tls_pb2.UpstreamTlsContext:
    common = _common_context()
    common.tls_certificate_sds_secret_configs.append(sds_secret(SDS_DEFAULT_SECRET))
    combined = common.combined_validation_context
    combined.default_validation_context.SetInParent()
    combined.default_validation_context.match_typed_subject_alt_names.extend(
        san_matchers(_subject_alt_names(tls, origination))
    )
    combined.validation_context_sds_secret_config.CopyFrom(sds_secret(SDS_ROOT_SECRET))
    common.alpn_protocols.extend(ALPN_ISTIO_H2 if origination.http2 else ALPN_ISTIO)
    return tls_pb2.UpstreamTlsContext(
        common_tls_context=common, sni=tls.sni or origination.istio_sni
    )


def _originate(
    tls: dr_pb2.ClientTLSSettings, origination: TlsOrigination, *, mutual: bool
) -> tls_pb2.UpstreamTlsContext:
    common = _common_context()
    sans = san_matchers(_subject_alt_names(tls, origination))
    verify = not tls.insecure_skip_verify.value
    if tls.credential_name:
        secret = credential_secret_name(tls.credential_name)
        if mutual:
            common.tls_certificate_sds_secret_configs.append(sds_secret(secret))
        if verify:
            combined = common.combined_validation_context
            combined.default_validation_context.SetInParent()
            combined.default_validation_context.match_typed_subject_alt_names.extend(sans)
            combined.validation_context_sds_secret_config.CopyFrom(
                sds_secret(secret + CA_SECRET_SUFFIX)
            )
    else:
        if mutual:
            if not tls.client_certificate or not tls.private_key:
                raise ValueError(
                    "MUTUAL TLS needs client_certificate and private_key (or credential_name)"
                )
            certificate = common.tls_certificates.add()
            certificate.certificate_chain.filename = tls.client_certificate
            certificate.private_key.filename = tls.private_key
        ca_file = tls.ca_certificates or origination.system_ca_file
        if verify and ca_file:
            validation = common.validation_context
            validation.trusted_ca.filename = ca_file
            validation.match_typed_subject_alt_names.extend(sans)
            if tls.ca_crl:
                validation.crl.filename = tls.ca_crl
    if origination.http2:
        common.alpn_protocols.extend(ALPN_H2)
    return tls_pb2.UpstreamTlsContext(common_tls_context=common, sni=tls.sni)
