"""Server-side TLS settings (Gateway servers, Sidecar ingress listeners): which fields each
mode uses and where the certificates come from."""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3.gateway_pb2 import ServerTLSSettings
from pilothouse.config.validation.report import Report

_CERT_FILE_FIELDS = (
    ("server_certificate", "serverCertificate"),
    ("private_key", "privateKey"),
    ("ca_certificates", "caCertificates"),
)
_TERMINATING = frozenset(
    {ServerTLSSettings.SIMPLE, ServerTLSSettings.MUTUAL, ServerTLSSettings.OPTIONAL_MUTUAL}
)
_PASSTHROUGH = frozenset({ServerTLSSettings.PASSTHROUGH, ServerTLSSettings.AUTO_PASSTHROUGH})
_OLD_VERSIONS = frozenset({ServerTLSSettings.TLSV1_0, ServerTLSSettings.TLSV1_1})


def check_server_tls(tls: ServerTLSSettings, path: str, report: Report) -> None:
    _check_versions(tls, path, report)
    mode = tls.mode
    mode_name = _mode_name(mode)
    if mode == ServerTLSSettings.ISTIO_MUTUAL:
        for json_name in _certificate_sources(tls):
            report.error(
                f"{path}.{json_name}",
                f"ISTIO_MUTUAL uses the mesh's own certificates; {json_name} must not be set",
            )
        return
    if mode in _PASSTHROUGH:
        sources = [*_certificate_sources(tls), *(["caCrl"] if tls.ca_crl else [])]
        for json_name in sources:
            report.warn(
                f"{path}.{json_name}", f"{mode_name} does not terminate TLS; {json_name} is ignored"
            )
        return
    if mode not in _TERMINATING:
        return
    _check_terminating(tls, mode_name, path, report)


def _check_terminating(tls: ServerTLSSettings, mode_name: str, path: str, report: Report) -> None:
    mutual = tls.mode != ServerTLSSettings.SIMPLE
    if tls.credential_name and tls.credential_names:
        report.error(
            f"{path}.credentialNames", "credentialName and credentialNames are mutually exclusive"
        )
    remote = bool(tls.credential_name or tls.credential_names)
    if remote:
        for field, json_name in _CERT_FILE_FIELDS:
            if getattr(tls, field):
                report.warn(
                    f"{path}.{json_name}",
                    f"{json_name} is ignored: the credential supplies the certificates",
                )
        if tls.ca_crl:
            report.error(
                f"{path}.caCrl", "caCrl cannot be used with a credential; put the CRL in it"
            )
        return
    if tls.tls_certificates:
        if tls.server_certificate or tls.private_key:
            report.error(
                f"{path}.tlsCertificates",
                "tlsCertificates and serverCertificate/privateKey are mutually exclusive",
            )
        for index, certificate in enumerate(tls.tls_certificates):
            item = f"{path}.tlsCertificates[{index}]"
            if not certificate.server_certificate:
                report.error(f"{item}.serverCertificate", "serverCertificate is required")
            if not certificate.private_key:
                report.error(f"{item}.privateKey", "privateKey is required")
    else:
        if not tls.server_certificate:
            report.error(
                f"{path}.serverCertificate",
                f"{mode_name} needs serverCertificate and privateKey, or credentialName",
            )
        if not tls.private_key:
            report.error(
                f"{path}.privateKey",
                f"{mode_name} needs serverCertificate and privateKey, or credentialName",
            )
    if mutual and not tls.ca_certificates and not tls.ca_cert_credential_name:
        has_ca = any(cert.ca_certificates for cert in tls.tls_certificates)
        if not has_ca:
            report.error(
                f"{path}.caCertificates",
                f"{mode_name} needs caCertificates to verify clients (or credentialName)",
            )
    if tls.ca_crl and tls.mode == ServerTLSSettings.SIMPLE:
        report.error(f"{path}.caCrl", "caCrl has no use with SIMPLE TLS (no client certificates)")


def _certificate_sources(tls: ServerTLSSettings) -> list[str]:
    sources = [json_name for field, json_name in _CERT_FILE_FIELDS if getattr(tls, field)]
    if tls.credential_name:
        sources.append("credentialName")
    if tls.credential_names:
        sources.append("credentialNames")
    if tls.tls_certificates:
        sources.append("tlsCertificates")
    return sources


def _check_versions(tls: ServerTLSSettings, path: str, report: Report) -> None:
    low, high = tls.min_protocol_version, tls.max_protocol_version
    if low and high and low > high:
        report.error(
            f"{path}.minProtocolVersion",
            "minProtocolVersion is above maxProtocolVersion",
        )
    if low in _OLD_VERSIONS and not tls.cipher_suites:
        report.warn(
            f"{path}.cipherSuites",
            "TLS versions below 1.2 need cipherSuites: the default ciphers no longer suit them",
        )


def _mode_name(mode: int) -> str:
    modes = ServerTLSSettings.DESCRIPTOR.enum_types_by_name["TLSmode"]
    value = modes.values_by_number.get(mode)
    return value.name if value is not None else str(mode)
