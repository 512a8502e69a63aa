"""A Gateway's selector matches a workload (IST0101 ``selector``), the Kubernetes Service
in front of those workloads targets each port the Gateway listens on (IST0162, when such
a Service is given), and no two Gateways of one selector serve one host on one port
(IST0145).

Selectors are judged only when the config set holds workloads at all: a directory of
routing alone has nothing to match them against.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pilothouse.analysis.mesh_view import MeshView, Workload
from pilothouse.analysis.messages import (
    CONFLICTING_GATEWAYS,
    GATEWAY_PORT_NOT_DEFINED_ON_SERVICE,
    REFERENCED_RESOURCE_NOT_FOUND,
    Message,
    about,
    labels_text,
)
from pilothouse.config.model import Config


def analyze(view: MeshView) -> Iterator[Message]:
    gateways = view.of_kind("Gateway")
    if view.workloads:
        for gateway in gateways:
            selector = dict(getattr(gateway.spec, "selector", {}))
            selected = view.workloads_in(None, selector) if selector else []
            if selector and not selected:
                yield about(
                    gateway, REFERENCED_RESOURCE_NOT_FOUND, "selector", labels_text(selector),
                    path="spec.selector",
                )  # fmt: skip
            yield from _ports_behind_services(view, gateway, selected, selector)
    yield from _conflicts(gateways)


def _ports_behind_services(
    view: MeshView, gateway: Config, selected: list[Workload], selector: dict[str, str]
) -> Iterator[Message]:
    targets: set[int | str] = set()
    fronted = False
    for service in view.services:
        if service.target_ports is None or not service.selector:
            continue
        if any(w.namespace == service.namespace and w.carries(service.selector) for w in selected):
            fronted = True
            targets.update(service.target_ports)
    if not fronted:
        return
    spec: Any = gateway.spec
    for index, server in enumerate(spec.servers):
        if server.port.number not in targets:
            yield about(
                gateway, GATEWAY_PORT_NOT_DEFINED_ON_SERVICE, server.port.number,
                labels_text(selector), path=f"spec.servers[{index}].port",
            )  # fmt: skip


def _conflicts(gateways: tuple[Config, ...]) -> Iterator[Message]:
    served: dict[tuple[str, int, str, str], list[Config]] = {}
    for gateway in gateways:
        spec: Any = gateway.spec
        selector = labels_text(dict(spec.selector))
        for server in spec.servers:
            for host in server.hosts:
                plain = host.rpartition("/")[2]
                where = (selector, server.port.number, server.bind, plain)
                holders = served.setdefault(where, [])
                if gateway not in holders:
                    holders.append(gateway)
    reported: set[tuple[str, int, str]] = set()
    for (selector, port, _bind, host), holders in sorted(served.items(), key=lambda i: i[0]):
        if len(holders) < 2:
            continue
        for gateway in holders:
            others = ",".join(f"{g.namespace}/{g.name}" for g in holders if g is not gateway)
            if (str(gateway.key), port, host) in reported:
                continue
            reported.add((str(gateway.key), port, host))
            yield about(
                gateway, CONFLICTING_GATEWAYS, others, selector, port, f"[{host}]",
                path="spec.servers",
            )  # fmt: skip
