"""Benchmark: what EnvoyFilter patches cost a proxy's listeners, against none in the same run.

A sidecar scope of S services (one HTTP port each, so S outbound listeners), real store,
registry, PushContext, cache and LDS generator. Two contexts are built from the same mesh:
one without EnvoyFilters (the baseline) and one with an EnvoyFilter of 5 patches that all
apply to every listener (a Lua filter before the router, an HTTP_FILTER MERGE of the
router, a LISTENER MERGE, a FILTER_CHAIN MERGE and a NETWORK_FILTER MERGE of the HTTP
connection manager). Rounds alternate the two:

- ``envoy_filter_listeners_cold``: one proxy's LDS from an empty cache (build, encode,
  and for the patched context decode, patch and encode again);
- ``envoy_filter_listeners_warm``: the same proxy again from the warm cache (what every
  further proxy of the scope costs).

Prints one JSON line per figure (``ratio_to_baseline`` = patched ÷ baseline time).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.figures import emit
from bench.harness.rounds import median
from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.cache import ResourceCache
from pilothouse.push.context import PushContext, build_context
from pilothouse.push.proxy import parse_node
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.generators.lds import ListenerGenerator

SERVICE = """\
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: svc-{i}, namespace: shop}}
spec:
  hosts: [svc-{i}.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{name: http, number: {port}, protocol: HTTP}}]
  endpoints: [{{address: 10.1.{octet}.1}}]
"""

HCM = "envoy.filters.network.http_connection_manager"
ROUTER = "envoy.filters.http.router"
HCM_TYPE = (
    "type.googleapis.com/"
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
)
FIVE_PATCHES = f"""\
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {{name: five, namespace: shop}}
spec:
  configPatches:
  - applyTo: HTTP_FILTER
    match:
      listener:
        filterChain: {{filter: {{name: {HCM}, subFilter: {{name: {ROUTER}}}}}}}
    patch:
      operation: INSERT_BEFORE
      value:
        name: envoy.filters.http.lua
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua
          default_source_code: {{inline_string: "function envoy_on_response(h) end"}}
  - applyTo: HTTP_FILTER
    match:
      listener:
        filterChain: {{filter: {{name: {HCM}, subFilter: {{name: {ROUTER}}}}}}}
    patch:
      operation: MERGE
      value:
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
          suppress_envoy_headers: true
  - applyTo: LISTENER
    patch: {{operation: MERGE, value: {{per_connection_buffer_limit_bytes: 32768}}}}
  - applyTo: FILTER_CHAIN
    patch: {{operation: MERGE, value: {{name: patched}}}}
  - applyTo: NETWORK_FILTER
    match: {{listener: {{filterChain: {{filter: {{name: {HCM}}}}}}}}}
    patch:
      operation: MERGE
      value:
        typed_config:
          "@type": {HCM_TYPE}
          server_name: patched
"""


def context(services: int, patched: bool) -> tuple[PushContext, ServiceEntryRegistry]:
    text = "".join(SERVICE.format(i=i, port=8000 + i, octet=i % 250) for i in range(services))
    if patched:
        text += FIVE_PATCHES
    store = MemoryStore("bench")
    for config in Loader(SCHEMAS, source="bench").load_strict(text, "mesh.yaml"):
        store.apply(config)
    store.mark_synced()
    registry = ServiceEntryRegistry(store, lambda update: None)
    registry.initial_load()
    return build_context(store, registry.services, MeshSettings(), "v1"), registry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--services", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    proxy = parse_node("sidecar~10.0.0.1~web-1.shop~shop.svc.cluster.local", {})
    generator = ListenerGenerator()
    built = {flag: context(args.services, flag) for flag in (False, True)}
    cold: dict[bool, list[float]] = {False: [], True: []}
    warm: dict[bool, list[float]] = {False: [], True: []}
    listeners = 0
    for _ in range(args.rounds):
        for flag in (False, True):  # interleaved: both see the same machine
            ctx, registry = built[flag]
            cache = ResourceCache()
            given = GenerationInput(proxy, ctx.scope(proxy), ctx, registry.endpoint_index, cache)
            start = time.perf_counter()
            made = generator.generate(given)
            cold[flag].append(time.perf_counter() - start)
            start = time.perf_counter()
            generator.generate(given)
            warm[flag].append(time.perf_counter() - start)
            listeners = len(made)
    for name, times in (("cold", cold), ("warm", warm)):
        base, ours = median(times[False]), median(times[True])
        emit(
            [
                {
                    "benchmark": f"envoy_filter_listeners_{name}",
                    "listeners": listeners,
                    "patches": 5,
                    "baseline": "the same listeners without EnvoyFilters, same run",
                    "baseline_ms": round(base * 1000, 3),
                    "pilothouse_ms": round(ours * 1000, 3),
                    "ratio_to_baseline": round(ours / base, 2) if base else None,
                    "ratio_definition": "patched ms ÷ baseline ms (>1: what the patches cost)",
                    "target": "none set by the issue (the cost of 5 patches, recorded)",
                    "headline": "pilothouse_ms",
                }
            ]
        )


if __name__ == "__main__":
    main()
