"""RequestAuthentication validation: JWT rules, token locations, output headers, target."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pilothouse.api.istio.security.v1beta1.request_authentication_pb2 import (
    RequestAuthentication,
)
from pilothouse.config.validation import validate_request_authentication
from tests.unit.security.sample_keys import RSA_2048, RSA_2048_JWKS

from .checking import assert_clean, assert_error, run

JWKS = RSA_2048_JWKS
BAD_RSA_JWKS = json.dumps(
    {"keys": [RSA_2048, {"kty": "RSA", "n": "SECRET-DATA-IN-N", "e": "AQAB", "kid": "x"}]}
)
SHORT_RSA_JWKS = json.dumps(
    {"keys": [{**RSA_2048, "kid": "short", "n": RSA_2048["n"][: len(RSA_2048["n"]) // 2]}]}
)
OFF_CURVE_JWKS = json.dumps({"keys": [{"kty": "EC", "crv": "P-256", "x": "AQ", "y": "AQ"}]})


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({}, id="no-rules"),
        pytest.param(
            {"jwtRules": [{"issuer": "https://a.example", "jwksUri": "https://a.example/k"}]},
            id="jwks-uri",
        ),
        pytest.param(
            {
                "selector": {"matchLabels": {"app": "api"}},
                "jwtRules": [
                    {
                        "issuer": "tester",
                        "jwks": JWKS,
                        "audiences": ["api"],
                        "fromHeaders": [{"name": "x-token", "prefix": "Bearer "}],
                        "fromParams": ["token"],
                        "fromCookies": ["session"],
                        "outputPayloadToHeader": "x-jwt-payload",
                        "outputClaimToHeaders": [{"header": "x-sub", "claim": "sub"}],
                        "forwardOriginalToken": True,
                        "timeout": "5s",
                    }
                ],
            },
            id="everything",
        ),
        pytest.param({"jwtRules": [{"issuer": "no-keys"}]}, id="issuer-only"),
    ],
)
def test_valid_request_authentications(spec: dict[str, Any]) -> None:
    assert_clean(run(validate_request_authentication, RequestAuthentication, spec))


INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    ("no-issuer", {"jwtRules": [{"jwks": JWKS}]}, "spec.jwtRules[0].issuer", "required"),
    (
        "duplicate-issuer",
        {"jwtRules": [{"issuer": "a"}, {"issuer": "a"}]},
        "spec.jwtRules[1].issuer",
        "repeats jwtRules[0]",
    ),
    (
        "both-jwks-and-uri",
        {"jwtRules": [{"issuer": "a", "jwks": JWKS, "jwksUri": "https://a/k"}]},
        "spec.jwtRules[0].jwks",
        "not both",
    ),
    (
        "jwks-uri-scheme",
        {"jwtRules": [{"issuer": "a", "jwksUri": "file:///etc/passwd"}]},
        "spec.jwtRules[0].jwksUri",
        "http or https",
    ),
    (
        "jwks-uri-no-host",
        {"jwtRules": [{"issuer": "a", "jwksUri": "https:///keys"}]},
        "spec.jwtRules[0].jwksUri",
        "no host",
    ),
    (
        "jwks-uri-bad-port",
        {"jwtRules": [{"issuer": "a", "jwksUri": "https://a:99999/keys"}]},
        "spec.jwtRules[0].jwksUri",
        "not a valid URL",
    ),
    (
        "jwks-not-json",
        {"jwtRules": [{"issuer": "a", "jwks": "{keys"}]},
        "spec.jwtRules[0].jwks",
        "not valid JSON",
    ),
    (
        "jwks-no-keys",
        {"jwtRules": [{"issuer": "a", "jwks": '{"k": 1}'}]},
        "spec.jwtRules[0].jwks",
        '"keys" list',
    ),
    (
        "jwks-key-without-kty",
        {"jwtRules": [{"issuer": "a", "jwks": '{"keys": [{"n": "x"}]}'}]},
        "spec.jwtRules[0].jwks",
        "keys[0] (kid ''): kty",
    ),
    (
        "jwks-malformed-rsa-key",
        {"jwtRules": [{"issuer": "a", "jwks": BAD_RSA_JWKS}]},
        "spec.jwtRules[0].jwks",
        "keys[1] (kid 'x'): RSA modulus of 9",
    ),
    (
        "jwks-weak-rsa-key",
        {"jwtRules": [{"issuer": "a", "jwks": SHORT_RSA_JWKS}]},
        "spec.jwtRules[0].jwks",
        "keys[0] (kid 'short'): RSA modulus of 1024 bits; 2048 to 16384",
    ),
    (
        "jwks-ec-point-off-curve",
        {"jwtRules": [{"issuer": "a", "jwks": OFF_CURVE_JWKS}]},
        "spec.jwtRules[0].jwks",
        "not a point on P-256",
    ),
    (
        "jwks-empty",
        {"jwtRules": [{"issuer": "a", "jwks": '{"keys": []}'}]},
        "spec.jwtRules[0].jwks",
        "jwks has no key",
    ),
    (
        "empty-audience",
        {"jwtRules": [{"issuer": "a", "audiences": [""]}]},
        "spec.jwtRules[0].audiences[0]",
        "must not be empty",
    ),
    (
        "from-header-no-name",
        {"jwtRules": [{"issuer": "a", "fromHeaders": [{"prefix": "Bearer "}]}]},
        "spec.jwtRules[0].fromHeaders[0].name",
        "must not be empty",
    ),
    (
        "from-header-bad-name",
        {"jwtRules": [{"issuer": "a", "fromHeaders": [{"name": "x token"}]}]},
        "spec.jwtRules[0].fromHeaders[0].name",
        "may contain only",
    ),
    (
        "empty-param",
        {"jwtRules": [{"issuer": "a", "fromParams": [""]}]},
        "spec.jwtRules[0].fromParams[0]",
        "must not be empty",
    ),
    (
        "empty-space-delimited-claim",
        {"jwtRules": [{"issuer": "a", "spaceDelimitedClaims": ["scope", ""]}]},
        "spec.jwtRules[0].spaceDelimitedClaims[1]",
        "must not be empty",
    ),
    (
        "empty-cookie",
        {"jwtRules": [{"issuer": "a", "fromCookies": [""]}]},
        "spec.jwtRules[0].fromCookies[0]",
        "must not be empty",
    ),
    (
        "bad-payload-header",
        {"jwtRules": [{"issuer": "a", "outputPayloadToHeader": "x payload"}]},
        "spec.jwtRules[0].outputPayloadToHeader",
        "not a valid HTTP header name",
    ),
    (
        "claim-header-empty",
        {"jwtRules": [{"issuer": "a", "outputClaimToHeaders": [{"claim": "sub"}]}]},
        "spec.jwtRules[0].outputClaimToHeaders[0].header",
        "must not be empty",
    ),
    (
        "claim-empty",
        {"jwtRules": [{"issuer": "a", "outputClaimToHeaders": [{"header": "x-sub"}]}]},
        "spec.jwtRules[0].outputClaimToHeaders[0].claim",
        "must not be empty",
    ),
    (
        "zero-timeout",
        {"jwtRules": [{"issuer": "a", "timeout": "0s"}]},
        "spec.jwtRules[0].timeout",
        "positive",
    ),
    (
        "selector-and-target",
        {
            "selector": {"matchLabels": {"app": "a"}},
            "targetRef": {"kind": "Service", "name": "a"},
        },
        "spec.selector",
        "only one of",
    ),
]


@pytest.mark.parametrize(("spec", "path", "fragment"), [c[1:] for c in INVALID],
                         ids=[c[0] for c in INVALID])  # fmt: skip
def test_invalid_request_authentications(spec: dict[str, Any], path: str, fragment: str) -> None:
    assert_error(run(validate_request_authentication, RequestAuthentication, spec), path, fragment)
