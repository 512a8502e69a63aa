"""One self-signed root for every replica, kept in the shared config store.

With an ``etcd://`` or ``k8s://`` config source, the CA's self-signed root (certificate
and key) lives in that store (:mod:`pilothouse.security.ca_store_etcd`,
:mod:`pilothouse.security.ca_store_kube`) and every replica signs with it. The first
``etcd://`` or ``k8s://`` address among ``--config-source``, then the mesh config's
``configSources``, names the store.

Precedence, decided once at start by :func:`open_shared_root`:

- a plugged-in CA directory (``cert-chain.pem`` there) is used as given and the store is
  not consulted: whoever plugs it in gives every replica the same files;
- a root in the store is the root; the CA directory then only receives ``root-cert.pem``
  (what clients of the TLS port trust);
- an empty store gets the directory's self-signed root when there is one (imported), or
  a new one; either is written with create-if-absent, and what the store holds
  afterwards wins, so replicas starting together agree;
- a directory whose own root differs from the store's is an error naming both: a
  replica signing with another root would break mutual TLS across replicas.

A root from the store is not rotated by pilothouse (its lifetime is
``root_cert_ttl``, ten years by default); replace it in the store and restart the
replicas.
"""

from __future__ import annotations

import asyncio
import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes

from pilothouse.security import ca_dir
from pilothouse.security.root import SigningMaterial, new_root, pem
from pilothouse.security.signer import FileSigner


class CaStoreError(Exception):
    """The shared root cannot be read, created or trusted; the message says where and why."""


class CaStoreUnavailable(CaStoreError):
    """The store cannot be reached or refused the call now (connection refused, a time
    out, an API server's error answer): worth asking again, unlike a stored root that is
    malformed or disagrees with the CA directory."""


@dataclass(frozen=True, slots=True)
class StoredRoot:
    """A root as the store keeps it: certificate and private key, PEM."""

    cert_pem: bytes
    key_pem: bytes

    def material(self, where: str) -> SigningMaterial:
        """The signing material, checked: one self-signed CA certificate and its key."""
        try:
            certs = x509.load_pem_x509_certificates(self.cert_pem)
        except ValueError:
            raise CaStoreError(f"{where}: the certificate is not PEM") from None
        if len(certs) != 1:
            raise CaStoreError(f"{where}: expected one certificate, found {len(certs)}")
        (cert,) = certs
        try:
            cert.verify_directly_issued_by(cert)
        except (InvalidSignature, ValueError, TypeError):
            raise CaStoreError(f"{where}: the certificate is not a self-signed root") from None
        try:
            signer = FileSigner.from_pem(self.key_pem)
        except (ValueError, TypeError):
            raise CaStoreError(
                f"{where}: the key is not an unencrypted RSA or EC private key (PEM)"
            ) from None
        if signer.public_key() != cert.public_key():
            raise CaStoreError(f"{where}: the key does not belong to the certificate")
        return SigningMaterial(cert, signer, ())


class RootStore(Protocol):
    """Where the shared root lives."""

    @property
    def where(self) -> str:
        """The store and key, for messages (``etcd key /mesh/pilothouse/ca/root``)."""
        ...

    async def read(self) -> StoredRoot | None:
        """The stored root, or None when there is none yet; CaStoreError otherwise."""
        ...

    async def create(self, root: StoredRoot) -> StoredRoot:
        """Store ``root`` unless a root is there already (one atomic create-if-absent);
        what the store holds afterwards."""
        ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class SharedRoot:
    material: SigningMaterial
    outcome: str
    """``created`` (here), ``imported`` (from the CA directory) or ``loaded``."""


async def open_shared_root(
    store: RootStore,
    directory: Path,
    organisation: str,
    ttl: datetime.timedelta,
    now: datetime.datetime,
) -> SharedRoot:
    """The root every replica signs with, from ``store`` (see the module's precedence);
    ``root-cert.pem`` in ``directory`` is made to hold it. Raises CaStoreError, or
    :class:`~pilothouse.security.ca_dir.CaDirError` for a bad directory."""
    local = await asyncio.to_thread(ca_dir.load_existing, directory, organisation, ttl, now)
    stored = await store.read()
    outcome = "loaded"
    if stored is None:
        if local is not None:
            candidate = await asyncio.to_thread(_directory_root, directory)
            outcome = "imported"
        else:
            candidate = await asyncio.to_thread(_new_root, organisation, ttl, now)
            outcome = "created"
        stored = await store.create(candidate)
        if stored != candidate:
            outcome = "loaded"  # another replica was first
    material = await asyncio.to_thread(stored.material, store.where)
    if local is not None and local.current.root != material.root:
        raise CaStoreError(
            f"the CA directory {directory} holds a root ({fingerprint(local.current.root)}) "
            f"other than the one in {store.where} ({fingerprint(material.root)}); every "
            f"replica must sign with one root: remove {ca_dir.CA_CERT} and {ca_dir.CA_KEY} "
            f"from {directory} to use the stored root, or delete the stored root to import "
            "this one"
        )
    await asyncio.to_thread(ca_dir.write_bundle, directory, (material.root,))
    return SharedRoot(material, outcome)


def fingerprint(cert: x509.Certificate) -> str:
    """``sha256:`` and the first 16 hex digits of the certificate's SHA-256."""
    return "sha256:" + cert.fingerprint(hashes.SHA256()).hex()[:16]


def _directory_root(directory: Path) -> StoredRoot:
    return StoredRoot(
        (directory / ca_dir.CA_CERT).read_bytes(), (directory / ca_dir.CA_KEY).read_bytes()
    )


def _new_root(organisation: str, ttl: datetime.timedelta, now: datetime.datetime) -> StoredRoot:
    signer = FileSigner.generate()
    root = new_root(signer, organisation, ttl, now)
    return StoredRoot(pem(root).encode(), signer.private_pem())
