"""A local token issuer: service account JWTs for the CA's token authentication.

Kubernetes gives each pod a projected token (audience ``istio-ca``) that istiod checks
with a TokenReview. Without Kubernetes, pilothouse's TLS port verifies JWTs against the
key set of an issuer it is told to trust (``serve --jwt-issuer ISSUER=JWKS_FILE``,
:mod:`pilothouse.security.jwt_authn`); this module is such an issuer, kept in a directory:

- ``key.pem``: its private key (ECDSA P-256, PKCS#8, mode 0600), created once;
- ``jwks.json``: the public key as a JWKS (``kid`` is the key's RFC 7638 thumbprint),
  which is what ``serve`` reads;
- ``issuer``: its name, the tokens' ``iss`` (default :data:`DEFAULT_ISSUER`).

A token (:meth:`TokenIssuer.token`) says ``sub: system:serviceaccount:<ns>:<sa>``,
``aud: istio-ca`` (or the audiences given), ``iat`` and ``exp`` (an hour by default, as
``istioctl x workload entry configure``), signed ES256. Whoever can read ``key.pem`` can
speak for every service account: keep the directory as private as the CA's.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pilothouse.atomic_file import replace_file
from pilothouse.security.jwt_authn import SERVICE_ACCOUNT_PREFIX

DEFAULT_ISSUER: Final = "pilothouse"
DEFAULT_AUDIENCE: Final = "istio-ca"
DEFAULT_LIFETIME: Final = 3600.0
"""Seconds a token lives unless told (``istioctl x workload entry configure``'s default)."""
KEY_FILE: Final = "key.pem"
JWKS_FILE: Final = "jwks.json"
ISSUER_FILE: Final = "issuer"
_NAME: Final = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


class TokenIssuerError(ValueError):
    """The issuer's directory or a token request cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class TokenIssuer:
    """An issuer read from its directory."""

    directory: Path
    name: str
    key: ec.EllipticCurvePrivateKey
    kid: str

    @property
    def jwks_file(self) -> Path:
        return self.directory / JWKS_FILE

    @property
    def trust(self) -> str:
        """``ISSUER=JWKS_FILE``: what ``serve --jwt-issuer`` takes to trust it."""
        return f"{self.name}={self.jwks_file.resolve()}"

    @classmethod
    def open(cls, directory: Path, name: str = DEFAULT_ISSUER) -> TokenIssuer:
        """The issuer in ``directory``, created there first if it holds none (``name``
        is used only then); TokenIssuerError when it cannot be read or made."""
        try:
            if not (directory / KEY_FILE).exists():
                _create(directory, name)
            return cls._read(directory)
        except OSError as problem:
            raise TokenIssuerError(f"token issuer {directory}: {problem}") from None

    @classmethod
    def _read(cls, directory: Path) -> TokenIssuer:
        try:
            key = serialization.load_pem_private_key((directory / KEY_FILE).read_bytes(), None)
        except (ValueError, TypeError):
            raise TokenIssuerError(
                f"token issuer {directory}: {KEY_FILE} is not an unencrypted PEM private key"
            ) from None
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise TokenIssuerError(f"token issuer {directory}: {KEY_FILE} is not an EC key")
        name = (directory / ISSUER_FILE).read_text(encoding="utf-8").strip()
        if not name:
            raise TokenIssuerError(f"token issuer {directory}: {ISSUER_FILE} is empty")
        issuer = cls(directory, name, key, _thumbprint(key.public_key()))
        expected = issuer.jwks()
        try:
            written = json.loads((directory / JWKS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            written = None
        if written != expected:  # missing, or of another key: write the one that verifies
            text = json.dumps(expected, indent=2) + "\n"
            replace_file(directory / JWKS_FILE, text.encode(), mode=0o644)
        return issuer

    def jwks(self) -> dict[str, Any]:
        public = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(self.key.public_key()))
        public.update(kid=self.kid, use="sig", alg="ES256")
        return {"keys": [public]}

    def token(
        self,
        namespace: str,
        service_account: str,
        *,
        audiences: Sequence[str] = (DEFAULT_AUDIENCE,),
        lifetime: float = DEFAULT_LIFETIME,
        now: float | None = None,
    ) -> str:
        """A JWT for ``system:serviceaccount:<namespace>:<service_account>``."""
        for what, value in (("namespace", namespace), ("service account", service_account)):
            if not _NAME.match(value) or len(value) > 253:
                raise TokenIssuerError(
                    f"{what} {value!r} is not a Kubernetes name (lower case letters, digits,"
                    " '-' and '.')"
                )
        if not audiences or any(not a for a in audiences):
            raise TokenIssuerError("a token needs at least one non-empty audience")
        if not lifetime > 0:
            raise TokenIssuerError("a token's lifetime must be positive")
        issued = int(now if now is not None else time.time())
        claims = {
            "iss": self.name,
            "sub": f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{service_account}",
            "aud": audiences[0] if len(audiences) == 1 else list(audiences),
            "iat": issued,
            "nbf": issued,
            "exp": issued + int(lifetime),
        }
        return jwt.encode(claims, self.key, algorithm="ES256", headers={"kid": self.kid})


def _create(directory: Path, name: str) -> None:
    if not name or any(c.isspace() for c in name):
        raise TokenIssuerError(f"issuer name {name!r} must be non-empty, without spaces")
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    try:  # O_EXCL: of two processes creating one issuer, the first (key and name) wins
        descriptor = os.open(directory / KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(descriptor, "w", encoding="ascii") as out:
        out.write(pem)
    replace_file(directory / ISSUER_FILE, (name + "\n").encode(), mode=0o644)


def _thumbprint(public: ec.EllipticCurvePublicKey) -> str:
    """RFC 7638: SHA-256 of the JWK's required members, sorted, without spaces."""
    numbers = public.public_numbers()
    size = (public.curve.key_size + 7) // 8
    members = {
        "crv": "P-256",
        "kty": "EC",
        "x": _b64(numbers.x.to_bytes(size, "big")),
        "y": _b64(numbers.y.to_bytes(size, "big")),
    }
    canonical = json.dumps(members, separators=(",", ":"), sort_keys=True).encode()
    return _b64(hashlib.sha256(canonical).digest())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
