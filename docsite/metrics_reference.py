"""The metrics reference: every family ``/metrics`` exposes, read from a ready server's
own Prometheus registry (name as exposed, type, labels, help).

:func:`families` starts a :class:`~pilothouse.xds.server.discovery.DiscoveryServer` on an
empty, synced store (no port is opened), builds its registry with
:func:`pilothouse.admin.metrics.server_metrics` and registers what ``serve`` adds beside
it (the CA's collector when the TLS port is on, the analysis follower's always), then
collects it once. A family's labels are the ones it declares, and those its samples
carry (``le`` and the ``_total``/``_bucket`` suffixes are Prometheus's own, left out).
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry

from pilothouse.admin.analysis import AnalysisCollector
from pilothouse.admin.metrics import server_metrics
from pilothouse.analysis.follower import AnalysisFollower
from pilothouse.security.ca_metrics import CaCollector, CaCounters
from pilothouse.sources.fs import FileSource
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView

PROCESS_PREFIX = "process_"
"""prometheus_client's process collector: listed as one row, its families depend on the
platform."""


@dataclass(frozen=True)
class Family:
    """One metric family as ``/metrics`` exposes it."""

    name: str
    """The exposed name (a typed counter with its ``_total``)."""
    type: str
    """As on its ``# TYPE`` line: ``counter``, ``gauge``, ``histogram``, ``untyped``."""
    labels: tuple[str, ...]
    help: str


async def _registry(directory: Path) -> tuple[DiscoveryServer, CollectorRegistry]:
    store = MemoryStore("docs")
    store.mark_synced()
    discovery = DiscoveryServer(store)
    registry = server_metrics(DiscoveryDebugView(discovery), [FileSource(directory)]).registry
    registry.register(CaCollector(CaCounters(), lambda: 1.0, lambda: 1.0))
    registry.register(AnalysisCollector(AnalysisFollower(store)))
    return discovery, registry


async def _collect() -> tuple[Family, ...]:
    with tempfile.TemporaryDirectory() as directory:
        discovery, registry = await _registry(Path(directory))
        running = asyncio.create_task(discovery.run())
        try:
            await asyncio.wait_for(discovery.wait_ready(), 10)
            found = []
            for metric in registry.collect():
                exposed = metric.name + ("_total" if metric.type == "counter" else "")
                declared = tuple(getattr(metric, "_labelnames", ()))
                carried = [
                    name
                    for sample in metric.samples
                    for name in sample.labels
                    if name != "le" and name not in declared
                ]
                labels = declared + tuple(dict.fromkeys(carried))
                found.append(
                    Family(exposed, _exposed_type(metric.type), labels, metric.documentation)
                )
            return tuple(found)
        finally:
            discovery.close()
            await asyncio.wait_for(running, 10)


def _exposed_type(kind: str) -> str:
    return "untyped" if kind == "unknown" else kind


def families() -> tuple[Family, ...]:
    """Every family a ready server exposes, in registration order."""
    return asyncio.run(_collect())


def markdown() -> str:
    """The metrics table; the ``process_*`` families in one closing row."""
    lines = ["| metric | type | labels | help |", "|---|---|---|---|"]
    process = []
    for family in families():
        if family.name.startswith(PROCESS_PREFIX):
            process.append(f"`{family.name}`")
            continue
        labels = ", ".join(f"`{label}`" for label in family.labels) or "–"
        kind = "counter (untyped)" if family.type == "untyped" else family.type
        help_text = " ".join(family.help.split()).replace("|", "\\|")
        lines.append(f"| `{family.name}` | {kind} | {labels} | {help_text} |")
    lines.append(
        f"| `{PROCESS_PREFIX}*` | – | – | prometheus_client's process collector: "
        f"{', '.join(process)} |"
    )
    return "\n".join(lines) + "\n"
