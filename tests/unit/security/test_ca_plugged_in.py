"""A plugged-in CA (istiod's cacerts): the chain built from the four files."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from cryptography import x509

from pilothouse.security import ca_dir
from pilothouse.security.ca import CertificateAuthority
from pilothouse.security.ca_dir import CaDirError
from pilothouse.security.identity import SpiffeId
from pilothouse.settings import CaSettings
from tests.unit.security.certs import ca_cert, csr_pem, ec_key, key_pem, pem, uris


def plug_in(directory: Path, *, chain_starts_with_ca_cert: bool) -> tuple[x509.Certificate, ...]:
    root_key, middle_key, ca_key = ec_key(), ec_key(), ec_key()
    root = ca_cert(root_key, "root")
    middle = ca_cert(middle_key, "middle", root_key, root)
    signing = ca_cert(ca_key, "signing", middle_key, middle)
    directory.mkdir()
    (directory / ca_dir.CA_CERT).write_bytes(pem(signing))
    (directory / ca_dir.CA_KEY).write_bytes(key_pem(ca_key))
    chain = [middle, root]
    if chain_starts_with_ca_cert:
        chain.insert(0, signing)
    (directory / ca_dir.CERT_CHAIN).write_bytes(b"".join(pem(c) for c in chain))
    (directory / ca_dir.ROOT_CERT).write_bytes(pem(root))
    return signing, middle, root


@pytest.mark.parametrize("chain_starts_with_ca_cert", [False, True])
def test_workload_chain_is_leaf_signing_intermediate_root(
    tmp_path: Path, chain_starts_with_ca_cert: bool
) -> None:
    directory = tmp_path / "cacerts"
    signing, middle, root = plug_in(directory, chain_starts_with_ca_cert=chain_starts_with_ca_cert)
    ca = CertificateAuthority.open(CaSettings(dir=str(directory)), "cluster.local")
    identity = SpiffeId("cluster.local", "ns", "sa")
    issued = ca.sign(csr_pem(ec_key()), identity, 0)
    certs = [x509.load_pem_x509_certificate(p.encode()) for p in issued.chain]
    assert certs[1:] == [signing, middle, root]
    for lower, upper in itertools.pairwise(certs):
        lower.verify_directly_issued_by(upper)
    assert uris(certs[0]) == [identity.uri]
    assert ca.trust_bundle() == (pem(root).decode(),)
    # A plugged-in CA is never rewritten: the operator's files are left as they were.
    assert (directory / ca_dir.ROOT_CERT).read_bytes() == pem(root)
    assert not (directory / ca_dir.NEXT_CA_CERT).exists()


def test_a_chain_that_does_not_reach_the_root_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "cacerts"
    plug_in(directory, chain_starts_with_ca_cert=False)
    other_root = ca_cert(ec_key(), "other root")
    (directory / ca_dir.ROOT_CERT).write_bytes(pem(other_root))
    with pytest.raises(CaDirError, match="does not reach a root"):
        CertificateAuthority.open(CaSettings(dir=str(directory)), "cluster.local")


def test_a_key_that_is_not_the_certificates_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "cacerts"
    plug_in(directory, chain_starts_with_ca_cert=False)
    (directory / ca_dir.CA_KEY).write_bytes(key_pem(ec_key()))
    with pytest.raises(CaDirError, match="does not belong"):
        CertificateAuthority.open(CaSettings(dir=str(directory)), "cluster.local")


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    directory = tmp_path / "cacerts"
    plug_in(directory, chain_starts_with_ca_cert=False)
    (directory / ca_dir.CA_KEY).unlink()
    with pytest.raises(CaDirError, match=r"ca-key\.pem"):
        CertificateAuthority.open(CaSettings(dir=str(directory)), "cluster.local")
