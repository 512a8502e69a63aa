"""Self-signed roots, and the signing material a CA works with.

A root is what istiod's self-signed CA makes: RSA 2048, ten years by default, basic
constraints CA (critical), key usage certificate and CRL signing (critical), subject
``O=<trust domain>``. :class:`SigningMaterial` is one way of signing: the CA
certificate, its signer, the intermediates above it and the root at the top, which is
exactly the tail a workload chain needs.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID

from pilothouse.security.certificate_signing import (
    Placeholder,
    placeholder_for,
    sign_certificate,
)
from pilothouse.security.signer import Signer

BACKDATE = datetime.timedelta(minutes=2)
"""Certificates start a little in the past, so that clocks slightly behind accept them."""


@dataclass(frozen=True, slots=True)
class SigningMaterial:
    """A CA certificate with its signer, and the chain from it to its root."""

    ca_cert: x509.Certificate
    signer: Signer
    above: tuple[x509.Certificate, ...]
    """Certificates above ``ca_cert``, nearest first, the root last; empty when
    ``ca_cert`` is the root itself."""
    placeholder: Placeholder = field(init=False, repr=False, compare=False)
    """A throwaway key of the signer's kind (:mod:`pilothouse.security.certificate_signing`)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "placeholder", placeholder_for(self.signer.public_key()))

    def sign(self, builder: x509.CertificateBuilder) -> x509.Certificate:
        """What ``builder`` describes, signed by this material's signer."""
        return sign_certificate(builder, self.signer, self.placeholder)

    @property
    def root(self) -> x509.Certificate:
        return self.above[-1] if self.above else self.ca_cert

    def chain_pem(self) -> tuple[str, ...]:
        """``ca_cert`` then everything above it, root last (PEM)."""
        return tuple(pem(cert) for cert in (self.ca_cert, *self.above))


def pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


def key_usage(*, signs_certificates: bool) -> x509.KeyUsage:
    """A CA's key usage (certificate and CRL signing) or a workload's (digital signature
    and key encipherment)."""
    workload = not signs_certificates
    return x509.KeyUsage(
        digital_signature=workload,
        content_commitment=False,
        key_encipherment=workload,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=signs_certificates,
        crl_sign=signs_certificates,
        encipher_only=False,
        decipher_only=False,
    )


def new_root(
    signer: Signer, organisation: str, ttl: datetime.timedelta, now: datetime.datetime
) -> x509.Certificate:
    """A self-signed root for ``signer``'s key, valid from (about) ``now`` for ``ttl``."""
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, organisation),
            x509.NameAttribute(NameOID.COMMON_NAME, f"pilothouse root {now:%Y-%m-%dT%H:%M:%SZ}"),
        ]
    )
    public = signer.public_key()
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + ttl)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(key_usage(signs_certificates=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
    )
    return sign_certificate(builder, signer, placeholder_for(public))
