"""Root rotation: the new root is trusted (and announced) before it signs anything."""

from __future__ import annotations

import datetime
from pathlib import Path

from cryptography import x509

from pilothouse.security import ca_dir
from pilothouse.security.ca import CertificateAuthority
from pilothouse.security.identity import SpiffeId
from pilothouse.settings import CaSettings
from tests.unit.security.certs import csr_pem, ec_key

ID = SpiffeId("cluster.local", "ns", "sa")


class Clock:
    def __init__(self) -> None:
        self.now = datetime.datetime.now(datetime.UTC)

    def __call__(self) -> datetime.datetime:
        return self.now


def issuer_of(ca: CertificateAuthority) -> x509.Certificate:
    chain = ca.sign(csr_pem(ec_key()), ID, 0).chain
    return x509.load_pem_x509_certificate(chain[-1].encode())


async def test_rotation_trusts_the_new_root_before_it_signs(tmp_path: Path) -> None:
    clock = Clock()
    settings = CaSettings(dir=str(tmp_path / "ca"), root_distribution_delay=3600.0)
    ca = CertificateAuthority.open(settings, "cluster.local", clock=clock)
    old = ca.signing_root
    seen: list[tuple[tuple[str, ...], x509.Certificate]] = []
    ca.on_bundle_change(lambda: seen.append((ca.trust_bundle(), issuer_of(ca))))

    clock.now = old.not_valid_before_utc + datetime.timedelta(days=365 * 7)  # 30 % left
    assert not await ca.check_rotation()
    assert seen == []

    clock.now = old.not_valid_before_utc + datetime.timedelta(days=365 * 8, hours=1)  # < 20 %
    assert await ca.check_rotation()
    assert len(seen) == 1
    bundle, signer_then = seen[0]
    assert len(bundle) == 2  # the new root is trusted...
    assert signer_then == old  # ...while the old one still signs
    assert issuer_of(ca) == old
    new = x509.load_pem_x509_certificate(bundle[1].encode())
    assert (tmp_path / "ca" / ca_dir.ROOT_CERT).read_text() == "".join(bundle)

    clock.now += datetime.timedelta(minutes=30)  # the delay has not passed
    assert not await ca.check_rotation()
    assert issuer_of(ca) == old

    clock.now = new.not_valid_before_utc + datetime.timedelta(hours=1, minutes=3)
    assert await ca.check_rotation()
    assert issuer_of(ca) == new
    assert len(seen) == 2
    assert seen[1][1] == new
    assert [x509.load_pem_x509_certificate(p.encode()) for p in ca.trust_bundle()] == [new, old]

    # A restart finds the new root signing and the old one still trusted.
    again = CertificateAuthority.open(settings, "cluster.local", clock=clock)
    assert again.signing_root == new
    assert again.trust_bundle() == ca.trust_bundle()


async def test_a_restart_during_the_delay_keeps_the_pending_root(tmp_path: Path) -> None:
    clock = Clock()
    settings = CaSettings(dir=str(tmp_path / "ca"))
    ca = CertificateAuthority.open(settings, "cluster.local", clock=clock)
    clock.now = ca.signing_root.not_valid_after_utc - datetime.timedelta(days=30)
    assert await ca.check_rotation()
    again = CertificateAuthority.open(settings, "cluster.local", clock=clock)
    assert again.trust_bundle() == ca.trust_bundle()
    assert again.signing_root == ca.signing_root
