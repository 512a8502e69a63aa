"""The CA's root shared through Kubernetes: the root namespace's ``istio-ca-secret``.

Against the fake API server (:mod:`tests.kube.fake_apiserver`; a fake because no real
API server can run here), authorizing by ``deploy/kubernetes/clusterrole.yaml``: two
replicas opening the CA at once both find no Secret, both create one, one gets
``409 AlreadyExists`` and reads the winner, so both sign with one root; a Secret istiod
made is used as is; a Secret without the key is a clear error.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
from pathlib import Path

import pytest
import yaml

from pilothouse.security import ca_dir
from pilothouse.security.ca_store import CaStoreError, StoredRoot, open_shared_root
from pilothouse.security.ca_store_kube import KubeRootStore
from pilothouse.security.root import new_root, pem
from pilothouse.security.signer import FileSigner
from tests.kube.fake_apiserver import FakeApiServer
from tests.kube.test_rbac import RBAC

NOW = datetime.datetime.now(datetime.UTC)
TTL = datetime.timedelta(days=30)


async def open_root(kubeconfig: Path, directory: Path) -> tuple[str, bytes]:
    store = KubeRootStore(str(kubeconfig), "istio-system")
    try:
        shared = await open_shared_root(store, directory, "cluster.local", TTL, NOW)
    finally:
        await store.close()
    return shared.outcome, pem(shared.material.root).encode()


async def test_replicas_starting_together_create_one_secret_and_share_its_root(
    tmp_path: Path,
) -> None:
    async with FakeApiServer() as api:
        api.use_rbac(d for d in yaml.safe_load_all(RBAC.read_text()) if d)
        kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
        first, second = await asyncio.gather(
            open_root(kubeconfig, tmp_path / "ca-a"), open_root(kubeconfig, tmp_path / "ca-b")
        )
        secret = api.get("secrets", "istio-system", "istio-ca-secret")
        posts = [r for r in api.requests if r.method == "POST"]

    assert first[1] == second[1]
    assert sorted((first[0], second[0])) == ["created", "loaded"]
    assert len(posts) == 2  # both created; the second got 409 and read the winner
    assert secret is not None and secret["type"] == "istio.io/ca-root"
    assert base64.b64decode(secret["data"]["ca-cert.pem"]) == first[1]
    for directory in ("ca-a", "ca-b"):
        assert (tmp_path / directory / ca_dir.ROOT_CERT).read_bytes() == first[1]
        assert not (tmp_path / directory / ca_dir.CA_KEY).exists()


async def test_a_root_istiod_made_is_used(tmp_path: Path) -> None:
    signer = FileSigner.generate()
    root = new_root(signer, "cluster.local", TTL, NOW)
    async with FakeApiServer() as api:
        api.create({
            "apiVersion": "v1", "kind": "Secret", "type": "istio.io/ca-root",
            "metadata": {"name": "istio-ca-secret", "namespace": "istio-system"},
            "data": {
                "ca-cert.pem": base64.b64encode(pem(root).encode()).decode(),
                "ca-key.pem": base64.b64encode(signer.private_pem()).decode(),
                "cert-chain.pem": "", "root-cert.pem": "",
            },
        })  # fmt: skip
        outcome, got = await open_root(api.kubeconfig(tmp_path / "kubeconfig"), tmp_path / "ca")
    assert (outcome, got) == ("loaded", pem(root).encode())


async def test_a_secret_without_the_key_is_an_error_naming_it(tmp_path: Path) -> None:
    async with FakeApiServer() as api:
        api.create({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "istio-ca-secret", "namespace": "istio-system"},
            "data": {"ca-cert.pem": base64.b64encode(b"x").decode()},
        })  # fmt: skip
        with pytest.raises(
            CaStoreError, match=r"Secret istio-system/istio-ca-secret: no ca-key\.pem"
        ):
            await open_root(api.kubeconfig(tmp_path / "kubeconfig"), tmp_path / "ca")


def test_a_stored_root_with_a_foreign_key_is_refused() -> None:
    signer = FileSigner.generate()
    root = new_root(signer, "cluster.local", TTL, NOW)
    other = FileSigner.generate()
    with pytest.raises(CaStoreError, match="the key does not belong to the certificate"):
        StoredRoot(pem(root).encode(), other.private_pem()).material("here")
