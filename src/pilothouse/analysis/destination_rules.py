"""A DestinationRule's host is a service (IST0174), each subset selects a workload of it
(IST0173), and two rules of one namespace for one host do not contradict each other
(PH0101: istiod merges them in creation order, so the later one's duplicate subset or
second traffic policy is silently ignored).

Subsets are judged only for services whose workloads are known here (a selector or
inline endpoints, and at least one workload): a ServiceEntry resolved by DNS, or one
whose WorkloadEntries live in another source, has nothing to check them against.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    CONFLICTING_DESTINATION_RULES,
    SUBSET_SELECTS_NO_WORKLOAD,
    UNKNOWN_DESTINATION_RULE_HOST,
    Message,
    about,
    did_you_mean,
)
from pilothouse.config.model import Config


def analyze(view: MeshView) -> Iterator[Message]:
    rules = view.of_kind("DestinationRule")
    for rule in rules:
        spec: Any = rule.spec
        host = view.resolve(spec.host, rule.namespace)
        services = view.services_for(host)
        if not services:
            hint = did_you_mean(view.close_hosts(host))
            yield about(rule, UNKNOWN_DESTINATION_RULE_HOST, host, hint=hint, path="spec.host")
            continue
        if any(s.endpoints_unknown for s in services):
            continue
        workloads = [w for s in services for w in view.backing(s)]
        if not workloads:
            continue
        for index, subset in enumerate(spec.subsets):
            labels = dict(subset.labels)
            if not any(w.carries(labels) for w in workloads):
                path = f"spec.subsets[{index}]"
                yield about(rule, SUBSET_SELECTS_NO_WORKLOAD, subset.name, path=path)
    yield from _conflicts(view, rules)


def _conflicts(view: MeshView, rules: tuple[Config, ...]) -> Iterator[Message]:
    groups: dict[tuple[str, str], list[Config]] = {}
    for rule in rules:
        spec: Any = rule.spec
        if spec.HasField("workload_selector"):
            continue  # rules for some workloads only: not merged with the others
        groups.setdefault((rule.namespace, view.resolve(spec.host, rule.namespace)), []).append(
            rule
        )
    for (namespace, host), group in groups.items():
        if len(group) < 2:
            continue
        ordered = sorted(group, key=_created)
        names = "[" + " ".join(r.name for r in ordered) + "]"
        subsets: set[str] = set()
        policy = False
        for rule in ordered:
            spec = rule.spec
            for index, subset in enumerate(spec.subsets):
                if subset.name in subsets:
                    yield about(
                        rule, CONFLICTING_DESTINATION_RULES, names, namespace, host,
                        f" and subset {subset.name}", f"subset {subset.name}",
                        path=f"spec.subsets[{index}]",
                    )  # fmt: skip
                subsets.add(subset.name)
            if spec.HasField("traffic_policy"):
                if policy:
                    yield about(
                        rule, CONFLICTING_DESTINATION_RULES, names, namespace, host, "",
                        "trafficPolicy", path="spec.trafficPolicy",
                    )  # fmt: skip
                policy = True


def _created(rule: Config) -> tuple[float, str]:
    stamp = rule.creation_time.timestamp() if rule.creation_time is not None else 0.0
    return (stamp, rule.name)
