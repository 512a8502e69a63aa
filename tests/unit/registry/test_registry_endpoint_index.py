"""EndpointIndex: shards, change detection, versions, deterministic order, subsets, dump."""

from __future__ import annotations

import json

from pilothouse.config.model import ConfigKey
from pilothouse.registry.endpoint_index import DeferredShard, EndpointIndex
from pilothouse.registry.model import Endpoint, Labels, ServiceKey

SVC = ServiceKey("reviews.example.com", "default")
OTHER = ServiceKey("ratings.example.com", "default")
SE = ConfigKey("ServiceEntry", "default", "reviews")
WE1 = ConfigKey("WorkloadEntry", "default", "vm1")
WE2 = ConfigKey("WorkloadEntry", "default", "vm2")


def ep(
    address: str, port: int = 80, name: str = "http", source: ConfigKey = WE1, **labels: str
) -> Endpoint:
    return Endpoint(address, port, name, source, labels=Labels.of(labels))


def test_registry_index_update_reports_change_only_when_content_changes() -> None:
    index = EndpointIndex()
    assert index.update_shard(SVC, WE1, [ep("1.1.1.1"), ep("1.1.1.2")])
    v1 = index.version(SVC)
    assert v1 > 0
    # Same endpoints in another order: no change, same version.
    assert not index.update_shard(SVC, WE1, [ep("1.1.1.2"), ep("1.1.1.1")])
    assert index.version(SVC) == v1
    assert index.update_shard(SVC, WE1, [ep("1.1.1.2")])
    assert index.version(SVC) > v1


def test_registry_index_versions_are_per_service_and_never_reused() -> None:
    index = EndpointIndex()
    assert index.version(SVC) == 0
    index.update_shard(SVC, WE1, [ep("1.1.1.1")])
    other_before = index.version(OTHER)
    v1 = index.version(SVC)
    index.update_shard(OTHER, WE2, [ep("2.2.2.2", source=WE2)])
    assert index.version(SVC) == v1  # another service's change leaves it alone
    assert index.version(OTHER) > other_before
    assert index.delete_shard(SVC, WE1)
    v2 = index.version(SVC)
    assert v2 > v1
    assert index.endpoints(SVC) == ()
    assert SVC not in index.services()
    index.update_shard(SVC, WE1, [ep("1.1.1.1")])
    assert index.version(SVC) > v2  # same content as at v1, but a new version


def test_registry_index_delete_missing_and_empty_update() -> None:
    index = EndpointIndex()
    assert not index.delete_shard(SVC, WE1)
    assert not index.update_shard(SVC, WE1, [])
    assert index.version(SVC) == 0
    index.update_shard(SVC, WE1, [ep("1.1.1.1")])
    assert index.update_shard(SVC, WE1, [])  # empty means gone
    assert index.shards(SVC) == {}


def test_registry_index_endpoints_are_ordered_by_shard_then_endpoint() -> None:
    index = EndpointIndex()
    index.update_shard(SVC, WE2, [ep("9.9.9.9", source=WE2)])
    index.update_shard(SVC, WE1, [ep("5.5.5.5"), ep("1.1.1.1")])
    index.update_shard(SVC, SE, [ep("7.7.7.7", source=SE)])
    # ConfigKey order: ServiceEntry < WorkloadEntry vm1 < WorkloadEntry vm2.
    assert [e.address for e in index.endpoints(SVC)] == [
        "7.7.7.7",
        "1.1.1.1",
        "5.5.5.5",
        "9.9.9.9",
    ]
    assert index.services() == (SVC,)
    assert set(index.shards(SVC)) == {SE, WE1, WE2}


def test_registry_index_endpoints_for_port_and_subset() -> None:
    index = EndpointIndex()
    index.update_shard(
        SVC,
        WE1,
        [
            ep("1.1.1.1", 80, "http", version="v1", app="r"),
            ep("1.1.1.1", 90, "grpc", version="v1", app="r"),
            ep("1.1.1.2", 80, "http", version="v2", app="r"),
        ],
    )
    assert [e.address for e in index.endpoints_for(SVC, "http")] == ["1.1.1.1", "1.1.1.2"]
    assert [e.port for e in index.endpoints_for(SVC, "grpc")] == [90]
    assert [e.address for e in index.endpoints_for(SVC, "http", {"version": "v2"})] == ["1.1.1.2"]
    assert index.endpoints_for(SVC, "http", {"version": "v3"}) == ()
    assert index.endpoints_for(SVC, "nope") == ()
    assert index.endpoints_for(OTHER, "http") == ()


def test_registry_index_endpoints_reflect_updates_after_caching() -> None:
    index = EndpointIndex()
    index.update_shard(SVC, WE1, [ep("1.1.1.1")])
    assert [e.address for e in index.endpoints(SVC)] == ["1.1.1.1"]
    index.update_shard(SVC, WE2, [ep("2.2.2.2", source=WE2)])
    assert [e.address for e in index.endpoints(SVC)] == ["1.1.1.1", "2.2.2.2"]


def test_registry_index_dump_is_json() -> None:
    index = EndpointIndex()
    index.update_shard(SVC, WE1, [ep("1.1.1.1", version="v1")])
    dump = index.dump()
    json.dumps(dump)
    entry = dump["reviews.example.com"]["default"]
    assert entry["version"] == index.version(SVC)
    (shard,) = entry["shards"].values()
    assert shard == [
        {
            "address": "1.1.1.1",
            "port": 80,
            "servicePortName": "http",
            "labels": {"version": "v1"},
            "locality": "",
            "weight": 1,
            "network": "",
            "serviceAccount": "",
        }
    ]


def test_deferred_shard_is_made_on_first_read_only() -> None:
    made: list[str] = []

    def make() -> list[Endpoint]:
        made.append("x")
        return [ep("1.1.1.2", source=SE), ep("1.1.1.1", source=SE)]

    index = EndpointIndex()
    assert index.defer_shard(SVC, SE, DeferredShard(("v1",), make))
    assert index.version(SVC) > 0 and index.services() == (SVC,)
    assert made == []
    assert [e.address for e in index.endpoints(SVC)] == ["1.1.1.1", "1.1.1.2"]
    assert index.endpoints(SVC) == index.endpoints(SVC) and made == ["x"]


def test_deferred_shard_changes_by_fingerprint_then_by_content() -> None:
    index = EndpointIndex()
    first = [ep("1.1.1.1", source=SE), ep("1.1.1.2", source=SE)]
    index.defer_shard(SVC, SE, DeferredShard("a", lambda: first))
    version = index.version(SVC)
    # Same fingerprint: unchanged, and nothing is made.
    assert not index.defer_shard(SVC, SE, DeferredShard("a", lambda: [ep("9.9.9.9")]))
    # Another fingerprint making the same endpoints (reordered): unchanged.
    assert not index.defer_shard(SVC, SE, DeferredShard("b", lambda: list(reversed(first))))
    assert index.version(SVC) == version
    # Other endpoints: a change, a new version.
    assert index.defer_shard(SVC, SE, DeferredShard("c", lambda: [ep("2.2.2.2", source=SE)]))
    assert index.version(SVC) > version
    assert [e.address for e in index.endpoints(SVC)] == ["2.2.2.2"]
    assert dict(index.shards(SVC)) == {SE: (ep("2.2.2.2", source=SE),)}
    assert index.delete_shard(SVC, SE) and index.endpoints(SVC) == ()
