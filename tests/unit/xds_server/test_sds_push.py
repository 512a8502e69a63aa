"""SDS through a real discovery server, CA and secrets directory: who gets which secret,
and which connections a new certificate or a replaced credential is pushed to.

Connections are the server's own, without gRPC (their outbound queues are read);
the pipeline, debouncer and push workers run as in ``serve``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from envoy.extensions.transport_sockets.tls.v3 import secret_pb2  # type: ignore[import-untyped]
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.protocol.type_urls import SDS
from pilothouse.push.debounce import DebounceSettings
from pilothouse.push.proxy import parse_node
from pilothouse.security.ca import CertificateAuthority
from pilothouse.security.identity import Caller, ProvedBy, SpiffeId
from pilothouse.security.secrets_directory import SecretsDirectory
from pilothouse.settings import CaSettings, SdsSettings, XdsSettings
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.server.connection import Connection
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.secret_delivery import SecretDelivery
from tests.unit.security.certs import uris
from tests.unit.security.server_certs import server_pair, write_pair

ALICE = SpiffeId("cluster.local", "shop", "alice")
GATEWAY = SpiffeId("cluster.local", "edge", "ingress")


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> CertificateAuthority:
    directory = tmp_path_factory.mktemp("ca") / "ca"
    return CertificateAuthority.open(CaSettings(dir=str(directory)), "cluster.local")


@dataclasses.dataclass
class Mesh:
    discovery: DiscoveryServer
    delivery: SecretDelivery
    secrets: Path
    serial: int = 0

    def connect(self, name: str, identity: SpiffeId | None, *, delta: bool = False) -> Connection:
        self.serial += 1
        ns = identity.namespace if identity is not None else "shop"
        proxy = parse_node(f"sidecar~10.0.0.{self.serial}~{name}.{ns}~{ns}.svc.cluster.local")
        if identity is not None:
            proxy = dataclasses.replace(proxy, caller=Caller((identity,), ProvedBy.JWT))
        connection = Connection(f"{name}-{self.serial}", "peer", proxy, self.discovery, delta=delta)
        self.discovery.connect(connection)
        return connection


@asynccontextmanager
async def mesh(
    ca: CertificateAuthority, tmp_path: Path, settings: SdsSettings | None = None
) -> AsyncIterator[Mesh]:
    store = MemoryStore("test")
    store.mark_synced()
    fast = XdsSettings(debounce=DebounceSettings(debounce_after=0.01, debounce_max=0.1))
    discovery = DiscoveryServer(store, settings=fast)
    secrets = SecretsDirectory(tmp_path, debounce=0.05, poll=0.1, force_polling=True)
    delivery = SecretDelivery(
        discovery,
        settings if settings is not None else SdsSettings(workload_cert_ttl=3600, server_keys=True),
        authority=ca,
        credentials=secrets,
    )
    tasks = [asyncio.create_task(discovery.run()), asyncio.create_task(delivery.run())]
    await discovery.wait_ready()
    await asyncio.sleep(0.2)  # the secrets directory is loaded and watched
    try:
        yield Mesh(discovery, delivery, tmp_path)
    finally:
        delivery.close()
        discovery.close()
        await asyncio.wait_for(asyncio.gather(*tasks), 10)


def ask(connection: Connection, *names: str, nonce: str = "") -> None:
    if connection.delta:
        request: Any = discovery_pb2.DeltaDiscoveryRequest(
            type_url=SDS, resource_names_subscribe=list(names), response_nonce=nonce
        )
    else:
        request = discovery_pb2.DiscoveryRequest(
            type_url=SDS, resource_names=list(names), response_nonce=nonce
        )
    connection.on_request(request, 1.0)


def sent(connection: Connection) -> list[Any]:
    out = []
    while not connection.outbound.empty():
        queued = connection.outbound.get_nowait()
        assert queued is not None
        kind = (
            discovery_pb2.DeltaDiscoveryResponse
            if connection.delta
            else discovery_pb2.DiscoveryResponse
        )
        out.append(kind.FromString(queued.body))
    return out


def secrets_of(response: Any) -> dict[str, Any]:
    out = {}
    for item in response.resources:
        packed = item.resource if hasattr(item, "resource") else item
        secret = secret_pb2.Secret()
        assert packed.Unpack(secret)
        out[secret.name] = secret
    return out


async def received(connection: Connection, name: str, timeout: float = 10) -> Any:
    """The next secret ``name`` the connection is sent (other responses are skipped)."""
    for _ in range(int(timeout / 0.02)):
        for response in sent(connection):
            assert response.type_url == SDS
            found = secrets_of(response).get(name)
            if found is not None:
                return found
        await asyncio.sleep(0.02)
    raise AssertionError(f"{connection.id} was not sent {name}")


def leaf_of(secret: Any) -> x509.Certificate:
    chain = secret.tls_certificate.certificate_chain.inline_bytes
    return x509.load_pem_x509_certificates(chain)[0]


@pytest.mark.parametrize("delta", [False, True], ids=["sotw", "delta"])
async def test_an_authenticated_proxy_gets_its_certificate_and_the_roots(
    ca: CertificateAuthority, tmp_path: Path, delta: bool
) -> None:
    async with mesh(ca, tmp_path) as running:
        connection = running.connect("app", ALICE, delta=delta)
        ask(connection, "default", "ROOTCA")
        default = await received(connection, "default")
        assert uris(leaf_of(default)) == [ALICE.uri]
        assert default.tls_certificate.private_key.inline_bytes.startswith(b"-----BEGIN")
        bundle = "".join(ca.trust_bundle()).encode()
        connection2 = running.connect("app2", ALICE, delta=delta)
        ask(connection2, "ROOTCA", "default")
        (answer,) = sent(connection2)  # the certificate is shared: answered at once
        both = secrets_of(answer)
        assert both["ROOTCA"].validation_context.trusted_ca.inline_bytes == bundle
        assert both["default"] == default
    assert running.delivery.certificates is not None
    assert running.delivery.certificates.issued_count == 1


@pytest.mark.parametrize("delta", [False, True], ids=["sotw", "delta"])
async def test_an_unauthenticated_proxy_gets_nothing_and_is_counted_once(
    ca: CertificateAuthority, tmp_path: Path, delta: bool
) -> None:
    write_pair(tmp_path, "gw", "gw.example")
    async with mesh(ca, tmp_path) as running:
        anonymous = running.connect("anon", None, delta=delta)
        ask(anonymous, "default", "ROOTCA", "kubernetes://gw")
        known = running.connect("app", ALICE)
        ask(known, "default")
        await received(known, "default")
        ask(anonymous, "default", "ROOTCA", "kubernetes://gw")  # asking again
        await asyncio.sleep(0.2)
        assert sent(anonymous) == []
        assert anonymous.stats.responses == {}
        assert running.discovery.stats.sds_certificate_errors == 3


async def test_a_replaced_credential_is_pushed_to_the_gateways_holding_it_only(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    write_pair(tmp_path, "gw", "one.example")
    write_pair(tmp_path, "other", "other.example")
    async with mesh(ca, tmp_path) as running:
        gateway = running.connect("ingress", GATEWAY)
        ask(gateway, "kubernetes://gw")
        first = await received(gateway, "kubernetes://gw")
        bystander = running.connect("edge", GATEWAY)
        ask(bystander, "kubernetes://other")
        await received(bystander, "kubernetes://other")
        pushes = running.discovery.stats.full_pushes
        cert, key = server_pair("two.example")
        (tmp_path / "gw.crt").write_bytes(cert)
        (tmp_path / "gw.key").write_bytes(key)
        second = await received(gateway, "kubernetes://gw")
        assert leaf_of(second) != leaf_of(first)
        assert second.tls_certificate.certificate_chain.inline_bytes == cert
        await asyncio.sleep(0.2)
        assert sent(bystander) == []
        assert running.discovery.stats.full_pushes == pushes  # no PushContext was built
        assert running.discovery.stats.push_triggers.get("secret", 0) >= 1
        assert running.discovery.stats.secret_pushes >= 1


async def test_a_half_written_pair_is_not_pushed(ca: CertificateAuthority, tmp_path: Path) -> None:
    write_pair(tmp_path, "gw", "one.example")
    async with mesh(ca, tmp_path) as running:
        gateway = running.connect("ingress", GATEWAY)
        ask(gateway, "kubernetes://gw")
        await received(gateway, "kubernetes://gw")
        new_cert, _ = server_pair("two.example")
        (tmp_path / "gw.crt").write_bytes(new_cert)  # the key never follows
        await asyncio.sleep(0.5)
        assert sent(gateway) == []
        assert running.delivery.credentials is not None
        assert "gw" in running.delivery.credentials.problems()


async def test_credentials_can_be_kept_to_one_namespace(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    write_pair(tmp_path, "gw", "one.example")
    settings = SdsSettings(workload_cert_ttl=3600, credentials_namespace="edge", server_keys=True)
    async with mesh(ca, tmp_path, settings) as running:
        gateway = running.connect("ingress", GATEWAY)
        ask(gateway, "kubernetes://gw")
        await received(gateway, "kubernetes://gw")
        other = running.connect("app", ALICE)
        ask(other, "kubernetes://gw")
        await asyncio.sleep(0.2)
        assert sent(other) == []
        assert running.discovery.stats.sds_certificate_errors == 1


async def test_a_rotated_certificate_is_pushed_to_its_identity_only(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    async with mesh(ca, tmp_path, SdsSettings(workload_cert_ttl=2, server_keys=True)) as running:
        alice = running.connect("app", ALICE)
        ask(alice, "default")
        first = await received(alice, "default")
        gateway = running.connect("ingress", GATEWAY)
        ask(gateway, "default")
        await received(gateway, "default")
        second = await received(alice, "default", timeout=5)
        assert leaf_of(second).serial_number != leaf_of(first).serial_number
        assert uris(leaf_of(second)) == [ALICE.uri]
        assert set(alice.stats.responses) == {SDS}


async def test_a_new_trust_bundle_is_pushed_as_rootca(tmp_path: Path) -> None:
    now = [datetime.datetime.now(datetime.UTC)]
    rotating = CertificateAuthority.open(
        CaSettings(dir=str(tmp_path / "ca")), "cluster.local", clock=lambda: now[0]
    )
    (tmp_path / "secrets").mkdir()
    async with mesh(rotating, tmp_path / "secrets") as running:
        holder = running.connect("app", ALICE)
        ask(holder, "ROOTCA")
        before = await received(holder, "ROOTCA")
        bystander = running.connect("other", ALICE)
        ask(bystander, "default")
        await received(bystander, "default")
        # 80 % of the root's life gone: a new root is added to the bundle and announced
        now[0] = rotating.signing_root.not_valid_before_utc + datetime.timedelta(days=365 * 9)
        assert await rotating.check_rotation()
        after = await received(holder, "ROOTCA")
        await asyncio.sleep(0.2)
        assert sent(bystander) == []
    roots = x509.load_pem_x509_certificates(after.validation_context.trusted_ca.inline_bytes)
    assert len(roots) == 2
    assert before.validation_context.trusted_ca.inline_bytes in (
        after.validation_context.trusted_ca.inline_bytes
    )
