"""Authentication: bearer JWTs from configured issuers, client certificates, the chain."""

from __future__ import annotations

import datetime
from pathlib import Path

import jwt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization

from pilothouse.security.authn import Authenticator, Unauthenticated, bearer_token
from pilothouse.security.identity import ProvedBy, SpiffeId
from pilothouse.security.jwt_authn import (
    IssuerSetupError,
    JwtAuthenticator,
    TokenRejected,
    parse_issuers,
)
from tests.unit.security.certs import ca_cert, ec_key
from tests.unit.security.tokens import Issuer

ALICE = SpiffeId("example.org", "shop", "alice")


@pytest.fixture(scope="module")
def issuer() -> Issuer:
    return Issuer()


@pytest.fixture
def verifier(issuer: Issuer, tmp_path: Path) -> JwtAuthenticator:
    jwks = issuer.write_jwks(tmp_path / "jwks.json")
    return JwtAuthenticator.from_files({issuer.name: jwks}, ["istio-ca"], "example.org")


def test_a_service_account_token_becomes_its_spiffe_id(
    issuer: Issuer, verifier: JwtAuthenticator
) -> None:
    assert verifier.identity(issuer.token("shop", "alice")) == ALICE
    assert verifier.identity(issuer.token("shop", "alice", audience=["x", "istio-ca"])) == ALICE


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda i: i.token("shop", "alice", audience="other"), "(?i)audience"),
        (lambda i: i.token("shop", "alice", lifetime=-600), "expired"),
        (lambda i: Issuer(i.name, i.kid).token("shop", "alice"), "signature"),
        (lambda i: Issuer("https://elsewhere", i.kid).token("shop", "alice"), "not trusted"),
        (lambda i: Issuer(i.name, "other-kid").token("shop", "alice"), "no key"),
        (lambda i: i.token("shop", "alice", sub="alice"), "serviceaccount"),
        (lambda i: i.token("shop", "alice", sub="system:serviceaccount:a/b:c"), "serviceaccount"),
        (
            lambda i: jwt.encode(
                {"iss": i.name, "sub": "x"},
                "a-secret-long-enough-for-hs256-keys!",
                algorithm="HS256",
            ),
            "HS256",
        ),
        (lambda i: "not.a.token", "not a JWT"),
        (lambda i: "x" * 20_000, "longer"),
    ],
)
def test_bad_tokens_are_rejected_with_a_reason(
    issuer: Issuer, verifier: JwtAuthenticator, make: object, reason: str
) -> None:
    assert callable(make)
    with pytest.raises(TokenRejected, match=reason):
        verifier.identity(make(issuer))


def test_unsigned_tokens_are_rejected(issuer: Issuer, verifier: JwtAuthenticator) -> None:
    body = {"iss": issuer.name, "sub": "system:serviceaccount:shop:alice", "aud": "istio-ca"}
    token = jwt.encode(body, None, algorithm="none")
    with pytest.raises(TokenRejected, match=r"'none'"):
        verifier.identity(token)


def test_issuer_entries_and_files_are_checked(tmp_path: Path) -> None:
    assert parse_issuers(["https://a=b=/x/jwks.json"]) == {"https://a=b": Path("/x/jwks.json")}
    with pytest.raises(IssuerSetupError, match="ISSUER=JWKS_FILE"):
        parse_issuers(["no-equals"])
    with pytest.raises(IssuerSetupError, match=r"missing\.json"):
        JwtAuthenticator.from_files({"i": tmp_path / "missing.json"}, ["istio-ca"], "td")
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(IssuerSetupError, match="JWKS"):
        JwtAuthenticator.from_files({"i": tmp_path / "bad.json"}, ["istio-ca"], "td")


def test_bearer_token_is_read_from_authorization_metadata() -> None:
    assert bearer_token([("x", "y"), ("authorization", "Bearer abc")]) == "abc"
    assert bearer_token([("Authorization", "bearer abc ")]) == "abc"
    assert bearer_token([("authorization", "Basic abc")]) is None
    assert bearer_token([]) is None


def workload_cert(uris: list[str]) -> bytes:
    key = ec_key()
    issuer_key = ec_key()
    issuer = ca_cert(issuer_key, "ca")
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([]))
        .issuer_name(issuer.subject)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(hours=1))
    )
    if uris:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.UniformResourceIdentifier(u) for u in uris]),
            critical=True,
        )
    return builder.sign(issuer_key, hashes.SHA256()).public_bytes(serialization.Encoding.DER)


def test_the_chain_prefers_a_client_certificate(issuer: Issuer, verifier: JwtAuthenticator) -> None:
    chain = Authenticator(verifier)
    cert = workload_cert(["https://not-spiffe", ALICE.uri])
    token = issuer.token("other", "bob")
    caller = chain.authenticate(cert, [("authorization", f"Bearer {token}")])
    assert caller.identities == (ALICE,)
    assert caller.proved_by is ProvedBy.CLIENT_CERTIFICATE


def test_a_certificate_without_spiffe_ids_falls_back_to_the_token(
    issuer: Issuer, verifier: JwtAuthenticator
) -> None:
    chain = Authenticator(verifier)
    token = issuer.token("shop", "alice")
    caller = chain.authenticate(workload_cert([]), [("authorization", f"Bearer {token}")])
    assert caller.identities == (ALICE,)
    assert caller.proved_by is ProvedBy.JWT


def test_nothing_proved_names_every_step(issuer: Issuer, verifier: JwtAuthenticator) -> None:
    with pytest.raises(Unauthenticated, match=r"client certificate: none.*no authorization"):
        Authenticator(verifier).authenticate(None, [])
    with pytest.raises(Unauthenticated, match="no issuer is configured"):
        Authenticator(None).authenticate(None, [("authorization", "Bearer x")])
    with pytest.raises(Unauthenticated, match=r"(?i)audience"):
        bad = issuer.token("shop", "alice", audience="nope")
        Authenticator(verifier).authenticate(None, [("authorization", f"Bearer {bad}")])
