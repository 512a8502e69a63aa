"""Start-up rules of a real ``pilothouse serve`` process.

- A ``--config`` directory that does not exist is an error (exit status 2, naming it,
  with the sibling directory meant when one is close): a typo must not serve an empty
  mesh that calls itself ready.
- With sources that cannot sync (an ``xds://`` upstream and an etcd cluster nobody
  listens for), the ports open at once and ``/ready`` answers 503 naming each source
  that has not synced and why; SIGTERM then drains and exits 0 with nothing logged
  after ``draining`` but ``stopped``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.harness.ports import LOOPBACK, free_ports, wait_for_port
from tests.e2e.harness.serve_process import ServeProcess

pytestmark = pytest.mark.timeout(120)


def serve(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    xds, admin = free_ports(2)
    command = [
        sys.executable, "-m", "pilothouse.cli.main", "serve", *args,
        "--xds-address", f"{LOOPBACK}:{xds}", "--admin-address", f"{LOOPBACK}:{admin}",
        "--xds-tls-address", "", "--ctrlz-address", "off",
    ]  # fmt: skip
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60)


def test_a_config_directory_that_does_not_exist_stops_serve(tmp_path: Path) -> None:
    (tmp_path / "examples").mkdir()
    ran = serve("--config", "exmaples/", cwd=tmp_path)
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.strip() == (
        f"pilothouse serve: --config exmaples: no such directory ({tmp_path / 'exmaples'}); "
        "did you mean examples?"
    )
    far = serve("--config-source", f"fs://{tmp_path}/nothing-like-it", cwd=tmp_path)
    assert far.returncode == 2
    assert far.stderr.strip() == (
        f"pilothouse serve: --config-source fs://{tmp_path}/nothing-like-it: "
        f"no such directory ({tmp_path}/nothing-like-it)"
    )
    a_file = tmp_path / "mesh.yaml"
    a_file.write_text("")
    not_a_directory = serve("--config", str(a_file), cwd=tmp_path)
    assert not_a_directory.returncode == 2
    assert f"--config {a_file}: not a directory" in not_a_directory.stderr


async def test_ports_open_at_once_and_ready_names_the_sources_not_synced(tmp_path: Path) -> None:
    xds, admin, dead_xds, dead_etcd = free_ports(4)
    upstream, etcd = f"xds://{LOOPBACK}:{dead_xds}", f"etcd://{LOOPBACK}:{dead_etcd}/mesh"
    plane = ServeProcess(
        [],
        xds_port=xds,
        admin_port=admin,
        log_path=tmp_path / "serve.log",
        log_level="info",
        extra_args=["--config-source", upstream, "--config-source", etcd,
                    "--xds-tls-address", "", "--ctrlz-address", "off"],
    )  # fmt: skip
    plane.start()
    try:
        await wait_for_port(admin, timeout=20)
        await wait_for_port(xds, timeout=20)
        deadline = time.monotonic() + 15
        while True:  # each source says why once it has tried
            status, body = await plane.ready()
            assert status == 503, body
            (waiting,) = [line for line in body.splitlines() if line.startswith("config sources ")]
            assert waiting.startswith("config sources have not synced yet: "), body
            assert upstream in waiting and etcd in waiting, body
            if f"{upstream} (unavailable: " in waiting and f"{etcd} (unavailable: " in waiting:
                break
            assert time.monotonic() < deadline, body
            await asyncio.sleep(0.1)
        assert "Connection refused" in waiting or "failed to connect" in waiting
    finally:
        code = await plane.stop(timeout=15)
    assert code == 0, plane.log_tail()
    log = (tmp_path / "serve.log").read_text()
    after = log.split(" draining", 1)[1].splitlines()[1:]
    assert [line.split()[1:3] for line in after] == [["info", "serve"]], after
    assert "stopped" in after[0]
    assert "Traceback" not in log and "Task was destroyed" not in log
