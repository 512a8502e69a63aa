"""Messages as istioctl prints them, thresholds and exit status, and a failing analyzer
costing only its own findings."""

from __future__ import annotations

import json

import pytest
import yaml

from pilothouse.analysis.analyzers import ANALYZERS, Analyzer, analyze
from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    CATALOGUE,
    REFERENCED_RESOURCE_NOT_FOUND,
    SCHEMA_WARNING,
    Level,
    Message,
    message_from_dict,
)
from pilothouse.analysis.report import EXIT_CLEAN, EXIT_FOUND_ISSUES, exit_status, render, shown
from pilothouse.config.model import ConfigKey, Origin
from tests.unit.analysis.mesh import view_of

ERROR = Message(
    REFERENCED_RESOURCE_NOT_FOUND,
    ("host", "detials.shop.svc.cluster.local"),
    ConfigKey("VirtualService", "shop", "reviews"),
    Origin("file", "routing.yaml", 12),
    hint='did you mean "details.shop.svc.cluster.local"?',
)
WARNING = Message(SCHEMA_WARNING, ("spec.x: deprecated",), None, Origin("file", "a.yaml", 3))


def test_a_message_reads_as_istioctl_prints_it() -> None:
    assert str(ERROR) == (
        "Error [IST0101] (VirtualService shop/reviews routing.yaml:12) Referenced host not"
        ' found: "detials.shop.svc.cluster.local" (did you mean'
        ' "details.shop.svc.cluster.local"?)'
    )
    assert str(WARNING) == (
        "Warning [IST0133] (a.yaml:3) Schema validation warning: spec.x: deprecated"
    )


def test_json_and_yaml_carry_istioctl_fields_and_read_back() -> None:
    listed = json.loads(render([ERROR], "json", "x"))
    assert listed == [
        {
            "code": "IST0101",
            "level": "Error",
            "origin": "VirtualService shop/reviews",
            "reference": "routing.yaml:12",
            "message": ERROR.text,
            "documentationUrl": "https://istio.io/latest/docs/reference/config/analysis/ist0101/",
        }
    ]
    assert yaml.safe_load(render([ERROR], "yaml", "x")) == listed
    again = message_from_dict(listed[0])
    assert (str(again), again.type.level) == (str(ERROR), Level.ERROR)


def test_thresholds_choose_what_is_shown_and_what_fails() -> None:
    assert shown([ERROR, WARNING], Level.ERROR) == [ERROR]
    assert shown([ERROR, WARNING], Level.INFO) == [ERROR, WARNING]
    assert exit_status([WARNING], Level.ERROR) == EXIT_CLEAN
    assert exit_status([WARNING], Level.WARNING) == EXIT_FOUND_ISSUES == 79
    assert exit_status([], Level.INFO) == EXIT_CLEAN
    assert Level.named("warning") is Level.WARNING
    with pytest.raises(ValueError, match="one of Error, Warning, Info"):
        Level.named("fatal")


def test_codes_are_unique_and_istio_s_or_pilothouse_s() -> None:
    codes = [t.code for t in CATALOGUE]
    assert len(codes) == len(set(codes))
    assert all(code.startswith(("IST0", "PH01")) for code in codes)
    assert len({a.name for a in ANALYZERS}) == len(ANALYZERS)
    assert all(a.description for a in ANALYZERS)


def test_a_failing_analyzer_costs_only_its_own_findings() -> None:
    def broken(view: MeshView) -> list[Message]:
        raise RuntimeError("boom")

    view = view_of(
        "apiVersion: networking.istio.io/v1\nkind: DestinationRule\n"
        "metadata: {name: x, namespace: shop}\nspec: {host: nowhere}\n"
    )
    found = analyze(view, [Analyzer("broken.Analyzer", broken, ""), *ANALYZERS])
    assert [str(m) for m in found if m.type.code == "IST0001"] == [
        "Error [IST0001] Internal error: the analyzer broken.Analyzer failed: RuntimeError: boom"
    ]
    assert [m.type.code for m in found if m.key == ConfigKey("DestinationRule", "shop", "x")] == [
        "IST0174"
    ]
