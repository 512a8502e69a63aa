"""Authentication: who the peer of a call on the TLS port is, first proof that works.

The chain, as istiod's (``pkg/security/authentication.go``):

1. a client certificate the TLS handshake verified against the CA's roots: its SPIFFE
   URI SANs are the identities;
2. a bearer JWT in the ``authorization`` metadata
   (:mod:`pilothouse.security.jwt_authn`).

Nothing else counts: not the peer's address (loopback never bypasses CA authentication,
CVE-2022-39388), not the node id a proxy claims. When every step fails the caller is
unauthenticated and :class:`Unauthenticated` says why each step failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from cryptography import x509

from pilothouse.security.identity import BadSpiffeId, Caller, ProvedBy, SpiffeId
from pilothouse.security.jwt_authn import JwtAuthenticator, TokenRejected

AUTHORIZATION: Final = "authorization"
BEARER: Final = "bearer "
MAX_METADATA_VALUE: Final = 64 * 1024

Metadata = Sequence[tuple[str, str | bytes]]


class Unauthenticated(Exception):
    """No step of the chain proved who the caller is; the message says why."""


def certificate_identities(cert_der: bytes) -> tuple[SpiffeId, ...]:
    """The workload SPIFFE ids among a certificate's URI SANs (others are ignored)."""
    try:
        cert = x509.load_der_x509_certificate(cert_der)
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        uris = names.get_values_for_type(x509.UniformResourceIdentifier)
    except (ValueError, x509.ExtensionNotFound):
        return ()
    found: list[SpiffeId] = []
    for uri in uris:
        try:
            found.append(SpiffeId.parse(uri))
        except BadSpiffeId:
            continue
    return tuple(dict.fromkeys(found))


def bearer_token(metadata: Metadata) -> str | None:
    """The token of the first ``authorization: Bearer <token>`` entry, if any."""
    for key, value in metadata:
        if key.lower() != AUTHORIZATION:
            continue
        if isinstance(value, bytes) or len(value) > MAX_METADATA_VALUE:
            return None
        if value[: len(BEARER)].lower() == BEARER:
            return value[len(BEARER) :].strip()
        return None
    return None


class Authenticator:
    """The chain: client certificate, then bearer JWT."""

    def __init__(self, jwt: JwtAuthenticator | None = None) -> None:
        self._jwt = jwt

    def authenticate(self, cert_der: bytes | None, metadata: Metadata) -> Caller:
        """Who the caller is; Unauthenticated naming every failed step otherwise.

        ``cert_der`` must be a certificate the TLS layer already verified against the
        CA's roots, or None.
        """
        reasons: list[str] = []
        if cert_der is not None:
            identities = certificate_identities(cert_der)
            if identities:
                return Caller(identities, ProvedBy.CLIENT_CERTIFICATE)
            reasons.append("client certificate: no spiffe:// workload identity")
        else:
            reasons.append("client certificate: none")
        token = bearer_token(metadata)
        if token is None:
            reasons.append("jwt: no authorization: Bearer metadata")
        elif self._jwt is None:
            reasons.append("jwt: no issuer is configured (--jwt-issuer)")
        else:
            try:
                return Caller((self._jwt.identity(token),), ProvedBy.JWT)
            except TokenRejected as rejected:
                reasons.append(f"jwt: {rejected}")
        raise Unauthenticated("authentication failed: " + "; ".join(reasons))
