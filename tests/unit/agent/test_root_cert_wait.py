"""The agent's wait for its root: each way a file is no root is named, a file that
appears in time is taken, and the wait ends at its deadline (never with 0)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from pilothouse.agent.root_cert import RootCertUnusable, root_problem, wait_for_root
from tests.e2e.harness.tls import ThrowawayCa


@pytest.fixture
def root_pem(tmp_path: Path) -> bytes:
    return ThrowawayCa(tmp_path / "pki").issue("pilothouse", ("pilothouse",)).ca.read_bytes()


def test_each_way_a_file_is_no_root_is_named(tmp_path: Path, root_pem: bytes) -> None:
    root = tmp_path / "root-cert.pem"
    assert root_problem(root) == "no such file"
    root.write_bytes(b"")
    assert root_problem(root) == "is empty"
    root.write_bytes(b"hello\n")
    assert root_problem(root) == "holds no PEM certificate"
    root.write_bytes(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    problem = root_problem(root)
    assert problem is not None and problem.startswith("a certificate in it does not parse")
    root.write_bytes(root_pem)
    assert root_problem(root) is None
    assert root_problem(tmp_path) is not None and "cannot be read" in str(root_problem(tmp_path))


async def test_a_root_that_appears_in_time_is_taken(
    tmp_path: Path, root_pem: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "root-cert.pem"
    with caplog.at_level(logging.INFO, logger="pilothouse.agent"):
        waiting = asyncio.create_task(wait_for_root(root, 10.0, poll=0.01))
        await asyncio.sleep(0.1)
        assert not waiting.done()
        root.write_bytes(root_pem)
        await asyncio.wait_for(waiting, 5)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"waiting up to 10 s for the root certificate {root}: no such file"]


async def test_the_wait_ends_at_its_deadline_naming_the_file(tmp_path: Path) -> None:
    root = tmp_path / "root-cert.pem"
    root.write_text("not a certificate")
    with pytest.raises(RootCertUnusable) as raised:
        await asyncio.wait_for(wait_for_root(root, 0.2, poll=0.01), 5)
    assert str(raised.value) == (
        f"root certificate {root}: holds no PEM certificate (waited 0.2 s, --root-cert-timeout)"
    )


async def test_zero_waits_for_ever(tmp_path: Path) -> None:
    waiting = asyncio.create_task(wait_for_root(tmp_path / "absent.pem", 0, poll=0.01))
    await asyncio.sleep(0.3)
    assert not waiting.done()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
