"""The README's Metrics table lists exactly the families /metrics exposes, with their types,
so that the documentation cannot drift."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client import generate_latest

from pilothouse.admin.analysis import AnalysisCollector
from pilothouse.admin.metrics import server_metrics
from pilothouse.analysis.follower import AnalysisFollower
from pilothouse.security.ca_metrics import CaCollector, CaCounters
from pilothouse.sources.fs import FileSource
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView

README = Path(__file__).resolve().parents[3] / "README.md"
README_TYPES = {
    "untyped": "counter (untyped)",
    "counter": "counter",
    "gauge": "gauge",
    "histogram": "histogram",
}


def documented() -> dict[str, str]:
    """The Metrics table's rows: exposed name → type column."""
    text = README.read_text()
    section = text[text.index("\n## Metrics\n") :]
    section = section[: section.index("\n## ", 1)]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        assert len(cells) == 4, line
        name = cells[0].strip("`")
        assert name not in rows, f"{name} is listed twice"
        rows[name] = cells[1]
    return rows


async def exposed(tmp_path: Path) -> dict[str, str]:
    """Every family a ready server exposes (as written on its TYPE line) → its type."""
    store = MemoryStore("test")
    store.mark_synced()
    discovery = DiscoveryServer(store)
    running = asyncio.create_task(discovery.run())
    try:
        await asyncio.wait_for(discovery.wait_ready(), 10)
        source = FileSource(tmp_path)
        registry = server_metrics(DiscoveryDebugView(discovery), [source]).registry
        # serve registers the CA's collector when the TLS port is on
        registry.register(CaCollector(CaCounters(), lambda: 1.0, lambda: 1.0))
        # and the analysis's, always (serve's analysis follower)
        registry.register(AnalysisCollector(AnalysisFollower(store)))
        text = generate_latest(registry).decode()
    finally:
        discovery.close()
        await asyncio.wait_for(running, 10)
    types = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
    return types


async def test_the_readme_lists_every_exposed_family_with_its_type(tmp_path: Path) -> None:
    rows = documented()
    families = await exposed(tmp_path)
    process = {name for name in families if name.startswith("process_")}
    assert process and "process_*" in rows
    listed = set(rows) - {"process_*"}
    assert listed == set(families) - process, (
        f"undocumented: {sorted(set(families) - process - listed)}; "
        f"not exposed: {sorted(listed - set(families))}"
    )
    for name in listed:
        assert rows[name].startswith(README_TYPES[families[name]]), (name, rows[name])
