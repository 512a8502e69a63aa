"""Who holds the CA's private key: the :class:`Signer` interface and its file-based form.

The CA never touches its key: it asks a signer to sign bytes (a certificate's
to-be-signed part), the operation a KMS or an HSM offers, and assembles the certificate
itself (:mod:`pilothouse.security.certificate_signing`). A signer reports the public
key the CA certificate carries and signs with SHA-256: PKCS#1 v1.5 for an RSA key,
ECDSA (DER-encoded signature) for an EC key. :class:`FileSigner` keeps the key in
memory, read from or written to the CA directory; an external signer implements the
same two methods and never lets the key out.
"""

from __future__ import annotations

from typing import Protocol

# Loaded now rather than by cryptography on first use (``ec.ECDSA`` imports it then): an
# import opens files, and a server whose descriptors a connection flood has taken must
# still sign the certificate of the first workload that gets through.
from cryptography.hazmat.backends.openssl import backend as _openssl  # noqa: F401
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

RSA_KEY_BITS = 2048
"""istiod's key size for roots and workload keys."""

CaPublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey


class Signer(Protocol):
    """Signs with the CA's private key, wherever that key lives."""

    def public_key(self) -> CaPublicKey:
        """The public half, as the CA certificate carries it."""
        ...

    def sign(self, data: bytes) -> bytes:
        """``data`` signed with SHA-256 (RSA: PKCS#1 v1.5; EC: ECDSA, DER)."""
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

    def public_key(self) -> CaPublicKey:
        return self._key.public_key()

    def sign(self, data: bytes) -> bytes:
        if isinstance(self._key, rsa.RSAPrivateKey):
            return self._key.sign(data, padding.PKCS1v15(), hashes.SHA256())
        return self._key.sign(data, ec.ECDSA(hashes.SHA256()))

    def __repr__(self) -> str:  # never the key itself
        return f"FileSigner({type(self._key).__name__})"
