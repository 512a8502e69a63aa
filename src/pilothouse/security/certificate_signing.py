"""A certificate signed by a :class:`~pilothouse.security.signer.Signer` that only signs bytes.

``cryptography`` signs a certificate builder only with a private key in memory. So the
builder is first signed with a *placeholder* key of the same kind (RSA or EC), which
yields the to-be-signed bytes and the algorithm identifier exactly as they must be (the
placeholder's key never appears in them: the issuer is named, and its key identifier is
written from the real public key); the signer signs those bytes, and the certificate
is assembled around its signature in DER:

    Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue BIT STRING }

The result is parsed again and checked against the signer's public key, so a signer
that signs wrongly is caught here, not by the workloads.
"""

from __future__ import annotations

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from pilothouse.security.signer import CaPublicKey, Signer

Placeholder = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey

PLACEHOLDER_RSA_BITS = 1024
"""The smallest RSA key cryptography makes: only its kind matters (and it is never used
to sign anything kept)."""


class SignerFailed(ValueError):
    """The signer's signature does not verify with its own public key."""


def placeholder_for(key: CaPublicKey) -> Placeholder:
    """A throwaway private key of ``key``'s kind (RSA: ~10 ms to make; EC: fast)."""
    if isinstance(key, rsa.RSAPublicKey):
        return rsa.generate_private_key(public_exponent=65537, key_size=PLACEHOLDER_RSA_BITS)
    return ec.generate_private_key(ec.SECP256R1())


def sign_certificate(
    builder: x509.CertificateBuilder, signer: Signer, placeholder: Placeholder
) -> x509.Certificate:
    """The certificate ``builder`` describes, signed by ``signer`` with SHA-256."""
    draft = builder.sign(placeholder, hashes.SHA256())
    tbs = draft.tbs_certificate_bytes
    algorithm = _elements(draft.public_bytes(serialization.Encoding.DER))[1]
    signature = signer.sign(tbs)
    bit_string = b"\x03" + _length(len(signature) + 1) + b"\x00" + signature
    body = tbs + algorithm + bit_string
    cert = x509.load_der_x509_certificate(b"\x30" + _length(len(body)) + body)
    _check(cert, signer.public_key())
    return cert


def _check(cert: x509.Certificate, key: CaPublicKey) -> None:
    try:
        if isinstance(key, rsa.RSAPublicKey):
            key.verify(
                cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), hashes.SHA256()
            )
        else:
            key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise SignerFailed("the signer's signature does not verify with its public key") from None


def _length(size: int) -> bytes:
    """A DER length."""
    if size < 0x80:
        return bytes([size])
    raw = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(raw)]) + raw


def _elements(der: bytes) -> list[bytes]:
    """The raw TLV elements inside the outer SEQUENCE of ``der``."""
    _, start, end = _tlv(der, 0)
    elements = []
    position = start
    while position < end:
        _, _, after = _tlv(der, position)
        elements.append(der[position:after])
        position = after
    return elements


def _tlv(der: bytes, position: int) -> tuple[int, int, int]:
    """(tag, where the content starts, where the element ends) at ``position``."""
    tag = der[position]
    first = der[position + 1]
    if first < 0x80:
        return tag, position + 2, position + 2 + first
    count = first & 0x7F
    size = int.from_bytes(der[position + 2 : position + 2 + count], "big")
    start = position + 2 + count
    return tag, start, start + size
