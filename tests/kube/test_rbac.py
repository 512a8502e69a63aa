"""``deploy/kubernetes/clusterrole.yaml`` grants exactly what pilothouse reads and writes.

The fake API server (:mod:`tests.kube.fake_apiserver`; a fake because no real API server
can run here) authorizes every request by the file's ClusterRole and Role: the
``k8s://`` source (with ``--write-status``), the mesh config and the registry's
informers all work under it, and the Istio rules are exactly the ones the kind table gives
(:func:`pilothouse.kinds.rbac.istio_rules`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from pilothouse.kinds.rbac import istio_rules
from pilothouse.kinds.table import SCHEMAS
from pilothouse.registry.kubernetes.feeds import registry_informers
from pilothouse.settings import KubeSettings
from pilothouse.sources.addresses import build_source
from pilothouse.sources.kubernetes.client import new_api_client
from pilothouse.sources.kubernetes.config_source import KubeConfigSource
from pilothouse.sources.kubernetes.mesh_config import KubeMeshConfig
from tests.kube.fake_apiserver import FakeApiServer

RBAC = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes" / "clusterrole.yaml"


def documents() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(RBAC.read_text()) if d]


def test_the_istio_rules_name_exactly_the_kinds_pilothouse_reads() -> None:
    (role,) = [d for d in documents() if d["kind"] == "ClusterRole"]
    granted: dict[str, set[tuple[str, str]]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    granted.setdefault(verb, set()).add((group, resource))
    schemas = {(s.group, s.plural) for s in SCHEMAS}
    istio = {g for g, _ in schemas}
    assert {r for r in granted["list"] if r[0] in istio} == schemas
    assert granted["list"] == granted["watch"]
    assert granted["patch"] == {(g, f"{p}/status") for g, p in schemas}
    assert set(granted) == {"list", "watch", "patch"}, "nothing pilothouse does not do"
    assert [r for r in role["rules"] if set(r["apiGroups"]) <= istio] == istio_rules()


async def test_everything_pilothouse_does_is_allowed(tmp_path: Path) -> None:
    async with FakeApiServer() as api:
        api.use_rbac(documents())
        bad = {
            "apiVersion": "networking.istio.io/v1",
            "kind": "VirtualService",
            "metadata": {"name": "bad", "namespace": "default"},
            "spec": {"hosts": ["a"], "http": [{"route": [{"destination": {"host": "a"},
                                                          "weight": -1}]}]},
        }  # fmt: skip
        api.create(bad)
        api.create({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "istio", "namespace": "istio-system"},
                    "data": {"mesh": "connectTimeout: 2s\n"}})  # fmt: skip
        kubeconfig = str(api.kubeconfig(tmp_path / "kubeconfig"))
        source = build_source("k8s://", kube=KubeSettings(kubeconfig, write_status=True))
        assert isinstance(source, KubeConfigSource)
        running = asyncio.create_task(source.run())
        mesh = KubeMeshConfig(kubeconfig)
        assert (await mesh.first(timeout=10)) is not None
        assert mesh.mesh.connect_timeout == 2.0
        client = await new_api_client(kubeconfig)
        registry = list(registry_informers(client).values())
        assert [i.resource for i in registry] == [
            "services",
            "endpointslices.discovery.k8s.io",
            "pods",
            "nodes",
            "namespaces",
        ]
        tasks = [asyncio.create_task(i.run()) for i in registry]
        try:
            async with asyncio.timeout(10):
                while not (source.has_synced() and all(i.has_synced() for i in registry)):
                    await asyncio.sleep(0.01)
                while not (api.get("virtualservices.networking.istio.io", "default", "bad")
                           or {}).get("status"):  # fmt: skip
                    await asyncio.sleep(0.01)
            assert [i.resource for i in source.informers if i.absent] == []
            assert [i.resource for i in registry if i.absent] == []
        finally:
            source.close()
            mesh.close()
            await mesh.run()
            for informer in registry:
                informer.close()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await client.close()
            await asyncio.wait_for(running, 10)


async def test_without_the_role_the_mesh_config_is_refused(tmp_path: Path) -> None:
    async with FakeApiServer() as api:
        api.use_rbac(d for d in documents() if d["kind"] != "Role")
        mesh = KubeMeshConfig(str(api.kubeconfig(tmp_path / "kubeconfig")), absent_retry=60)
        assert await mesh.first(timeout=10) is None
        assert mesh._informer is not None and mesh._informer.absent == "403 Forbidden"
        mesh.close()
        await mesh.run()
