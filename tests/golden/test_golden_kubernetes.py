"""The same mesh as files and as Kubernetes objects gives every proxy identical xDS.

The example mesh (``examples/``) is loaded once by the file source and once created,
object by object, in the fake Kubernetes API server (:mod:`tests.kube.fake_apiserver`;
a fake because no real API server can run here) and read back by the ``k8s://`` source.
For each proxy of the golden tests, LDS, RDS, CDS and EDS from the two must be equal.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from pilothouse.settings import KubeSettings
from pilothouse.sources.addresses import build_source
from pilothouse.sources.kubernetes.config_source import KubeConfigSource
from tests.golden.test_golden_examples import EXAMPLES, PROXIES
from tests.golden.xds_snapshot import TYPES, ProxySnapshot, dump, snapshot, snapshot_store
from tests.kube.fake_apiserver import FakeApiServer


def example_objects() -> list[dict[str, object]]:
    found = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        found += [doc for doc in yaml.safe_load_all(path.read_text()) if isinstance(doc, dict)]
    return found


async def from_kubernetes(tmp_path: Path) -> tuple[dict[str, ProxySnapshot], int]:
    async with FakeApiServer() as api:
        for obj in example_objects():
            api.create(obj)
        kube = KubeSettings(str(api.kubeconfig(tmp_path / "kubeconfig")))
        source = build_source("k8s://", kube=kube)
        assert isinstance(source, KubeConfigSource)
        task = asyncio.create_task(source.run())
        try:
            # a few seconds on a quiet machine; the deadline bounds a failure only (a
            # loaded machine running the unit tier once took more than 20 s)
            async with asyncio.timeout(60):
                while not source.has_synced():
                    await asyncio.sleep(0.01)
            assert source.problems() == {}
            return await snapshot_store(source.store, PROXIES), len(source.store)
        finally:
            source.close()
            await asyncio.wait_for(task, 10)


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, ProxySnapshot], ...]:
    files = asyncio.run(snapshot(EXAMPLES, PROXIES))
    kube, count = asyncio.run(from_kubernetes(tmp_path_factory.mktemp("kube")))
    assert count == len(example_objects())
    return files, kube


@pytest.mark.parametrize("short_type", list(TYPES))
@pytest.mark.parametrize("proxy", list(PROXIES))
def test_files_and_kubernetes_give_identical_xds(
    both: tuple[dict[str, ProxySnapshot], ...], proxy: str, short_type: str
) -> None:
    files, kube = both
    generated = files[proxy].json(short_type)
    assert generated, f"{proxy} gets no {short_type.upper()} from the files"
    assert dump(kube[proxy].json(short_type)) == dump(generated)
