"""What a bootstrap makes of effective ProxyConfig settings: ``ISTIO_META_*`` variables
as node metadata without the prefix (a key the bootstrap writes keeps its value), other
variables named as not applied, and ``--concurrency`` only for a positive count."""

from __future__ import annotations

from types import MappingProxyType

from pilothouse.cli.bootstrap_proxy_config import AppliedProxyConfig
from pilothouse.kinds.proxy_config import ProxySettings


def applied(concurrency: int | None = None, **env: str) -> AppliedProxyConfig:
    settings = ProxySettings(concurrency, MappingProxyType(env), origins=("test",))
    return AppliedProxyConfig(settings)


def test_istio_meta_variables_become_metadata_and_the_bootstrap_s_keys_stay() -> None:
    given = applied(ISTIO_META_TEAM="shop", ISTIO_META_NAMESPACE="evil", ISTIO_META_="x",
                    LOG_LEVEL="debug")  # fmt: skip
    metadata, notes = given.node_metadata({"NAMESPACE": "shop"})
    assert metadata == {"TEAM": "shop"}
    assert notes == (
        "environment variable ISTIO_META_: not applied by a bootstrap",
        "environment variable ISTIO_META_NAMESPACE: ignored; the bootstrap sets NAMESPACE",
        "environment variable LOG_LEVEL: not applied by a bootstrap",
    )


def test_concurrency_becomes_an_envoy_argument_only_when_positive() -> None:
    assert applied(4).envoy_args() == ("--concurrency", "4")
    assert applied(0).envoy_args() == ()
    assert applied(None).envoy_args() == ()
    assert applied(-1).envoy_args() == ()
