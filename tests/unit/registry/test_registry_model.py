"""Registry values: labels and selectors, service keys as push keys, exportTo."""

from __future__ import annotations

import pytest

from pilothouse.config.model import ConfigKey
from pilothouse.registry.model import (
    SERVICE_KIND,
    Labels,
    Location,
    Resolution,
    Service,
    ServiceKey,
    ServicePort,
)


def test_registry_labels_are_an_immutable_hashable_mapping() -> None:
    a = Labels.of({"b": "2", "a": "1"})
    b = Labels.of([("a", "1"), ("b", "2")])
    assert a == b and hash(a) == hash(b)
    assert dict(a) == {"a": "1", "b": "2"}
    assert list(a) == ["a", "b"]
    assert a["b"] == "2" and "a" in a and "z" not in a
    assert len({a, b}) == 1
    with pytest.raises(AttributeError):
        a.pairs = ()  # type: ignore[misc]
    with pytest.raises(ValueError):
        Labels((("a", "1"), ("a", "2")))


def test_registry_label_selector_matching() -> None:
    labels = Labels.of({"app": "r", "version": "v1"})
    assert labels.matches({"app": "r"})
    assert labels.matches({"app": "r", "version": "v1"})
    assert not labels.matches({"app": "r", "version": "v2"})
    assert not labels.matches({"zone": "a"})
    assert labels.matches({}) and labels.matches(None)
    assert not Labels().matches({"app": "r"})
    assert labels.merged({"version": "v2"}) == Labels.of({"app": "r", "version": "v2"})


def test_registry_service_key_round_trips_through_config_key() -> None:
    key = ServiceKey("a.example.com", "ns")
    assert key.config_key == ConfigKey(SERVICE_KIND, "ns", "a.example.com")
    assert ServiceKey.from_config_key(key.config_key) == key
    assert ServiceKey.from_config_key(ConfigKey("ServiceEntry", "ns", "a")) is None


def _service(export_to: frozenset[str]) -> Service:
    return Service(
        hostname="a.example.com",
        namespace="ns",
        ports=(ServicePort("http", 80, "HTTP"),),
        resolution=Resolution.STATIC,
        location=Location.MESH_INTERNAL,
        source=ConfigKey("ServiceEntry", "ns", "a"),
        export_to=export_to,
    )


def test_registry_export_to() -> None:
    assert _service(frozenset()).is_exported_to("anything")
    assert _service(frozenset({"*"})).is_exported_to("anything")
    assert not _service(frozenset({"~"})).is_exported_to("ns")
    only = _service(frozenset({"ns", "web"}))
    assert only.is_exported_to("ns") and only.is_exported_to("web")
    assert not only.is_exported_to("other")
    # An empty exportTo takes the mesh default when one is given.
    assert not _service(frozenset()).is_exported_to("other", default=frozenset({"ns"}))


def test_registry_service_port_endpoint_port() -> None:
    assert ServicePort("http", 80, "HTTP", 8080).endpoint_port == 8080
    assert ServicePort("http", 80, "HTTP").endpoint_port == 80


def _http_service(hostname: str = "a.shop.svc", number: int = 80) -> Service:
    return Service(
        hostname,
        "shop",
        (ServicePort("http", number, "HTTP"),),
        Resolution.STATIC,
        Location.MESH_INTERNAL,
        ConfigKey("ServiceEntry", "shop", "a"),
        workload_selector=Labels.of({"app": "a"}),
    )


def test_registry_service_hash_is_made_once_from_every_compared_field() -> None:
    """The hash is kept after the first use; it must still follow equality: equal services
    hash alike, and a service that differs in any compared field is another key."""
    import dataclasses

    a, b = _http_service(), _http_service()
    assert a == b and hash(a) == hash(b) and hash(a) == hash(a)
    assert len({a, b}) == 1
    assert _http_service(number=81) != a and len({a, _http_service(number=81)}) == 2
    assert dataclasses.replace(a, addresses=("10.0.0.1",)) not in {a}
    compared = tuple(f.name for f in dataclasses.fields(Service) if f.compare)
    from pilothouse.registry import model

    assert model._service_fields(a) == tuple(getattr(a, name) for name in compared)


def test_registry_service_equality_is_the_same_before_and_after_hashing() -> None:
    """Equality looks at the kept hashes first when both sides have one; the answer must
    be what comparing the fields gives, hashed or not."""
    import dataclasses

    a, b = _http_service(), _http_service()
    other = _http_service(number=81)
    elsewhere = dataclasses.replace(a, creation_time=None, addresses=("10.0.0.1",))
    assert a == b and a != other and a != elsewhere  # no hash made yet
    for service in (a, b, other, elsewhere):
        hash(service)
    assert a == b and b == a and a != other and other != a and a != elsewhere
    assert (a == "web") is False and a.__eq__("web") is NotImplemented
