"""Bearer tokens: a JWT verified against the keys of a configured issuer.

Each trusted issuer is named with a JWKS file (``--jwt-issuer ISSUER=PATH``), or is the
local issuer that ``pilothouse token`` keeps (a :class:`KeySource`, looked at for an
``iss`` no ``--jwt-issuer`` names: :mod:`.local_issuer`); keys are read from files and
never fetched over the network (no SSRF through an issuer
URL, CVE-2026-41413). A token must be at most :data:`MAX_TOKEN_BYTES`, signed with an
asymmetric algorithm (RS*, PS*, ES*; never ``none`` or HMAC, so a public key can never be
used as a shared secret), by a key of the issuer its ``iss`` names, unexpired, and for
one of the configured audiences (``istio-ca`` by default, istiod's ``TOKEN_AUDIENCES``).
Its ``sub`` must be a Kubernetes service account, ``system:serviceaccount:<ns>:<sa>``,
which becomes ``spiffe://<trust domain>/ns/<ns>/sa/<sa>``.

This replaces istiod's TokenReview (there is no Kubernetes API here): what is checked
is the signature, not whether the service account still exists.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Protocol

import jwt

from pilothouse.security.identity import SpiffeId

MAX_TOKEN_BYTES: Final = 16 * 1024
ALGORITHMS: Final = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}
)
SERVICE_ACCOUNT_PREFIX: Final = "system:serviceaccount:"
LEEWAY_SECONDS: Final = 30


class TokenRejected(Exception):
    """The token proves nothing; the message says why (without the token)."""


class IssuerSetupError(ValueError):
    """A ``ISSUER=PATH`` entry or its JWKS file cannot be used."""


class KeySource(Protocol):
    """Keys of an issuer that may appear after start (the local token issuer)."""

    def keyset(self, issuer: str) -> jwt.PyJWKSet | None:
        """The keys of ``issuer`` if this source holds that issuer, else None."""
        ...


def parse_issuers(entries: Sequence[str]) -> dict[str, Path]:
    """``ISSUER=PATH`` entries as issuer → JWKS file."""
    issuers: dict[str, Path] = {}
    for entry in entries:
        issuer, sep, path = entry.rpartition("=")
        if not sep or not issuer or not path:
            raise IssuerSetupError(f"jwt issuer {entry!r}: expected ISSUER=JWKS_FILE")
        issuers[issuer] = Path(path)
    return issuers


class JwtAuthenticator:
    """Verifies bearer tokens from a fixed set of issuers and, for an ``iss`` none of
    them is, from ``local`` (the explicit issuers win a name both have)."""

    def __init__(
        self,
        keys: Mapping[str, jwt.PyJWKSet],
        audiences: Sequence[str],
        trust_domain: str,
        local: KeySource | None = None,
    ) -> None:
        self._keys = dict(keys)
        self._audiences = list(audiences)
        self._trust_domain = trust_domain
        self._local = local

    @classmethod
    def from_files(
        cls,
        issuers: Mapping[str, Path],
        audiences: Sequence[str],
        trust_domain: str,
        local: KeySource | None = None,
    ) -> JwtAuthenticator:
        """Read every issuer's JWKS file; IssuerSetupError naming the file otherwise."""
        keys: dict[str, jwt.PyJWKSet] = {}
        for issuer, path in issuers.items():
            try:
                keys[issuer] = jwt.PyJWKSet.from_dict(json.loads(path.read_bytes()))
            except OSError as problem:
                raise IssuerSetupError(f"jwt issuer {issuer!r}: {path}: {problem}") from None
            except (ValueError, jwt.PyJWKSetError, jwt.InvalidKeyError) as problem:
                raise IssuerSetupError(
                    f"jwt issuer {issuer!r}: {path}: not a usable JWKS ({problem})"
                ) from None
        return cls(keys, audiences, trust_domain, local)

    @property
    def issuers(self) -> tuple[str, ...]:
        return tuple(self._keys)

    def identity(self, token: str) -> SpiffeId:
        """The workload the token speaks for; TokenRejected otherwise."""
        if len(token) > MAX_TOKEN_BYTES:
            raise TokenRejected(f"token longer than {MAX_TOKEN_BYTES} bytes")
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            raise TokenRejected("not a JWT") from None
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise TokenRejected(f"algorithm {algorithm!r} is not accepted")
        issuer = unverified.get("iss")
        keyset = self._keyset(issuer) if isinstance(issuer, str) else None
        if keyset is None or not isinstance(issuer, str):
            raise TokenRejected(f"issuer {str(issuer)[:200]!r} is not trusted")
        claims = self._verified(token, keyset, header.get("kid"), algorithm, issuer)
        return self._spiffe_id(claims.get("sub"))

    def _keyset(self, issuer: str) -> jwt.PyJWKSet | None:
        found = self._keys.get(issuer)
        if found is None and self._local is not None:
            found = self._local.keyset(issuer)
        return found

    def _verified(
        self, token: str, keyset: jwt.PyJWKSet, kid: Any, algorithm: str, issuer: str
    ) -> dict[str, Any]:
        candidates = [key for key in keyset.keys if kid is None or key.key_id == kid]
        if not candidates:
            raise TokenRejected(f"issuer {issuer!r} has no key {str(kid)[:100]!r}")
        problem = "signature does not verify"
        for key in candidates:
            try:
                claims: dict[str, Any] = jwt.decode(
                    token,
                    key=key.key,
                    algorithms=[algorithm],
                    audience=self._audiences,
                    issuer=issuer,
                    leeway=LEEWAY_SECONDS,
                    options={"require": ["exp", "iss", "sub", "aud"]},
                )
            except jwt.InvalidSignatureError:
                continue
            except jwt.PyJWTError as error:  # expired, wrong audience, missing claim...
                problem = str(error)
                break
            return claims
        raise TokenRejected(problem)

    def _spiffe_id(self, subject: Any) -> SpiffeId:
        if not isinstance(subject, str) or not subject.startswith(SERVICE_ACCOUNT_PREFIX):
            raise TokenRejected("sub is not system:serviceaccount:<namespace>:<name>")
        parts = subject[len(SERVICE_ACCOUNT_PREFIX) :].split(":")
        if len(parts) != 2 or not all(parts) or any("/" in p for p in parts):
            raise TokenRejected("sub is not system:serviceaccount:<namespace>:<name>")
        return SpiffeId(self._trust_domain, parts[0], parts[1])
