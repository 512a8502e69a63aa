"""Processes racing to create the CA's root in one empty directory agree on one root.

Two real processes (as two ``pilothouse serve`` started together from one folder) open
the CA on the same empty directory at the same instant, released together by a start
file after their imports. Every round, both must sign with the same root, exactly one of
them has created it, and ``root-cert.pem`` on disk is that root. The same two processes
race every round, each round on a new empty directory with a new start file (a new
Python per racer and round cost most of the test's time).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes

pytestmark = pytest.mark.timeout(180)

ROUNDS = 10

OPENER = """
import json, logging, pathlib, sys, time
from cryptography.hazmat.primitives import hashes
from pilothouse.security.ca import CertificateAuthority
from pilothouse.settings import CaSettings

folder, rounds = pathlib.Path(sys.argv[1]), int(sys.argv[2])
records = []
logging.getLogger("pilothouse.ca").addHandler(
    type("Keep", (logging.Handler,), {"emit": lambda self, r: records.append(r.getMessage())})()
)
logging.getLogger("pilothouse.ca").setLevel(logging.INFO)
for number in range(rounds):
    start = folder / f"start-{number}"
    records.clear()
    print("ready", flush=True)
    while not start.exists():
        time.sleep(0.0005)
    ca = CertificateAuthority.open(CaSettings(dir=str(folder / f"ca-{number}")), "cluster.local")
    print(json.dumps({
        "root": ca.signing_root.fingerprint(hashes.SHA256()).hex(),
        "created": "CA: self-signed root created" in records,
    }), flush=True)
"""


def opener(folder: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", OPENER, str(folder), str(ROUNDS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def line_of(racer: subprocess.Popen[str]) -> str:
    """The racer's next line; its error output if it ended instead."""
    assert racer.stdout is not None
    line = await asyncio.wait_for(asyncio.to_thread(racer.stdout.readline), 60)
    if not line:
        _, err = await asyncio.to_thread(racer.communicate, timeout=10)
        raise AssertionError(f"a racer ended with {racer.returncode}: {err}")
    return line.strip()


async def one_round(racers: list[subprocess.Popen[str]], folder: Path, number: int) -> None:
    directory = folder / f"ca-{number}"
    for racer in racers:
        assert await line_of(racer) == "ready"
    (folder / f"start-{number}").touch()
    answers = [json.loads(await line_of(racer)) for racer in racers]
    roots = {answer["root"] for answer in answers}
    assert len(roots) == 1, f"round {number}: two roots {roots}"
    assert sorted(answer["created"] for answer in answers) == [False, True], answers
    on_disk = x509.load_pem_x509_certificates((directory / "root-cert.pem").read_bytes())
    assert [cert.fingerprint(hashes.SHA256()).hex() for cert in on_disk] == [*roots]


async def test_two_processes_on_one_empty_directory_create_one_root(tmp_path: Path) -> None:
    racers = [opener(tmp_path), opener(tmp_path)]
    try:
        for number in range(ROUNDS):
            await one_round(racers, tmp_path, number)
        for racer in racers:
            _, err = await asyncio.to_thread(racer.communicate, timeout=60)
            assert racer.returncode == 0, err
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
                racer.wait(5)
