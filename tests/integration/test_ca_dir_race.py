"""Processes racing to create the CA's root in one empty directory agree on one root.

Two real processes per round (as two ``pilothouse serve`` started together from one
folder) open the CA on the same empty directory at the same instant, released together
by a start file after their imports. Every round, both must sign with the same root,
exactly one of them has created it, and ``root-cert.pem`` on disk is that root.
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

directory, start = sys.argv[1], pathlib.Path(sys.argv[2])
records = []
logging.getLogger("pilothouse.ca").addHandler(
    type("Keep", (logging.Handler,), {"emit": lambda self, r: records.append(r.getMessage())})()
)
logging.getLogger("pilothouse.ca").setLevel(logging.INFO)
print("ready", flush=True)
while not start.exists():
    time.sleep(0.0005)
ca = CertificateAuthority.open(CaSettings(dir=directory), "cluster.local")
print(json.dumps({
    "root": ca.signing_root.fingerprint(hashes.SHA256()).hex(),
    "created": "CA: self-signed root created" in records,
}), flush=True)
"""


def opener(directory: Path, start: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", OPENER, str(directory), str(start)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def one_round(tmp_path: Path, number: int) -> None:
    directory = tmp_path / f"ca-{number}"
    start = tmp_path / f"start-{number}"
    racers = [opener(directory, start), opener(directory, start)]
    try:
        for racer in racers:
            assert racer.stdout is not None
            line = await asyncio.to_thread(racer.stdout.readline)
            assert line.strip() == "ready", racer.stderr.read() if racer.stderr else ""
        start.touch()
        answers = []
        for racer in racers:
            out, err = await asyncio.to_thread(racer.communicate, timeout=60)
            assert racer.returncode == 0, err
            answers.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
                racer.wait(5)
    roots = {answer["root"] for answer in answers}
    assert len(roots) == 1, f"round {number}: two roots {roots}"
    assert sorted(answer["created"] for answer in answers) == [False, True], answers
    on_disk = x509.load_pem_x509_certificates((directory / "root-cert.pem").read_bytes())
    assert [cert.fingerprint(hashes.SHA256()).hex() for cert in on_disk] == [*roots]


async def test_two_processes_on_one_empty_directory_create_one_root(tmp_path: Path) -> None:
    for number in range(ROUNDS):
        await one_round(tmp_path, number)
