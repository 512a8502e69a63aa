"""A proxy's SDS secrets as istioctl's ``proxy-config secret`` table, from its Envoy.

The control plane never shows a workload's key, and pilothouse's ``/debug/config_dump``
holds no secrets; like istioctl, ``proxy-config secret`` reads them from the proxy's own
Envoy admin API (``/config_dump``, where Envoy redacts private keys): the address given
with ``--envoy-admin``, else the one its node metadata names (``ENVOY_ADMIN_ADDRESS``, as
``/debug/acked`` lists it).

Columns, as istioctl's: ``RESOURCE NAME  TYPE  STATUS  VALID CERT  SERIAL NUMBER
NOT AFTER  NOT BEFORE``; TYPE is ``Cert Chain`` for a certificate and ``CA`` for a
validation context (the roots), STATUS ``ACTIVE`` or ``WARMING``, VALID CERT whether now
is inside the first certificate's validity.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Iterable, Mapping
from typing import Any, Final

from cryptography import x509

SECRETS: Final = "type.googleapis.com/envoy.admin.v3.SecretsConfigDump"
HEADER: Final = (
    "RESOURCE NAME",
    "TYPE",
    "STATUS",
    "VALID CERT",
    "SERIAL NUMBER",
    "NOT AFTER",
    "NOT BEFORE",
)


def secrets_of(dump: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The dynamic secrets of an Envoy ``/config_dump``, each with ``status``
    (``ACTIVE`` or ``WARMING``), in name order."""
    found: list[dict[str, Any]] = []
    for config in dump.get("configs", ()):
        if config.get("@type") != SECRETS:
            continue
        for key, status in (("dynamic_active_secrets", "ACTIVE"), ("dynamic_warming_secrets",
                                                                    "WARMING")):  # fmt: skip
            found += [{**entry, "status": status} for entry in config.get(key, ())]
    return sorted(found, key=lambda entry: str(entry.get("name", "")))


def secret_rows(
    secrets: Iterable[Mapping[str, Any]], now: datetime.datetime | None = None
) -> tuple[list[str], list[list[str]]]:
    when = now if now is not None else datetime.datetime.now(datetime.UTC)
    rows = []
    for entry in secrets:
        secret = entry.get("secret", {})
        if "tls_certificate" in secret:
            kind, source = "Cert Chain", secret["tls_certificate"].get("certificate_chain", {})
        elif "validation_context" in secret:
            kind, source = "CA", secret["validation_context"].get("trusted_ca", {})
        else:
            kind, source = "-", {}
        certificate = _first_certificate(source)
        row = [str(entry.get("name", "")), kind, str(entry.get("status", "ACTIVE"))]
        if certificate is None:
            row += ["false", "-", "-", "-"]
        else:
            after, before = certificate.not_valid_after_utc, certificate.not_valid_before_utc
            row += [
                "true" if before <= when <= after else "false",
                format(certificate.serial_number, "x"),
                _time(after),
                _time(before),
            ]
        rows.append(row)
    return list(HEADER), rows


def _first_certificate(source: Mapping[str, Any]) -> x509.Certificate | None:
    """The first certificate of an ``inline_bytes`` (base64) or ``inline_string`` PEM."""
    try:
        if "inline_bytes" in source:
            pem = base64.b64decode(source["inline_bytes"])
        elif "inline_string" in source:
            pem = str(source["inline_string"]).encode()
        else:
            return None
        return x509.load_pem_x509_certificates(pem)[0]
    except (ValueError, IndexError, TypeError):
        return None


def _time(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
