"""A CA directory left half-written (a crash between the key and its certificate) is
handled the same way every time: the key is kept and gets a certificate, or a
certificate without its key stops the CA with a message; never a silent new root."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from pilothouse.security import ca_dir
from pilothouse.security.root import SigningMaterial, new_root
from pilothouse.security.signer import FileSigner

NOW = datetime.datetime(2026, 11, 28, tzinfo=datetime.UTC)
TTL = datetime.timedelta(days=365)


def test_a_key_without_its_certificate_gets_a_certificate_for_that_key(tmp_path: Path) -> None:
    signer = FileSigner.generate()
    directory = tmp_path / "ca"
    directory.mkdir()
    (directory / ca_dir.CA_KEY).write_bytes(signer.private_pem())

    state = ca_dir.load_or_create(directory, "cluster.local", TTL, NOW)

    assert state.created
    assert state.current.root.public_key() == signer.public_key()
    again = ca_dir.load_or_create(directory, "cluster.local", TTL, NOW)
    assert not again.created
    assert again.current.root == state.current.root
    assert (directory / ca_dir.ROOT_CERT).read_bytes() == (directory / ca_dir.CA_CERT).read_bytes()


def test_a_certificate_without_its_key_is_an_error_naming_both(tmp_path: Path) -> None:
    source = tmp_path / "source"
    ca_dir.load_or_create(source, "cluster.local", TTL, NOW)
    directory = tmp_path / "ca"
    directory.mkdir()
    (directory / ca_dir.CA_CERT).write_bytes((source / ca_dir.CA_CERT).read_bytes())

    with pytest.raises(ca_dir.CaDirError, match=r"ca-cert\.pem: its key ca-key\.pem is missing"):
        ca_dir.load_or_create(directory, "cluster.local", TTL, NOW)
    assert not (directory / ca_dir.CA_KEY).exists()


def test_load_existing_creates_nothing_in_an_empty_directory(tmp_path: Path) -> None:
    assert ca_dir.load_existing(tmp_path / "ca", "cluster.local", TTL, NOW) is None
    assert not (tmp_path / "ca" / ca_dir.CA_CERT).exists()


def test_a_second_pending_root_keeps_the_first(tmp_path: Path) -> None:
    """Two processes sharing a directory both decide to rotate: one new root is kept."""
    directory = tmp_path / "ca"
    state = ca_dir.load_or_create(directory, "cluster.local", TTL, NOW)
    made = []
    for _ in range(2):
        signer = FileSigner.generate()

        made.append(SigningMaterial(new_root(signer, "cluster.local", TTL, NOW), signer, ()))
        kept = ca_dir.store_pending(directory, made[-1], signer)
        assert kept.ca_cert == made[0].ca_cert
    ca_dir.promote_pending(directory, (state.current.root,))
    ca_dir.promote_pending(directory, (state.current.root,))  # the other process: nothing left
    after = ca_dir.load_or_create(directory, "cluster.local", TTL, NOW)
    assert after.current.root == made[0].ca_cert
    assert after.previous == (state.current.root,)
