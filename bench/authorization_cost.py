"""Benchmark: what access control costs a push, against baselines measured in the same run.

A mesh of N namespaces × W workloads (one ServiceEntry and WorkloadEntry each, HTTP port
8080), one simulated sidecar per workload, real store, registry, pipeline, context,
cache and generators (connections are stand-ins that only name their proxy).

- ``authorization_push_scope``: an AuthorizationPolicy that selects one workload is
  planned and its proxies' listeners generated; baseline: a PeerAuthentication with the
  same selector, which istiod (and pilothouse) push to the policy's whole namespace and
  to the proxies that call it. Figures: proxies pushed, and seconds from the store
  event to the last listener generated.
- ``authorization_listener_build``: building one inbound listener guarded by P
  policies of R rules each and a RequestAuthentication, against the same listener
  without access control (the baseline): once with its filters built for it (the first
  port of the first workload those policies select in a context), and once with the
  filters the generator shares across the context's other ports and workloads.

Prints one JSON line per figure.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.figures import emit
from bench.harness.rounds import best_of
from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.authorization import WorkloadAuthorization
from pilothouse.push.cache import ResourceCache
from pilothouse.push.inputs import ConfigRevision
from pilothouse.push.peer_authentication import MtlsMode
from pilothouse.push.pipeline import PushPipeline
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.builders.access_control import AccessFilters
from pilothouse.xds.builders.listener_sidecar import build_inbound_listener
from pilothouse.xds.generators.api import watched_kinds
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.generators.lds import ListenerGenerator

WORKLOAD = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: app-{w}, namespace: ns-{n}}}
spec:
  hosts: [app-{w}.ns-{n}.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{number: 8080, name: http, protocol: HTTP}}]
  workloadSelector: {{labels: {{app: app-{w}}}}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: app-{w}-1, namespace: ns-{n}}}
spec:
  address: 10.{n}.{w}.1
  labels: {{app: app-{w}}}
"""

POLICY = """\
apiVersion: security.istio.io/v1
kind: {kind}
metadata: {{name: edit, namespace: ns-0}}
spec:
  selector: {{matchLabels: {{app: app-0}}}}
{body}"""
AUTHORIZATION = (
    "AuthorizationPolicy",
    "  rules: [{from: [{source: {principals: [cluster.local/ns/ns-0/sa/a]}}]}]\n",
)
PEER_AUTHENTICATION = ("PeerAuthentication", "  mtls: {mode: STRICT}\n")


class Connection:
    def __init__(self, connection_id: str, proxy: ProxyIdentity) -> None:
        self.id = connection_id
        self.proxy = proxy

    def watched_types(self) -> list[str]:
        return []

    def watches_any_host(self, hostnames: frozenset[str]) -> bool:
        return False

    def watches_secrets(self, names: frozenset[str]) -> bool:
        return False


class Mesh:
    def __init__(self, namespaces: int, workloads: int) -> None:
        text = "---\n".join(
            WORKLOAD.format(n=n, w=w) for n in range(namespaces) for w in range(workloads)
        )
        self.store = MemoryStore()
        for config in Loader(SCHEMAS).load_strict(text, "mesh.yaml"):
            self.store.apply(config)
        self.store.mark_synced()
        self.registry = ServiceEntryRegistry(self.store, lambda _update: None)
        self.registry.initial_load()
        self.cache = ResourceCache()
        versions = (f"v{n}" for n in itertools.count(1))
        self.pipeline: PushPipeline[Connection] = PushPipeline(
            self.store,
            self.registry.services,
            MeshSettings(),
            self.cache,
            next_version=lambda: next(versions),
            api_kinds=watched_kinds,
        )
        self.pipeline.start()
        self.connections = [
            Connection(
                f"{n}-{w}",
                parse_node(
                    f"sidecar~10.{n}.{w}.1~app-{w}-1.ns-{n}~ns-{n}.svc.cluster.local",
                    {"LABELS": {"app": f"app-{w}"}},
                ),
            )
            for n in range(namespaces)
            for w in range(workloads)
        ]
        for connection in self.connections:
            self.pipeline.connect(connection)
        for connection in self.connections:
            self.listeners(connection)  # warm: the edit pays only for what it changes

    def listeners(self, connection: Connection) -> int:
        context = self.pipeline.context
        assert context is not None
        given = GenerationInput(
            proxy=connection.proxy,
            scope=context.scope(connection.proxy),
            context=context,
            endpoints=self.registry.endpoint_index,
            cache=self.cache,
        )
        return len(ListenerGenerator().generate(given))

    def edit(self, kind: str, body: str) -> tuple[int, float]:
        """Apply the policy, plan its push, generate the pushed proxies' listeners."""
        (config,) = Loader(SCHEMAS).load_strict(POLICY.format(kind=kind, body=body), "edit.yaml")
        start = time.perf_counter()
        self.store.apply(config)
        request = self.pipeline.config_changed(config.key, start=start)
        assert request is not None
        plan = self.pipeline.plan(request)
        assert plan is not None
        for connection, _ in plan.pushes:
            self.listeners(connection)
        return len(plan.pushes), time.perf_counter() - start



_RSA_2048_N = (
    "xYbUqhzUbFFMSoyrO5TrOufj2GW9H-NnI715HQkyyOtoJf8Fhr0Bi3yc0ZG2YUeXtbmNVjzhbSP_r4Bw"
    "EmDT4ZkUjOl2A4i9fylW5NQEsQ9qNbg2hcDJGZuSw4qvPP8KeP_evpTS398w0z3tuoqHDmHjiypDICV3"
    "Rb2qmsinyVljmPkVzEKpNtQjfbWGo-r6JoC4xZ4KZewm31BJR2hneYCjilNlejXFoyr-n9vaXNQ3FamZ"
    "JqQTmv2AcgSpqQ2NCQEbSePVUhLp5f7PpVVpljMYOhQuxm8MmTY86DqlrbOYZttwJlB222ZFCJRsiSH6"
    "FVLkzVyGvl7oe_tdrvkLUw"
)
"""The modulus of a real RSA 2048 public key (its private half was thrown away): an
inline key set's keys must pass the key checks to be relayed."""
_JWKS = json.dumps({"keys": [{"kty": "RSA", "n": _RSA_2048_N, "e": "AQAB"}]})

def guarded_authorization(policies: int, rules: int) -> WorkloadAuthorization:
    rule = (
        "  - from: [{source: {principals: [cluster.local/ns/a/sa/b], namespaces: [x]}}]\n"
        "    to: [{operation: {methods: [GET], paths: [/api/*]}}]\n"
        "    when: [{key: \"request.headers[x-user]\", values: [alice]}]\n"
    )
    text = "---\n".join(
        "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
        f"metadata: {{name: p{i}, namespace: a}}\nspec:\n  rules:\n" + rule * rules
        for i in range(policies)
    )
    text += (
        "---\napiVersion: security.istio.io/v1\nkind: RequestAuthentication\n"
        "metadata: {name: jwt, namespace: a}\nspec:\n  jwtRules:\n  - issuer: https://i\n"
        f"    jwks: '{_JWKS}'\n"
    )
    loaded = Loader(SCHEMAS).load_strict(text, "p.yaml")
    revisions: list[Any] = [ConfigRevision.of(c) for c in loaded]
    return WorkloadAuthorization(
        tuple(r for r in revisions if r.key.kind == "AuthorizationPolicy"),
        tuple(r for r in revisions if r.key.kind == "RequestAuthentication"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--workloads", type=int, default=25)
    parser.add_argument("--policies", type=int, default=5)
    parser.add_argument("--rules", type=int, default=3)
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()

    baseline_pushed, baseline_seconds = Mesh(args.namespaces, args.workloads).edit(
        *PEER_AUTHENTICATION
    )
    pushed, seconds = Mesh(args.namespaces, args.workloads).edit(*AUTHORIZATION)
    emit(
        [
            {
                "benchmark": "authorization_push_scope",
                "proxies": args.namespaces * args.workloads,
                "baseline": "a PeerAuthentication with the same selector (namespace-scoped push)",
                "baseline_pushed": baseline_pushed,
                "baseline_seconds": round(baseline_seconds, 4),
                "pilothouse_pushed": pushed,
                "pilothouse_seconds": round(seconds, 4),
                "headline": "pilothouse_pushed",
                "ratio_to_baseline": round(baseline_seconds / seconds, 2),
                "ratio_definition": "baseline seconds ÷ pilothouse seconds, edit to last listener",
                "target": "only the selected proxies are pushed (issue #19)",
                "target_met": pushed == 1,
            }
        ]
    )

    authorization = guarded_authorization(args.policies, args.rules)

    def build(guard: WorkloadAuthorization) -> None:
        for port in range(8000, 8010):
            build_inbound_listener(
                "10.0.0.1", port, "HTTP", mtls=MtlsMode.PERMISSIVE, authorization=guard
            )

    shared = AccessFilters.of(authorization)

    def build_shared() -> None:
        for port in range(8000, 8010):
            build_inbound_listener(
                "10.0.0.1",
                port,
                "HTTP",
                mtls=MtlsMode.PERMISSIVE,
                authorization=authorization,
                access=shared,
            )

    plain = guarded = sharing = float("inf")
    for _ in range(3):  # interleaved rounds: no side gets the warm caches alone
        plain = min(plain, best_of(args.runs, lambda: build(WorkloadAuthorization())))
        guarded = min(guarded, best_of(args.runs, lambda: build(authorization)))
        sharing = min(sharing, best_of(args.runs, build_shared))
    emit(
        [
            {
                "benchmark": "authorization_listener_build",
                "policies": args.policies,
                "rules_per_policy": args.rules,
                "baseline": "the same inbound listener without access control",
                "baseline_us_per_listener": round(plain / 10 * 1e6, 1),
                "pilothouse_us_per_listener": round(sharing / 10 * 1e6, 1),
                "pilothouse_us_per_listener_filters_built": round(guarded / 10 * 1e6, 1),
                "headline": "pilothouse_us_per_listener",
                "ratio_to_baseline": round(plain / sharing, 2),
                "ratio_definition": (
                    "baseline µs ÷ guarded µs with the context's shared filters "
                    "(<1: what access control costs a listener)"
                ),
                "target": "none set by the issues (built once per workload, cached by inputs)",
            }
        ]
    )


if __name__ == "__main__":
    main()
