"""The metrics reference lists exactly the families ``/metrics`` exposes, with their types
and labels, and its hand-written table of what they count names the same families.

What ``/metrics`` exposes is read here from the exposition text of a ready server's
registry (as a scraper reads it), not from the generator's own collection."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from prometheus_client import generate_latest

from docsite import metrics_reference
from docsite.hooks import fill
from pilothouse.admin.analysis import AnalysisCollector
from pilothouse.admin.metrics import server_metrics
from pilothouse.analysis.follower import AnalysisFollower
from pilothouse.security.ca_metrics import CaCollector, CaCounters
from pilothouse.sources.fs import FileSource
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView

PAGE = Path(__file__).resolve().parents[3] / "docs" / "reference" / "metrics.md"
PAGE_TYPES = {
    "untyped": "counter (untyped)",
    "counter": "counter",
    "gauge": "gauge",
    "histogram": "histogram",
}


def rows(text: str, columns: int) -> dict[str, list[str]]:
    """A table's rows by metric name (its first cell, a code span)."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        assert len(cells) == columns, line
        name = cells[0].strip("`")
        assert name not in found, f"{name} is listed twice"
        found[name] = cells[1:]
    return found


async def exposed(tmp_path: Path) -> tuple[dict[str, str], set[str]]:
    """Every family a ready server exposes (as written on its TYPE line) → its type, and
    every ``family:label`` its samples carry."""
    store = MemoryStore("test")
    store.mark_synced()
    discovery = DiscoveryServer(store)
    running = asyncio.create_task(discovery.run())
    try:
        await asyncio.wait_for(discovery.wait_ready(), 10)
        registry = server_metrics(DiscoveryDebugView(discovery), [FileSource(tmp_path)]).registry
        # serve registers the CA's collector when the TLS port is on
        registry.register(CaCollector(CaCounters(), lambda: 1.0, lambda: 1.0))
        # and the analysis's, always (serve's analysis follower)
        registry.register(AnalysisCollector(AnalysisFollower(store)))
        text = generate_latest(registry).decode()
    finally:
        discovery.close()
        await asyncio.wait_for(running, 10)
    types = {}
    labels = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
        elif not line.startswith("#") and "{" in line:
            name, _, rest = line.partition("{")
            for label in re.findall(r'(\w+)="', rest):
                labels.add(f"{name}:{label}")
    return types, labels


async def test_the_reference_lists_every_exposed_family_with_its_type(tmp_path: Path) -> None:
    generated = await asyncio.to_thread(metrics_reference.markdown)
    listed = rows(generated, 4)
    families, labels = await exposed(tmp_path)
    process = {name for name in families if name.startswith("process_")}
    assert process and "process_*" in listed
    assert all(f"`{name}`" in listed["process_*"][2] for name in process)
    named = set(listed) - {"process_*"}
    assert named == set(families) - process, (
        f"undocumented: {sorted(set(families) - process - named)}; "
        f"not exposed: {sorted(named - set(families))}"
    )
    for name in named:
        kind, _, help_text = listed[name]
        assert kind == PAGE_TYPES[families[name]], (name, kind)
        assert help_text, name
    for pair in labels:
        family, _, label = pair.partition(":")
        family = re.sub(r"_(bucket|sum|count)$", "", family)
        if label == "le" or family.startswith("process_") or family not in listed:
            continue
        assert f"`{label}`" in listed[family][1], f"{family}: label {label} not listed"


def test_the_page_asks_for_the_table_and_explains_the_same_families() -> None:
    text = PAGE.read_text()
    assert text.count("<!-- reference: metrics -->") == 1
    explained = rows(text[text.index("## What they count") :], 3)
    generated = rows(fill("<!-- reference: metrics -->"), 4)
    assert set(explained) == set(generated) - {"process_*"}
