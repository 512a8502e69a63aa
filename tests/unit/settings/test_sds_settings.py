"""The SDS settings refuse values that cannot work, naming the variable."""

from __future__ import annotations

import pytest

from pilothouse.settings import SdsSettings


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"workload_cert_ttl": 0}, "PILOTHOUSE_SDS_WORKLOAD_CERT_TTL"),
        ({"grace_period_ratio": 1.0}, "PILOTHOUSE_SDS_GRACE_PERIOD_RATIO"),
        ({"grace_period_ratio": 0.5, "grace_period_jitter": 0.6}, "_JITTER"),
        ({"grace_period_jitter": -0.1}, "_JITTER"),
    ],
)
def test_impossible_values_are_refused(values: dict[str, float], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        SdsSettings(**values)  # type: ignore[arg-type]


def test_the_defaults_are_istio_agents() -> None:
    settings = SdsSettings()
    assert settings.workload_cert_ttl == 24 * 3600
    assert (settings.grace_period_ratio, settings.grace_period_jitter) == (0.5, 0.01)
    assert settings.workload_key == "rsa" and settings.secrets_dir == ""


def test_the_secrets_flag_and_variable_set_the_directory() -> None:
    from pilothouse.cli.main import build_parser
    from pilothouse.cli.serve_args import settings_from

    args = build_parser().parse_args(["serve", "--secrets", "/etc/credentials"])
    assert settings_from(args, {}).sds.secrets_dir == "/etc/credentials"
    plain = build_parser().parse_args(["serve"])
    environ = {"PILOTHOUSE_SECRETS": "/srv/certs", "PILOTHOUSE_SDS_WORKLOAD_KEY": "ecdsa"}
    settings = settings_from(plain, environ)
    assert settings.sds.secrets_dir == "/srv/certs" and settings.sds.workload_key == "ecdsa"
