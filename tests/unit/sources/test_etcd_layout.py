"""The etcd key layout and stored-value decoding shared by the source and the CLI."""

from __future__ import annotations

import json

from pilothouse.config.load import Loader
from pilothouse.config.model import ConfigKey
from pilothouse.kinds.table import SCHEMAS
from pilothouse.sources.etcd_layout import EtcdLayout, stored_value

GATEWAY = {
    "apiVersion": "networking.istio.io/v1",
    "kind": "Gateway",
    "metadata": {"name": "edge", "resourceVersion": "9"},
    "spec": {"servers": [{"port": {"number": 80, "name": "http", "protocol": "HTTP"},
                          "hosts": ["*"]}]},
}  # fmt: skip


def test_keys_round_trip_under_a_prefix() -> None:
    layout = EtcdLayout("/mesh/")
    key = ConfigKey("Gateway", "ns", "edge")
    assert layout.key_of(key) == b"/mesh/networking.istio.io/Gateway/ns/edge"
    assert layout.config_key(layout.key_of(key)) == key
    assert layout.config_key(b"/mesh/security.istio.io/Gateway/ns/edge") is None
    assert layout.config_key(b"/mesh/networking.istio.io/Gateway/edge") is None
    assert layout.config_key(b"/other/networking.istio.io/Gateway/ns/edge") is None
    assert EtcdLayout("/").key_of(key) == b"/networking.istio.io/Gateway/ns/edge"


def test_stored_value_fills_the_namespace_and_drops_the_version() -> None:
    stored = json.loads(stored_value(GATEWAY, "ns", "2026-01-01T00:00:00Z"))
    assert stored["metadata"] == {
        "name": "edge",
        "namespace": "ns",
        "creationTimestamp": "2026-01-01T00:00:00Z",
    }


def test_decode_takes_the_mod_revision_and_checks_the_key() -> None:
    layout = EtcdLayout("/mesh")
    value = stored_value(GATEWAY, "ns", "2026-01-01T00:00:00Z")
    good = layout.decode(Loader(SCHEMAS), b"/mesh/networking.istio.io/Gateway/ns/edge", value, 42)
    assert good.config is not None and good.config.resource_version == "42"
    assert good.config.origin.file == "/mesh/networking.istio.io/Gateway/ns/edge"
    other = b"/mesh/networking.istio.io/Gateway/ns/other"
    elsewhere = layout.decode(Loader(SCHEMAS), other, value, 4)
    assert elsewhere.config is None
    assert "not the Gateway ns/other its key names" in elsewhere.problems[0].message
    broken = layout.decode(Loader(SCHEMAS), b"/mesh/networking.istio.io/Gateway/ns/x", b"{", 5)
    assert broken.config is None and "not JSON" in broken.problems[0].message
