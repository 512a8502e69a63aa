"""sovereign serving a given set of clusters over its REST discovery endpoint.

sovereign renders every discovery response from a template and the "instances" its
sources hold. Here the one source is ``inline`` and its instances are the clusters
themselves (the very JSON pilothouse serves, so both answers carry the same
clusters and nearly the same bytes); the ``clusters`` template is a Python module
whose ``call`` returns them as they are. That is the cheapest rendering sovereign
offers (no Jinja, no YAML, no copies), with node matching off (every node gets every
instance), access logs off and its orjson encoder: the baseline is sovereign at its
best, not a strawman.

With one worker (the default: pilothouse is one process too) sovereign's ASGI app
runs under the uvicorn it ships with, in one process, as its own ``python -m
sovereign.app`` does and as its gunicorn worker class would (uvloop, httptools, no
access log), so the kernel kills it if the benchmark dies. With more workers it runs
under its own ``sovereign`` command (a gunicorn master and ``SOVEREIGN_WORKERS``
uvicorn workers), which the benchmark stops as a process group; only a benchmark
killed with SIGKILL would leave those workers behind. Either way it runs in a working
directory of its own, on a port chosen at run time.
"""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path
from typing import Any, Final

from bench.harness.child import Child, ChildFailed, free_port

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
