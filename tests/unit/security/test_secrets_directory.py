"""The secrets directory: whole pairs served, invalid ones refused with the last good
kept, changes followed and reported."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from pilothouse.security.secrets_directory import SecretsDirectory
from tests.unit.security.server_certs import server_pair, write_ca, write_pair


def leaf_host(directory: SecretsDirectory, name: str) -> str:
    pair = directory.key_pair(name)
    assert pair is not None
    cert = x509.load_pem_x509_certificate(pair.chain[0].encode())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    (host,) = names.get_values_for_type(x509.DNSName)
    return str(host)


def test_pairs_and_ca_certificates_are_served(tmp_path: Path) -> None:
    cert, key = write_pair(tmp_path, "gw", "one.example")
    ca = write_ca(tmp_path, "gw")
    write_ca(tmp_path, "upstream")  # CA-only: a DestinationRule's SIMPLE origination
    (tmp_path / ".hidden.crt").write_text("not read")
    secrets = SecretsDirectory(tmp_path)
    assert secrets.load() == {"gw", "gw-cacert", "upstream-cacert"}
    pair = secrets.key_pair("gw")
    assert pair is not None and pair.private_key == key.decode()
    assert pair.chain == (cert.decode(),)
    assert secrets.ca_certificates("gw") == (ca.decode(),)
    assert secrets.key_pair("upstream") is None
    assert secrets.ca_certificates("upstream") is not None
    assert secrets.names() == {"gw", "upstream"}
    assert secrets.has_synced() and not secrets.problems()


def test_a_key_that_is_not_the_certificates_is_refused_and_the_last_good_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_pair(tmp_path, "gw", "one.example")
    secrets = SecretsDirectory(tmp_path)
    secrets.load()
    told: list[frozenset[str]] = []
    secrets.on_change(told.append)
    # half-written: the new certificate is in place, its key not yet
    new_cert, new_key = server_pair("two.example")
    (tmp_path / "gw.crt").write_bytes(new_cert)
    with caplog.at_level(logging.ERROR, "pilothouse.security.secrets"):
        assert secrets.load() == frozenset()
    assert leaf_host(secrets, "gw") == "one.example"
    (record,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "gw.key" in record.getMessage()
    assert "does not belong" in record.getMessage()
    assert "keeping the last good one" in record.getMessage()
    assert "gw" in secrets.problems()
    assert not told
    (tmp_path / "gw.key").write_bytes(new_key)
    assert secrets.load() == {"gw"}
    assert told == [frozenset({"gw"})]
    assert leaf_host(secrets, "gw") == "two.example"
    assert not secrets.problems()


@pytest.mark.parametrize(
    ("file", "content", "problem"),
    [
        ("gw.crt", b"-----BEGIN CERTIFICATE-----\nnot base64\n", "not PEM certificates"),
        ("gw.key", b"garbage", "not an unencrypted PEM private key"),
        ("gw.crt", b"", "not PEM certificates"),
    ],
)
def test_unreadable_files_are_refused_naming_the_file(
    tmp_path: Path, file: str, content: bytes, problem: str
) -> None:
    write_pair(tmp_path, "gw", "one.example")
    secrets = SecretsDirectory(tmp_path)
    secrets.load()
    (tmp_path / file).write_bytes(content)
    secrets.load()
    assert leaf_host(secrets, "gw") == "one.example"
    assert str(tmp_path / file) in secrets.problems()["gw"]
    assert problem in secrets.problems()["gw"]


def test_a_certificate_without_its_key_serves_nothing(tmp_path: Path) -> None:
    cert, _ = server_pair("one.example")
    (tmp_path / "gw.crt").write_bytes(cert)
    secrets = SecretsDirectory(tmp_path)
    assert secrets.load() == frozenset()
    assert secrets.key_pair("gw") is None
    assert "gw.key" in secrets.problems()["gw"] and "missing" in secrets.problems()["gw"]


def test_removed_files_stop_serving_without_a_push(tmp_path: Path) -> None:
    write_pair(tmp_path, "gw", "one.example")
    secrets = SecretsDirectory(tmp_path)
    secrets.load()
    (tmp_path / "gw.crt").unlink()
    (tmp_path / "gw.key").unlink()
    assert secrets.load() == frozenset()
    assert secrets.key_pair("gw") is None


def test_a_missing_directory_keeps_what_was_served(tmp_path: Path) -> None:
    folder = tmp_path / "secrets"
    folder.mkdir()
    write_pair(folder, "gw", "one.example")
    secrets = SecretsDirectory(folder)
    secrets.load()
    (folder / "gw.crt").rename(tmp_path / "gw.crt")
    (folder / "gw.key").rename(tmp_path / "gw.key")
    folder.rmdir()
    assert secrets.load() == frozenset()
    assert leaf_host(secrets, "gw") == "one.example"


async def test_replacing_the_files_is_followed(tmp_path: Path) -> None:
    write_pair(tmp_path, "gw", "one.example")
    secrets = SecretsDirectory(tmp_path, debounce=0.05, poll=0.1, force_polling=True)
    told: asyncio.Queue[frozenset[str]] = asyncio.Queue()
    secrets.on_change(told.put_nowait)
    task = asyncio.create_task(secrets.run())
    try:
        assert await asyncio.wait_for(told.get(), 5) == {"gw"}  # the first load
        await asyncio.sleep(0.3)  # the watcher is armed
        # written next to it, then moved in place: how a careful writer replaces a pair
        cert, key = server_pair("two.example")
        (tmp_path / ".gw.crt.tmp").write_bytes(cert)
        (tmp_path / ".gw.key.tmp").write_bytes(key)
        (tmp_path / ".gw.crt.tmp").rename(tmp_path / "gw.crt")
        (tmp_path / ".gw.key.tmp").rename(tmp_path / "gw.key")
        while True:
            assert "gw" in await asyncio.wait_for(told.get(), 5)
            if leaf_host(secrets, "gw") == "two.example":
                break
    finally:
        secrets.close()
        await asyncio.wait_for(task, 5)


def test_files_whose_stat_did_not_move_are_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pilothouse.security.secrets_directory as module

    write_pair(tmp_path, "gw", "one.example")
    long_ago = 1_700_000_000
    for file in ("gw.crt", "gw.key"):
        os.utime(tmp_path / file, (long_ago, long_ago))
    reads: list[str] = []
    real = module.read_key_pair

    def counted(name: str, directory: Path) -> Any:
        reads.append(name)
        return real(name, directory)

    monkeypatch.setattr(module, "read_key_pair", counted)
    secrets = SecretsDirectory(tmp_path)
    secrets.load()
    secrets.load()
    assert reads == ["gw"]
    cert, key = server_pair("two.example")
    (tmp_path / "gw.crt").write_bytes(cert)
    (tmp_path / "gw.key").write_bytes(key)
    assert secrets.load() == {"gw"}
    assert leaf_host(secrets, "gw") == "two.example"
    # files written just now may be read once more (a coarse timestamp could hide a
    # second write); once their stamps are old, never again
    for file in ("gw.crt", "gw.key"):
        os.utime(tmp_path / file, (long_ago, long_ago))
    secrets.load()
    before = len(reads)
    secrets.load()
    secrets.load()
    assert len(reads) == before


def test_an_unexpected_fault_stays_with_its_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pilothouse.security.secrets_directory as module

    write_pair(tmp_path, "gw", "one.example")
    write_pair(tmp_path, "other", "other.example")
    secrets = SecretsDirectory(tmp_path)
    secrets.load()
    real = module.read_key_pair

    def broken(name: str, directory: Path) -> Any:
        if name == "gw":
            raise RuntimeError("a library surprise")
        return real(name, directory)

    monkeypatch.setattr(module, "read_key_pair", broken)
    write_pair(tmp_path, "gw", "two.example")
    write_pair(tmp_path, "other", "two.other.example")
    assert secrets.load() == {"other"}
    assert leaf_host(secrets, "gw") == "one.example"
    assert "a library surprise" in secrets.problems()["gw"]
    assert leaf_host(secrets, "other") == "two.other.example"


def test_a_garbage_cacert_never_holds_back_a_valid_pair(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The operator's report: with a broken ``gw-cacert.crt`` beside it, a rotated
    ``gw.crt``/``gw.key`` was never served and nothing was logged when it arrived."""
    write_pair(tmp_path, "gw", "one.example")
    good_ca = write_ca(tmp_path, "gw")
    secrets = SecretsDirectory(tmp_path)
    told: list[frozenset[str]] = []
    secrets.on_change(told.append)
    assert secrets.load() == {"gw", "gw-cacert"}
    (tmp_path / "gw-cacert.crt").write_bytes(b"garbage, not PEM")
    with caplog.at_level(logging.INFO, "pilothouse.security.secrets"):
        assert secrets.load() == frozenset()
        write_pair(tmp_path, "gw", "two.example")  # v2 arrives
        assert secrets.load() == {"gw"}
    assert leaf_host(secrets, "gw") == "two.example"
    assert secrets.ca_certificates("gw") == (good_ca.decode(),), "CA part: its last good one"
    assert told[-1] == {"gw"}
    assert "gw-cacert.crt" in secrets.problems()["gw"]
    lines = [r.getMessage() for r in caplog.records]
    assert any("credential gw loaded (its key pair)" in line for line in lines), lines
    (refused,) = [line for line in lines if "refused" in line]
    assert "its CA certificates" in refused and "keeping the last good one" in refused


def test_a_garbage_cacert_from_the_start_serves_the_pair_alone(tmp_path: Path) -> None:
    write_pair(tmp_path, "gw", "one.example")
    (tmp_path / "gw-cacert.crt").write_bytes(b"-----BEGIN CERTIFICATE-----\nnope\n")
    secrets = SecretsDirectory(tmp_path)
    assert secrets.load() == {"gw"}
    assert leaf_host(secrets, "gw") == "one.example"
    assert secrets.ca_certificates("gw") is None
    write_pair(tmp_path, "gw", "two.example")
    assert secrets.load() == {"gw"}
    assert leaf_host(secrets, "gw") == "two.example"


def test_a_half_written_pair_does_not_hold_back_new_ca_certificates(tmp_path: Path) -> None:
    write_pair(tmp_path, "gw", "one.example")
    write_ca(tmp_path, "gw")
    secrets = SecretsDirectory(tmp_path)
    secrets.load()
    (tmp_path / "gw.key").write_bytes(b"garbage")
    new_ca = write_ca(tmp_path, "gw")
    assert secrets.load() == {"gw-cacert"}
    assert secrets.ca_certificates("gw") == (new_ca.decode(),)
    assert leaf_host(secrets, "gw") == "one.example"


def test_a_refusal_is_logged_once_per_content(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_pair(tmp_path, "gw", "one.example")
    secrets = SecretsDirectory(tmp_path)
    secrets.load()

    def refusals() -> list[str]:
        return [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]

    with caplog.at_level(logging.ERROR, "pilothouse.security.secrets"):
        (tmp_path / "gw-cacert.crt").write_bytes(b"bad bytes one")
        secrets.load()
        assert len(refusals()) == 1
        # the same bad bytes: rewritten (the stamp moves) and read again, no new line
        for _ in range(3):
            (tmp_path / "gw-cacert.crt").write_bytes(b"bad bytes one")
            secrets.load()
        assert len(refusals()) == 1
        # new bad bytes (the same problem in words): a new line
        (tmp_path / "gw-cacert.crt").write_bytes(b"bad bytes two")
        secrets.load()
        assert len(refusals()) == 2
        # fixed, then the first bad bytes again: reported again
        write_ca(tmp_path, "gw")
        secrets.load()
        assert "gw" not in secrets.problems()
        (tmp_path / "gw-cacert.crt").write_bytes(b"bad bytes one")
        secrets.load()
        assert len(refusals()) == 3
        # a bad pair beside the bad CA: its own line, once
        (tmp_path / "gw.key").write_bytes(b"garbage key")
        secrets.load()
        secrets.load()
        assert len(refusals()) == 4 and "its key pair" in refusals()[-1]
        assert len(secrets.problems()["gw"].split("; ")) == 2


async def test_a_followed_pair_rotates_past_a_garbage_cacert(tmp_path: Path) -> None:
    """The same, with the directory followed as ``serve`` follows it."""
    write_pair(tmp_path, "gw", "one.example")
    (tmp_path / "gw-cacert.crt").write_bytes(b"garbage")
    secrets = SecretsDirectory(tmp_path, debounce=0.05, poll=0.1, force_polling=True)
    told: asyncio.Queue[frozenset[str]] = asyncio.Queue()
    secrets.on_change(told.put_nowait)
    task = asyncio.create_task(secrets.run())
    try:
        assert await asyncio.wait_for(told.get(), 5) == {"gw"}
        await asyncio.sleep(0.3)
        write_pair(tmp_path, "gw", "two.example")
        while leaf_host(secrets, "gw") != "two.example":
            assert "gw" in await asyncio.wait_for(told.get(), 5)
        assert secrets.ca_certificates("gw") is None
    finally:
        secrets.close()
        await asyncio.wait_for(task, 5)
