"""sovereign, the REST benchmark's baseline: its own virtualenv, and serving given clusters.

sovereign (PyPI; Atlassian's Python Envoy control plane) brings FastAPI, pydantic,
gunicorn and uvicorn at versions of its own, so it lives in
``<project>/.bench/sovereign-venv`` (git-ignored), created on first use and reused while
it holds the pinned version, with its ``orjson`` and ``httptools`` extras.

It renders every response from a template and the "instances" of its sources. Here the
one source is ``inline`` holding the very clusters pilothouse serves, and the
``clusters`` template is a Python module returning them as they are: sovereign's
cheapest path (no Jinja, no YAML, no copies), node matching and access logs off, its
orjson encoder: the baseline is sovereign at its best, not a strawman.

With one worker (the default: pilothouse is one process too) its ASGI app runs under the
uvicorn it ships with, in one process (as ``python -m sovereign.app`` does; uvloop,
httptools), killed by the kernel if the benchmark dies. With more workers it runs under
its ``sovereign`` command (a gunicorn master and ``SOVEREIGN_WORKERS`` uvicorn workers),
stopped as a process group. Either way in a working directory of its own (it reads a
``.env`` from the cwd), on a port chosen at run time."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

from bench.harness.child import Child, ChildFailed, free_port

SOVEREIGN_VERSION: Final = "0.32.12"
REQUIREMENT: Final = f"sovereign[orjson,httptools]=={SOVEREIGN_VERSION}"
VENV_PATH: Final = Path(".bench") / "sovereign-venv"
"""Relative to the project root."""

_PROBE: Final = (
    "import importlib.metadata as m, orjson, httptools, uvloop; print(m.version('sovereign'))"
)


class VenvFailed(RuntimeError):
    """The venv could not be created or sovereign could not be installed."""


def installed_version(venv: Path) -> str | None:
    """The sovereign version installed in ``venv`` (with its extras), or None."""
    python = venv / "bin" / "python"
    if not python.exists():
        return None
    done = subprocess.run(
        [str(python), "-c", _PROBE], capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def ensure_venv(venv: Path, timeout: float = 240.0) -> float:
    """Make ``venv`` hold the pinned sovereign; seconds spent installing (0: reused)."""
    if installed_version(venv) == SOVEREIGN_VERSION:
        return 0.0
    began = time.monotonic()
    venv.parent.mkdir(parents=True, exist_ok=True)
    steps = (
        [sys.executable, "-m", "venv", str(venv)],
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", REQUIREMENT],
    )
    for argv in steps:
        left = timeout - (time.monotonic() - began)
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=max(left, 1.0), check=False
            )
        except subprocess.TimeoutExpired:
            raise VenvFailed(f"{' '.join(argv)}: not done in {timeout:.0f} s") from None
        if done.returncode != 0:
            raise VenvFailed(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    found = installed_version(venv)
    if found != SOVEREIGN_VERSION:
        raise VenvFailed(f"{venv} holds sovereign {found}, not {SOVEREIGN_VERSION}")
    return time.monotonic() - began


TEMPLATE: Final = '''\
"""sovereign template for the REST discovery benchmark: the source's clusters as they are."""


def call(instances, **_):
    return instances
'''


ONE_PROCESS: Final = """\
import sys
import uvicorn
from sovereign.app import app
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=False, log_level="warning")
"""
"""sovereign's own single-process start (``python -m sovereign.app``) on a given address.
The app is imported before uvicorn's loop runs (sovereign loads its context with
``asyncio.run`` at import time, so ``uvicorn sovereign.app:app`` cannot start it)."""


def sovereign_config(clusters: list[dict[str, Any]], template: Path) -> dict[str, Any]:
    """sovereign's (v2) configuration serving ``clusters`` as CDS."""
    return {
        "templates": {
            "default": [
                {
                    "type": "clusters",
                    "spec": {"protocol": "python", "serialization": "raw", "path": str(template)},
                }
            ]
        },
        "sources": [{"type": "inline", "config": {"instances": clusters}}],
        "matching": {"enabled": False},
        "logging": {"access_logs": {"enabled": False}},
    }


def write_config(directory: Path, clusters: list[dict[str, Any]]) -> Path:
    """The template module and the configuration file; returns the configuration's path."""
    directory.mkdir(parents=True, exist_ok=True)
    template = directory / "clusters_template.py"
    template.write_text(TEMPLATE, encoding="utf-8")
    config = directory / "sovereign.json"
    config.write_text(json.dumps(sovereign_config(clusters, template)), encoding="utf-8")
    return config


def healthy(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", "/healthcheck")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


class Sovereign:
    """A running sovereign; call :meth:`stop` (also on failure)."""

    def __init__(self, venv: Path, workdir: Path, config: Path, workers: int) -> None:
        self.port = free_port()
        env = {
            "SOVEREIGN_CONFIG": f"file+json://{config}",
            "SOVEREIGN_HOST": "127.0.0.1",
            "SOVEREIGN_PORT": str(self.port),
            "SOVEREIGN_WORKERS": str(workers),
            "PYTHONPATH": "",
        }
        if workers == 1:
            command = [str(venv / "bin" / "python"), "-c", ONE_PROCESS, str(self.port)]
        else:
            command = [str(venv / "bin" / "sovereign")]
        # In a directory of its own: its settings also read a ``.env`` from the cwd.
        argv = ["/bin/sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", str(workdir), *command]
        self.child = Child("sovereign", argv, workdir / "sovereign.log", env)

    @property
    def pgrp(self) -> int:
        return self.child.pid

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v3/discovery:clusters"

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not healthy(self.port):
            self.child.check(deadline, "/healthcheck", timeout)
            time.sleep(0.1)

    def stop(self) -> None:
        self.child.stop()


def start_sovereign(
    venv: Path, workdir: Path, clusters: list[dict[str, Any]], workers: int, timeout: float
) -> Sovereign:
    """sovereign serving ``clusters``, answering its health check (stopped if it does not)."""
    config = write_config(workdir, clusters)
    server = Sovereign(venv, workdir, config, workers)
    try:
        server.wait_healthy(timeout)
    except ChildFailed:
        server.stop()
        raise
    return server
