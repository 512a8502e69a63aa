"""Telemetry from the ``k8s://`` source (the fake API server: no real one can run here):
read as ``telemetry.istio.io/v1`` with its fields intact; one with a sampling percentage
above 100 is skipped and the good one stays."""

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


async def test_telemetries_arrive_and_a_bad_sampling_is_skipped(
    api: FakeApiServer, tmp_path: Path
) -> None:
    good = {
        "accessLogging": [{"providers": [{"name": "envoy"}], "filter": {"expression": "true"}}],
        "tracing": [{"randomSamplingPercentage": 5}],
    }
    bad = {"tracing": [{"randomSamplingPercentage": 500}]}
    api.create(obj("Telemetry", "logs", "shop", good, group="telemetry.istio.io"))
    api.create(obj("Telemetry", "bad", "shop", bad, group="telemetry.istio.io"))
    async with Running(source(api, tmp_path)) as found:
        assert names(found, "Telemetry") == ["shop/logs"]
        config = found.store.get(ConfigKey("Telemetry", "shop", "logs"))
        assert config is not None
        spec = config.spec
        assert spec.access_logging[0].filter.expression == "true"  # type: ignore[attr-defined]
        assert spec.tracing[0].random_sampling_percentage.value == 5  # type: ignore[attr-defined]
