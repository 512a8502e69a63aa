"""`make demo`: the example mesh carrying real HTTP through a real Envoy gateway.

Starts, all on 127.0.0.1 with ports chosen at run time and every file in one temporary
directory: one small HTTP server per bookinfo workload (each answers with its own name),
`pilothouse serve` on a copy of examples/ whose ports are rewritten to the chosen ones
(its CA and the local token issuer it trusts in the directory's `.pilothouse/`), and the
ingress gateway's node agent, `pilothouse agent`: it gets the gateway's certificate with
a CSR authenticated by a token from that issuer (minted as `pilothouse token create`
does), writes Envoy's bootstrap (ADS and SDS over its Unix sockets), starts Envoy with
istio-agent's drain flags and carries Envoy's ADS stream to pilothouse's TLS port. Then
it sends requests through the gateway, prints the routing it observed (the reviews
weight split, the header route for `end-user: jason`, the productpage route), and stops
everything it started, also on failure (the agent drains and stops its Envoy on
SIGTERM).
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

from pilothouse.security.token_issuer import TokenIssuer  # noqa: E402
from tests.e2e.harness.client import fetch, send_requests  # noqa: E402
from tests.e2e.harness.envoy import envoy_binary  # noqa: E402
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
GATEWAY_ACCOUNT = "istio-ingressgateway"
REQUESTS = 400
PILOTHOUSE = [sys.executable, "-m", "pilothouse.cli.main"]


def rewrite_ports(mesh: Path, mapping: dict[int, int]) -> None:
    for path in mesh.rglob("*.yaml"):
        text = path.read_text()
        for old, new in mapping.items():
            text = re.sub(rf"\b{old}\b", str(new), text)
        path.write_text(text)


async def wait_ready(
    port: int, path: str, process: subprocess.Popen[str], name: str, timeout: float = 30
) -> None:
    """Until ``path`` on ``port`` answers 200 (``name`` exiting first is an error)."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited early (status {process.returncode})")
        try:
            if (await fetch("127.0.0.1", port, path, timeout=1)).status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name} did not become ready")
        await asyncio.sleep(0.1)


async def wait_for_file(
    path: Path, process: subprocess.Popen[str], name: str, timeout: float = 30
) -> None:
    """Until ``path`` exists (``name`` exiting first is an error)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited early (status {process.returncode})")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name} did not write {path}")
        await asyncio.sleep(0.05)


def stop(process: subprocess.Popen[str] | None) -> None:
    """SIGTERM, then SIGKILL to its process group if it lingers."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def shares(counts: Counter[str]) -> str:
    total = sum(counts.values()) or 1
    return ", ".join(f"{name} {100 * n / total:.0f}%" for name, n in sorted(counts.items()))


async def demo(workdir: Path) -> int:
    mesh = workdir / "mesh"
    shutil.copytree(ROOT / "examples", mesh)
    state = workdir / ".pilothouse"
    gateway = workdir / "gateway"
    gateway.mkdir()
    gateway_port, xds_port, tls_port, admin_port, envoy_admin, status_port = free_ports(6)
    pool = UpstreamPool()
    server: subprocess.Popen[str] | None = None
    agent: subprocess.Popen[str] | None = None
    try:
        mapping = {8080: gateway_port}
        for port, name in WORKLOADS.items():
            mapping[port] = (await pool.start(name)).port
        rewrite_ports(mesh, mapping)
        print(f"upstreams: {', '.join(WORKLOADS.values())} on 127.0.0.1")
        server = subprocess.Popen(
            [*PILOTHOUSE, "serve", "--config", str(mesh),
             "--xds-address", f"127.0.0.1:{xds_port}",
             "--xds-tls-address", f"127.0.0.1:{tls_port}",
             "--admin-address", f"127.0.0.1:{admin_port}", "--log-level", "warn",
             "--ca-dir", str(state / "ca"), "--local-issuer-dir", str(state / "token-issuer")],
            cwd=workdir, start_new_session=True, text=True,
        )  # fmt: skip
        # what `pilothouse token create istio-ingressgateway -n bookinfo` prints, minted
        # here (one Python start fewer): the issuer serve trusts by default
        issuer = TokenIssuer.open(state / "token-issuer")
        (gateway / "istio-token").write_text(issuer.token("bookinfo", GATEWAY_ACCOUNT) + "\n")
        root_cert = state / "ca" / "root-cert.pem"
        await wait_for_file(root_cert, server, "pilothouse")
        # the agent starts while pilothouse is still starting: it dials until it answers
        agent = subprocess.Popen(
            [*PILOTHOUSE, "agent", "--node", GATEWAY_NODE,
             "--service-account", GATEWAY_ACCOUNT, "--label", "istio=ingressgateway",
             "--token", str(gateway / "istio-token"), "--root-cert", str(root_cert),
             "--xds-address", f"127.0.0.1:{tls_port}",
             "--sds-socket", str(gateway / "sds"), "--xds-socket", str(gateway / "XDS"),
             "--bootstrap", str(gateway / "envoy.json"), "--envoy-binary", str(envoy_binary()),
             "--admin-port", str(envoy_admin), "--status-port", str(status_port),
             "--termination-drain-duration", "0.5", "--log-level", "error"],
            cwd=workdir, start_new_session=True, text=True,
        )  # fmt: skip
        await wait_ready(admin_port, "/ready", server, "pilothouse")
        print(f"pilothouse: xDS on 127.0.0.1:{xds_port}, TLS xDS and CSRs on {tls_port}, ready")
        await wait_ready(status_port, "/healthz/ready", agent, "the gateway's agent")
        await wait_for_port(gateway_port, timeout=15)
        print(f"envoy gateway (run by pilothouse agent): listening on 127.0.0.1:{gateway_port}\n")

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
        stop(agent)  # the agent drains and stops its Envoy
        stop(server)
        await pool.close_all()
        print("\nstopped everything the demo started")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="pilothouse-demo-") as workdir:
        return asyncio.run(demo(Path(workdir)))


if __name__ == "__main__":
    sys.exit(main())
