"""MeshConfig from the ``istio`` ConfigMap, followed on change, in a real ``serve()``.

The Kubernetes API server is the fake of :mod:`tests.kube.fake_apiserver` (a fake: no
real API server can run here). ``serve`` with a ``k8s://`` source and no ``--mesh``
reads the ConfigMap before it serves, and each change of it rebuilds the PushContext
with the new settings; an invalid ``data.mesh`` keeps the last good one; a deleted
ConfigMap gives the defaults.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.serve_in_process import serve_in_process
from tests.kube.fake_apiserver import FakeApiServer


def mesh_configmap(mesh: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "istio", "namespace": "istio-system"},
        "data": {"mesh": mesh},
    }


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.02)


async def test_the_istio_configmap_is_the_mesh_config_and_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async with FakeApiServer(bookmark_interval=0.5) as api:
        api.create(
            mesh_configmap("connectTimeout: 3s\noutboundTrafficPolicy: {mode: REGISTRY_ONLY}\n")
        )
        # Another ConfigMap in the namespace is not the mesh config.
        other = mesh_configmap("connectTimeout: 99s\n")
        other["metadata"]["name"] = "istio-other"
        api.create(other)
        overrides = {
            "config_sources": ("k8s://",),
            "kube.kubeconfig": str(api.kubeconfig(tmp_path / "kubeconfig")),
        }
        empty = tmp_path / "mesh"
        empty.mkdir()
        with caplog.at_level(logging.INFO, "pilothouse.sources.kubernetes"):
            async with serve_in_process(monkeypatch, empty, overrides) as served:
                discovery = served.discovery
                assert discovery.mesh.connect_timeout == 3.0
                assert discovery.context.mesh.outbound_traffic_policy == "REGISTRY_ONLY"
                builds = discovery.stats.context_builds

                api.apply(mesh_configmap("connectTimeout: 7s\n"))
                await until(lambda: discovery.context.mesh.connect_timeout == 7.0)
                assert discovery.context.mesh.outbound_traffic_policy == "ALLOW_ANY"
                assert discovery.stats.context_builds > builds

                api.apply(mesh_configmap("connectTimeout: [not, a, duration]\n"))
                await until(lambda: any("keeping the last good" in r.getMessage()
                                        for r in caplog.records))  # fmt: skip
                assert discovery.mesh.connect_timeout == 7.0

                api.delete("configmaps", "istio-system", "istio")
                await until(lambda: discovery.context.mesh.connect_timeout == 10.0)
    selectors = {r.query.get("fieldSelector") for r in api.requests if "/configmaps" in r.path}
    assert selectors == {"metadata.name=istio"}
