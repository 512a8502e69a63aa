"""The README's "Mutual TLS without Kubernetes" walkthrough, step by step, with real Envoys.

The mesh is the README's YAML block and the commands are the README's ``pilothouse
token`` and ``pilothouse bootstrap`` lines, run as written from a working directory of
their own; only ports change (the walkthrough's fixed ports become free ones) and the
server runs in this process (its TLS port on a free port, trusting what
``pilothouse token issuer`` printed). Both Envoys start with the README's flags. A request
through productpage's sidecar reaches the application over mutual TLS (the application
sees productpage's SPIFFE id in ``x-forwarded-client-cert``), and a plaintext request to
ratings' STRICT port is refused.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest

from pilothouse.security import ca_dir
from tests.e2e.harness.cli_in_process import run_cli_in_thread
from tests.e2e.harness.client import send_requests
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port, wait_for_port
from tests.e2e.harness.upstreams import UpstreamPool
from tests.integration.serve_in_process import serve_in_process

pytestmark = pytest.mark.timeout(90)

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## Mutual TLS without Kubernetes"
HOST = "ratings.shop.svc.cluster.local"
PRODUCTPAGE_ID = "spiffe://cluster.local/ns/shop/sa/productpage"


def walkthrough() -> tuple[str, list[list[str]], list[list[str]]]:
    """The section's YAML, its ``pilothouse`` commands and its ``envoy`` commands (each a
    word list, continuation lines joined, comments and ``&`` dropped)."""
    text = README.read_text()
    start = text.index(SECTION)
    section = text[start : text.index("\n## ", start + 1)]
    (yaml_block,) = re.findall(r"```yaml\n(.*?)```", section, re.S)
    (shell,) = re.findall(r"```sh\n(.*?)```", section, re.S)
    joined = shell.replace("\\\n", " ")
    pilothouse, envoy = [], []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        words = [w for w in words if w != "&"]
        if words[:1] == ["pilothouse"]:
            pilothouse.append(words[1:])
        elif words[:1] == ["envoy"]:
            envoy.append(words[1:])
    return yaml_block, pilothouse, envoy


def test_the_walkthrough_is_in_the_readme_and_uses_istio_agent_s_drain_flags() -> None:
    mesh, commands, envoys = walkthrough()
    assert "security.istio.io/tlsMode: istio" in mesh and "mode: STRICT" in mesh
    assert [c[:2] for c in commands] == [
        ["token", "issuer"],
        ["serve", "--config"],
        ["token", "create"],
        ["token", "create"],
        ["bootstrap", "--node"],
        ["bootstrap", "--node"],
    ]
    for words in envoys:
        assert words[words.index("--drain-strategy") + 1] == "immediate"
        assert "--drain-time-s" in words and "--disable-hot-restart" in words


async def test_two_sidecars_talk_mutual_tls_without_kubernetes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    envoy_factory: EnvoyFleet,
    upstream_factory: UpstreamPool,
) -> None:
    mesh, commands, envoys = walkthrough()
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
        # 2. tokens; 4. bootstraps over TLS xDS, each written where the README writes it
        for words in commands[2:]:
            words, target = words[: words.index(">")], words[words.index(">") + 1]
            if words[0] == "bootstrap":
                words = [*words, "--xds-address", f"127.0.0.1:{tls_port}"]
                words[words.index("--admin-port") + 1] = "0"
                words += ["-o", "json"]
            done = await run_cli_in_thread(*words)
            assert done.returncode == 0, done.stderr
            assert "tlsMode" not in done.stderr  # both are labelled as the README says
            (work / target).write_text(done.stdout)
        sidecars = []
        for words in envoys:
            bootstrap = json.loads((work / words[words.index("-c") + 1]).read_text())
            flags = [w for w in words if w not in ("--disable-hot-restart",)]
            flags = flags[flags.index("-c") + 2 :]  # the harness adds -c and hot restart
            sidecars.append(await envoy_factory(bootstrap, extra_args=tuple(flags)))
        await wait_for_port(inbound, timeout=15)
        await wait_for_port(service, timeout=15)

        # 5. productpage -> mutual TLS -> ratings -> the application
        report = await send_requests(LOOPBACK, service, 3, authority=HOST, total_timeout=15)
        assert report.ok == 3, report.summary()
        for result in report.results:
            headers = {k.lower(): v for k, v in json.loads(result.body)["headers"].items()}
            assert PRODUCTPAGE_ID in headers["x-forwarded-client-cert"]
        plaintext = await send_requests(LOOPBACK, inbound, 1, authority=HOST, total_timeout=5)
        assert plaintext.ok == 0, plaintext.summary()
        for sidecar in sidecars:
            info = json.loads((await sidecar.admin("/server_info")).body)
            options = info["command_line_options"]
            assert options["drain_strategy"] == "Immediate"
            assert options["drain_time"] == "45s"
    assert ca_dir.ROOT_CERT == "root-cert.pem"  # the README's path inside the CA directory
