"""The shared CA root in etcd: one key under the config prefix, created once.

The key is ``<prefix>/pilothouse/ca/root`` (``/mesh/pilothouse/ca/root`` for
``etcd://host:port/mesh``); keys under ``<prefix>/pilothouse/`` are never read as
config (:class:`~pilothouse.sources.etcd_layout.EtcdLayout`). The value is JSON,
``{"ca-cert.pem": "<PEM>", "ca-key.pem": "<PEM>"}``: the key is in the clear, so the
store must be protected (TLS, authentication, a role limited to the prefix; see
``docs/guides/etcd.md``). It is written by one transaction that puts it only when the key was never
created (``create_revision == 0``) and otherwise reads what is there, so replicas
starting together all end up with the first one's root.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import Any, Final

import aetcd
import aetcd.exceptions
import aetcd.rpc
import grpc

from pilothouse.security.ca_store import CaStoreError, CaStoreUnavailable, StoredRoot
from pilothouse.settings import EtcdSettings
from pilothouse.sources.etcd_client import EtcdUnavailable, client_for, reason

ROOT_KEY: Final = "pilothouse/ca/root"
"""The root's key, under the config prefix."""
CERT_FIELD: Final = "ca-cert.pem"
KEY_FIELD: Final = "ca-key.pem"

_FAILURES = (EtcdUnavailable, aetcd.exceptions.ClientError, grpc.RpcError, OSError)


def root_key(prefix: str) -> bytes:
    return f"{prefix.rstrip('/')}/{ROOT_KEY}".encode()


class EtcdRootStore:
    """The root at ``<prefix>/pilothouse/ca/root``, on the first endpoint that answers."""

    def __init__(
        self,
        endpoints: Sequence[tuple[str, int]],
        prefix: str,
        security: EtcdSettings,
        *,
        timeout: float = 10.0,
    ) -> None:
        self._endpoints = tuple(endpoints)
        self._key = root_key(prefix)
        self._security = security
        self._timeout = timeout
        self._client: aetcd.Client | None = None

    @property
    def where(self) -> str:
        hosts = ",".join(f"{host}:{port}" for host, port in self._endpoints)
        return f"etcd key {self._key.decode()} (etcd://{hosts})"

    async def read(self) -> StoredRoot | None:
        client = await self._connected()
        try:
            response = await client.kvstub.Range(
                aetcd.rpc.RangeRequest(key=self._key),
                timeout=self._timeout,
                metadata=client.metadata,
            )
        except _FAILURES as problem:
            raise CaStoreUnavailable(
                f"{self.where}: cannot read it: {reason(problem, self._security)}"
            ) from None
        return self._decode(response.kvs[0].value) if response.kvs else None

    async def create(self, root: StoredRoot) -> StoredRoot:
        client = await self._connected()
        value = json.dumps(
            {CERT_FIELD: root.cert_pem.decode(), KEY_FIELD: root.key_pem.decode()}
        ).encode()
        absent = aetcd.rpc.Compare(
            key=self._key,
            target=aetcd.rpc.Compare.CREATE,
            result=aetcd.rpc.Compare.EQUAL,
            create_revision=0,
        )
        request = aetcd.rpc.TxnRequest(
            compare=[absent],
            success=[
                aetcd.rpc.RequestOp(request_put=aetcd.rpc.PutRequest(key=self._key, value=value))
            ],
            failure=[aetcd.rpc.RequestOp(request_range=aetcd.rpc.RangeRequest(key=self._key))],
        )
        try:
            response = await client.kvstub.Txn(
                request, timeout=self._timeout, metadata=client.metadata
            )
        except _FAILURES as problem:
            raise CaStoreUnavailable(
                f"{self.where}: cannot create it: {reason(problem, self._security)}"
            ) from None
        if response.succeeded:
            return root
        kvs = response.responses[0].response_range.kvs
        if not kvs:
            raise CaStoreError(f"{self.where}: created by another replica, then deleted")
        return self._decode(kvs[0].value)

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

    async def _connected(self) -> Any:
        if self._client is not None:
            return self._client
        failures: list[str] = []
        for host, port in self._endpoints:
            client = client_for(host, port, timeout=self._timeout, security=self._security)
            try:
                await client.connect()
                await client.kvstub.Range(
                    aetcd.rpc.RangeRequest(key=self._key, count_only=True),
                    timeout=self._timeout,
                    metadata=client.metadata,
                )
            except _FAILURES as problem:
                failures.append(f"{host}:{port}: {reason(problem, self._security)}")
                with contextlib.suppress(Exception):
                    await client.close()
                continue
            self._client = client
            return client
        raise CaStoreUnavailable(f"{self.where}: cannot reach etcd ({'; '.join(failures)})")

    def _decode(self, value: bytes) -> StoredRoot:
        try:
            data = json.loads(value)
            return StoredRoot(data[CERT_FIELD].encode(), data[KEY_FIELD].encode())
        except (ValueError, TypeError, KeyError, AttributeError):
            raise CaStoreError(
                f"{self.where}: not a CA root (JSON with {CERT_FIELD!r} and {KEY_FIELD!r})"
            ) from None
