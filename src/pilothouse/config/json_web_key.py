"""One JSON Web Key checked as a key before it is relayed into a proxy's ``local_jwks``.

Envoy refuses a whole listener for one key it cannot read (``invalid local jwks``), so
every key pilothouse relays (fetched from a ``jwksUri`` or given inline in ``jwks``) is
first checked here, and only what was checked is kept:

- ``kty`` ``RSA``: ``n`` and ``e`` base64url; the modulus odd and of
  :data:`RSA_MIN_BITS` (RFC 7518 section 3.3 asks 2048 for RS*/PS*) to
  :data:`RSA_MAX_BITS` bits (the most BoringSSL verifies with); the exponent odd,
  at least 3 and of at most 33 bits (BoringSSL's limit);
- ``kty`` ``EC``: ``crv`` one of P-256, P-384, P-521, and ``x``/``y`` base64url
  coordinates of a point on that curve (checked by ``cryptography``);
- ``kty`` ``OKP``: ``crv`` Ed25519 and a 32-byte ``x`` (Envoy's EdDSA);
- ``kid``, when given, a printable ASCII string of at most :data:`KID_MAX` characters;
  ``alg``, when given, one that suits the key (RS*/PS* for RSA, the curve's ES* for EC,
  EdDSA for OKP); ``use``, when given, ``sig``;
- nothing else is relayed: private members, ``x5u``/``x5c``/``x5t`` (Envoy verifies
  with the key members; a URL or certificate chain only gives a proxy more to parse),
  ``key_ops`` and any unknown member are dropped.

:func:`relayable_key` answers the key as it may be relayed, or raises :class:`BadKey`
saying why not. :func:`relayable_key_set` does it for every key of a set: bad keys are
left out and reported, the good ones kept.
"""

from __future__ import annotations

import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

RSA_MIN_BITS: Final = 2048
RSA_MAX_BITS: Final = 16384
RSA_MAX_EXPONENT_BITS: Final = 33
KID_MAX: Final = 256
CURVES: Final[Mapping[str, tuple[ec.EllipticCurve, int, str]]] = {
    "P-256": (ec.SECP256R1(), 32, "ES256"),
    "P-384": (ec.SECP384R1(), 48, "ES384"),
    "P-521": (ec.SECP521R1(), 66, "ES512"),
}
RSA_ALGORITHMS: Final = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"})
RELAYED_COMMON: Final = ("kty", "kid", "alg", "use")
RELAYED_BY_TYPE: Final[Mapping[str, tuple[str, ...]]] = {
    "RSA": ("n", "e"),
    "EC": ("crv", "x", "y"),
    "OKP": ("crv", "x"),
}
_BASE64URL: Final = re.compile(r"[A-Za-z0-9_-]*={0,2}")
_PRINTABLE: Final = re.compile(r"[\x20-\x7e]+")


class BadKey(ValueError):
    """A JSON Web Key that is not relayed; the message says why (never the key's data)."""


@dataclass(frozen=True, slots=True)
class DroppedKey:
    """A key left out of a set: its position, its ``kid`` (shortened, printable) and why."""

    index: int
    kid: str
    reason: str

    def __str__(self) -> str:
        return f"keys[{self.index}] (kid {self.kid!r}): {self.reason}"


@dataclass(frozen=True, slots=True)
class CheckedKeySet:
    """The keys of a set that passed, as compact sorted JSON, and those left out."""

    text: str
    kept: int
    dropped: tuple[DroppedKey, ...]


def relayable_key(key: object) -> dict[str, Any]:
    """``key`` with only the members a proxy needs, each checked; BadKey otherwise."""
    if not isinstance(key, Mapping):
        raise BadKey(f"a key must be a JSON object, not {type(key).__name__}")
    kty = key.get("kty")
    if not isinstance(kty, str) or kty not in RELAYED_BY_TYPE:
        shown = kty if isinstance(kty, str) and len(kty) <= 16 else type(kty).__name__
        raise BadKey(f"kty {shown!r} is not one of RSA, EC, OKP (symmetric keys are never relayed)")
    _check_common(key, kty)
    if kty == "RSA":
        _check_rsa(key)
    elif kty == "EC":
        _check_ec(key)
    else:
        _check_okp(key)
    names = RELAYED_COMMON + RELAYED_BY_TYPE[kty]
    return {name: key[name] for name in names if name in key}


def relayable_key_set(document: object) -> CheckedKeySet:
    """The relayable keys of a parsed JWKS document; BadKey if it has no ``keys`` list."""
    keys = document.get("keys") if isinstance(document, Mapping) else None
    if not isinstance(keys, list):
        raise BadKey('not a key set: no "keys" list')
    kept: list[dict[str, Any]] = []
    dropped: list[DroppedKey] = []
    for index, key in enumerate(keys):
        try:
            kept.append(relayable_key(key))
        except BadKey as bad:
            dropped.append(DroppedKey(index, shown_kid(key), str(bad)))
    text = json.dumps({"keys": kept}, sort_keys=True, separators=(",", ":"))
    return CheckedKeySet(text, len(kept), tuple(dropped))


def shown_kid(key: object) -> str:
    """The key's ``kid`` as it may go into a log line: printable, at most 64 characters."""
    kid = key.get("kid") if isinstance(key, Mapping) else None
    if not isinstance(kid, str):
        return ""
    printable = "".join(c if " " <= c <= "~" else "?" for c in kid[:64])
    return printable + ("..." if len(kid) > 64 else "")


def _check_common(key: Mapping[str, Any], kty: str) -> None:
    if "kid" in key:
        kid = key["kid"]
        if not isinstance(kid, str) or not _PRINTABLE.fullmatch(kid) or len(kid) > KID_MAX:
            raise BadKey(f"kid must be printable ASCII of 1 to {KID_MAX} characters")
    if "use" in key and key["use"] != "sig":
        raise BadKey('use must be "sig" (a key for encryption does not verify tokens)')
    if "alg" in key:
        alg = key["alg"]
        if not isinstance(alg, str) or not _suits(alg, kty, key.get("crv")):
            shown = alg[:16] if isinstance(alg, str) else type(alg).__name__
            raise BadKey(f"alg {shown!r} does not suit a {kty} key")


def _suits(alg: str, kty: str, crv: object) -> bool:
    if kty == "RSA":
        return alg in RSA_ALGORITHMS
    if kty == "EC":
        curve = CURVES.get(crv) if isinstance(crv, str) else None
        return curve is not None and alg == curve[2]
    return alg == "EdDSA"


def _check_rsa(key: Mapping[str, Any]) -> None:
    modulus = int.from_bytes(_decoded(key, "n"), "big")
    exponent = int.from_bytes(_decoded(key, "e"), "big")
    bits = modulus.bit_length()
    if not RSA_MIN_BITS <= bits <= RSA_MAX_BITS:
        raise BadKey(f"RSA modulus of {bits} bits; {RSA_MIN_BITS} to {RSA_MAX_BITS} are relayed")
    if modulus % 2 == 0:
        raise BadKey("RSA modulus is even")
    if exponent < 3 or exponent % 2 == 0 or exponent.bit_length() > RSA_MAX_EXPONENT_BITS:
        raise BadKey(f"RSA exponent must be odd, at least 3 and of at most "
                     f"{RSA_MAX_EXPONENT_BITS} bits")  # fmt: skip
    try:
        rsa.RSAPublicNumbers(exponent, modulus).public_key()
    except ValueError as problem:
        raise BadKey(f"not an RSA public key: {problem}") from None


def _check_ec(key: Mapping[str, Any]) -> None:
    crv = key.get("crv")
    curve = CURVES.get(crv) if isinstance(crv, str) else None
    if curve is None:
        raise BadKey("EC crv must be one of " + ", ".join(CURVES))
    kind, size, _alg = curve
    x, y = _decoded(key, "x"), _decoded(key, "y")
    if len(x) > size or len(y) > size:
        raise BadKey(f"EC coordinates longer than {size} bytes for {crv}")
    try:
        ec.EllipticCurvePublicNumbers(
            int.from_bytes(x, "big"), int.from_bytes(y, "big"), kind
        ).public_key()
    except ValueError:
        raise BadKey(f"x, y is not a point on {crv}") from None


def _check_okp(key: Mapping[str, Any]) -> None:
    if key.get("crv") != "Ed25519":
        raise BadKey("OKP crv must be Ed25519")
    x = _decoded(key, "x")
    if len(x) != 32:
        raise BadKey(f"Ed25519 x must be 32 bytes, not {len(x)}")
    try:
        ed25519.Ed25519PublicKey.from_public_bytes(x)
    except ValueError:
        raise BadKey("x is not an Ed25519 public key") from None


def _decoded(key: Mapping[str, Any], member: str) -> bytes:
    value = key.get(member)
    if not isinstance(value, str) or not value:
        raise BadKey(f"{member} is missing or not a string")
    if not _BASE64URL.fullmatch(value) or len(value.rstrip("=")) % 4 == 1:
        raise BadKey(f"{member} is not base64url")
    try:
        return binascii.a2b_base64(_padded(value.rstrip("=")).translate(_TO_STANDARD))
    except binascii.Error:
        raise BadKey(f"{member} is not base64url") from None


_TO_STANDARD: Final = str.maketrans("-_", "+/")


def _padded(text: str) -> str:
    return text + "=" * (-len(text) % 4)
