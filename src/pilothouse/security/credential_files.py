"""Reading one credential of a secrets directory: its PEM files, checked as a whole.

A credential ``<name>`` is ``<name>.crt`` (the certificate chain, leaf first) and
``<name>.key`` (the leaf's private key, unencrypted PEM), and optionally
``<name>-cacert.crt`` (the certificates a peer is checked against, for MUTUAL TLS and
for DestinationRule origination). A credential may be CA-only: ``<name>-cacert.crt``
alone.

The key pair and the CA certificates are two parts, read and judged apart
(:func:`read_key_pair`, :func:`read_ca_certificates`): a broken ``-cacert`` file says
nothing about the pair beside it, which must go on rotating. Each refuses anything
Envoy would refuse or serve wrongly, with an :class:`InvalidCredential` naming the file
and the problem: a file that is not PEM certificates (or not a private key), a key that
does not belong to the leaf, a ``.crt`` without its ``.key`` or the other way round. A
pair caught half-written (one file replaced, the other not yet) is refused the same
way; the caller keeps the last good version of that part until it is whole again. The
refusal carries a digest of the bytes it judged, so that the same bad files are
reported once, and new bad files again.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

CERT_SUFFIX: Final = ".crt"
KEY_SUFFIX: Final = ".key"
CA_SUFFIX: Final = "-cacert"
_SERVED_KEYS: Final = (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey, ed25519.Ed25519PrivateKey)
MAX_FILE_BYTES: Final = 1024 * 1024
"""A PEM file larger than this is refused (a chain is a few kilobytes)."""


class InvalidCredential(ValueError):
    """A credential's files cannot be served; ``file`` is the one at fault."""

    def __init__(self, file: Path, problem: str, content: str = "") -> None:
        super().__init__(f"{file}: {problem}")
        self.file = file
        self.problem = problem
        self.content = content
        """A digest of the bytes judged (empty when unknown): the same digest and
        problem is the same refusal."""

    def of_content(self, *texts: str | None) -> InvalidCredential:
        """This refusal, with the digest of ``texts`` (the part's files, None if missing)."""
        digest = hashlib.sha256()
        for text in texts:
            digest.update(b"\x00" if text is None else b"\x01" + text.encode() + b"\x00")
        return InvalidCredential(self.file, self.problem, digest.hexdigest())


@dataclass(frozen=True, slots=True)
class KeyPair:
    """A certificate chain (PEM, leaf first) and its private key (PEM)."""

    chain: tuple[str, ...]
    private_key: str
    not_after: datetime

    def __repr__(self) -> str:  # never print a private key
        return f"KeyPair({len(self.chain)} certificate(s), not after {self.not_after})"


def credential_files(name: str, directory: Path) -> tuple[Path, Path, Path]:
    """The certificate, key and CA files of credential ``name``."""
    return (
        directory / f"{name}{CERT_SUFFIX}",
        directory / f"{name}{KEY_SUFFIX}",
        directory / f"{name}{CA_SUFFIX}{CERT_SUFFIX}",
    )


def credential_names(files: list[str]) -> set[str]:
    """The credential names a directory listing holds (hidden files skipped)."""
    names: set[str] = set()
    for file in files:
        if file.startswith("."):
            continue
        stem, suffix = os.path.splitext(file)
        if suffix == KEY_SUFFIX:
            names.add(stem)
        elif suffix == CERT_SUFFIX:
            names.add(stem.removesuffix(CA_SUFFIX) if stem.endswith(CA_SUFFIX) else stem)
    names.discard("")
    return names


def read_key_pair(name: str, directory: Path) -> KeyPair | None:
    """The key pair of ``name`` (``.crt`` + ``.key``); None when neither file exists.
    Raises :class:`InvalidCredential`."""
    cert_file, key_file, _ = credential_files(name, directory)
    cert_pem: str | None = None
    key_pem: str | None = None
    try:
        cert_pem = _read(cert_file)
        key_pem = _read(key_file)
        if cert_pem is None and key_pem is None:
            return None
        if key_pem is None:
            raise InvalidCredential(key_file, f"missing: {cert_file.name} has no private key")
        if cert_pem is None:
            raise InvalidCredential(cert_file, f"missing: {key_file.name} has no certificate")
        return _key_pair(cert_file, cert_pem, key_file, key_pem)
    except InvalidCredential as invalid:
        raise (invalid if invalid.content else invalid.of_content(cert_pem, key_pem)) from None


def read_ca_certificates(name: str, directory: Path) -> tuple[str, ...] | None:
    """The CA certificates of ``name`` (``-cacert.crt``, PEM blocks); None when the file
    does not exist. Raises :class:`InvalidCredential`."""
    ca_file = credential_files(name, directory)[2]
    ca_pem: str | None = None
    try:
        ca_pem = _read(ca_file)
        return None if ca_pem is None else tuple(_certificates(ca_file, ca_pem)[1])
    except InvalidCredential as invalid:
        raise (invalid if invalid.content else invalid.of_content(ca_pem)) from None


def _read(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as problem:
        raise InvalidCredential(path, f"cannot be read ({problem.strerror})") from None
    digest = hashlib.sha256(data).hexdigest()
    if len(data) > MAX_FILE_BYTES:
        raise InvalidCredential(path, f"larger than {MAX_FILE_BYTES} bytes", digest)
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        raise InvalidCredential(path, "is not PEM (not ASCII text)", digest) from None


def _certificates(path: Path, pem: str) -> tuple[list[x509.Certificate], list[str]]:
    """The certificates of a PEM file, parsed and as PEM blocks."""
    try:
        parsed = x509.load_pem_x509_certificates(pem.encode())
    except ValueError as problem:
        raise InvalidCredential(path, f"is not PEM certificates ({problem})") from None
    blocks = [c.public_bytes(serialization.Encoding.PEM).decode() for c in parsed]
    return parsed, blocks


def _key_pair(cert_file: Path, cert_pem: str, key_file: Path, key_pem: str) -> KeyPair:
    certificates, blocks = _certificates(cert_file, cert_pem)
    try:
        key = serialization.load_pem_private_key(key_pem.encode(), password=None)
    except (ValueError, TypeError) as problem:
        raise InvalidCredential(
            key_file, f"is not an unencrypted PEM private key ({problem})"
        ) from None
    if not isinstance(key, _SERVED_KEYS):
        raise InvalidCredential(key_file, f"{type(key).__name__} keys are not served")
    leaf = certificates[0]
    raw = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(*raw) != leaf.public_key().public_bytes(*raw):
        raise InvalidCredential(
            key_file, f"does not belong to the first certificate of {cert_file.name}"
        )
    return KeyPair(tuple(blocks), key_pem, leaf.not_valid_after_utc)
