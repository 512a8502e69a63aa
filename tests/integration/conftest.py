"""Fixtures for the integration tests: one etcd per module, emptied for each test.

Starting an etcd costs about a second, and the tests of a module meet only through the
keys they write: ``etcd`` is the module's etcd (``module_etcd``, started once), running
and without a key when the test ends (a test that stopped it gets it started again, then
every key is deleted), so the next test begins on an empty store as on a fresh one.
A module that needs an etcd of another kind (TLS, users) defines its own ``etcd``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.e2e.harness.etcd import EtcdServer


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_etcd(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EtcdServer]:
    """One etcd for the module's tests."""
    server = EtcdServer(tmp_path_factory.mktemp("etcd") / "etcd")
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def etcd(module_etcd: EtcdServer) -> AsyncIterator[EtcdServer]:
    """The module's etcd, emptied again when the test ends."""
    assert await module_etcd.etcdctl("get", "", "--prefix", "--keys-only") == ""
    yield module_etcd
    if not module_etcd.running():
        await module_etcd.start()
    await module_etcd.etcdctl("del", "", "--prefix")
