"""The fake Kubernetes API server in a child process, for the kube benchmarks.

``tests/kube/fake_apiserver.py`` is a fake (no real API server can run here); it runs in
a process of its own so that its JSON encoding does not share the benchmark's CPU. The
child creates the given objects, writes a kubeconfig pointing at itself, says ``ready``,
then takes one write per stdin line (``apply JSON`` or ``status JSON``, as ``kubectl
apply`` and a kubelet's status update), answering ``ok``; it stops when stdin closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class FakeApiChild:
    """The child: started holding ``objects``, its kubeconfig written to ``kubeconfig``."""

    def __init__(self, objects: Iterable[dict[str, Any]], kubeconfig: Path) -> None:
        held = kubeconfig.with_name(kubeconfig.name + ".objects.json")
        held.write_text(json.dumps(list(objects)), encoding="utf-8")
        self._child = subprocess.Popen(
            [sys.executable, "-m", "bench.harness.kube_api", str(held), str(kubeconfig)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        if self._answer() != "ready":
            self.stop()
            raise RuntimeError("the fake API server did not start")

    def _answer(self) -> str:
        assert self._child.stdout is not None
        return self._child.stdout.readline().strip()

    def write(self, *changes: tuple[str, dict[str, Any]]) -> None:
        """Each ``(verb, object)`` in turn (``apply`` or ``status``); returns once the
        server holds them all."""
        assert self._child.stdin is not None
        self._child.stdin.writelines(f"{verb} {json.dumps(obj)}\n" for verb, obj in changes)
        self._child.stdin.flush()
        for _ in changes:
            if (answer := self._answer()) != "ok":
                raise RuntimeError(f"fake API server answered {answer!r}")

    def stop(self) -> None:
        if self._child.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self._child.stdin.close()
        try:
            self._child.wait(30)
        except subprocess.TimeoutExpired:
            self._child.kill()
            self._child.wait(10)


async def _serve(held: Path, kubeconfig: Path) -> None:
    from tests.kube.fake_apiserver import FakeApiServer

    loop = asyncio.get_running_loop()
    async with FakeApiServer() as api:
        for obj in json.loads(held.read_text(encoding="utf-8")):
            api.create(obj)
        api.kubeconfig(kubeconfig)
        print("ready", flush=True)
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            verb, _, text = line.partition(" ")
            (api.update_status if verb == "status" else api.apply)(json.loads(text))
            print("ok", flush=True)


if __name__ == "__main__":
    asyncio.run(_serve(Path(sys.argv[1]), Path(sys.argv[2])))
