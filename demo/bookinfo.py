"""`make demo`: the example mesh carrying real HTTP through a real Envoy gateway.

Starts, all on 127.0.0.1 with ports chosen at run time: one small HTTP server per
bookinfo workload (each answers with its own name), `pilothouse serve` on a copy of
examples/ whose ports are rewritten to the chosen ones, and an Envoy ingress gateway
bootstrapped from pilothouse. Then it sends requests through the gateway, prints the
routing it observed (the reviews weight split, the header route for `end-user: jason`,
the productpage route), and stops everything it started, also on failure.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pilothouse.bootstrap.envoy import (  # noqa: E402
    EnvoyBootstrapOptions,
    XdsTransport,
    envoy_bootstrap,
)
from tests.e2e.harness.client import fetch, send_requests  # noqa: E402
from tests.e2e.harness.envoy import EnvoyProcess  # noqa: E402
from tests.e2e.harness.ports import free_ports, wait_for_port  # noqa: E402
from tests.e2e.harness.upstreams import UpstreamPool  # noqa: E402

WORKLOADS = {
    19080: "productpage",
    19081: "details",
    19082: "reviews-v1",
    19083: "reviews-v2",
    19084: "reviews-v3",
    19085: "ratings",
}
GATEWAY_NODE = "router~127.0.0.1~ingressgateway-1.bookinfo~bookinfo.svc.cluster.local"
REQUESTS = 400


def rewrite_ports(mesh: Path, mapping: dict[int, int]) -> None:
    for path in mesh.rglob("*.yaml"):
        text = path.read_text()
        for old, new in mapping.items():
            text = re.sub(rf"\b{old}\b", str(new), text)
        path.write_text(text)


async def wait_ready(port: int, process: subprocess.Popen[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError("pilothouse exited early")
        try:
            if (await fetch("127.0.0.1", port, "/ready", timeout=1)).status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("pilothouse did not become ready")
        await asyncio.sleep(0.1)


def shares(counts: Counter[str]) -> str:
    total = sum(counts.values()) or 1
    return ", ".join(f"{name} {100 * n / total:.0f}%" for name, n in sorted(counts.items()))


async def demo(workdir: Path) -> int:
    mesh = workdir / "mesh"
    shutil.copytree(ROOT / "examples", mesh)
    gateway_port, xds_port, admin_port = free_ports(3)
    pool = UpstreamPool()
    server: subprocess.Popen[str] | None = None
    envoy: EnvoyProcess | None = None
    try:
        mapping = {8080: gateway_port}
        for port, name in WORKLOADS.items():
            mapping[port] = (await pool.start(name)).port
        rewrite_ports(mesh, mapping)
        print(f"upstreams: {', '.join(WORKLOADS.values())} on 127.0.0.1")
        server = subprocess.Popen(
            [sys.executable, "-m", "pilothouse.cli.main", "serve", "--config", str(mesh),
             "--xds-address", f"127.0.0.1:{xds_port}",
             "--admin-address", f"127.0.0.1:{admin_port}", "--log-level", "warn",
             "--xds-tls-address", ""],
            start_new_session=True, text=True,
        )  # fmt: skip
        await wait_ready(admin_port, server)
        print(f"pilothouse: xDS on 127.0.0.1:{xds_port}, ready")
        options = EnvoyBootstrapOptions(
            node_id=GATEWAY_NODE,
            node_metadata={"NAMESPACE": "bookinfo", "LABELS": {"istio": "ingressgateway"}},
            xds_port=xds_port,
            admin_port=0,
            transport=XdsTransport.DELTA,
        )
        envoy = EnvoyProcess(envoy_bootstrap(options), workdir=workdir / "envoy")
        envoy.start()
        await envoy.wait_ready(15)
        await wait_for_port(gateway_port, timeout=15)
        print(f"envoy gateway: listening on 127.0.0.1:{gateway_port}\n")

        split = await send_requests("127.0.0.1", gateway_port, REQUESTS, path="/reviews/1")
        print(
            f"GET /reviews/1 x{REQUESTS}: {shares(split.upstreams)}  (configured: v1 80%, v3 20%)"
        )
        jason = await send_requests(
            "127.0.0.1", gateway_port, 50, path="/reviews/1", headers={"end-user": "jason"}
        )
        print(f"GET /reviews/1 with end-user: jason x50: {shares(jason.upstreams)}")
        page = await send_requests("127.0.0.1", gateway_port, 20, path="/productpage")
        print(f"GET /productpage x20: {shares(page.upstreams)}")
        missing = await send_requests("127.0.0.1", gateway_port, 5, path="/nowhere")
        print(f"GET /nowhere x5: statuses {dict(missing.statuses)}")
        failed = split.errors + jason.errors + page.errors
        if failed:
            print(f"\n{len(failed)} request(s) failed: {failed[:3]}")
            return 1
        return 0
    finally:
        if envoy is not None:
            await envoy.stop()
        if server is not None and server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        await pool.close_all()
        print("\nstopped everything the demo started")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="pilothouse-demo-") as workdir:
        return asyncio.run(demo(Path(workdir)))


if __name__ == "__main__":
    sys.exit(main())
