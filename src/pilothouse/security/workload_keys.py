"""A workload's private key and the CSR that asks the CA to sign it.

pilothouse makes the key itself (it stands in for istio-agent, which makes the key
next to Envoy): RSA 2048 by default (``WORKLOAD_RSA_KEY_SIZE``), or ECDSA P-256
(istio-agent's ``ECC_SIGNATURE_ALGORITHM=ECDSA``). The CSR carries the identity as its
URI SAN only as a courtesy: the CA takes the identity from the authenticated caller,
never from the CSR. Making an RSA key takes tens of milliseconds: callers run
:func:`new_workload_key` in a thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from pilothouse.security.identity import SpiffeId

RSA_KEY_SIZE = 2048


class KeyAlgorithm(StrEnum):
    RSA = "rsa"
    """RSA 2048, istiod's default."""
    ECDSA = "ecdsa"
    """ECDSA on P-256."""


@dataclass(frozen=True, slots=True)
class NewWorkloadKey:
    """A new private key (PKCS#8 PEM) and a CSR for it (PEM)."""

    private_key: str
    csr: str

    def __repr__(self) -> str:  # never print a private key
        return "NewWorkloadKey(...)"


def new_workload_key(identity: SpiffeId, algorithm: KeyAlgorithm) -> NewWorkloadKey:
    """Make a key of ``algorithm`` and a CSR naming ``identity``."""
    key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
    if algorithm is KeyAlgorithm.ECDSA:
        key = ec.generate_private_key(ec.SECP256R1())
    else:
        key = rsa.generate_private_key(public_exponent=65537, key_size=RSA_KEY_SIZE)
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([]))
        .add_extension(
            x509.SubjectAlternativeName([x509.UniformResourceIdentifier(identity.uri)]),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return NewWorkloadKey(
        private_pem.decode(), csr.public_bytes(serialization.Encoding.PEM).decode()
    )
