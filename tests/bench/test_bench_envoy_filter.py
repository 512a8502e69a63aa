"""The EnvoyFilter benchmark runs small and measures what it says: the patched listeners
differ from the baseline's, and both figures name their same-run baseline."""

from __future__ import annotations

import json

import pytest

from bench.envoy_filter_cost import context, main
from bench.run_all import SCRIPTS
from pilothouse.push.cache import ResourceCache
from pilothouse.push.proxy import parse_node
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.generators.lds import ListenerGenerator


def test_it_prints_both_figures(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.argv", ["envoy_filter_cost.py", "--services", "3", "--rounds", "1"])
    main()
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["benchmark"] for line in lines] == [
        "envoy_filter_listeners_cold",
        "envoy_filter_listeners_warm",
    ]
    for line in lines:
        assert line["listeners"] == 3 and line["baseline_ms"] > 0 and line["pilothouse_ms"] > 0
    assert "envoy_filter_cost" in {script.name for script in SCRIPTS}


def test_the_patches_apply_to_every_listener() -> None:
    proxy = parse_node("sidecar~10.0.0.1~web-1.shop~shop.svc.cluster.local", {})
    bodies = {}
    for flag in (False, True):
        ctx, registry = context(2, flag)
        given = GenerationInput(
            proxy, ctx.scope(proxy), ctx, registry.endpoint_index, ResourceCache()
        )
        bodies[flag] = [r.body for r in ListenerGenerator().generate(given).values()]
    assert len(bodies[True]) == len(bodies[False]) == 2
    for body in bodies[True]:
        assert b"envoy.filters.http.lua" in body and b"patched" in body
    for body in bodies[False]:
        assert b"envoy.filters.http.lua" not in body and b"patched" not in body
