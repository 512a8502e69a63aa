"""The README's "Mutual TLS without Kubernetes" walkthrough, step by step, with real Envoys
started by real ``pilothouse agent`` processes.

The mesh is the README's YAML block and the commands are the README's ``pilothouse
token`` and ``pilothouse agent`` lines, run as written from a working directory of their
own; only ports change (the walkthrough's fixed ports become free ones), the agents are
pointed at the server's TLS port (``--xds-address``, a free port here) and drain their
Envoy for 0.5 s instead of 5 s when stopped (``--termination-drain-duration``), and the
server runs in this process (trusting what ``pilothouse token issuer`` printed, with no
``--sds-server-keys``). Each agent finds ``envoy`` on ``PATH`` (the wheel's). Both
agents answer the README's ``/healthz/ready``; a request through productpage's sidecar
reaches the application over mutual TLS (the application sees productpage's SPIFFE id in
``x-forwarded-client-cert``), a plaintext request to ratings' STRICT port is refused,
each Envoy runs with istio-agent's drain flags from a bootstrap that names its agent's
sockets and holds no token, key or TLS towards pilothouse, the server issued exactly the
two certificates the agents asked for with CSRs and made no key, and each agent exits 0
when stopped.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pilothouse.security import ca_dir
from tests.e2e.harness.cli_in_process import run_cli_in_thread
from tests.e2e.harness.client import fetch, send_requests
from tests.e2e.harness.envoy import envoy_binary
from tests.e2e.harness.ports import LOOPBACK, free_port, wait_for_port
from tests.e2e.harness.upstreams import UpstreamPool
from tests.integration.serve_in_process import serve_in_process

pytestmark = pytest.mark.timeout(90)

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## Mutual TLS without Kubernetes"
HOST = "ratings.shop.svc.cluster.local"
PRODUCTPAGE_ID = "spiffe://cluster.local/ns/shop/sa/productpage"
SIDE_BY_SIDE = ("--sds-socket", "--xds-socket", "--bootstrap", "--admin-port", "--status-port")
"""What two agents in one directory must each have of their own."""


def walkthrough() -> tuple[str, list[list[str]], list[list[str]]]:
    """The section's YAML, its ``pilothouse`` commands and its ``curl`` commands (each a
    word list, continuation lines joined, comments and ``&`` dropped)."""
    text = README.read_text()
    start = text.index(SECTION)
    section = text[start : text.index("\n## ", start + 1)]
    (yaml_block,) = re.findall(r"```yaml\n(.*?)```", section, re.S)
    (shell,) = re.findall(r"```sh\n(.*?)```", section, re.S)
    joined = shell.replace("\\\n", " ")
    pilothouse, curl = [], []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        words = [w for w in words if w != "&"]
        if words[:1] == ["pilothouse"]:
            pilothouse.append(words[1:])
        elif words[:1] == ["curl"]:
            curl.append(words[1:])
    return yaml_block, pilothouse, curl


def value(words: list[str], flag: str) -> str:
    return words[words.index(flag) + 1]


def test_the_walkthrough_is_in_the_readme_and_runs_each_sidecar_with_its_agent() -> None:
    mesh, commands, curls = walkthrough()
    assert "security.istio.io/tlsMode: istio" in mesh and "mode: STRICT" in mesh
    assert [c[:2] for c in commands] == [
        ["token", "issuer"],
        ["serve", "--config"],
        ["token", "create"],
        ["token", "create"],
        ["agent", "--node"],
        ["agent", "--node"],
    ]
    agents = commands[4:]
    for flag in SIDE_BY_SIDE:  # two agents, one directory: nothing shared
        assert value(agents[0], flag) != value(agents[1], flag), flag
    for words, account in zip(agents, ("ratings", "productpage"), strict=True):
        assert value(words, "--service-account") == account
        assert value(words, "--token") == f"{account}.token"
        assert "--sds-server-keys" not in words and "--no-envoy" not in words
    ready = [c for c in curls if c[-1].endswith("/healthz/ready")]
    assert [c[-1].rsplit(":", 1)[1].split("/")[0] for c in ready] == [
        value(words, "--status-port") for words in agents
    ]


def sample(metrics: str, name: str) -> float:
    for line in metrics.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {name} in metrics")


class Agents:
    """``pilothouse agent`` processes, stopped with SIGTERM (killed if they linger)."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self, words: list[str], environment: dict[str, str]) -> None:
        log = self.logs / f"agent-{len(self.processes)}.log"
        command = [sys.executable, "-m", "pilothouse.cli.main", *words]
        with log.open("wb") as out:
            self.processes.append(
                subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=environment)
            )

    def describe(self) -> str:
        return "\n".join(path.read_text() for path in sorted(self.logs.glob("agent-*.log")))

    def stop(self) -> list[int]:
        """SIGTERM (each agent drains and stops its Envoy), then their exit statuses."""
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        codes = []
        for process in self.processes:
            try:
                codes.append(process.wait(15))
            except subprocess.TimeoutExpired:
                process.kill()
                codes.append(process.wait())
        return codes


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[Agents]:
    running = Agents(tmp_path)
    try:
        yield running
    finally:
        running.stop()  # a failed test too: no agent (nor its Envoy) outlives it


async def wait_ready(port: int, agents: Agents) -> None:
    """The README's ``curl .../healthz/ready`` until it answers 200."""
    answer = None
    try:
        async with asyncio.timeout(15):
            while True:
                try:
                    answer = await fetch(LOOPBACK, port, "/healthz/ready", timeout=2.0)
                except OSError:
                    answer = None
                if answer is not None and answer.status == 200:
                    return
                await asyncio.sleep(0.1)
    except TimeoutError:
        last = answer.body.decode() if answer is not None else "no answer"
        raise AssertionError(f"agent not ready: {last}\n{agents.describe()}") from None


async def test_two_agent_sidecars_talk_mutual_tls_without_kubernetes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    upstream_factory: UpstreamPool,
    agents: Agents,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="pilothouse")
    mesh, commands, curls = walkthrough()
    app = await upstream_factory("ratings-app")
    service, inbound = free_port(), free_port()
    mesh = mesh.replace("9080", str(service)).replace("9081", str(inbound))
    mesh = mesh.replace("127.0.0.1:8000", f"127.0.0.1:{app.port}")
    work = tmp_path / "work"
    (work / "mesh").mkdir(parents=True)
    (work / "mesh" / "shop.yaml").write_text(mesh)
    ca = Path(os.environ["PILOTHOUSE_CA_DIR"])  # tests/conftest.py: one CA for the suite
    (work / ".pilothouse").mkdir()
    (work / ".pilothouse" / "ca").symlink_to(ca)
    monkeypatch.chdir(work)
    environment = dict(os.environ)
    environment["PATH"] = f"{envoy_binary().parent}{os.pathsep}{environment['PATH']}"

    # 1. the issuer; serve trusting it
    issuer = await run_cli_in_thread(*commands[0])
    assert issuer.returncode == 0, issuer.stderr
    trust = issuer.stdout.strip()
    overrides = {
        "xds.tls_address": "127.0.0.1:0",
        "ca.dir": str(ca),
        "auth.jwt_issuers": (trust,),
    }
    async with serve_in_process(monkeypatch, work / "mesh", overrides) as running:
        tls_port = running.bound.xds_tls_port
        # 2. tokens, written where the README writes them
        for words in commands[2:4]:
            words, target = words[: words.index(">")], words[words.index(">") + 1]
            done = await run_cli_in_thread(*words)
            assert done.returncode == 0, done.stderr
            (work / target).write_text(done.stdout)
        # 4. the agents, each starting its Envoy; its ports become free ones
        renamed: dict[str, int] = {}
        admin_ports = []
        for words in commands[4:]:
            words = list(words)
            for flag in ("--admin-port", "--status-port"):
                port = free_port()
                renamed[value(words, flag)] = port
                words[words.index(flag) + 1] = str(port)
            admin_ports.append(int(value(words, "--admin-port")))
            words += ["--xds-address", f"127.0.0.1:{tls_port}"]
            words += ["--termination-drain-duration", "0.5"]
            agents.start(words, environment)
        ready = [c[-1] for c in curls if c[-1].endswith("/healthz/ready")]
        for url in ready:
            await wait_ready(renamed[url.rsplit(":", 1)[1].split("/")[0]], agents)
        await wait_for_port(inbound, timeout=15)
        await wait_for_port(service, timeout=15)

        # 5. productpage -> mutual TLS -> ratings -> the application
        report = await send_requests(LOOPBACK, service, 3, authority=HOST, total_timeout=15)
        assert report.ok == 3, report.summary() + agents.describe()
        for result in report.results:
            headers = {k.lower(): v for k, v in json.loads(result.body)["headers"].items()}
            assert PRODUCTPAGE_ID in headers["x-forwarded-client-cert"]
        plaintext = await send_requests(LOOPBACK, inbound, 1, authority=HOST, total_timeout=5)
        assert plaintext.ok == 0, plaintext.summary()
        for port in admin_ports:  # the Envoys as their agents started them
            info = json.loads((await fetch(LOOPBACK, port, "/server_info")).body)
            options = info["command_line_options"]
            assert options["drain_strategy"] == "Immediate"
            assert options["drain_time"] == "45s"
            assert options["disable_hot_restart"] is True
        for words in commands[4:]:  # the bootstraps the agents wrote: their sockets only
            written = (work / value(words, "--bootstrap")).read_text()
            assert "PRIVATE KEY" not in written and "Bearer" not in written
            assert "transport_socket" not in written  # no TLS towards pilothouse
            assert value(words, "--xds-socket") in written

        # keys stayed with the agents: two CSRs, two certificates, no key made here
        metrics = (await running.request("GET", "/metrics")).body
        assert sample(metrics, "citadel_server_csr_count") == 2
        assert sample(metrics, "citadel_server_success_cert_issuance_count") == 2
        issued = [r for r in caplog.records if r.getMessage() == "certificate issued"]
        assert [r.name for r in issued] == ["pilothouse.ca", "pilothouse.ca"]
        assert "PRIVATE KEY" not in caplog.text
        assert await asyncio.to_thread(agents.stop) == [0, 0], agents.describe()
    assert ca_dir.ROOT_CERT == "root-cert.pem"  # the README's path inside the CA directory
