"""Every JSON Web Key is checked as a key before it is relayed: real keys made with
``cryptography`` pass with their public members only; malformed, weak, off-curve or
unknown keys are dropped with the reason, and the good keys of the same set are kept."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from pilothouse.config.json_web_key import (
    BadKey,
    relayable_key,
    relayable_key_set,
)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def number(value: int) -> str:
    return b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))


def rsa_key(bits: int = 2048, kid: str = "rsa") -> dict[str, Any]:
    public = rsa.generate_private_key(65537, bits).public_key().public_numbers()
    return {"kty": "RSA", "kid": kid, "n": number(public.n), "e": number(public.e)}


def ec_key(curve: ec.EllipticCurve | None = None, crv: str = "P-256") -> dict[str, Any]:
    curve = curve or ec.SECP256R1()
    public = ec.generate_private_key(curve).public_key().public_numbers()
    size = (curve.key_size + 7) // 8
    return {
        "kty": "EC",
        "kid": f"ec-{crv}",
        "crv": crv,
        "x": b64(public.x.to_bytes(size, "big")),
        "y": b64(public.y.to_bytes(size, "big")),
    }


RSA = rsa_key()
EC = ec_key()


def test_real_keys_pass_with_public_members_only() -> None:
    extra = {"use": "sig", "alg": "RS256", "x5u": "http://127.0.0.1:15014/debug/adsz",
             "x5c": ["MIIB"], "key_ops": ["verify"], "d": "private", "note": "unknown"}  # fmt: skip
    assert relayable_key({**RSA, **extra}) == {**RSA, "use": "sig", "alg": "RS256"}
    assert relayable_key({**EC, "alg": "ES256", "p": "x"}) == {**EC, "alg": "ES256"}
    for curve, crv in ((ec.SECP384R1(), "P-384"), (ec.SECP521R1(), "P-521")):
        key = ec_key(curve, crv)
        assert relayable_key(key) == key
    raw = ed25519.Ed25519PrivateKey.generate().public_key().public_bytes_raw()
    okp = {"kty": "OKP", "crv": "Ed25519", "x": b64(raw), "alg": "EdDSA"}
    assert relayable_key(okp) == okp


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"n": "SECRET-DATA-IN-N"}, "RSA modulus of 9[0-9] bits"),
        ({"n": "not base64url!"}, "n is not base64url"),
        ({"n": 12345}, "n is missing or not a string"),
        ({"e": "AQ"}, "RSA exponent"),
        ({"e": "AAE"}, "RSA exponent"),  # 1
        ({"e": "AQAA"}, "RSA exponent"),  # 65536, even
        ({"e": b64(b"\x01" + b"\x00" * 8 + b"\x01")}, "RSA exponent"),  # 65 bits
        ({"kty": "oct", "k": "c2VjcmV0"}, "kty 'oct'"),
        ({"kty": "rsa"}, "kty 'rsa'"),
        ({"kty": None}, "kty"),
        ({"kid": "x" * 300}, "kid must be printable"),
        ({"kid": "bad\nkid"}, "kid must be printable"),
        ({"kid": 7}, "kid must be printable"),
        ({"alg": "ES256"}, "alg 'ES256' does not suit a RSA key"),
        ({"alg": "none"}, "alg 'none'"),
        ({"use": "enc"}, 'use must be "sig"'),
    ],
)
def test_bad_rsa_keys_are_refused(change: dict[str, Any], reason: str) -> None:
    with pytest.raises(BadKey, match=reason):
        relayable_key({**RSA, **change})


def test_rsa_sizes() -> None:
    with pytest.raises(BadKey, match="modulus of 1024 bits"):
        relayable_key(rsa_key(1024))
    huge = (1 << 16400) | 1
    with pytest.raises(BadKey, match="modulus of 16401 bits"):
        relayable_key({**RSA, "n": number(huge)})
    with pytest.raises(BadKey, match="even"):
        relayable_key({**RSA, "n": number(1 << 2047)})
    assert relayable_key(rsa_key(3072))["kty"] == "RSA"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"crv": "P-192"}, "EC crv must be one of"),
        ({"crv": "secp256k1"}, "EC crv must be one of"),
        ({"y": b64(b"\x01" * 32)}, "not a point on P-256"),
        ({"x": b64(b"\x01" * 33)}, "longer than 32 bytes"),
        ({"y": "%%%"}, "y is not base64url"),
        ({"alg": "ES384"}, "does not suit a EC key"),
        ({"crv": "P-384"}, "not a point on P-384"),
    ],
)
def test_bad_ec_keys_are_refused(change: dict[str, Any], reason: str) -> None:
    with pytest.raises(BadKey, match=reason):
        relayable_key({**EC, **change})


def test_bad_okp_keys_are_refused() -> None:
    with pytest.raises(BadKey, match="Ed25519"):
        relayable_key({"kty": "OKP", "crv": "X25519", "x": b64(b"\x01" * 32)})
    with pytest.raises(BadKey, match="32 bytes"):
        relayable_key({"kty": "OKP", "crv": "Ed25519", "x": b64(b"\x01" * 31)})
    with pytest.raises(BadKey, match="a JSON object"):
        relayable_key(["kty", "RSA"])


def test_a_set_keeps_its_good_keys_and_reports_the_bad_ones() -> None:
    bad = {"kty": "RSA", "n": "SECRET-DATA-IN-N", "e": "AQAB", "kid": "x"}
    weird = {**EC, "kid": "bad\x00kid\x07"}
    checked = relayable_key_set({"keys": [bad, RSA, "text", weird, {**EC, "x5u": "http://x"}]})
    assert json.loads(checked.text) == {"keys": [RSA, EC]}
    assert checked.kept == 2
    assert [(d.index, d.kid) for d in checked.dropped] == [(0, "x"), (2, ""), (3, "bad?kid?")]
    assert "SECRET" not in str(checked.dropped[0])
    with pytest.raises(BadKey, match='"keys" list'):
        relayable_key_set({"keys": {}})
