"""`pilothouse loadtest` as a real command against `pilothouse serve` as a real process.

The server serves a directory of YAML on loopback ports chosen at run time; the load
generator runs as a subprocess with ``-o json`` and its report is checked: a connect storm
of 50 proxies over two processes, and pushes made by rewriting a file the server watches.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness.ports import free_ports

SERVICES = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: reviews, namespace: shop}
spec:
  hosts: [reviews.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 9080, name: http, protocol: HTTP}]
  workloadSelector: {labels: {app: reviews}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ratings, namespace: shop}
spec:
  hosts: [ratings.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 9080, name: http, protocol: HTTP}]
  endpoints: [{address: 10.1.1.1}]
"""

ENDPOINT = """\
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: reviews-0, namespace: shop}
spec:
  address: 10.2.0.{n}
  labels: {app: reviews}
"""


@dataclass(frozen=True)
class Server:
    process: subprocess.Popen[bytes]
    xds: str
    admin: str
    mesh: Path


def _ready(admin: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://{admin}/ready", timeout=1) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    mesh = tmp_path_factory.mktemp("loadtest-mesh")
    (mesh / "services.yaml").write_text(SERVICES)
    (mesh / "endpoint.yaml").write_text(ENDPOINT.replace("{n}", "0"))
    xds_port, admin_port = free_ports(2)
    xds, admin = f"127.0.0.1:{xds_port}", f"127.0.0.1:{admin_port}"
    log = (tmp_path_factory.getbasetemp() / "loadtest-serve.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "pilothouse.cli.main", "serve", "--config", str(mesh),
         "--xds-address", xds, "--admin-address", admin],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "PILOTHOUSE_DEBOUNCE_AFTER": "0.05",
             "PILOTHOUSE_FILE_DEBOUNCE": "0.05", "PILOTHOUSE_DRAIN_SECONDS": "1"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not _ready(admin):
            assert process.poll() is None, "pilothouse serve exited"
            assert time.monotonic() < deadline, "pilothouse serve never became ready"
            time.sleep(0.1)
        yield Server(process, xds, admin, mesh)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        log.close()


def loadtest(
    *argv: str, marker: str = ""
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    done = subprocess.run(
        [sys.executable, "-m", "pilothouse.cli.main", "loadtest", *argv, "-o", "json"],
        capture_output=True, text=True, timeout=90, check=False,
        env={**os.environ, MARKER: marker},
    )  # fmt: skip
    assert done.stdout, f"no report; stderr:\n{done.stderr}"
    return json.loads(done.stdout), done


MARKER = "LOADTEST_CLI_TEST_RUN"


def processes_marked(marker: str) -> list[int]:
    """Our processes whose environment carries ``MARKER=marker`` (workers inherit it)."""
    wanted = f"{MARKER}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environment = (entry / "environ").read_bytes()
        except OSError:
            continue
        if wanted in environment.split(b"\0"):
            found.append(int(entry.name))
    return found


def test_connect_storm_of_50_proxies_over_two_processes(server: Server) -> None:
    report, done = loadtest(
        "--server", server.xds, "--proxies", "50", "--processes", "2",
        "--namespaces", "shop,default", "--admin", server.admin,
        "--server-pid", str(server.process.pid), "--timeout", "30",
        marker=f"connect-{os.getpid()}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert report["ok"] is True
    assert (report["scenario"], report["proxies"], report["processes"]) == ("connect", 50, 2)
    connect = report["connect"]
    assert (connect["converged"], connect["unconverged"]) == (50, 0)
    seconds = connect["seconds"]
    assert seconds["count"] == 50
    assert 0 < seconds["p50"] <= seconds["p90"] <= seconds["p99"] <= seconds["max"] < 30
    assert connect["wallSeconds"] >= seconds["max"] * 0.9
    # Every sidecar asks for CDS, EDS, LDS and RDS: at least four responses each.
    assert connect["traffic"]["responses"] >= 200
    assert connect["traffic"]["receivedBytes"] > 0
    assert connect["traffic"]["pushesPerSecond"] > 0
    assert report["errors"]["nacks"] == 0
    assert report["errors"]["streamFailures"] == 0
    assert report["changes"] is None
    process = report["serverProcess"]
    assert process["pid"] == server.process.pid
    assert process["rssBytes"]["peak"] >= process["rssBytes"]["start"] > 0
    assert process["cpuSeconds"]["connect"] is not None
    assert processes_marked(f"connect-{os.getpid()}") == []  # the workers are gone


def test_push_by_rewriting_a_watched_file(server: Server) -> None:
    report, done = loadtest(
        "--server", server.xds, "--proxies", "20", "--namespaces", "shop",
        "--scenario", "push", "--repeat", "2", "--delta",
        "--trigger-file", str(server.mesh / "endpoint.yaml"), "--trigger-content", ENDPOINT,
        "--timeout", "15", "--quiet",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # --quiet
    assert report["ok"] is True
    assert report["transport"] == "delta"
    assert report["connect"]["converged"] == 20
    changes = report["changes"]
    assert (changes["made"], changes["failed"]) == (2, 0)
    assert (changes["reached"], changes["missed"]) == (40, 0)
    seconds = changes["seconds"]
    assert seconds["count"] == 40
    assert 0 < seconds["p50"] <= seconds["p99"] <= seconds["max"] < 15
    assert [change["number"] for change in changes["perChange"]] == [1, 2]
    assert all(change["reached"] == 20 for change in changes["perChange"])
    # Each change moved one endpoint: EDS responses reached every proxy, each time.
    assert changes["traffic"]["responses"] >= 40
    assert report["errors"]["triggerFailures"] == 0
    assert report["errors"]["nacks"] == 0
    assert "address: 10.2.0.2" in (server.mesh / "endpoint.yaml").read_text()


def test_an_unreachable_server_fails_within_the_timeout(server: Server) -> None:
    (port,) = free_ports(1)
    began = time.monotonic()
    report, done = loadtest(
        "--server", f"127.0.0.1:{port}", "--proxies", "3", "--timeout", "1", "--quiet",
    )  # fmt: skip
    assert done.returncode == 1
    assert time.monotonic() - began < 20
    assert report["ok"] is False
    assert report["connect"]["unconverged"] == 3
    assert report["connect"]["seconds"] is None
    assert report["errors"]["streamFailures"] >= 3
    assert any("UNAVAILABLE" in example for example in report["errors"]["examples"])
    assert report["connect"]["stalls"]["streams"]["UNAVAILABLE"]["proxies"] == 3
    assert report["connect"]["stallReasons"][0] == "3 proxies have no CDS response"


def test_nothing_listening_fails_fast_naming_the_address() -> None:
    """With a long timeout, a dead address still ends the run a few seconds in."""
    (port,) = free_ports(1)
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pilothouse.cli.main", "loadtest",
         "--server", f"127.0.0.1:{port}", "--proxies", "3", "--timeout", "60", "--quiet"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"pilothouse loadtest: cannot connect to 127.0.0.1:{port}: connection refused\n"
    )
    assert time.monotonic() - began < 15


def test_types_limits_what_the_proxies_ask_for(server: Server) -> None:
    report, done = loadtest(
        "--server", server.xds, "--proxies", "10", "--namespaces", "shop",
        "--types", "cds,eds", "--timeout", "15", "--quiet",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert report["ok"] is True
    assert report["types"] == ["CDS", "EDS"]
    assert report["connect"]["stallReasons"] == []
    # One CDS and one EDS response each, no listeners or routes asked for.
    assert report["connect"]["traffic"]["responses"] == 20


def test_a_listener_that_never_comes_is_named_in_the_report(server: Server) -> None:
    """A proxyless client asks LDS for a target the mesh does not have: what a new user
    sees when the run fails is which listener the proxies still wait for."""
    missing = "nowhere.shop.svc.cluster.local:9080"
    done = subprocess.run(
        [sys.executable, "-m", "pilothouse.cli.main", "loadtest", "--server", server.xds,
         "--proxies", "4", "--flavour", "grpc", "--target", missing, "--timeout", "2",
         "--quiet"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    reason = f"4 proxies still wait for LDS of 1 listener: {missing}"
    assert f"result: FAILED: 4 proxies never converged ({reason})" in done.stdout
    assert f"    {reason}\n" in done.stdout
