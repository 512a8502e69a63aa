"""A DestinationRule's TLS agrees with the PeerAuthentication of the workloads behind
its host (IST0113): ``tls.mode: DISABLE`` towards workloads whose policy is STRICT
fails every connection, and ``ISTIO_MUTUAL`` towards workloads whose policy is DISABLE
offers certificates nobody asks for (the server end speaks plain text)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import MTLS_POLICY_CONFLICT, Message, about
from pilothouse.analysis.peer_authentication import DISABLE, MODE_NAMES, STRICT, deciding

TLS_DISABLE, TLS_ISTIO_MUTUAL = 0, 3


def analyze(view: MeshView) -> Iterator[Message]:
    for rule in view.of_kind("DestinationRule"):
        spec: Any = rule.spec
        modes = set()
        if spec.HasField("traffic_policy"):
            policy = spec.traffic_policy
            if policy.HasField("tls"):
                modes.add(policy.tls.mode)
            modes.update(p.tls.mode for p in policy.port_level_settings if p.HasField("tls"))
        modes &= {TLS_DISABLE, TLS_ISTIO_MUTUAL}
        if not modes:
            continue
        host = view.resolve(spec.host, rule.namespace)
        reported: set[str] = set()
        for service in view.services_for(host):
            for workload in view.backing(service):
                decided = deciding(view, workload)
                if decided is None:
                    continue
                policy_config, mode = decided
                name = f"{policy_config.namespace}/{policy_config.name}"
                conflict = (TLS_DISABLE in modes and mode == STRICT) or (
                    TLS_ISTIO_MUTUAL in modes and mode == DISABLE
                )
                if conflict and name not in reported:
                    reported.add(name)
                    wants = "true" if mode == DISABLE else "false"
                    yield about(
                        rule, MTLS_POLICY_CONFLICT, host, f"{rule.namespace}/{rule.name}",
                        wants, name, MODE_NAMES[mode], path="spec.trafficPolicy",
                    )  # fmt: skip
