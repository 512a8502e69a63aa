"""The shared CA root in Kubernetes: the ``istio-ca-secret`` Secret, as istiod keeps it.

The Secret lives in the mesh's root namespace (``istio-system`` by default), type
``istio.io/ca-root``, with ``ca-cert.pem`` and ``ca-key.pem`` in its data, so a root
made by istiod is read as is. The first replica creates it (POST); a replica that gets
``409 AlreadyExists`` reads the one that won. Reading needs ``get`` on that Secret and
creating ``create`` on Secrets in the root namespace (``deploy/kubernetes``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
from typing import TYPE_CHECKING, Any, Final

import aiohttp

from pilothouse.security.ca_store import CaStoreError, CaStoreUnavailable, StoredRoot
from pilothouse.sources.kubernetes.client import (
    KubeApiError,
    KubeConfigError,
    new_api_client,
    request,
)

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient

SECRET: Final = "istio-ca-secret"
SECRET_TYPE: Final = "istio.io/ca-root"
CERT_FIELD: Final = "ca-cert.pem"
KEY_FIELD: Final = "ca-key.pem"

_FAILURES = (KubeApiError, KubeConfigError, aiohttp.ClientError, OSError, asyncio.TimeoutError)


class KubeRootStore:
    """The root in ``<namespace>/istio-ca-secret``."""

    def __init__(self, kubeconfig: str | None, namespace: str, *, timeout: float = 10.0) -> None:
        self._kubeconfig = kubeconfig
        self._namespace = namespace
        self._timeout = timeout
        self._client: ApiClient | None = None

    @property
    def where(self) -> str:
        return f"Secret {self._namespace}/{SECRET}"

    async def read(self) -> StoredRoot | None:
        path = f"/api/v1/namespaces/{self._namespace}/secrets/{SECRET}"
        try:
            secret = await request(await self._api(), "GET", path, timeout=self._timeout)
        except KubeApiError as problem:
            if problem.code == 404:
                return None
            raise CaStoreUnavailable(f"{self.where}: cannot read it: {problem}") from None
        except _FAILURES as problem:
            raise CaStoreUnavailable(f"{self.where}: cannot read it: {problem}") from None
        return self._decode(secret)

    async def create(self, root: StoredRoot) -> StoredRoot:
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": SECRET, "namespace": self._namespace},
            "type": SECRET_TYPE,
            "data": {
                CERT_FIELD: base64.b64encode(root.cert_pem).decode(),
                KEY_FIELD: base64.b64encode(root.key_pem).decode(),
            },
        }
        path = f"/api/v1/namespaces/{self._namespace}/secrets"
        try:
            await request(await self._api(), "POST", path, body=body, timeout=self._timeout)
        except KubeApiError as problem:
            if problem.code != 409:
                raise CaStoreUnavailable(f"{self.where}: cannot create it: {problem}") from None
        except _FAILURES as problem:
            raise CaStoreUnavailable(f"{self.where}: cannot create it: {problem}") from None
        else:
            return root
        won = await self.read()  # 409: another replica created it first
        if won is None:
            raise CaStoreError(f"{self.where}: created by another replica, then deleted")
        return won

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

    async def _api(self) -> ApiClient:
        if self._client is None:
            try:
                self._client = await new_api_client(self._kubeconfig)
            except KubeConfigError as problem:
                raise CaStoreError(f"{self.where}: {problem}") from None
        return self._client

    def _decode(self, secret: dict[str, Any]) -> StoredRoot:
        data = secret.get("data") or {}
        missing = [name for name in (CERT_FIELD, KEY_FIELD) if not data.get(name)]
        if missing:
            raise CaStoreError(f"{self.where}: no {' or '.join(missing)} in its data")
        try:
            return StoredRoot(
                base64.b64decode(data[CERT_FIELD], validate=True),
                base64.b64decode(data[KEY_FIELD], validate=True),
            )
        except (binascii.Error, TypeError, ValueError):
            raise CaStoreError(f"{self.where}: its data is not base64") from None
