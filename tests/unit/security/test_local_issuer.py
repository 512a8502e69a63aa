"""``serve`` trusts the local token issuer (``pilothouse token``'s) without ``--jwt-issuer``:
while it exists, created before or after start, made anew with another key; never when
the setting is empty; an explicit ``--jwt-issuer`` of the same name wins."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from pilothouse.cli.main import build_parser
from pilothouse.cli.serve_args import settings_from
from pilothouse.cli.serve_security import local_issuer
from pilothouse.cli.tokens import DEFAULT_DIRECTORY
from pilothouse.security.identity import SpiffeId
from pilothouse.security.jwt_authn import JwtAuthenticator, TokenRejected
from pilothouse.security.local_issuer import LocalIssuerKeys
from pilothouse.security.token_issuer import JWKS_FILE, TokenIssuer
from pilothouse.settings import AuthSettings, Settings

RATINGS = SpiffeId("cluster.local", "shop", "ratings")


def authenticator(directory: Path, **explicit: Path) -> JwtAuthenticator:
    return JwtAuthenticator.from_files(
        explicit, ("istio-ca",), "cluster.local", LocalIssuerKeys(directory)
    )


def test_an_issuer_created_after_start_is_trusted_and_one_made_anew_replaces_it(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "token-issuer"
    jwt = authenticator(directory)
    first = TokenIssuer.open(tmp_path / "elsewhere")  # same name, not the local one
    with pytest.raises(TokenRejected, match="issuer 'pilothouse' is not trusted"):
        jwt.identity(first.token("shop", "ratings"))
    local = TokenIssuer.open(directory)  # created after the authenticator
    assert jwt.identity(local.token("shop", "ratings")) == RATINGS
    with pytest.raises(TokenRejected):  # another key of the same name proves nothing
        jwt.identity(first.token("shop", "ratings"))
    shutil.rmtree(directory)
    with pytest.raises(TokenRejected, match="not trusted"):  # gone: trusted for nothing
        jwt.identity(local.token("shop", "ratings"))
    again = TokenIssuer.open(directory)  # made anew with another key
    assert jwt.identity(again.token("shop", "ratings")) == RATINGS
    with pytest.raises(TokenRejected):
        jwt.identity(local.token("shop", "ratings"))


def test_an_explicit_issuer_of_the_same_name_wins(tmp_path: Path) -> None:
    local = TokenIssuer.open(tmp_path / "local")
    other = TokenIssuer.open(tmp_path / "other")
    jwt = authenticator(local.directory, pilothouse=other.jwks_file)
    assert jwt.identity(other.token("shop", "ratings")) == RATINGS
    with pytest.raises(TokenRejected):
        jwt.identity(local.token("shop", "ratings"))


def test_unreadable_key_sets_trust_nothing_and_say_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    local = TokenIssuer.open(tmp_path / "local")
    token = local.token("shop", "ratings")
    (local.directory / JWKS_FILE).write_text("{not json")
    keys = LocalIssuerKeys(local.directory)
    jwt = JwtAuthenticator({}, ("istio-ca",), "cluster.local", keys)
    with caplog.at_level(logging.WARNING, logger="pilothouse.security"):
        for _ in range(3):
            with pytest.raises(TokenRejected, match="not trusted"):
                jwt.identity(token)
    assert [r.getMessage() for r in caplog.records] == [
        f"local token issuer: {local.directory / JWKS_FILE} is not a usable JWKS"
        f" ({caplog.records[0].getMessage().split('(', 1)[1]}"
    ]  # once per change of the files, not per token
    assert "cannot be read" in keys.describe()
    (local.directory / JWKS_FILE).write_text(json.dumps(local.jwks()))
    assert jwt.identity(token) == RATINGS


def test_the_setting_defaults_to_the_token_commands_directory_and_empty_turns_it_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert Path(AuthSettings.local_issuer_dir) == DEFAULT_DIRECTORY
    with caplog.at_level(logging.INFO, logger="pilothouse.serve"):
        keys = local_issuer(Settings())
    assert keys is not None and keys.directory == DEFAULT_DIRECTORY
    assert "whoever can read its key.pem can mint any identity" in caplog.text
    parse = build_parser().parse_args
    off = settings_from(parse(["serve", "--local-issuer-dir", ""]), environ={})
    assert off.auth.local_issuer_dir == "" and local_issuer(off) is None
    moved = settings_from(parse(["serve"]), {"PILOTHOUSE_AUTH_LOCAL_ISSUER_DIR": str(tmp_path)})
    assert moved.auth.local_issuer_dir == str(tmp_path)
    assert "no token issuer in" in LocalIssuerKeys(tmp_path / "none").describe()
