"""Reading a certificate signing request: size first, then syntax, then its signature.

Only the CSR's public key is used; its subject and SANs are ignored (the identity comes
from authentication). A request is bounded before any parsing (CVE-2022-23635: a crafted
message must not make the CA do work), must hold exactly one PEM CSR whose
self-signature verifies, and must carry a key the CA is willing to certify: RSA of 2048
to 8192 bits, or EC P-256 / P-384.
"""

from __future__ import annotations

from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from pilothouse.security.authority import SigningRefused

MAX_CSR_BYTES: Final = 16 * 1024
"""A PEM CSR for an RSA 8192 key is about 3 KiB; anything much larger is not a CSR."""
MIN_RSA_BITS: Final = 2048
MAX_RSA_BITS: Final = 8192
CURVES: Final = (ec.SECP256R1, ec.SECP384R1)

WorkloadKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey


def csr_public_key(csr_pem: str) -> WorkloadKey:
    """The public key of a well-formed, correctly self-signed CSR; SigningRefused
    naming the problem otherwise."""
    if len(csr_pem) > MAX_CSR_BYTES:
        raise SigningRefused(f"the CSR is larger than {MAX_CSR_BYTES} bytes")
    data = csr_pem.encode("utf-8", "replace")
    if data.count(b"-----BEGIN CERTIFICATE REQUEST-----") != 1:
        raise SigningRefused("expected exactly one PEM CERTIFICATE REQUEST")
    try:
        csr = x509.load_pem_x509_csr(data)
    except ValueError:
        raise SigningRefused("the CSR cannot be parsed") from None
    try:
        key = csr.public_key()
    except (ValueError, x509.UnsupportedGeneralNameType):
        raise SigningRefused("the CSR's public key cannot be read") from None
    if isinstance(key, rsa.RSAPublicKey):
        if not MIN_RSA_BITS <= key.key_size <= MAX_RSA_BITS:
            raise SigningRefused(
                f"RSA keys must have {MIN_RSA_BITS} to {MAX_RSA_BITS} bits, got {key.key_size}"
            )
    elif isinstance(key, ec.EllipticCurvePublicKey):
        if not isinstance(key.curve, CURVES):
            raise SigningRefused(f"EC keys must be on P-256 or P-384, got {key.curve.name}")
    else:
        raise SigningRefused(f"unsupported key type {type(key).__name__}: use RSA or EC")
    try:
        valid = csr.is_signature_valid
    except Exception:  # an algorithm cryptography cannot check
        valid = False
    if not valid:
        raise SigningRefused("the CSR's signature does not verify")
    return key
