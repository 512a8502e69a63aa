"""``ServerTLSSettings`` (Gateway servers, Sidecar ingress) → Envoy's ``DownstreamTlsContext``.

Where the key pair comes from, in istiod's order:

- ISTIO_MUTUAL: the workload certificate and the mesh root over SDS, secrets
  ``default`` and ``ROOTCA`` fetched on the ADS stream.  This needs
  pilothouse's CA and SDS service; until they exist such a chain waits for
  its secrets.
- ``credentialName`` / ``credentialNames``: SDS secrets ``kubernetes://<name>``
  over ADS (a name that already has a scheme is kept).  Client certificates
  (MUTUAL, OPTIONAL_MUTUAL) are checked against ``caCertCredentialName`` or
  else ``kubernetes://<first name>-cacert``.
- files: ``serverCertificate`` + ``privateKey`` (or every ``tlsCertificates``
  entry) are read by Envoy itself.  istiod routes them through its node
  agent's SDS (``file-cert:``/``file-root:``); pilothouse has no agent.
  MUTUAL and OPTIONAL_MUTUAL trust ``caCertificates`` (or the first
  ``tlsCertificates[].caCertificates``) with ``caCrl`` as CRL.  SIMPLE
  ignores ``caCertificates``, as istiod does.

Client checks (``subjectAltNames``, ``verifyCertificateSpki``,
``verifyCertificateHash``) go into the validation context whenever client
certificates are validated.  ``require_client_certificate`` is set for MUTUAL
and ISTIO_MUTUAL, and false otherwise (OPTIONAL_MUTUAL validates a
certificate only when one is offered).  ``minProtocolVersion``,
``maxProtocolVersion`` and ``cipherSuites`` (duplicates dropped) apply to
SIMPLE, MUTUAL and OPTIONAL_MUTUAL; otherwise Envoy's defaults hold.

ALPN: HTTP servers offer ``h2, http/1.1``.  TLS-terminated TCP servers offer
``istio`` under ISTIO_MUTUAL (istiod adds ``istio-peer-exchange``, which only
Istio's Envoy build uses) and nothing otherwise (istiod offers the HTTP ALPNs
there too, which would tell an HTTP client that a TCP backend speaks h2).
"""

from __future__ import annotations

from typing import Final

from envoy.extensions.transport_sockets.tls.v3 import (  # type: ignore[import-untyped]
    common_pb2,
    tls_pb2,
)

from pilothouse.api.istio.networking.v1alpha3 import gateway_pb2
from pilothouse.xds.builders.upstream_tls import (
    CA_SECRET_SUFFIX,
    SDS_DEFAULT_SECRET,
    SDS_ROOT_SECRET,
    credential_secret_name,
    san_matchers,
    sds_secret,
)

ServerTLSSettings = gateway_pb2.ServerTLSSettings
TLSmode = ServerTLSSettings.TLSmode

ALPN_HTTP: Final = ("h2", "http/1.1")
ALPN_ISTIO: Final = ("istio",)

_VALIDATES_CLIENT: Final = frozenset(
    {ServerTLSSettings.MUTUAL, ServerTLSSettings.OPTIONAL_MUTUAL, ServerTLSSettings.ISTIO_MUTUAL}
)
_REQUIRES_CLIENT: Final = frozenset({ServerTLSSettings.MUTUAL, ServerTLSSettings.ISTIO_MUTUAL})
_USER_TLS: Final = frozenset(
    {ServerTLSSettings.SIMPLE, ServerTLSSettings.MUTUAL, ServerTLSSettings.OPTIONAL_MUTUAL}
)


def terminates_tls(tls: gateway_pb2.ServerTLSSettings) -> bool:
    """Whether Envoy terminates TLS in this mode (everything but the two passthroughs)."""
    return tls.mode in _USER_TLS or tls.mode == ServerTLSSettings.ISTIO_MUTUAL


def build_downstream_tls(
    tls: gateway_pb2.ServerTLSSettings, *, http: bool = True
) -> tls_pb2.DownstreamTlsContext:
    """The context that terminates ``tls``; ``http`` picks the HTTP ALPNs.

    Raises ``ValueError`` for the passthrough modes and for file-based settings
    that miss the key pair (or, for client validation, the CA).
    """
    if not terminates_tls(tls):
        raise ValueError(f"TLS mode {TLSmode.Name(tls.mode)} does not terminate TLS")
    context = tls_pb2.DownstreamTlsContext()
    common = context.common_tls_context
    if http:
        common.alpn_protocols.extend(ALPN_HTTP)
    elif tls.mode == ServerTLSSettings.ISTIO_MUTUAL:
        common.alpn_protocols.extend(ALPN_ISTIO)
    context.require_client_certificate.value = tls.mode in _REQUIRES_CLIENT
    validate = tls.mode in _VALIDATES_CLIENT
    if tls.mode == ServerTLSSettings.ISTIO_MUTUAL:
        _istio_mutual(common, tls)
    elif tls.credential_name or tls.credential_names:
        _credentials(common, tls, validate=validate)
    else:
        _files(common, tls, validate=validate)
    if tls.mode in _USER_TLS:
        _tls_params(common, tls)
    return context


def _istio_mutual(common: tls_pb2.CommonTlsContext, tls: gateway_pb2.ServerTLSSettings) -> None:
    common.tls_certificate_sds_secret_configs.append(sds_secret(SDS_DEFAULT_SECRET))
    combined = common.combined_validation_context
    combined.default_validation_context.SetInParent()
    combined.default_validation_context.match_typed_subject_alt_names.extend(
        san_matchers(tls.subject_alt_names)
    )
    combined.validation_context_sds_secret_config.CopyFrom(sds_secret(SDS_ROOT_SECRET))


def _credentials(
    common: tls_pb2.CommonTlsContext, tls: gateway_pb2.ServerTLSSettings, *, validate: bool
) -> None:
    names = list(tls.credential_names) or [tls.credential_name]
    for name in names:
        common.tls_certificate_sds_secret_configs.append(sds_secret(credential_secret_name(name)))
    if not validate:
        return
    if tls.ca_cert_credential_name:
        ca_secret = credential_secret_name(tls.ca_cert_credential_name)
    else:
        ca_secret = credential_secret_name(names[0]) + CA_SECRET_SUFFIX
    combined = common.combined_validation_context
    _client_checks(combined.default_validation_context, tls)
    combined.validation_context_sds_secret_config.CopyFrom(sds_secret(ca_secret))


def _files(
    common: tls_pb2.CommonTlsContext, tls: gateway_pb2.ServerTLSSettings, *, validate: bool
) -> None:
    mode = TLSmode.Name(tls.mode)
    if tls.tls_certificates:
        pairs = [(item.server_certificate, item.private_key) for item in tls.tls_certificates]
    else:
        pairs = [(tls.server_certificate, tls.private_key)]
    for certificate_file, key_file in pairs:
        if not certificate_file or not key_file:
            raise ValueError(
                f"{mode} TLS needs serverCertificate and privateKey (or credentialName)"
            )
        certificate = common.tls_certificates.add()
        certificate.certificate_chain.filename = certificate_file
        certificate.private_key.filename = key_file
    if not validate:
        return
    ca_file = tls.ca_certificates or next(
        (item.ca_certificates for item in tls.tls_certificates if item.ca_certificates), ""
    )
    if not ca_file:
        raise ValueError(f"{mode} TLS needs caCertificates to verify client certificates")
    validation = common.validation_context
    validation.trusted_ca.filename = ca_file
    if tls.ca_crl:
        validation.crl.filename = tls.ca_crl
    _client_checks(validation, tls)


def _client_checks(
    validation: common_pb2.CertificateValidationContext, tls: gateway_pb2.ServerTLSSettings
) -> None:
    validation.SetInParent()
    validation.match_typed_subject_alt_names.extend(san_matchers(tls.subject_alt_names))
    validation.verify_certificate_spki.extend(tls.verify_certificate_spki)
    validation.verify_certificate_hash.extend(tls.verify_certificate_hash)


def _tls_params(common: tls_pb2.CommonTlsContext, tls: gateway_pb2.ServerTLSSettings) -> None:
    # Istio's TLSProtocol enum and Envoy's TlsProtocol share their numbers (TLS_AUTO=0 ... 1.3=4).
    if tls.min_protocol_version != ServerTLSSettings.TLS_AUTO:
        common.tls_params.tls_minimum_protocol_version = int(tls.min_protocol_version)
    if tls.max_protocol_version != ServerTLSSettings.TLS_AUTO:
        common.tls_params.tls_maximum_protocol_version = int(tls.max_protocol_version)
    if tls.cipher_suites:
        common.tls_params.cipher_suites.extend(dict.fromkeys(tls.cipher_suites))
