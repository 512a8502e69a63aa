"""A workload certificate: the caller's SPIFFE id, the CSR's key, the CA's signature.

As istiod issues them: an empty subject, one URI SAN (critical, since the subject is
empty), key usage digital signature and key encipherment, extended key usage server and
client authentication, not a CA. Its lifetime never outlasts the CA certificate.
"""

from __future__ import annotations

import datetime

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from pilothouse.security.authority import IssuedCertificate
from pilothouse.security.csr import WorkloadKey
from pilothouse.security.identity import SpiffeId
from pilothouse.security.root import BACKDATE, SigningMaterial, key_usage, pem


def issue(
    material: SigningMaterial,
    key: WorkloadKey,
    names: x509.SubjectAlternativeName,
    lifetime: datetime.timedelta,
    now: datetime.datetime,
) -> IssuedCertificate:
    """Sign ``key`` for ``names``; the chain is leaf, ``material``'s chain, root last."""
    not_after = min(now + lifetime, material.ca_cert.not_valid_after_utc)
    issuer_key = material.ca_cert.public_key()
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([]))
        .issuer_name(material.ca_cert.subject)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(not_after)
        .add_extension(names, critical=True)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(key_usage(signs_certificates=False), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key),  # type: ignore[arg-type]
            critical=False,
        )
    )
    cert = material.sign(builder)
    return IssuedCertificate(
        chain=(pem(cert), *material.chain_pem()),
        not_before=cert.not_valid_before_utc,
        not_after=cert.not_valid_after_utc,
        serial=cert.serial_number,
    )


def spiffe_names(identity: SpiffeId) -> x509.SubjectAlternativeName:
    return x509.SubjectAlternativeName([x509.UniformResourceIdentifier(identity.uri)])
