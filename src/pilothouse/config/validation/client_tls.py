"""Client-side TLS settings (DestinationRule ``tls``): which fields each mode uses."""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3.destination_rule_pb2 import ClientTLSSettings
from pilothouse.config.validation.report import Report

_FILE_FIELDS = (
    ("client_certificate", "clientCertificate"),
    ("private_key", "privateKey"),
    ("ca_certificates", "caCertificates"),
    ("ca_crl", "caCrl"),
)

_MUTUAL_FIELDS = (("client_certificate", "clientCertificate"), ("private_key", "privateKey"))


def check_client_tls(tls: ClientTLSSettings, path: str, report: Report) -> None:
    mode = tls.mode
    files = [json_name for field, json_name in _FILE_FIELDS if getattr(tls, field)]
    if mode in (ClientTLSSettings.DISABLE, ClientTLSSettings.ISTIO_MUTUAL):
        what = (
            "DISABLE does not use TLS"
            if mode == ClientTLSSettings.DISABLE
            else "ISTIO_MUTUAL uses the mesh's own certificates"
        )
        for json_name in [*files, *(["credentialName"] if tls.credential_name else [])]:
            report.error(f"{path}.{json_name}", f"{json_name} must not be set: {what}")
        return
    if tls.insecure_skip_verify.value:
        if mode == ClientTLSSettings.SIMPLE and (
            tls.ca_certificates or tls.credential_name or tls.subject_alt_names
        ):
            report.error(
                f"{path}.insecureSkipVerify",
                "insecureSkipVerify cannot be combined with caCertificates, credentialName or "
                "subjectAltNames",
            )
        if mode == ClientTLSSettings.MUTUAL and (tls.ca_certificates or tls.subject_alt_names):
            report.error(
                f"{path}.insecureSkipVerify",
                "insecureSkipVerify cannot be combined with caCertificates or subjectAltNames",
            )
    if tls.credential_name:
        for json_name in files:
            report.error(
                f"{path}.{json_name}",
                f"{json_name} cannot be set together with credentialName, which supplies the "
                "certificates",
            )
        return
    if mode == ClientTLSSettings.MUTUAL:
        for field, json_name in _MUTUAL_FIELDS:
            if not getattr(tls, field):
                report.error(
                    f"{path}.{json_name}",
                    f"MUTUAL needs {json_name} (or credentialName)",
                )
