"""`pilothouse serve` settings: flags over environment over defaults; a bad environment
stops it with exit status 2 before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pilothouse.cli.main import build_parser, main
from pilothouse.cli.serve_args import FLAGS, settings_from
from pilothouse.settings import Settings, knobs


def serve_options() -> set[str]:
    parser = build_parser()
    (commands,) = (a for a in parser._actions if a.dest == "command")
    serve = commands.choices["serve"]  # type: ignore[index]
    return {action.dest for action in serve._actions if action.dest != "help"}


def test_every_flag_sets_a_knob() -> None:
    assert set(FLAGS) == serve_options()
    paths = {knob.path for knob in knobs()}
    assert set(FLAGS.values()) <= paths


def test_flags_win_over_the_environment_which_wins_over_defaults() -> None:
    args = build_parser().parse_args(
        ["serve", "--xds-address", "0.0.0.0:1", "--config", "a", "--config", "b",
         "--mesh", "mesh.yaml", "--accept-mcp-sources", "--sink-meta", "k=v"]
    )
    environ = {
        "PILOTHOUSE_XDS_ADDRESS": "127.0.0.1:2",
        "PILOTHOUSE_ADMIN_ADDRESS": "127.0.0.1:3",
        "PILOTHOUSE_XDS_CACHE_SIZE": "9",
    }
    settings = settings_from(args, environ)
    assert settings.xds.address == "0.0.0.0:1"
    assert settings.admin.address == "127.0.0.1:3"
    assert settings.xds.cache_size == 9
    assert settings.config_dirs == (Path("a"), Path("b"))
    assert settings.mesh_file == "mesh.yaml"
    assert settings.mcp.accept_sources is True
    assert settings.mcp.sink_meta == ("k=v",)
    assert settings.webhook == Settings().webhook


def test_the_tls_port_the_ca_and_issuers_come_from_flags_and_an_empty_address_is_off() -> None:
    args = build_parser().parse_args(
        ["serve", "--xds-tls-address", "", "--ca-dir", "/etc/cacerts",
         "--jwt-issuer", "https://a=/j/a.json", "--jwt-issuer", "https://b=/j/b.json"]
    )  # fmt: skip
    settings = settings_from(args, {"PILOTHOUSE_XDS_TLS_ADDRESS": "127.0.0.1:0"})
    assert settings.xds.tls_address == ""
    assert settings.ca.dir == "/etc/cacerts"
    assert settings.auth.jwt_issuers == ("https://a=/j/a.json", "https://b=/j/b.json")
    from_environment = settings_from(
        build_parser().parse_args(["serve"]),
        {"PILOTHOUSE_XDS_TLS_ADDRESS": "", "PILOTHOUSE_AUTH_JWT_ISSUERS": "i=/x.json,j=/y.json"},
    )
    assert from_environment.xds.tls_address == ""
    assert from_environment.auth.jwt_issuers == ("i=/x.json", "j=/y.json")


def test_the_suites_own_variables_do_not_stop_serve() -> None:
    args = build_parser().parse_args(["serve"])
    environ = {"PILOTHOUSE_FUZZ_EXAMPLES": "3000", "PILOTHOUSE_LOADTEST_CHANGE": "4"}
    assert settings_from(args, environ) == Settings()


def test_an_unknown_variable_stops_serve_with_status_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PILOTHOUSE_DEBOUNCE_AFTR", "0.05")
    assert main(["serve"]) == 2
    assert capsys.readouterr().err == (
        "pilothouse serve: unknown environment variable PILOTHOUSE_DEBOUNCE_AFTR:"
        " did you mean PILOTHOUSE_DEBOUNCE_AFTER?\n"
    )


def test_a_bad_value_stops_the_serve_process_with_status_2() -> None:
    environ = {**os.environ, "PILOTHOUSE_XDS_KEEPALIVE_TIME": "30s"}
    done = subprocess.run(
        [sys.executable, "-m", "pilothouse.cli.main", "serve", "--xds-address", "127.0.0.1:0"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "pilothouse serve: PILOTHOUSE_XDS_KEEPALIVE_TIME='30s':"
        " expected a number (float) of 0 or more, such as 0.5\n"
    )


def test_values_a_part_refuses_together_stop_serve_with_status_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PILOTHOUSE_XDS_ADMISSION_BURST", "0")
    assert main(["serve"]) == 2
    assert capsys.readouterr().err == (
        "pilothouse serve: PILOTHOUSE_XDS_ADMISSION_BURST must be at least 1, got 0\n"
    )


def test_jwks_allowed_hosts_come_from_flags_or_the_environment_and_are_checked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = build_parser().parse_args(
        ["serve", "--jwks-allowed-host", "issuer.internal", "--jwks-allowed-host", "10.0.0.0/8"]
    )
    settings = settings_from(args, {"PILOTHOUSE_JWKS_ALLOWED_HOSTS": "127.0.0.1"})
    assert settings.xds.jwks_allowed_hosts == ("issuer.internal", "10.0.0.0/8")
    from_environment = settings_from(
        build_parser().parse_args(["serve"]), {"PILOTHOUSE_JWKS_ALLOWED_HOSTS": "127.0.0.1, ::1"}
    )
    assert from_environment.xds.jwks_allowed_hosts == ("127.0.0.1", "::1")
    assert main(["serve", "--jwks-allowed-host", "http://issuer/keys"]) == 2
    assert capsys.readouterr().err == (
        "pilothouse serve: PILOTHOUSE_JWKS_ALLOWED_HOSTS: 'http://issuer/keys' is neither a "
        "host name nor an address or CIDR\n"
    )
