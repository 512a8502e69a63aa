"""The README's first sidecar works as written: its Quick start commands, run as a user
runs them (each its own process), serve the example mesh, start a stand-in workload and
productpage's sidecar Envoy, and the README's curl through that sidecar reaches the
workload.

The commands are read from the README's "A first sidecar" block, not copied here, so
the test fails when the README drifts. Only what a shared test machine needs changes:
the ports (9080 and 19081 become free ports, in the commands and in a copy of
``examples/`` alike; serve and bootstrap get free xDS and admin ports), the bootstrap
file's path, and ``.venv/bin`` (this interpreter's directory; Envoy the wheel's).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.harness.ports import port_accepts

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
HEADING = "### A first sidecar, with something to curl"


def readme_commands() -> list[list[str]]:
    """The commands of the README's first-sidecar block, continuation lines joined."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index(HEADING) :]
    block = section[section.index("```sh\n") + len("```sh\n") :]
    block = block[: block.index("```")]
    joined = block.replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in joined.splitlines() if line.strip()]


def rewrite_ports(text: str, ports: dict[int, int]) -> str:
    for old, new in ports.items():
        text = re.sub(rf"\b{old}\b", str(new), text)
    return text


def wait_until(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    processes: list[subprocess.Popen[bytes]] = []
    try:
        yield processes
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()


def test_the_readme_first_sidecar_reaches_details(
    tmp_path: Path,
    envoy_path: Path,
    free_port: Callable[[], int],
    started: list[subprocess.Popen[bytes]],
) -> None:
    commands = readme_commands()
    assert [c[0].rpartition("/")[2] for c in commands] == [
        "pilothouse", "python", "pilothouse", "envoy", "curl",
    ]  # fmt: skip
    serve, workload, bootstrap, envoy, curl = commands
    assert serve[1:] == ["serve", "--config", "examples/"]
    assert bootstrap[1] == "bootstrap" and bootstrap[-2] == ">"

    ports = {9080: free_port(), 19081: free_port()}
    xds, admin, envoy_admin = free_port(), free_port(), free_port()
    mesh = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", mesh)
    for path in mesh.rglob("*.yaml"):
        path.write_text(rewrite_ports(path.read_text(), ports))
    bin_dir = Path(sys.executable).parent
    logs = tmp_path / "logs"
    logs.mkdir()

    def command(words: list[str]) -> list[str]:
        """A README command, with this machine's paths and the test's ports."""
        found = []
        for word in words:
            word = rewrite_ports(word, ports)
            if word.startswith(".venv/bin/"):
                name = word.rpartition("/")[2]
                word = str(envoy_path) if name == "envoy" else str(bin_dir / name)
            found.append(
                {"examples/": str(mesh), "/tmp/envoy.yaml": str(tmp_path / "envoy.yaml")}.get(
                    word, word
                )
            )
        return found

    def start(words: list[str], name: str, cwd: Path = tmp_path) -> None:
        log = (logs / f"{name}.log").open("wb")
        started.append(subprocess.Popen(words, cwd=cwd, stdout=log, stderr=subprocess.STDOUT))

    start(
        [
            *command(serve),
            *("--xds-address", f"127.0.0.1:{xds}", "--admin-address", f"127.0.0.1:{admin}"),
            *("--ctrlz-address", "127.0.0.1:0", "--xds-tls-address", ""),
        ],
        "serve",
    )
    www = tmp_path / "www"
    www.mkdir()
    (www / "details-v1.txt").write_text("details\n")
    start(command(workload), "workload", cwd=www)

    printed = subprocess.run(
        [
            *command(bootstrap[:-2]),
            *("--xds-address", f"127.0.0.1:{xds}", "--admin-port", str(envoy_admin)),
        ],
        capture_output=True,
        check=True,
        timeout=30,
    )
    Path(command(bootstrap[-1:])[0]).write_bytes(printed.stdout)
    wait_until(lambda: port_accepts(admin) and port_accepts(ports[19081]), "serve and workload")
    start(command(envoy), "envoy")

    answers: list[str] = []

    def reached() -> bool:
        done = subprocess.run(command(curl), capture_output=True, text=True, timeout=10)
        answers.append(f"{done.returncode}: {done.stdout[-200:]}")
        return "details-v1.txt" in done.stdout

    try:
        wait_until(reached, "the README's curl to reach details through the sidecar")
    except AssertionError:
        for log in sorted(logs.iterdir()):
            print(f"--- {log.name}\n{log.read_text()[-3000:]}")
        print("--- curl\n" + "\n".join(answers[-3:]))
        raise
