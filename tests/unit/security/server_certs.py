"""Test helpers: server key pairs for a secrets directory, made with fast EC keys."""

from __future__ import annotations

import datetime
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import NameOID

from tests.unit.security.certs import ca_cert, ec_key, key_pem, pem


def server_pair(host: str) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) of a self-signed server certificate for ``host``."""
    key = ec_key()
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return pem(cert), key_pem(key)


def write_pair(directory: Path, name: str, host: str) -> tuple[bytes, bytes]:
    """Write ``<name>.crt`` and ``<name>.key``; returns them."""
    cert, key = server_pair(host)
    (directory / f"{name}.crt").write_bytes(cert)
    (directory / f"{name}.key").write_bytes(key)
    return cert, key


def write_ca(directory: Path, name: str) -> bytes:
    """Write ``<name>-cacert.crt`` (a new CA certificate); returns it."""
    ca = pem(ca_cert(ec_key(), f"{name} CA"))
    (directory / f"{name}-cacert.crt").write_bytes(ca)
    return ca
