"""A ServiceEntry with TCP ports (or ports of no protocol) has addresses (IST0134: without
one, a sidecar cannot tell its TCP traffic from any other's on that port), and no two
ServiceEntries give one host and port different protocols (IST0177: which one a proxy
uses depends on their order)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    CONFLICTING_SERVICE_ENTRY_PROTOCOL,
    SERVICE_ENTRY_ADDRESSES_REQUIRED,
    Message,
    about,
)
from pilothouse.config.model import Config


def analyze(view: MeshView) -> Iterator[Message]:
    entries = view.of_kind("ServiceEntry")
    for entry in entries:
        spec: Any = entry.spec
        if spec.addresses:
            continue
        for index, port in enumerate(spec.ports):
            if port.protocol.upper() in ("", "TCP"):
                yield about(entry, SERVICE_ENTRY_ADDRESSES_REQUIRED, path=f"spec.ports[{index}]")
    yield from _conflicts(view, entries)


def _conflicts(view: MeshView, entries: tuple[Config, ...]) -> Iterator[Message]:
    protocols: dict[tuple[str, int], list[tuple[Config, str]]] = {}
    for entry in entries:
        spec: Any = entry.spec
        for host in spec.hosts:
            for port in spec.ports:
                where = (view.resolve(host, entry.namespace), port.number)
                protocols.setdefault(where, []).append((entry, port.protocol.upper() or "TCP"))
    for (host, number), found in sorted(protocols.items()):
        if len({protocol for _, protocol in found}) < 2:
            continue
        names = ",".join(f"{e.namespace}/{e.name}" for e, _ in found)
        listed = ",".join(sorted({protocol for _, protocol in found}))
        for entry, _ in found:
            yield about(
                entry, CONFLICTING_SERVICE_ENTRY_PROTOCOL, names, host, number, listed,
                path="spec.ports",
            )  # fmt: skip
