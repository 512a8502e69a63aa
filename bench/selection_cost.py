"""Benchmark: what a warm push costs a fleet whose proxies get Telemetry, WasmPlugins and
EnvoyFilters, this tree against another in the same run.

A mesh of S services in two namespaces, a Telemetry in the root namespace (access logs
for everyone) and one selecting a workload, a WasmPlugin in the root namespace (its
module given), an EnvoyFilter in the root namespace patching every cluster and one in
``shop`` whose patch matches on the proxy's ``ISTIO_VERSION``; P sidecars, ten workloads
per namespace, every pod with its own name and address. After a first push (every
proxy's CDS, LDS, RDS and ECDS generated into the cache), each round times one push of
every proxy's four types after a change:

- ``unrelated``: a VirtualService none of these kinds reads is edited (the common push);
- ``telemetry_edit``: the Telemetry selecting a workload of ``bank`` is edited.

Generation reads each proxy's telemetry, plugins and patches from the push context; the
figure is CPU microseconds per proxy per push, of the fastest round (the one the
machine's other work disturbed least).

Run alone it measures this tree's package. ``--old-src DIR`` compares: it runs itself
``--pairs`` times with each tree's package first on the path (``DIR``, then this tree's
``src``), old and new interleaved and the order flipped every pair, and prints each
figure's old ÷ new ratio per pair (above 1: this tree is faster) with their median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SERVICE = """\
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: svc-{i}, namespace: {namespace}}}
spec:
  hosts: [svc-{i}.{namespace}.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{name: http, number: {port}, protocol: HTTP}}]
  endpoints: [{{address: 10.1.{octet}.1}}]
"""

KINDS = """\
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: mesh-default, namespace: istio-system}
spec:
  accessLogging: [{providers: [{name: envoy}]}]
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: w1-logs, namespace: bank}
spec:
  selector: {matchLabels: {app: w1}}
  accessLogging: [{providers: [{name: envoy}], filter: {expression: "response.code >= 400"}}]
---
apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata: {name: headers, namespace: istio-system}
spec:
  url: file:///plugins/headers.wasm
  phase: STATS
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: timeouts, namespace: istio-system}
spec:
  configPatches:
  - applyTo: CLUSTER
    patch: {operation: MERGE, value: {connect_timeout: 2s}}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: new-proxies, namespace: shop}
spec:
  configPatches:
  - applyTo: CLUSTER
    match: {proxy: {proxyVersion: "^1\\\\.2[0-9]"}}
    patch: {operation: MERGE, value: {per_connection_buffer_limit_bytes: 65536}}
"""

VIRTUAL_SERVICE = """\
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: elsewhere, namespace: other}}
spec:
  hosts: [elsewhere.other.svc.cluster.local]
  http: [{{route: [{{destination: {{host: elsewhere.other.svc.cluster.local}}}}], timeout: {t}s}}]
"""

EDITED_TELEMETRY = """\
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {{name: w1-logs, namespace: bank}}
spec:
  selector: {{matchLabels: {{app: w1}}}}
  accessLogging:
  - providers: [{{name: envoy}}]
    filter: {{expression: "response.code >= {code}"}}
"""

NAMESPACES = ("shop", "bank")
WORKLOADS = 10


def measure(services: int, proxies: int, rounds: int) -> dict[str, float]:
    """CPU µs per proxy per push, the fastest of ``rounds``, for each change."""
    from pilothouse.config.load import Loader
    from pilothouse.config.mesh import MeshSettings
    from pilothouse.kinds.table import SCHEMAS
    from pilothouse.kinds.wasm_plugin import resource_name
    from pilothouse.push.cache import ResourceCache
    from pilothouse.push.context import build_context
    from pilothouse.push.proxy import parse_node
    from pilothouse.push.request import PushRequest
    from pilothouse.registry.controller import ServiceEntryRegistry
    from pilothouse.security.wasm_modules import WasmModule
    from pilothouse.sources.memory import MemoryStore
    from pilothouse.xds.generators.base import GenerationInput
    from pilothouse.xds.generators.cds import ClusterGenerator
    from pilothouse.xds.generators.ecds import ExtensionConfigGenerator
    from pilothouse.xds.generators.lds import ListenerGenerator
    from pilothouse.xds.generators.rds import RouteGenerator

    store = MemoryStore("bench")  # gives each applied object a new resource version

    def apply(text: str) -> list[Any]:
        loaded = Loader(SCHEMAS, source="bench").load_strict(text, "mesh.yaml")
        return [c.key for c in loaded if store.apply(c) is not None]

    apply(
        "".join(
            SERVICE.format(i=i, namespace=NAMESPACES[i % 2], port=8000 + i, octet=i % 250)
            for i in range(services)
        )
        + KINDS
        + VIRTUAL_SERVICE.format(t=1)
    )
    store.mark_synced()
    registry = ServiceEntryRegistry(store, lambda update: None)
    registry.initial_load()
    module = WasmModule("0" * 64, b"\0asm\x01\0\0\0")
    mesh = MeshSettings()

    def modules(url: str, sha256: str) -> WasmModule:
        return module

    fleet = []
    for p in range(proxies):
        ns, app = NAMESPACES[p % 2], f"w{p // 2 % WORKLOADS}"
        node = f"sidecar~10.{p % 2}.{p // 250}.{p % 250}~{app}-{p}.{ns}~{ns}.svc.cluster.local"
        meta = {"LABELS": {"app": app}, "ISTIO_VERSION": "1.24.0", "POD_NAME": f"{app}-{p}"}
        fleet.append(parse_node(node, meta))
    plugin_names = frozenset({resource_name("istio-system", "headers")})
    cache = ResourceCache()
    generators = (ClusterGenerator(), ListenerGenerator(), RouteGenerator())
    ecds = ExtensionConfigGenerator()

    def push(context: Any) -> float:
        start = time.process_time()
        endpoints = registry.endpoint_index
        for proxy in fleet:
            scope = context.scope(proxy)
            for generator in generators:
                generator.generate(GenerationInput(proxy, scope, context, endpoints, cache))
            ecds.generate(
                GenerationInput(proxy, scope, context, endpoints, cache, names=plugin_names)
            )
        return time.process_time() - start

    context = build_context(store, registry.services, mesh, "v0", wasm_modules=modules)
    push(context)
    found: dict[str, list[float]] = {"unrelated": [], "telemetry_edit": []}
    for number in range(rounds):
        for change, text in (
            ("unrelated", VIRTUAL_SERVICE.format(t=number + 2)),
            ("telemetry_edit", EDITED_TELEMETRY.format(code=400 + number + 1)),
        ):
            changed = apply(text)
            cache.invalidate(changed)
            context = build_context(
                store,
                registry.services,
                mesh,
                f"v{number}{change}",
                context,
                PushRequest.for_configs(changed),
                wasm_modules=modules,
            )
            found[change].append(push(context))
    return {change: min(t) / len(fleet) * 1e6 for change, t in found.items()}


def compare(old_src: Path, pairs: int, arguments: list[str]) -> None:
    """This script, ``pairs`` times from each tree interleaved; old ÷ new per pair."""
    new_src = Path(__file__).resolve().parent.parent / "src"

    def run(src: Path) -> dict[str, float]:
        environment = dict(os.environ, PYTHONPATH=str(src))
        out = subprocess.run(
            [sys.executable, __file__, *arguments],
            env=environment,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        result: dict[str, float] = json.loads(out.splitlines()[-1])["us_per_proxy"]
        return result

    ratios: dict[str, list[float]] = {}
    figures: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    for pair in range(pairs):
        order = ("old", "new") if pair % 2 == 0 else ("new", "old")
        taken = {side: run(old_src if side == "old" else new_src) for side in order}
        for change in taken["new"]:
            for side in ("old", "new"):
                figures[side].setdefault(change, []).append(taken[side][change])
            ratios.setdefault(change, []).append(taken["old"][change] / taken["new"][change])
    for change, values in ratios.items():
        print(
            json.dumps(
                {
                    "benchmark": f"selection_cost_{change}",
                    "baseline": f"the same push from {old_src}, interleaved in the same run",
                    "baseline_us_per_proxy": [round(v, 1) for v in figures["old"][change]],
                    "pilothouse_us_per_proxy": [round(v, 1) for v in figures["new"][change]],
                    "ratios": [round(v, 3) for v in values],
                    "ratio_to_baseline": round(statistics.median(values), 3),
                    "ratio_definition": "baseline ÷ this tree per pair, median (>1: faster)",
                }
            ),
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--services", type=int, default=40)
    parser.add_argument("--proxies", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--old-src", type=Path, help="another tree's src/ to compare with")
    parser.add_argument("--pairs", type=int, default=4)
    args = parser.parse_args()
    own = ["--services", str(args.services), "--proxies", str(args.proxies)]
    own += ["--rounds", str(args.rounds)]
    if args.old_src is not None:
        compare(args.old_src, args.pairs, own)
        return
    figures = measure(args.services, args.proxies, args.rounds)
    print(json.dumps({"benchmark": "selection_cost", "us_per_proxy": figures}), flush=True)


if __name__ == "__main__":
    main()
