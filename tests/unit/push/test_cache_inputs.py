"""Cache inputs: keys are the inputs, and dependencies are derived from them by type."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2
from pilothouse.config.model import Config, ConfigKey, Origin
from pilothouse.push.cache import Resource, ResourceCache
from pilothouse.push.inputs import (
    ConfigRevision,
    EndpointsAt,
    FrozenInputs,
    InputKey,
    dependencies,
)
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.model import (
    Endpoint,
    Labels,
    Location,
    Resolution,
    Service,
    ServiceKey,
)

ENTRY = ConfigKey("ServiceEntry", "shop", "web")
SERVICE = Service("web.shop.svc", "shop", (), Resolution.STATIC, Location.MESH_INTERNAL, ENTRY)


def rule(version: str, host: str = "web.shop.svc", source: str = "fs") -> Config:
    spec = dr_pb2.DestinationRule(host=host)
    return Config(
        "DestinationRule", "web", "shop", spec, resource_version=version, origin=Origin(source)
    )


@dataclass(frozen=True, slots=True)
class Inner:
    rule: ConfigRevision | None
    ignored: ConfigKey = field(compare=False, default=ConfigKey("Sidecar", "x", "y"))


@dataclass(frozen=True, slots=True)
class Outer:
    service: Service
    endpoints: ServiceKey
    inner: Inner
    many: tuple[ConfigKey, ...]
    parts: InputKey
    number: int = 0


def test_dependencies_are_derived_from_the_compared_fields_by_type() -> None:
    gateway = ConfigKey("Gateway", "istio-system", "ingress")
    sidecar = ConfigKey("Sidecar", "shop", "default")
    value = Outer(
        service=SERVICE,
        endpoints=SERVICE.key,
        inner=Inner(ConfigRevision.of(rule("1"))),
        many=(gateway,),
        parts=InputKey(("x", (sidecar, 3))),
        number=7,
    )
    assert dependencies(value) == {
        ENTRY,  # a Service: the ServiceEntry it comes from
        SERVICE.key.config_key,  # a ServiceKey: the service's endpoints
        ConfigKey("DestinationRule", "shop", "web"),  # a rule's revision
        gateway,
        sidecar,
    }  # Inner.ignored is not compared, so it is not a dependency
    assert dependencies(("plain", 1, b"bytes")) == frozenset()
    # labels (string pairs) name nothing, however they sit in the value
    assert dependencies((Labels.of({"app": "web"}), ENTRY)) == {ENTRY}


def test_a_config_revision_compares_by_key_source_and_resource_version() -> None:
    one, same, edited = rule("1"), rule("1", host="other"), rule("2")
    assert ConfigRevision.of(one) == ConfigRevision.of(same)  # same revision: same content
    assert ConfigRevision.of(one) != ConfigRevision.of(edited)
    assert ConfigRevision.of(one) != ConfigRevision.of(rule("1", source="etcd"))
    assert ConfigRevision.of(None) is None
    revision = ConfigRevision.of(edited)
    assert revision is not None and revision.config is edited


def test_endpoints_at_a_version_refuse_to_be_read_once_the_index_moved_on() -> None:
    index = EndpointIndex()
    shard = ConfigKey("WorkloadEntry", "shop", "web-1")
    index.update_shard(SERVICE.key, shard, [Endpoint("10.0.0.1", 80, "http", shard)])
    at = EndpointsAt.of(SERVICE.key, index)
    assert [e.address for e in at.read("http", None)] == ["10.0.0.1"]
    index.update_shard(SERVICE.key, shard, [Endpoint("10.0.0.2", 80, "http", shard)])
    moved = EndpointsAt.of(SERVICE.key, index)
    assert moved != at and dependencies(moved) == {SERVICE.key.config_key}
    with pytest.raises(RuntimeError):
        at.read("http", None)


def test_the_cache_builds_once_per_distinct_inputs_and_evicts_by_what_they_name() -> None:
    cache = ResourceCache()
    built: list[Inner] = []

    def build(inputs: Inner) -> Resource:
        built.append(inputs)
        return Resource("r", str(len(built)), b"")

    first = cache.resource(Inner(ConfigRevision.of(rule("1"))), build)
    assert cache.resource(Inner(ConfigRevision.of(rule("1"))), build) is first
    assert cache.resource(Inner(ConfigRevision.of(rule("2"))), build) is not first
    assert len(built) == 2
    assert cache.invalidate([ConfigKey("DestinationRule", "shop", "web")]) == 2
    assert len(cache) == 0


@dataclass(frozen=True, slots=True, eq=False)
class Named(FrozenInputs):
    """Inputs of many parts with named fields, one derived on first use."""

    service: Service
    sidecar: ConfigKey | None
    hosts: tuple[str, ...]
    derived: list[str] = field(default_factory=list, compare=False)


@dataclass(frozen=True, slots=True, eq=False)
class Renamed(FrozenInputs):
    """The same fields as :class:`Named`, under another name."""

    service: Service
    sidecar: ConfigKey | None
    hosts: tuple[str, ...]


def test_frozen_inputs_compare_and_hash_by_their_compared_fields() -> None:
    sidecar = ConfigKey("Sidecar", "shop", "default")
    one = Named(SERVICE, sidecar, ("a", "b"))
    same = Named(SERVICE, sidecar, ("a", "b"), derived=["made later"])
    assert one == same and hash(one) == hash(same)
    assert {one: 1}[same] == 1
    assert one != Named(SERVICE, None, ("a", "b"))
    assert one != Named(SERVICE, sidecar, ("a",))
    assert one != Renamed(SERVICE, sidecar, ("a", "b"))  # a different kind of inputs
    with pytest.raises(AttributeError):
        one.hosts = ()  # type: ignore[misc]


def test_frozen_inputs_name_their_dependencies_once() -> None:
    sidecar = ConfigKey("Sidecar", "shop", "default")
    value = Named(SERVICE, sidecar, ("a",))
    assert value.depends_on == {ENTRY, sidecar}
    assert value.depends_on is value.depends_on  # walked once
    assert dependencies((value, ConfigKey("Gateway", "a", "b"))) == {
        ENTRY,
        sidecar,
        ConfigKey("Gateway", "a", "b"),
    }


class CountedPart:
    """A part that counts how often it is compared (equal to every other CountedPart)."""

    compared = 0

    def __hash__(self) -> int:
        return 7

    def __eq__(self, other: object) -> bool:
        CountedPart.compared += 1
        return isinstance(other, CountedPart)


def test_equal_keys_of_two_scopes_walk_their_parts_once_per_pair() -> None:
    """Two scopes gather equal keys of their own; each proxy looks its scope's key up in
    the cache, where the other scope's is stored: only the first lookup compares parts."""
    CountedPart.compared = 0
    stored = InputKey((CountedPart(), CountedPart()))
    cache = ResourceCache()
    built = cache.value(stored, lambda: "built")
    other = InputKey((CountedPart(), CountedPart()))
    assert cache.value(other, lambda: "again") is built
    walked = CountedPart.compared
    assert walked == 2
    for _ in range(5):
        assert cache.value(other, lambda: "again") is built
        assert other == stored and stored == other
    assert CountedPart.compared == walked
    third = InputKey((CountedPart(), CountedPart()))  # a third scope meets the stored key
    assert cache.value(third, lambda: "again") is built
    assert cache.value(other, lambda: "again") is built  # the second is still known equal
    assert CountedPart.compared == walked + 2
    assert InputKey((CountedPart(),)) != stored


def test_equal_frozen_inputs_compare_their_fields_once_per_pair() -> None:
    CountedPart.compared = 0
    sidecar = ConfigKey("Sidecar", "shop", "default")
    hosts: tuple[str, ...] = (CountedPart(),)  # type: ignore[assignment]
    keyed = {Named(SERVICE, sidecar, hosts): "stored"}
    one = Named(SERVICE, sidecar, (CountedPart(),))  # type: ignore[arg-type]
    for _ in range(3):
        assert keyed[one] == "stored"
    assert CountedPart.compared == 1
    assert Named(SERVICE, None, hosts) not in keyed
    assert one != Renamed(SERVICE, sidecar, hosts)
