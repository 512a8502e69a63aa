"""What ``bootstrap`` reads from ``--config`` paths and ``--config-source`` addresses: the
ProxyConfig and EnvoyFilter objects only, from a source once it has synced, and an error
naming the source that has not synced in time (never an empty mesh in its place)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pilothouse.cli.bootstrap_inputs import (
    BootstrapInputError,
    configs_from_sources,
    configs_in_paths,
)
from pilothouse.settings import Settings

OBJECTS = """\
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: threads, namespace: shop}
spec: {concurrency: 2}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: flush, namespace: shop}
spec:
  configPatches:
  - applyTo: BOOTSTRAP
    patch: {operation: MERGE, value: {stats_flush_interval: 9s}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: ratings, namespace: shop}
spec: {hosts: [ratings], http: [{route: [{destination: {host: ratings}}]}]}
"""


def names(configs: list[object]) -> list[str]:
    return sorted(f"{c.kind}/{c.namespace}/{c.name}" for c in configs)  # type: ignore[attr-defined]


@pytest.fixture
def mesh(tmp_path: Path) -> Path:
    (tmp_path / "mesh").mkdir()
    (tmp_path / "mesh" / "objects.yaml").write_text(OBJECTS)
    return tmp_path / "mesh"


def test_paths_give_the_two_kinds_a_bootstrap_reads(mesh: Path) -> None:
    assert names(configs_in_paths([mesh])) == ["EnvoyFilter/shop/flush", "ProxyConfig/shop/threads"]


async def test_a_source_is_read_once_synced_even_from_a_running_loop(mesh: Path) -> None:
    found = configs_from_sources([f"fs://{mesh}"], Settings(), timeout=10)
    assert names(found) == ["EnvoyFilter/shop/flush", "ProxyConfig/shop/threads"]


def test_a_file_source_without_its_directory_is_named(tmp_path: Path) -> None:
    address = f"fs://{tmp_path / 'gone'}"
    with pytest.raises(BootstrapInputError, match=f"--config-source {address}: no such directory"):
        configs_from_sources([address], Settings(), timeout=5)


def test_an_address_that_names_no_source_is_named() -> None:
    with pytest.raises(BootstrapInputError, match="--config-source gopher://x"):
        configs_from_sources(["gopher://x"], Settings(), timeout=1)
