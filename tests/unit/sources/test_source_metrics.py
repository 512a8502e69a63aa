"""A file source's sync state, availability and errors, as /metrics reports them."""

from __future__ import annotations

import shutil
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from pilothouse.admin.metrics_pilothouse import ConfigSourceCollector
from pilothouse.sources.fs import FileSource
from tests.integration.metrics_scrape import Scrape, parse

GOOD = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: data}
spec:
  hosts: [db.data.svc.cluster.local]
  ports: [{number: 5432, name: tcp, protocol: TCP}]
"""
BAD = GOOD.replace("name: db,", "name: broken,").replace("number: 5432", "number: -1")


def scraped(*sources: FileSource) -> Scrape:
    registry = CollectorRegistry()
    registry.register(ConfigSourceCollector(sources))
    return parse(generate_latest(registry).decode())


def test_sync_availability_and_errors_per_source(tmp_path: Path) -> None:
    root = tmp_path / "mesh"
    root.mkdir()
    (root / "good.yaml").write_text(GOOD)
    (root / "bad.yaml").write_text(BAD)
    source = FileSource(root)
    name = source.name
    before = scraped(source)
    assert before.sample("pilothouse_config_source_synced", source=name) == 0
    assert before.sample("pilothouse_config_source_available", source=name) == 0

    source.load_all()
    loaded = scraped(source)
    assert loaded.sample("pilothouse_config_source_synced", source=name) == 1
    assert loaded.sample("pilothouse_config_source_available", source=name) == 1
    assert loaded.sample("pilothouse_config_source_errors", source=name) == 1

    (root / "bad.yaml").write_text(GOOD.replace("name: db,", "name: fixed,"))
    source.load_all()
    assert scraped(source).sample("pilothouse_config_source_errors", source=name) == 0

    shutil.rmtree(root)
    source.load_all()
    gone = scraped(source)
    assert gone.sample("pilothouse_config_source_available", source=name) == 0
    assert gone.sample("pilothouse_config_source_synced", source=name) == 1  # keeps its config
