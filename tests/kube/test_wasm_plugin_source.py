"""WasmPlugin from the ``k8s://`` source (the fake API server: no real one can run here):
read at ``extensions.istio.io/v1alpha1`` with its fields intact; one naming an OCI image
(which pilothouse cannot serve) is skipped and the good one stays."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pilothouse.config.model import ConfigKey
from tests.kube.fake_apiserver import FakeApiServer
from tests.kube.test_config_source import Running, names, obj, source

SHA = "5c397b9ee1a2ea5988abf166adda4246bff29ed0ba254f4bd2b4a1c04005cc02"


@pytest.fixture
async def api() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer(token="t0ken", bookmark_interval=0.5) as server:
        yield server


async def test_wasm_plugins_arrive_and_an_oci_image_is_skipped(
    api: FakeApiServer, tmp_path: Path
) -> None:
    good = {"url": "https://modules.example/a.wasm", "sha256": SHA, "phase": "AUTHN"}
    bad = {"url": "oci://registry.example/a:1"}
    extensions = {"version": "v1alpha1", "group": "extensions.istio.io"}
    api.create(obj("WasmPlugin", "add-header", "shop", good, **extensions))
    api.create(obj("WasmPlugin", "image", "shop", bad, **extensions))
    async with Running(source(api, tmp_path)) as found:
        assert names(found, "WasmPlugin") == ["shop/add-header"]
        config = found.store.get(ConfigKey("WasmPlugin", "shop", "add-header"))
        assert config is not None
        assert config.spec.sha256 == SHA  # type: ignore[attr-defined]
