"""The CA directory: a plugged-in CA read from files, or a self-signed root kept there.

Plugged-in (istiod's ``cacerts`` secret, all four files present):

- ``ca-cert.pem``: the certificate that signs workloads (an intermediate, or the root);
- ``ca-key.pem``: its private key;
- ``cert-chain.pem``: the chain above ``ca-cert.pem`` (it may start with ``ca-cert.pem``
  itself, as Istio's sample certificates do);
- ``root-cert.pem``: the root(s) workloads trust.

The chain is built by following issuers and checking every signature, up to a root in
``root-cert.pem``; a set of files that does not link up is refused with a message.

Self-signed (no ``cert-chain.pem``): ``ca-key.pem`` (mode 0600) and ``ca-cert.pem``
hold the signing root, ``root-cert.pem`` the trust bundle (every root workloads must
trust, the signing one first). During a root rotation ``next-ca-cert.pem`` and
``next-ca-key.pem`` hold the new root until it starts signing; afterwards the old root
stays trusted from ``previous-root-cert.pem`` until it expires.

Several processes may share one directory (replicas started together from one folder,
``--workers``): whatever creates or changes the root holds an exclusive ``flock`` on
``.lock`` there, and looks again at what is on disk once it holds it, so the first one
creates the root and the others read that one. The key is written before the
certificate; a directory left with ``ca-key.pem`` but no ``ca-cert.pem`` (a crash in
between) gets a certificate for that key, and ``ca-cert.pem`` without its key is an
error, never a silent new root.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.exceptions import InvalidSignature

from pilothouse.security.pem_files import write_private, write_public
from pilothouse.security.root import SigningMaterial, new_root, pem
from pilothouse.security.signer import FileSigner

CA_CERT: Final = "ca-cert.pem"
CA_KEY: Final = "ca-key.pem"
CERT_CHAIN: Final = "cert-chain.pem"
ROOT_CERT: Final = "root-cert.pem"
NEXT_CA_CERT: Final = "next-ca-cert.pem"
NEXT_CA_KEY: Final = "next-ca-key.pem"
PREVIOUS_ROOT: Final = "previous-root-cert.pem"
PLUGGED_IN_FILES: Final = (CA_CERT, CA_KEY, CERT_CHAIN, ROOT_CERT)
LOCK: Final = ".lock"


class CaDirError(ValueError):
    """The CA directory cannot be used; the message names the file and the problem."""


@dataclass(frozen=True, slots=True)
class SelfSignedState:
    """What a self-signed CA directory holds."""

    current: SigningMaterial
    pending: SigningMaterial | None
    """A new root waiting out its distribution delay before it signs."""
    previous: tuple[x509.Certificate, ...]
    """Roots no longer signing but still trusted."""
    created: bool = False
    """The root was made just now (the directory had none)."""


def is_plugged_in(directory: Path) -> bool:
    return (directory / CERT_CHAIN).exists()


def load_plugged_in(directory: Path) -> tuple[SigningMaterial, tuple[x509.Certificate, ...]]:
    """The signing material and the trust bundle (the chain's root first)."""
    missing = [name for name in PLUGGED_IN_FILES if not (directory / name).is_file()]
    if missing:
        raise CaDirError(f"{directory}: plugged-in CA lacks {', '.join(missing)}")
    ca_cert = _one_cert(directory / CA_CERT)
    signer = _signer(directory / CA_KEY, ca_cert)
    intermediates = _certs(directory / CERT_CHAIN, allow_empty=True)
    roots = _certs(directory / ROOT_CERT)
    above = build_chain(ca_cert, intermediates, roots, where=str(directory))
    top = above[-1] if above else ca_cert
    bundle = (top, *(root for root in roots if root != top))
    return SigningMaterial(ca_cert, signer, above), bundle


def build_chain(
    cert: x509.Certificate,
    intermediates: Sequence[x509.Certificate],
    roots: Sequence[x509.Certificate],
    *,
    where: str,
) -> tuple[x509.Certificate, ...]:
    """The certificates above ``cert`` up to one of ``roots``, each checked to have
    signed the one below; CaDirError when they do not link up."""
    chain: list[x509.Certificate] = []
    current = cert
    candidates = [c for c in (*intermediates, *roots) if c != cert]
    while True:
        if current in roots:
            return tuple(chain)
        issuer = next((c for c in candidates if _issued(current, c)), None)
        if issuer is None:
            raise CaDirError(
                f"{where}: no certificate in {CERT_CHAIN} or {ROOT_CERT} issued "
                f"{current.subject.rfc4514_string()!r}; the chain does not reach a root"
            )
        if len(chain) > len(candidates):
            raise CaDirError(f"{where}: the certificate chain loops")
        chain.append(issuer)
        candidates.remove(issuer)
        current = issuer


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Hold the directory's exclusive lock (other processes creating or rotating the root
    in it wait); the directory is made (0700) if need be."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(directory / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing the descriptor releases the lock


def load_or_create(
    directory: Path, organisation: str, ttl: datetime.timedelta, now: datetime.datetime
) -> SelfSignedState:
    """The self-signed CA kept in ``directory``, creating its root on first use (slow:
    RSA key generation; call it from a thread). Processes racing on one directory all
    get the root the first of them created."""
    with locked(directory):
        state = _load(directory, organisation, ttl, now)
        if state is not None:
            return state
        signer = FileSigner.generate()
        root = new_root(signer, organisation, ttl, now)
        write_private(directory / CA_KEY, signer.private_pem())
        write_public(directory / CA_CERT, pem(root).encode())
        write_public(directory / ROOT_CERT, pem(root).encode())
        return SelfSignedState(SigningMaterial(root, signer, ()), None, (), created=True)


def load_existing(
    directory: Path, organisation: str, ttl: datetime.timedelta, now: datetime.datetime
) -> SelfSignedState | None:
    """The self-signed CA kept in ``directory``, or None when it holds no root (nothing
    is created; a key left without its certificate still gets one)."""
    with locked(directory):
        return _load(directory, organisation, ttl, now)


def _load(
    directory: Path, organisation: str, ttl: datetime.timedelta, now: datetime.datetime
) -> SelfSignedState | None:
    """What the directory holds (the caller holds the lock)."""
    has_cert, has_key = (directory / CA_CERT).exists(), (directory / CA_KEY).exists()
    if not has_cert and not has_key:
        return None
    if has_cert and not has_key:
        raise CaDirError(
            f"{directory / CA_CERT}: its key {CA_KEY} is missing; restore the key, or remove "
            f"{CA_CERT} to create a new root (certificates signed by the old one then fail)"
        )
    created = False
    if not has_cert:  # a crash between writing the key and its certificate
        signer = _key_alone(directory / CA_KEY)
        root = new_root(signer, organisation, ttl, now)
        write_public(directory / CA_CERT, pem(root).encode())
        write_public(directory / ROOT_CERT, pem(root).encode())
        created = True
    current = _self_signed(directory / CA_CERT, directory / CA_KEY)
    pending = None
    if (directory / NEXT_CA_CERT).exists():
        pending = _self_signed(directory / NEXT_CA_CERT, directory / NEXT_CA_KEY)
    previous: tuple[x509.Certificate, ...] = ()
    if (directory / PREVIOUS_ROOT).exists():
        previous = tuple(
            cert for cert in _certs(directory / PREVIOUS_ROOT) if cert.not_valid_after_utc > now
        )
    return SelfSignedState(current, pending, previous, created=created)


def store_pending(
    directory: Path, material: SigningMaterial, signer: FileSigner
) -> SigningMaterial:
    """Keep a new root (not signing yet) beside the current one; when another process
    sharing the directory stored one first, that one is kept and returned."""
    with locked(directory):
        if (directory / NEXT_CA_CERT).exists():
            return _self_signed(directory / NEXT_CA_CERT, directory / NEXT_CA_KEY)
        write_private(directory / NEXT_CA_KEY, signer.private_pem())
        write_public(directory / NEXT_CA_CERT, pem(material.ca_cert).encode())
        return material


def promote_pending(directory: Path, previous: Sequence[x509.Certificate]) -> None:
    """Make the pending root the signing one; ``previous`` stay trusted. Done once when
    several processes share the directory."""
    with locked(directory):
        if not (directory / NEXT_CA_CERT).exists():
            return  # another process promoted it
        write_public(directory / PREVIOUS_ROOT, "".join(pem(c) for c in previous).encode())
        (directory / NEXT_CA_KEY).replace(directory / CA_KEY)
        (directory / NEXT_CA_CERT).replace(directory / CA_CERT)


def write_bundle(directory: Path, bundle: Sequence[x509.Certificate]) -> None:
    """``root-cert.pem``: what workloads and clients of the TLS port trust."""
    write_public(directory / ROOT_CERT, "".join(pem(c) for c in bundle).encode())


def _self_signed(cert_path: Path, key_path: Path) -> SigningMaterial:
    cert = _one_cert(cert_path)
    if not _issued(cert, cert):
        raise CaDirError(
            f"{cert_path}: not a self-signed root; a plugged-in CA needs all of "
            f"{', '.join(PLUGGED_IN_FILES)}"
        )
    return SigningMaterial(cert, _signer(key_path, cert), ())


def _issued(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    if cert.issuer != issuer.subject:
        return False
    try:
        cert.verify_directly_issued_by(issuer)
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


def _key_alone(path: Path) -> FileSigner:
    try:
        return FileSigner.from_pem(path.read_bytes())
    except OSError as problem:
        raise CaDirError(f"{path}: {problem.strerror}") from None
    except (ValueError, TypeError):
        raise CaDirError(f"{path}: not an unencrypted RSA or EC private key (PEM)") from None


def _signer(path: Path, cert: x509.Certificate) -> FileSigner:
    signer = _key_alone(path)
    if signer.public_key() != cert.public_key():
        raise CaDirError(f"{path}: the key does not belong to the CA certificate beside it")
    return signer


def _one_cert(path: Path) -> x509.Certificate:
    certs = _certs(path)
    if len(certs) != 1:
        raise CaDirError(f"{path}: expected one certificate, found {len(certs)}")
    return certs[0]


def _certs(path: Path, *, allow_empty: bool = False) -> list[x509.Certificate]:
    try:
        data = path.read_bytes()
    except OSError as problem:
        raise CaDirError(f"{path}: {problem.strerror}") from None
    if allow_empty and not data.strip():
        return []
    try:
        return x509.load_pem_x509_certificates(data)
    except ValueError:
        raise CaDirError(f"{path}: not PEM certificates") from None
