"""External signers: a key the CA never holds, reached only through ``sign(bytes)``."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from pilothouse.security.ca import CertificateAuthority
from pilothouse.security.certificate_signing import SignerFailed
from pilothouse.security.identity import SpiffeId
from pilothouse.security.root import SigningMaterial, new_root
from pilothouse.security.signer import CaPublicKey, FileSigner
from pilothouse.settings import CaSettings
from tests.unit.security.certs import csr_pem, ec_key, uris

NOW = datetime.datetime.now(datetime.UTC)


class RemoteSigner:
    """Stands in for a KMS: only the public key and sign(bytes) are reachable."""

    def __init__(self, key: ec.EllipticCurvePrivateKey) -> None:
        self._inside = FileSigner(key)
        self.calls = 0

    def public_key(self) -> CaPublicKey:
        return self._inside.public_key()

    def sign(self, data: bytes) -> bytes:
        self.calls += 1
        return self._inside.sign(data)


class WrongSigner(RemoteSigner):
    def __init__(self, key: ec.EllipticCurvePrivateKey) -> None:
        super().__init__(key)
        self._other = FileSigner(ec_key())

    def sign(self, data: bytes) -> bytes:
        return self._other.sign(data)


def test_a_ca_whose_key_is_elsewhere_signs_workloads() -> None:
    signer = RemoteSigner(ec_key())
    root = new_root(signer, "example.org", datetime.timedelta(days=365), NOW)
    root.verify_directly_issued_by(root)
    ca = CertificateAuthority(CaSettings(), SigningMaterial(root, signer, ()))
    identity = SpiffeId("example.org", "ns", "sa")
    issued = ca.sign(csr_pem(ec_key()), identity, 0)
    leaf = x509.load_pem_x509_certificate(issued.chain[0].encode())
    leaf.verify_directly_issued_by(root)
    assert uris(leaf) == [identity.uri]
    assert signer.calls == 2  # the root, then the workload


def test_a_signer_that_signs_with_another_key_is_caught() -> None:
    with pytest.raises(SignerFailed):
        new_root(WrongSigner(ec_key()), "example.org", datetime.timedelta(days=1), NOW)
