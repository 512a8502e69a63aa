"""Throwaway certificates for TLS tests: a CA, and server or client certificates it signs.

Keys are ECDSA P-256; certificates live one day.  Files are PEM, written into a directory
the caller owns (a pytest ``tmp_path``).  ``client_ssl_context`` builds the context the
harness's HTTP client uses to reach an HTTPS gateway that presents such a certificate.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_LIFETIME = datetime.timedelta(days=1)
_CLOCK_SKEW = datetime.timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class CertificateFiles:
    """A certificate, its key and the CA that signed it, as PEM files."""

    cert: Path
    key: Path
    ca: Path


class ThrowawayCa:
    """A self-signed CA that issues leaf certificates into ``directory``."""

    def __init__(self, directory: Path, common_name: str = "pilothouse e2e CA") -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _CLOCK_SKEW)
            .not_valid_after(now + _LIFETIME)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False
            )
            .sign(self._key, hashes.SHA256())
        )
        self.cert_path = directory / "ca.pem"
        self.cert_path.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def issue(
        self,
        name: str,
        hosts: Sequence[str] = ("localhost",),
        *,
        uris: Sequence[str] = (),
        client: bool = False,
    ) -> CertificateFiles:
        """A leaf certificate for ``hosts`` (DNS names or IPs) and ``uris`` (e.g. SPIFFE ids).

        Written as ``<name>.pem`` and ``<name>-key.pem``; ``client`` adds clientAuth use.
        """
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        common_name = hosts[0] if hosts else name
        alt_names: list[x509.GeneralName] = [_host_name(host) for host in hosts]
        alt_names += [x509.UniformResourceIdentifier(uri) for uri in uris]
        usages = [ExtendedKeyUsageOID.SERVER_AUTH]
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _CLOCK_SKEW)
            .not_valid_after(now + _LIFETIME)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                critical=False,
            )
        )
        if alt_names:
            builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        cert_path = self.directory / f"{name}.pem"
        key_path = self.directory / f"{name}-key.pem"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        key_path.chmod(0o600)
        return CertificateFiles(cert=cert_path, key=key_path, ca=self.cert_path)


def server_certificate(directory: Path, host: str = "localhost") -> CertificateFiles:
    """A fresh CA and a server certificate for ``host``, in ``directory``."""
    return ThrowawayCa(directory).issue("server", (host,))


def client_ssl_context(
    ca: Path, cert: Path | None = None, key: Path | None = None
) -> ssl.SSLContext:
    """A client context that trusts only ``ca`` (and presents ``cert``/``key`` for mTLS)."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(ca))
    if cert is not None:
        context.load_cert_chain(str(cert), str(key) if key is not None else None)
    return context


def server_ssl_context(files: CertificateFiles, *, require_client: bool = False) -> ssl.SSLContext:
    """A server context presenting ``files.cert``; ``require_client`` asks for a client cert."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(files.ca))
    context.load_cert_chain(str(files.cert), str(files.key))
    context.verify_mode = ssl.CERT_REQUIRED if require_client else ssl.CERT_NONE
    return context


def _host_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)
