"""``pilothouse bootstrap --config-source k8s://``: ProxyConfig and EnvoyFilter custom
resources of a cluster shape the bootstrap (the fake API server of
:mod:`tests.kube.fake_apiserver`: no real one can run here), reached through
``PILOTHOUSE_KUBECONFIG`` as ``serve`` reaches it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.harness.cli_in_process import run_cli_in_thread
from tests.kube.fake_apiserver import FakeApiServer
from tests.kube.test_config_source import obj

NODE = "sidecar~127.0.0.1~ratings-v1.shop~shop.svc.cluster.local"


@pytest.fixture
async def api() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer(token="t0ken") as server:
        yield server


async def test_custom_resources_of_a_cluster_shape_the_bootstrap(
    api: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads = {"selector": {"matchLabels": {"app": "ratings"}}, "concurrency": 4}
    api.create(obj("ProxyConfig", "threads", "shop", threads, version="v1beta1"))
    flush = {
        "configPatches": [
            {"applyTo": "BOOTSTRAP", "patch": {"operation": "MERGE",
                                               "value": {"stats_flush_interval": "6s"}}}
        ]
    }  # fmt: skip
    api.create(obj("EnvoyFilter", "flush", "shop", flush, version="v1alpha3"))
    monkeypatch.setenv("PILOTHOUSE_KUBECONFIG", str(api.kubeconfig(tmp_path / "kubeconfig")))
    given = ("bootstrap", "--node", NODE, "--label", "app=ratings", "--config-source", "k8s://")
    done = await run_cli_in_thread(*given, "-o", "json")
    assert done.returncode == 0, done.stderr
    assert "run Envoy with --concurrency 4" in done.stderr  # the ProxyConfig
    assert json.loads(done.stdout)["stats_flush_interval"] == "6s"  # the EnvoyFilter
