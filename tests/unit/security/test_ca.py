"""The self-signed CA: its root on disk, the workload certificates it signs."""

from __future__ import annotations

import datetime
import logging
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa

from pilothouse.security import ca_dir
from pilothouse.security.authority import SigningRefused
from pilothouse.security.ca import CertificateAuthority
from pilothouse.security.identity import SpiffeId
from pilothouse.settings import CaSettings
from tests.unit.security.certs import csr_pem, ec_key, uris

ALICE = SpiffeId("cluster.local", "shop", "alice")


@pytest.fixture(scope="module")
def ca_directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One RSA root for the module: generating it is the slow part.
    return tmp_path_factory.mktemp("ca") / "ca"


@pytest.fixture(scope="module")
def ca(ca_directory: Path) -> CertificateAuthority:
    return CertificateAuthority.open(CaSettings(dir=str(ca_directory)), "cluster.local")


def test_the_root_is_created_once_and_reused(
    ca: CertificateAuthority, ca_directory: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pilothouse.ca")
    again = CertificateAuthority.open(CaSettings(dir=str(ca_directory)), "cluster.local")
    assert [r.getMessage() for r in caplog.records] == ["CA: self-signed root loaded"]
    assert again.signing_root == ca.signing_root
    assert again.trust_bundle() == ca.trust_bundle()
    assert (ca_directory / ca_dir.ROOT_CERT).read_text() == ca.trust_bundle()[0]


def test_the_key_file_is_private_and_certificates_public(
    ca: CertificateAuthority, ca_directory: Path
) -> None:
    assert stat.S_IMODE((ca_directory / ca_dir.CA_KEY).stat().st_mode) == 0o600
    assert stat.S_IMODE((ca_directory / ca_dir.CA_CERT).stat().st_mode) == 0o644
    assert not list(ca_directory.glob(".*tmp"))


def test_the_root_is_a_ten_year_rsa_2048_ca(ca: CertificateAuthority) -> None:
    root = ca.signing_root
    key = root.public_key()
    assert isinstance(key, rsa.RSAPublicKey) and key.key_size == 2048
    life = root.not_valid_after_utc - root.not_valid_before_utc
    assert abs(life - datetime.timedelta(days=3650)) < datetime.timedelta(minutes=5)
    assert root.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    usage = root.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.key_cert_sign and usage.crl_sign
    root.verify_directly_issued_by(root)


def test_a_workload_gets_the_given_identity_whatever_its_csr_asks(
    ca: CertificateAuthority,
) -> None:
    csr = csr_pem(ec_key(), uri="spiffe://cluster.local/ns/istio-system/sa/istiod", common_name="x")
    issued = ca.sign(csr, ALICE, 0)
    assert len(issued.chain) == 2
    leaf, root = (x509.load_pem_x509_certificate(p.encode()) for p in issued.chain)
    assert uris(leaf) == [ALICE.uri]
    assert leaf.subject == x509.Name([])
    assert root == ca.signing_root
    leaf.verify_directly_issued_by(root)
    assert not leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_the_default_lifetime_is_a_day_and_a_given_one_is_kept(ca: CertificateAuthority) -> None:
    key = ec_key()
    default = ca.sign(csr_pem(key), ALICE, 0)
    assert default.not_after - default.not_before == datetime.timedelta(hours=24, minutes=2)
    negative = ca.sign(csr_pem(key), ALICE, -5)
    assert negative.not_after - negative.not_before == datetime.timedelta(hours=24, minutes=2)
    hour = ca.sign(csr_pem(key), ALICE, 3600)
    assert hour.not_after - hour.not_before == datetime.timedelta(hours=1, minutes=2)
    ninety = ca.sign(csr_pem(key), ALICE, 90 * 86400)
    assert ninety.not_after - ninety.not_before == datetime.timedelta(days=90, minutes=2)


def test_more_than_ninety_days_is_refused(ca: CertificateAuthority) -> None:
    with pytest.raises(SigningRefused, match="above the maximum"):
        ca.sign(csr_pem(ec_key()), ALICE, 90 * 86400 + 1)


@pytest.mark.parametrize(
    "csr",
    [
        "",
        "not a csr",
        "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n",
        "x" * 100_000,
    ],
)
def test_malformed_csrs_are_refused(ca: CertificateAuthority, csr: str) -> None:
    with pytest.raises(SigningRefused):
        ca.sign(csr, ALICE, 0)


def test_a_csr_whose_signature_does_not_verify_is_refused(ca: CertificateAuthority) -> None:
    good = csr_pem(ec_key())
    body = "".join(good.splitlines()[1:-1])
    import base64

    der = bytearray(base64.b64decode(body))
    der[-3] ^= 0xFF  # inside the signature
    tampered = (
        "-----BEGIN CERTIFICATE REQUEST-----\n"
        + base64.encodebytes(bytes(der)).decode()
        + "-----END CERTIFICATE REQUEST-----\n"
    )
    with pytest.raises(SigningRefused, match=r"signature|parsed"):
        ca.sign(tampered, ALICE, 0)


def test_two_csrs_in_one_request_are_refused(ca: CertificateAuthority) -> None:
    with pytest.raises(SigningRefused, match="exactly one"):
        ca.sign(csr_pem(ec_key()) + csr_pem(ec_key()), ALICE, 0)
