"""The guide "Workloads without Kubernetes" (``docs/guides/without-kubernetes.md``), run as
written, with real Envoys started by real ``pilothouse agent`` processes.

The mesh is the page's YAML block and the commands are the page's "Step by step" block,
run from a working directory of their own: ``workload entry configure`` and the ``cp``,
``curl`` and ``pilothouse agent`` lines as written, after one rewrite of the page's fixed
ports into free ones (the application's port becomes an echo server's, which stands in
for ``python3 -m http.server``). ``serve --config mesh`` runs in this process with no
issuer flag: the token issuer that ``configure`` creates after it started is trusted by
default. The agents drain their Envoy for 0.5 s instead of 5 s when stopped
(``--termination-drain-duration``) and find ``envoy`` on ``PATH`` (the wheel's).

Asserted: the agent lines on the page are exactly what ``configure`` printed; each agent
answers ``/healthz/ready``; productpage's request reaches the application over mutual TLS
(the application sees productpage's SPIFFE id in ``x-forwarded-client-cert``), its
``/admin/`` request is denied by the AuthorizationPolicy (403 ``RBAC: access denied``) and
a plaintext request to ratings' STRICT port is refused; each Envoy runs with
istio-agent's drain flags from a bootstrap naming its agent's sockets and holding no
token, key or TLS towards pilothouse; the server issued exactly the two certificates the
agents asked for with CSRs and made no key; each agent exits 0 when stopped. The last
section's ``bootstrap`` command runs too and its Envoy line has the drain flags.
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
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.harness.cli_in_process import run_cli_in_thread
from tests.e2e.harness.envoy import envoy_binary
from tests.e2e.harness.ports import LOOPBACK, free_port
from tests.e2e.harness.upstreams import UpstreamPool
from tests.integration.serve_in_process import serve_in_process

pytestmark = pytest.mark.timeout(90)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "without-kubernetes.md"
PRODUCTPAGE_ID = "spiffe://cluster.local/ns/shop/sa/productpage"
SIDE_BY_SIDE = ("--sds-socket", "--xds-socket", "--bootstrap", "--admin-port", "--status-port")
"""What two agents in one directory must each have of their own."""
PORTS = ("15010", "15012", "15014", "9080", "9081", "8000", "15100", "15101", "15120", "15121")
"""The page's fixed ports, each rewritten into one of the test's own."""
DRAIN_FLAGS = ("--drain-time-s", "45", "--drain-strategy", "immediate", "--disable-hot-restart")


@dataclass(frozen=True)
class Line:
    """One command of a block: its words (continuations joined, ``&`` dropped) and the
    comment after it (what the page says it answers)."""

    words: list[str]
    comment: str


def page_blocks(rewrite: Callable[[str], str] = lambda text: text) -> tuple[str, list[list[Line]]]:
    """The page's YAML block and its shell blocks, after ``rewrite``."""
    text = rewrite(PAGE.read_text())
    (mesh,) = re.findall(r"```yaml\n(.*?)```", text, re.S)
    blocks = []
    for shell in re.findall(r"```sh\n(.*?)```", text, re.S):
        lines = []
        for line in shell.replace("\\\n", " ").splitlines():
            words = [w for w in shlex.split(line, comments=True) if w != "&"]
            if words:
                comment = line.rsplit(" # ", 1)[1].strip() if " # " in line else ""
                lines.append(Line(words, comment))
        blocks.append(lines)
    return mesh, blocks


def value(words: list[str], flag: str) -> str:
    return words[words.index(flag) + 1]


def test_the_page_runs_two_agents_side_by_side_with_a_policy_between_them() -> None:
    mesh, (steps, agentless) = page_blocks()
    assert "mode: STRICT" in mesh and "kind: AuthorizationPolicy" in mesh
    assert "kind: WorkloadGroup" in mesh and "kind: WorkloadEntry" not in mesh  # configure's
    programs = [line.words[0] if line.words[0] != "pilothouse" else line.words[1] for line in steps]
    assert programs == ["serve", "curl", "workload", "workload", "cp", "cp", "python3",
                        "agent", "agent", "curl", "curl", "curl", "curl", "curl"]  # fmt: skip
    assert steps[0].words == ["pilothouse", "serve", "--config", "mesh"]  # no issuer flag
    agents = [line.words for line in steps if line.words[1:2] == ["agent"]]
    for flag in SIDE_BY_SIDE:  # two agents, one directory: nothing shared
        assert value(agents[0], flag) != value(agents[1], flag), flag
    ready = [line.words[-1] for line in steps if line.words[-1].endswith("/healthz/ready")]
    assert [url.rsplit(":", 1)[1].split("/")[0] for url in ready] == [
        value(words, "--status-port") for words in agents
    ]
    assert [line.comment[:3] for line in steps[-3:]] == ["200", "403", "ref"]
    (envoy,) = [line.words for line in agentless if line.words[0] == "envoy"]
    for flag, given in zip(DRAIN_FLAGS[::2], DRAIN_FLAGS[1::2], strict=False):
        assert value(envoy, flag) == given
    assert "--disable-hot-restart" in envoy


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


async def curl(words: list[str]) -> tuple[str, str]:
    """A page's ``curl`` line as written (plus a time limit and the status on a last
    line): the HTTP status (``000`` for none) and the body."""
    process = await asyncio.create_subprocess_exec(
        *words, "-sS", "-m", "5", "-w", "\n%{http_code}", stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    out, _ = await process.communicate()
    body, _, status = out.decode().rpartition("\n")
    return status, body


async def curl_until(words: list[str], status: str, why: Callable[[], str]) -> str:
    """The body of the first answer with ``status``, asked every 0.1 s for up to 30 s
    (an agent's Python and Envoy take seconds to start on a loaded machine)."""
    deadline = time.monotonic() + 30
    while True:
        got, body = await curl(words)
        if got == status:
            return body
        if time.monotonic() > deadline:
            raise AssertionError(f"{shlex.join(words)}: {got} {body}\n{why()}")
        await asyncio.sleep(0.1)


async def test_two_workloads_talk_mutual_tls_under_a_policy_without_kubernetes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    upstream_factory: UpstreamPool,
    agents: Agents,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="pilothouse")
    app = await upstream_factory("ratings-app")
    ports = {port: str(free_port()) for port in PORTS}
    ports["8000"] = str(app.port)

    def rewrite(text: str) -> str:
        return re.sub(r"\b(" + "|".join(PORTS) + r")\b", lambda m: ports[m.group(1)], text)

    work = tmp_path / "work"
    (work / "mesh").mkdir(parents=True)
    (work / "mesh" / "shop.yaml").write_text(page_blocks(rewrite)[0])
    ca = Path(os.environ["PILOTHOUSE_CA_DIR"])  # tests/conftest.py: one CA for the suite
    (work / ".pilothouse").mkdir()
    (work / ".pilothouse" / "ca").symlink_to(ca)
    monkeypatch.chdir(work)
    environment = dict(os.environ)
    environment["PATH"] = f"{envoy_binary().parent}{os.pathsep}{environment['PATH']}"
    overrides = {
        "xds.address": f"127.0.0.1:{ports['15010']}",
        "xds.tls_address": f"127.0.0.1:{ports['15012']}",
        "admin.address": f"127.0.0.1:{ports['15014']}",
        "ca.dir": str(ca),
    }
    async with serve_in_process(monkeypatch, work / "mesh", overrides) as running:
        _, (steps, agentless) = page_blocks(rewrite)
        # 1. serve (in this process, as the line says: no issuer flag), then /ready
        assert steps[0].words == ["pilothouse", "serve", "--config", "mesh"]
        assert not (work / ".pilothouse" / "token-issuer").exists()  # made in step 2
        ready = await curl_until(steps[1].words, "200", lambda: "")
        assert ready.startswith("ok") and steps[1].comment.startswith("ok")
        # 2. configure: the files, and the agent command it prints
        printed: list[list[str]] = []
        for line in steps[2:4]:
            done = await run_cli_in_thread(*line.words[1:])
            assert done.returncode == 0, done.stderr
            command = rewrite(done.stdout[done.stdout.index("pilothouse agent") :])
            printed.append(shlex.split(command.replace("\\\n", " ")))
        # 3. the WorkloadEntries join the mesh
        for line in steps[4:6]:
            assert line.words[0] == "cp"
            copied = await asyncio.create_subprocess_exec(*line.words)
            assert await copied.wait() == 0
        assert steps[6].words[:3] == ["python3", "-m", "http.server"]  # the echo app instead
        # 5. the agents: the lines configure printed, each starting its Envoy
        agent_lines = [line.words for line in steps[7:9]]
        assert agent_lines == printed
        for words in agent_lines:
            agents.start([*words[1:], "--termination-drain-duration", "0.5"], environment)
        for line in steps[9:11]:
            await curl_until(line.words, "200", agents.describe)

        # 6. allowed, with productpage's identity; denied by the policy; refused plaintext
        allowed, denied, plaintext = steps[11:14]
        body = await curl_until(allowed.words, allowed.comment, agents.describe)
        headers = {k.lower(): v for k, v in json.loads(body)["headers"].items()}
        assert PRODUCTPAGE_ID in headers["x-forwarded-client-cert"]
        status, body = await curl(denied.words)
        assert f"{status} {body}" == denied.comment == "403 RBAC: access denied"
        status, _ = await curl(plaintext.words)
        assert status == "000" and plaintext.comment.startswith("refused")

        for words in agent_lines:  # the Envoys as their agents started them
            port = value(words, "--admin-port")
            _, info_text = await curl(["curl", f"http://{LOOPBACK}:{port}/server_info"])
            options = json.loads(info_text)["command_line_options"]
            assert options["drain_strategy"] == "Immediate"
            assert options["drain_time"] == "45s"
            assert options["disable_hot_restart"] is True
            written = (work / value(words, "--bootstrap")).read_text()  # its sockets only
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

    # without a node agent: the bootstrap command as written, with the token
    (bootstrap,) = [line.words for line in agentless if line.words[1:2] == ["bootstrap"]]
    words, target = bootstrap[: bootstrap.index(">")], bootstrap[bootstrap.index(">") + 1]
    done = await run_cli_in_thread(*words[1:])
    assert done.returncode == 0, done.stderr
    token = (work / "ratings" / "istio-token").read_text().strip()
    assert f"Bearer {token}" in done.stdout and target == "ratings/envoy.yaml"
