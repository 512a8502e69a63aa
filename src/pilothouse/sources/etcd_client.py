"""Talking to etcd through ``aetcd``: clients for an endpoint, and a consistent paged list.

A client speaks TLS when :class:`~pilothouse.settings.EtcdSettings` names a CA file
(with a client certificate for etcd's ``--client-cert-auth`` when one is given), and
authenticates as a user when one is given, again whenever etcd forgets the token
(:mod:`pilothouse.sources.etcd_auth`): ``aetcd`` itself only dials plaintext and never
renews a token, so :class:`EtcdClient` opens the channel. The files are read when the
client connects; a file that cannot be read fails that connection with a message naming
the file.

A list of a prefix is read in pages (``limit`` keys each, every page at the revision of
the first), so that 100,000 objects never make one response larger than gRPC allows,
and the whole list is one snapshot of the store. Failures of any kind come back as
:class:`EtcdUnavailable` (with a short reason) or, when the revision asked for is gone,
:class:`aetcd.exceptions.RevisionCompactedError`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aetcd
import aetcd.exceptions
import aetcd.rpc
import aetcd.utils
import aetcd.watcher
import grpc

from pilothouse.settings import EtcdSettings
from pilothouse.sources.etcd_auth import StreamTokenRefresh, TokenRefresh, token_in

log = logging.getLogger("pilothouse.sources.etcd")

PAGE: Final = 2000
"""Keys per page of a list."""
MAX_MESSAGE: Final = 64 * 1024 * 1024


class EtcdUnavailable(Exception):
    """etcd could not be reached or answered with an error; the message says which."""


@dataclass(frozen=True, slots=True)
class Listing:
    """Every key-value under a prefix at one revision (``kvs`` are etcd KeyValue messages)."""

    revision: int
    kvs: Sequence[Any]


class EtcdClient(aetcd.Client):  # type: ignore[misc]  # aetcd is untyped
    """An aetcd client that dials TLS when its settings ask for it, and authenticates
    again when etcd forgets its token (:mod:`pilothouse.sources.etcd_auth`)."""

    def __init__(
        self,
        host: str,
        port: int,
        security: EtcdSettings,
        *,
        timeout: float | None,
        options: dict[str, Any],
    ) -> None:
        super().__init__(
            host=host,
            port=port,
            username=security.user or None,
            password=security.password if security.user else None,
            timeout=timeout,
            options=options,
        )
        self._security = security
        self._token_lock = asyncio.Lock()
        self._connecting = asyncio.Lock()
        self.reauthentications = 0
        """Authentications after the first (etcd forgot a token), for tests and logs."""

    async def connect(self) -> None:
        if self._connected.is_set():
            return
        async with self._connecting:  # requests sent together open one channel
            if not self._connected.is_set():
                await self._open()

    async def _open(self) -> None:
        target = f"{self._host}:{self._port}"
        options = self._options.items()
        interceptors: list[grpc.aio.ClientInterceptor] = [
            TokenRefresh(self._authenticate_again),
            StreamTokenRefresh(self._authenticate_again),
        ]
        if self._security.tls:
            try:
                credentials = channel_credentials(self._security)
            except OSError as problem:
                raise EtcdUnavailable(str(problem)) from None
            self.channel = grpc.aio.secure_channel(
                target, credentials, options=options, interceptors=interceptors
            )
        else:
            self.channel = grpc.aio.insecure_channel(
                target, options=options, interceptors=interceptors
            )
        try:
            if self._username is not None:
                self.metadata = (("token", await self._authenticate()),)
        except grpc.aio.AioRpcError as problem:
            await self.channel.close()
            self._init_channel_attrs()
            raise EtcdUnavailable(reason(problem)) from problem
        self.kvstub = aetcd.rpc.KVStub(self.channel)
        self.clusterstub = aetcd.rpc.ClusterStub(self.channel)
        self.leasestub = aetcd.rpc.LeaseStub(self.channel)
        self.maintenancestub = aetcd.rpc.MaintenanceStub(self.channel)
        self._watcher = aetcd.watcher.Watcher(
            aetcd.rpc.WatchStub(self.channel), timeout=self._timeout, metadata=self.metadata
        )
        self._connected.set()

    async def _authenticate(self) -> str:
        request = aetcd.rpc.AuthenticateRequest(name=self._username, password=self._password)
        answer = await aetcd.rpc.AuthStub(self.channel).Authenticate(request, timeout=self._timeout)
        return str(answer.token)

    async def _authenticate_again(self, stale: str) -> str:
        """A token for a request etcd refused with ``stale`` (see :mod:`.etcd_auth`)."""
        async with self._token_lock:
            current = token_in(self.metadata)
            if current is not None and current != stale:
                return current  # another request authenticated meanwhile
            token = await self._authenticate()
            self.reauthentications += 1
            self.metadata = (("token", token),)
            if self._watcher is not None:  # watches created from now on carry it
                self._watcher._metadata = self.metadata
            log.info("etcd refused an expired token; authenticated again as %s", self._username)
            return token


def channel_credentials(security: EtcdSettings) -> grpc.ChannelCredentials:
    """TLS credentials from the settings' files (no CA file: the system's roots); OSError
    naming the file that cannot be read, or the one missing."""
    if bool(security.cert_file) != bool(security.key_file):
        raise OSError("etcd client certificate: give both --etcd-cert-file and --etcd-key-file")
    roots = _read("CA file", security.ca_file) if security.ca_file else None
    key = _read("key file", security.key_file) if security.key_file else None
    cert = _read("certificate file", security.cert_file) if security.cert_file else None
    return grpc.ssl_channel_credentials(roots, key, cert)


def _read(what: str, path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as problem:
        raise OSError(f"etcd {what} {path}: {problem.strerror or problem}") from None


def client_for(
    host: str,
    port: int,
    *,
    timeout: float | None = 10.0,
    security: EtcdSettings | None = None,
) -> aetcd.Client:
    """A client for one endpoint (not connected yet: aetcd dials on first use)."""
    options = {
        "grpc.max_receive_message_length": MAX_MESSAGE,
        "grpc.max_send_message_length": MAX_MESSAGE,
        "grpc.enable_retries": 0,
        # A peer that vanishes without a reset (a partition) is noticed within ~15 s;
        # etcd refuses pings more often than every 5 s.
        "grpc.keepalive_time_ms": 10_000,
        "grpc.keepalive_timeout_ms": 5_000,
        "grpc.keepalive_permit_without_calls": 1,
    }
    return EtcdClient(host, port, security or EtcdSettings(), timeout=timeout, options=options)


def reason(problem: BaseException, security: EtcdSettings | None = None) -> str:
    """A one-line reason for an etcd failure, for logs and ``/ready``; with the client's
    ``security``, a hint when etcd seems to want TLS or a user that was not given."""
    rpc_error = problem if isinstance(problem, grpc.aio.AioRpcError) else problem.__cause__
    if isinstance(rpc_error, grpc.aio.AioRpcError):
        text = f"{rpc_error.code().name}: {rpc_error.details()}"
        return text + _hint(rpc_error, security)
    text = str(problem) or type(problem).__name__
    return text.splitlines()[0] if text else type(problem).__name__


def _hint(problem: grpc.aio.AioRpcError, security: EtcdSettings | None) -> str:
    if security is None:
        return ""
    code, details = problem.code(), str(problem.details())
    if code is grpc.StatusCode.UNAVAILABLE and not security.tls and "Socket closed" in details:
        return " (does etcd want TLS? --etcd-ca-file, PILOTHOUSE_ETCD_CA_FILE)"
    if code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.INVALID_ARGUMENT) and (
        not security.user and ("permission denied" in details or "user name" in details)
    ):
        return " (does etcd want a user? --etcd-user and PILOTHOUSE_ETCD_PASSWORD)"
    return ""


async def check_revision(client: aetcd.Client, prefix: bytes, revision: int) -> None:
    """Raise :class:`aetcd.exceptions.RevisionCompactedError` when ``revision`` is
    compacted (a watch from there would fail; aetcd notices that only after its timeout)."""
    request = aetcd.rpc.RangeRequest(
        key=prefix,
        range_end=aetcd.utils.prefix_range_end(prefix),
        limit=1,
        revision=revision,
        keys_only=True,
    )
    await _range(client, request, revision)


async def current_revision(client: aetcd.Client, prefix: bytes) -> int:
    """The store's revision now (read through the prefix: no value is transferred)."""
    request = aetcd.rpc.RangeRequest(
        key=prefix, range_end=aetcd.utils.prefix_range_end(prefix), count_only=True
    )
    response = await _range(client, request, 0)
    return int(response.header.revision)


async def get_at(client: aetcd.Client, key: bytes, revision: int) -> Any | None:
    """The KeyValue of ``key`` as of ``revision``, or None when it did not exist."""
    response = await _range(client, aetcd.rpc.RangeRequest(key=key, revision=revision), revision)
    return response.kvs[0] if response.kvs else None


async def _range(client: aetcd.Client, request: Any, revision: int) -> Any:
    try:
        await client.connect()
        return await client.kvstub.Range(request, timeout=client._timeout, metadata=client.metadata)
    except grpc.aio.AioRpcError as problem:
        if problem.code() is grpc.StatusCode.OUT_OF_RANGE and "compacted" in str(problem.details()):
            raise aetcd.exceptions.RevisionCompactedError(revision) from problem
        raise EtcdUnavailable(reason(problem)) from problem
    except aetcd.exceptions.ClientError as problem:
        raise EtcdUnavailable(reason(problem)) from problem


async def list_prefix(client: aetcd.Client, prefix: bytes, *, page: int = PAGE) -> Listing:
    """Every key under ``prefix``, in key order, as of one revision."""
    end = aetcd.utils.prefix_range_end(prefix)
    start = prefix
    revision = 0
    kvs: list[Any] = []
    try:
        await client.connect()
        while True:
            request = aetcd.rpc.RangeRequest(
                key=start, range_end=end, limit=page, revision=revision
            )
            response = await client.kvstub.Range(
                request, timeout=client._timeout, metadata=client.metadata
            )
            if revision == 0:
                revision = response.header.revision
            kvs.extend(response.kvs)
            if not response.more or not response.kvs:
                return Listing(revision, kvs)
            start = response.kvs[-1].key + b"\x00"
    except grpc.aio.AioRpcError as problem:
        if problem.code() is grpc.StatusCode.OUT_OF_RANGE and "compacted" in str(problem.details()):
            raise aetcd.exceptions.RevisionCompactedError(revision) from problem
        raise EtcdUnavailable(reason(problem)) from problem
    except aetcd.exceptions.ClientError as problem:
        raise EtcdUnavailable(reason(problem)) from problem
