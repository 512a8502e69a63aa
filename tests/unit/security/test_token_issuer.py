"""The local token issuer: its tokens pass the TLS port's JWT authentication.

What ``pilothouse token`` makes must be what ``serve --jwt-issuer`` accepts: the JWKS it
writes verifies the tokens it signs, for the service account asked, with audience
``istio-ca``, for the lifetime asked; the key is created once and kept private.
"""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest

from pilothouse.cli.tokens import parse_duration
from pilothouse.security.identity import SpiffeId
from pilothouse.security.jwt_authn import JwtAuthenticator, TokenRejected, parse_issuers
from pilothouse.security.token_issuer import TokenIssuer, TokenIssuerError
from tests.e2e.harness.cli_in_process import run_cli


def authenticator(trust: str, audiences: tuple[str, ...] = ("istio-ca",)) -> JwtAuthenticator:
    return JwtAuthenticator.from_files(parse_issuers([trust]), audiences, "cluster.local")


def test_a_token_proves_its_service_account_to_the_tls_port(tmp_path: Path) -> None:
    issuer = TokenIssuer.open(tmp_path / "issuer")
    token = issuer.token("shop", "ratings")
    identity = authenticator(issuer.trust).identity(token)
    assert identity == SpiffeId("cluster.local", "shop", "ratings")


def test_the_issuer_is_created_once_and_its_key_is_private(tmp_path: Path) -> None:
    directory = tmp_path / "issuer"
    first = TokenIssuer.open(directory, "local-ca-tokens")
    assert stat.S_IMODE((directory / "key.pem").stat().st_mode) == 0o600
    again = TokenIssuer.open(directory, "ignored-now")
    assert (again.name, again.kid) == ("local-ca-tokens", first.kid)
    assert first.trust == f"local-ca-tokens={(directory / 'jwks.json').resolve()}"
    (directory / "jwks.json").unlink()  # a lost key set is written again from the key
    restored = TokenIssuer.open(directory)
    assert json.loads((directory / "jwks.json").read_text()) == restored.jwks()
    assert authenticator(restored.trust).identity(first.token("a", "b")).namespace == "a"


def test_audience_and_lifetime_are_the_ones_asked(tmp_path: Path) -> None:
    issuer = TokenIssuer.open(tmp_path / "issuer")
    other = issuer.token("shop", "ratings", audiences=("other",))
    with pytest.raises(TokenRejected, match=r"(?i)audience"):
        authenticator(issuer.trust).identity(other)
    assert authenticator(issuer.trust, ("other",)).identity(other).service_account == "ratings"
    expired = issuer.token("shop", "ratings", lifetime=60, now=time.time() - 3600)
    with pytest.raises(TokenRejected, match=r"(?i)expired"):
        authenticator(issuer.trust).identity(expired)


@pytest.mark.parametrize(
    ("namespace", "account"), [("Shop", "ratings"), ("shop", ""), ("a:b", "c")]
)
def test_names_that_are_no_kubernetes_names_are_refused(
    tmp_path: Path, namespace: str, account: str
) -> None:
    issuer = TokenIssuer.open(tmp_path / "issuer")
    with pytest.raises(TokenIssuerError, match="not a Kubernetes name"):
        issuer.token(namespace, account)


def test_a_key_that_is_not_the_issuer_s_kind_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "issuer"
    directory.mkdir()
    (directory / "key.pem").write_text("not a key")
    with pytest.raises(TokenIssuerError, match="not an unencrypted PEM private key"):
        TokenIssuer.open(directory)


@pytest.mark.parametrize(
    ("text", "seconds"), [("3600", 3600), ("90s", 90), ("90m", 5400), ("1h", 3600), ("1h30m", 5400)]
)
def test_durations_read_as_kubectl_writes_them(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "-5", "1d", "h", "inf", "nan"])
def test_durations_that_are_none_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_the_command_prints_the_trust_and_tokens_it_accepts(tmp_path: Path) -> None:
    directory = str(tmp_path / "issuer")
    made = run_cli("token", "issuer", "--issuer-dir", directory)
    assert made.returncode == 0, made.stderr
    trust = made.stdout.strip()
    assert trust.startswith("pilothouse=") and trust.endswith("jwks.json")
    assert "created token issuer 'pilothouse'" in made.stderr
    assert f"pilothouse serve --jwt-issuer {trust}" in made.stderr
    again = run_cli("token", "issuer", "--issuer-dir", directory)
    assert again.stdout.strip() == trust and again.stderr == ""
    token = run_cli("token", "create", "ratings", "-n", "shop", "--issuer-dir", directory,
                    "--duration", "10m")  # fmt: skip
    assert token.returncode == 0, token.stderr
    assert authenticator(trust).identity(token.stdout.strip()).namespace == "shop"
    bad = run_cli("token", "create", "ratings", "--issuer-dir", directory, "--duration", "soon")
    assert bad.returncode == 2 and "--duration soon" in bad.stderr
    upper = run_cli("token", "create", "Ratings", "--issuer-dir", directory)
    assert upper.returncode == 2 and "not a Kubernetes name" in upper.stderr
