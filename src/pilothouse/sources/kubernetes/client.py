"""The Kubernetes API client: from ``--kubeconfig PATH``, or in-cluster when run in a pod.

Authentication, TLS and kubeconfig parsing are ``kubernetes_asyncio``'s; this module only
picks the configuration and offers the two raw calls the informers need (a JSON GET, and
a GET whose body is streamed), plus the status write of ``--write-status``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp
import yaml

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient, Configuration

_IN_CLUSTER_HOST = "KUBERNETES_SERVICE_HOST"


class KubeConfigError(ValueError):
    """No usable cluster configuration; the message says what was tried."""


class KubeApiError(Exception):
    """The API server answered with an error status (its Status reason and message)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message


@dataclass(frozen=True, slots=True)
class ResourceRef:
    """One resource at one version: where its collection lives on the API server."""

    group: str
    version: str
    plural: str
    namespaced: bool = True

    @property
    def name(self) -> str:
        """``<plural>.<group>`` (the plural alone for the core group), as CRDs are named."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str = "", name: str = "", sub: str = "") -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace and self.namespaced:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if sub:
            base += f"/{sub}"
        return base


def check_config(kubeconfig: str | None) -> None:
    """Fail early (:class:`KubeConfigError`) when there is no cluster configuration to
    read: a kubeconfig that is not a readable file, or none outside a pod."""
    if kubeconfig:
        try:
            with open(kubeconfig, "rb") as handle:
                loaded = yaml.safe_load(handle)
        except OSError as problem:
            raise KubeConfigError(
                f"--kubeconfig {kubeconfig}: {problem.strerror or problem}"
            ) from None
        except yaml.YAMLError as problem:
            raise KubeConfigError(f"--kubeconfig {kubeconfig}: not YAML: {problem}") from None
        if not isinstance(loaded, dict) or not loaded.get("clusters"):
            raise KubeConfigError(f"--kubeconfig {kubeconfig}: not a kubeconfig (no clusters)")
    elif not os.environ.get(_IN_CLUSTER_HOST):
        raise KubeConfigError(
            "no cluster to read: give --kubeconfig PATH, or run in a pod "
            f"({_IN_CLUSTER_HOST} is not set)"
        )


async def load_configuration(kubeconfig: str | None = None) -> Configuration:
    """The client configuration of ``kubeconfig`` (a path), else the in-cluster service
    account; nothing is opened. Raises :class:`KubeConfigError` when neither can be used."""
    # The client library takes about a second to import: loaded only when a cluster is read.
    from kubernetes_asyncio.client import Configuration
    from kubernetes_asyncio.config import ConfigException, load_incluster_config, load_kube_config

    configuration = Configuration()
    if kubeconfig:
        try:
            await load_kube_config(
                config_file=kubeconfig, client_configuration=configuration, persist_config=False
            )
        except (ConfigException, OSError, ValueError) as problem:
            raise KubeConfigError(f"--kubeconfig {kubeconfig}: {problem}") from None
    elif os.environ.get(_IN_CLUSTER_HOST):
        try:
            load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except ConfigException as problem:
            raise KubeConfigError(f"in-cluster config: {problem}") from None
    else:
        raise KubeConfigError(
            "no cluster to read: give --kubeconfig PATH, or run in a pod "
            f"({_IN_CLUSTER_HOST} is not set)"
        )
    return configuration


async def new_api_client(kubeconfig: str | None = None) -> ApiClient:
    """An ApiClient for ``kubeconfig`` (a path), else the in-cluster service account.
    It holds an HTTP session from now on: the caller closes it.

    Raises :class:`KubeConfigError` when neither can be used.
    """
    from kubernetes_asyncio.client import ApiClient

    return ApiClient(await load_configuration(kubeconfig))


def _problem(status: int, body: bytes) -> KubeApiError:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    code = data.get("code")
    if not isinstance(code, int) or isinstance(code, bool) or not code:
        code = status
    return KubeApiError(
        code,
        str(data.get("reason") or "Unknown"),
        str(data.get("message") or body[:200].decode(errors="replace"))[:1000],
    )


async def request(
    client: ApiClient,
    method: str,
    path: str,
    query: list[tuple[str, str]] | None = None,
    *,
    body: dict[str, Any] | None = None,
    content_type: str = "application/json",
    timeout: float | None = None,
) -> dict[str, Any]:
    """One JSON request; :class:`KubeApiError` for an error status."""
    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = content_type
    response = await client.call_api(
        path,
        method,
        query_params=query or [],
        header_params=headers,
        body=body,
        auth_settings=["BearerToken"],
        _preload_content=False,
        _request_timeout=timeout,
    )
    try:
        data = await response.read()
    finally:
        response.release()
    if not 200 <= response.status <= 299:
        raise _problem(response.status, data)
    try:
        decoded = json.loads(data)
    except (ValueError, RecursionError):
        raise KubeApiError(response.status, "BadResponse", "the answer is not JSON") from None
    if not isinstance(decoded, dict):
        raise KubeApiError(response.status, "BadResponse", "the answer is not a JSON object")
    return decoded


async def open_stream(
    client: ApiClient, path: str, query: list[tuple[str, str]], *, read_timeout: float
) -> aiohttp.ClientResponse:
    """A streamed GET (a watch); the caller reads and releases the response."""
    response: aiohttp.ClientResponse = await client.call_api(
        path,
        "GET",
        query_params=query,
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
        _preload_content=False,
        _request_timeout=aiohttp.ClientTimeout(sock_connect=10, sock_read=read_timeout),
    )
    if not 200 <= response.status <= 299:
        try:
            data = await response.read()
        finally:
            response.release()
        raise _problem(response.status, data)
    return response
