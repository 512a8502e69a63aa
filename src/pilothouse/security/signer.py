"""Who holds the CA's private key: the :class:`Signer` interface and its file-based form.

The CA never touches its key directly; it hands a finished
:class:`~cryptography.x509.CertificateBuilder` to a signer, which returns the signed
certificate. :class:`FileSigner` keeps an RSA or EC key in memory (loaded from the CA
directory). An external signer (a KMS or an HSM) implements the same two methods: it
reports the public key the CA certificate carries, and signs a builder (for instance by
signing the builder's to-be-signed bytes remotely and assembling the DER itself).
"""

from __future__ import annotations

from typing import Protocol

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

RSA_KEY_BITS = 2048
"""istiod's key size for roots and workload keys."""


class Signer(Protocol):
    """Signs certificates with the CA's private key, wherever that key lives."""

    def public_key(self) -> rsa.RSAPublicKey | ec.EllipticCurvePublicKey:
        """The public half, as the CA certificate carries it."""
        ...

    def sign(self, builder: x509.CertificateBuilder) -> x509.Certificate:
        """The certificate ``builder`` describes, signed with SHA-256."""
        ...


class FileSigner:
    """A signer whose key is in memory, read from (or written to) a PEM file."""

    __slots__ = ("_key",)

    def __init__(self, key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> None:
        self._key = key

    @classmethod
    def generate(cls) -> FileSigner:
        """A new RSA 2048 key (CPU work: tens of milliseconds, keep it off the loop)."""
        return cls(rsa.generate_private_key(public_exponent=65537, key_size=RSA_KEY_BITS))

    @classmethod
    def from_pem(cls, pem: bytes) -> FileSigner:
        """Load an unencrypted PEM private key (RSA or EC); ValueError otherwise."""
        key = serialization.load_pem_private_key(pem, password=None)
        if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
            raise ValueError("the CA key must be an RSA or EC private key")
        return cls(key)

    def private_pem(self) -> bytes:
        """The key as unencrypted PKCS#8 PEM, for a 0600 file only."""
        return self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def public_key(self) -> rsa.RSAPublicKey | ec.EllipticCurvePublicKey:
        return self._key.public_key()

    def sign(self, builder: x509.CertificateBuilder) -> x509.Certificate:
        return builder.sign(self._key, hashes.SHA256())

    def __repr__(self) -> str:  # never the key itself
        return f"FileSigner({type(self._key).__name__})"
