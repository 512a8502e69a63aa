"""ProxyConfig from the ``k8s://`` source (the fake API server: no real one can run
here): read at ``v1beta1``, the only version Istio serves it in, with its fields intact;
one with a wildcard selector is skipped and the good one stays."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pilothouse.config.model import ConfigKey
from tests.kube.fake_apiserver import FakeApiServer
from tests.kube.test_config_source import Running, names, obj, source


@pytest.fixture
async def api() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer(token="t0ken", bookmark_interval=0.5) as server:
        yield server


async def test_proxy_configs_arrive_and_a_bad_selector_is_skipped(
    api: FakeApiServer, tmp_path: Path
) -> None:
    good = {
        "selector": {"matchLabels": {"app": "ratings"}},
        "concurrency": 2,
        "environmentVariables": {"ISTIO_META_TEAM": "shop"},
    }
    bad = {"selector": {"matchLabels": {"app": "*"}}, "concurrency": 1}
    api.create(obj("ProxyConfig", "threads", "shop", good, version="v1beta1"))
    api.create(obj("ProxyConfig", "bad", "shop", bad, version="v1beta1"))
    async with Running(source(api, tmp_path)) as found:
        assert names(found, "ProxyConfig") == ["shop/threads"]
        config = found.store.get(ConfigKey("ProxyConfig", "shop", "threads"))
        assert config is not None
        assert config.spec.concurrency.value == 2  # type: ignore[attr-defined]
        assert dict(config.spec.environment_variables) == {"ISTIO_META_TEAM": "shop"}  # type: ignore[attr-defined]
