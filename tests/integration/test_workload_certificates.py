"""Workload certificates from the real CA: issued off the loop, shared per identity,
rotated at about half their life, retried when the CA refuses."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from pilothouse.backoff import Backoff
from pilothouse.security.ca import CertificateAuthority
from pilothouse.security.identity import SpiffeId
from pilothouse.security.workload_certificates import WorkloadCertificate, WorkloadCertificates
from pilothouse.security.workload_keys import KeyAlgorithm
from pilothouse.settings import CaSettings
from tests.unit.security.certs import uris

ALICE = SpiffeId("cluster.local", "shop", "alice")
BOB = SpiffeId("cluster.local", "shop", "bob")


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> CertificateAuthority:
    directory = tmp_path_factory.mktemp("ca") / "ca"
    return CertificateAuthority.open(CaSettings(dir=str(directory)), "cluster.local")


@asynccontextmanager
async def running(certificates: WorkloadCertificates) -> AsyncIterator[None]:
    task = asyncio.create_task(certificates.run())
    try:
        yield
    finally:
        certificates.close()
        await asyncio.wait_for(task, 10)


async def issued(certificates: WorkloadCertificates, identity: SpiffeId) -> WorkloadCertificate:
    for _ in range(500):
        found = certificates.current(identity)
        if found is not None:
            return found
        await asyncio.sleep(0.01)
    raise AssertionError(f"no certificate for {identity}")


def leaf(certificate: WorkloadCertificate) -> x509.Certificate:
    return x509.load_pem_x509_certificate(certificate.chain[0].encode())


async def test_one_certificate_per_identity_for_that_identity(ca: CertificateAuthority) -> None:
    certificates = WorkloadCertificates(ca, ttl=3600)
    told: list[SpiffeId] = []
    certificates.on_issued(told.append)
    async with running(certificates):
        assert certificates.current(ALICE) is None  # starts issuing, does not wait
        assert certificates.current(ALICE) is None
        first = await issued(certificates, ALICE)
        assert await issued(certificates, ALICE) is first
    assert told == [ALICE] and certificates.issued_count == 1
    assert uris(leaf(first)) == [ALICE.uri]
    assert first.chain[-1] == ca.trust_bundle()[0]
    key = serialization.load_pem_private_key(first.private_key.encode(), None)
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size == 2048
    assert key.public_key().public_numbers() == leaf(first).public_key().public_numbers()
    lifetime = leaf(first).not_valid_after_utc - datetime.now(UTC)
    assert timedelta(minutes=55) < lifetime <= timedelta(hours=1)


async def test_ecdsa_keys_when_asked(ca: CertificateAuthority) -> None:
    certificates = WorkloadCertificates(ca, ttl=3600, algorithm=KeyAlgorithm.ECDSA)
    async with running(certificates):
        found = await issued(certificates, BOB)
    key = serialization.load_pem_private_key(found.private_key.encode(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"


def test_rotation_comes_at_half_the_lifetime_give_or_take_the_jitter(
    ca: CertificateAuthority,
) -> None:
    now = 1_000_000.0
    certificates = WorkloadCertificates(ca, rng=random.Random(7), clock=lambda: now)
    certificate = WorkloadCertificate(
        ALICE, (), "", datetime.fromtimestamp(now + 86400, UTC), 1, issued_at=now
    )
    delays = [certificates.rotation_delay(certificate) for _ in range(200)]
    assert all(0.49 * 86400 <= d <= 0.51 * 86400 for d in delays)
    assert max(delays) - min(delays) > 0.01 * 86400  # the jitter spreads them


async def test_a_short_lived_certificate_is_replaced_and_announced(
    ca: CertificateAuthority,
) -> None:
    certificates = WorkloadCertificates(ca, ttl=2)
    told: asyncio.Queue[SpiffeId] = asyncio.Queue()
    certificates.on_issued(told.put_nowait)
    async with running(certificates):
        certificates.current(ALICE)
        assert await asyncio.wait_for(told.get(), 10) == ALICE
        first = certificates.current(ALICE)
        assert first is not None
        assert await asyncio.wait_for(told.get(), 10) == ALICE
        second = certificates.current(ALICE)
        assert second is not None
    assert second.serial != first.serial and second.private_key != first.private_key
    # about half its life (from issue to not_after, which X.509 keeps in whole seconds),
    # plus the time a new key and signature took
    life = first.not_after.timestamp() - first.issued_at
    assert 0.49 * life - 0.05 < second.issued_at - first.issued_at < 0.51 * life + 1.0


async def test_an_identity_no_proxy_holds_is_forgotten_instead_of_renewed(
    ca: CertificateAuthority,
) -> None:
    held = {ALICE}
    certificates = WorkloadCertificates(ca, ttl=1, in_use=held.__contains__)
    async with running(certificates):
        await issued(certificates, ALICE)
        held.clear()
        await asyncio.sleep(1.0)
        assert certificates.issued_count == 1
        assert certificates.identities() == frozenset()


async def test_a_refused_request_is_counted_and_tried_again(tmp_path: Path) -> None:
    settings = CaSettings(dir=str(tmp_path / "ca"), workload_cert_ttl=60, max_workload_cert_ttl=120)
    strict = CertificateAuthority.open(settings, "cluster.local")
    errors: list[None] = []
    certificates = WorkloadCertificates(strict, ttl=3600, retry=Backoff(0.01, 0.05))
    certificates.on_error(lambda: errors.append(None))
    async with running(certificates):
        certificates.current(ALICE)
        await wait_for(lambda: len(errors) >= 3)
        assert certificates.current(ALICE) is None
    assert certificates.issued_count == 0


async def wait_for(condition: Callable[[], bool], timeout: float = 10) -> None:
    for _ in range(int(timeout / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not met")
