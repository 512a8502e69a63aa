"""EnvoyFilter from the ``k8s://`` source (the fake API server: no real one can run
here): read at ``v1alpha3``, the only version Istio serves it in, with its patch values
intact; one with an unknown ``@type`` is skipped and the good one stays."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pilothouse.config.model import ConfigKey
from tests.kube.fake_apiserver import FakeApiServer
from tests.kube.test_config_source import Running, names, obj, source


@pytest.fixture
async def api() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer(token="t0ken", bookmark_interval=0.5) as server:
        yield server

LUA = "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua"


def spec(type_url: str) -> dict[str, Any]:
    value = {"name": "lua", "typed_config": {"@type": type_url, "inline_code": "-- x"}}
    patch = {"operation": "INSERT_FIRST", "value": value}
    return {"configPatches": [{"applyTo": "HTTP_FILTER", "patch": patch}]}


async def test_envoy_filters_arrive_and_a_bad_type_is_skipped(
    api: FakeApiServer, tmp_path: Path
) -> None:
    api.create(obj("EnvoyFilter", "lua", "istio-system", spec(LUA), version="v1alpha3"))
    api.create(obj("EnvoyFilter", "bad", "istio-system", spec(LUA + "Nope"), version="v1alpha3"))
    async with Running(source(api, tmp_path)) as found:
        assert names(found, "EnvoyFilter") == ["istio-system/lua"]
        config = found.store.get(ConfigKey("EnvoyFilter", "istio-system", "lua"))
        assert config is not None
        value = config.spec.config_patches[0].patch.value  # type: ignore[attr-defined]
        assert value["typed_config"]["@type"] == LUA
