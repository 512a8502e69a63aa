"""The canonical digest: one resource read from pilothouse's bytes and from Envoy's JSON
gives one digest; any change to what Envoy would use gives another."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from typing import Any

import pytest
from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.config.endpoint.v3 import endpoint_pb2  # type: ignore[import-untyped]
from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.http.router.v3 import router_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2 as hcm_pb2,
)
from envoy.extensions.upstreams.http.v3 import (  # type: ignore[import-untyped]
    http_protocol_options_pb2,
)
from google.protobuf import any_pb2, json_format
from google.protobuf.message import Message
from udpa.type.v1 import typed_struct_pb2  # type: ignore[import-untyped]

from pilothouse.inspector.digest import Unreadable, bytes_digest, from_json, json_digest
from pilothouse.inspector.message_types import MessageTypes
from pilothouse.protocol.type_urls import CDS, EDS, LDS
from pilothouse.xds.builders.encode import to_any_bytes

OPTIONS = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"


def cluster() -> Any:
    made = cluster_pb2.Cluster(name="outbound|9080||reviews.bookinfo.svc.cluster.local")
    made.type = cluster_pb2.Cluster.EDS
    made.eds_cluster_config.service_name = made.name
    made.eds_cluster_config.eds_config.ads.SetInParent()
    made.connect_timeout.seconds = 10
    options = http_protocol_options_pb2.HttpProtocolOptions()
    options.common_http_protocol_options.idle_timeout.seconds = 300
    options.use_downstream_protocol_config.http2_protocol_options.SetInParent()
    made.typed_extension_protocol_options[OPTIONS].Pack(options)
    made.typed_extension_protocol_options["z.last"].Pack(options)
    fields = made.metadata.filter_metadata["istio"].fields
    for key in ("services", "default_original_port", "config", "alpha"):
        fields[key].string_value = f"value of {key}"
    return made


def listener() -> Any:
    router = any_pb2.Any()
    router.Pack(router_pb2.Router())
    manager = hcm_pb2.HttpConnectionManager(stat_prefix="outbound_0.0.0.0_9080")
    manager.rds.route_config_name = "9080"
    manager.rds.config_source.ads.SetInParent()
    stats = typed_struct_pb2.TypedStruct(type_url="type.googleapis.com/stats.PluginConfig")
    for index in range(40):  # enough keys that no packing order is sorted by chance
        stats.value.fields[f"tag_{index:02d}"].string_value = f"value {index}"
    manager.http_filters.add(name="istio.stats").typed_config.Pack(stats)  # a map in an Any
    manager.http_filters.add(name="envoy.filters.http.router", typed_config=router)
    made = listener_pb2.Listener(name="0.0.0.0_9080")
    made.address.socket_address.address = "0.0.0.0"
    made.address.socket_address.port_value = 9080
    made.bind_to_port.value = False
    network = made.filter_chains.add().filters.add(
        name="envoy.filters.network.http_connection_manager"
    )
    network.typed_config.Pack(manager)
    return made


def as_envoy_dumps(message: Message) -> dict[str, Any]:
    """The resource as Envoy's /config_dump shows it: snake_case fields, ``@type``."""
    wrapped = any_pb2.Any()
    wrapped.Pack(message)
    dumped: dict[str, Any] = json_format.MessageToDict(wrapped, preserving_proto_field_name=True)
    return dumped


def shuffled(value: Any, rng: random.Random) -> Any:
    """The same JSON with every object's keys in another order (maps included)."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {key: shuffled(item, rng) for key, item in items}
    if isinstance(value, list):
        return [shuffled(item, rng) for item in value]
    return value


@pytest.fixture(scope="module")
def types() -> MessageTypes:
    return MessageTypes()


@pytest.mark.parametrize(("type_url", "build"), [(CDS, cluster), (LDS, listener)])
def test_the_same_resource_from_bytes_and_from_json_has_one_digest(
    type_url: str, build: Any, types: MessageTypes
) -> None:
    message = build()
    sent = bytes_digest(type_url, to_any_bytes(message), types)
    dumped = as_envoy_dumps(message)
    assert json_digest(type_url, dumped, types) == sent
    for seed in range(5):  # key order, and so how json_format packs a map inside an Any
        assert json_digest(type_url, shuffled(dumped, random.Random(seed)), types) == sent
    as_camel = json.loads(json_format.MessageToJson(_packed(message)))  # proto3 JSON names
    assert json_digest(type_url, as_camel, types) == sent


def _packed(message: Message) -> Any:
    wrapped = any_pb2.Any()
    wrapped.Pack(message)
    return wrapped


def test_a_map_inside_an_any_defeats_deterministic_serialisation(types: MessageTypes) -> None:
    """Why the digest is not over the parsed message's deterministic serialisation."""
    sent = listener().SerializeToString(deterministic=True)
    read = [
        from_json(shuffled(as_envoy_dumps(listener()), random.Random(seed)), types)
        for seed in range(5)
    ]
    assert any(m.SerializeToString(deterministic=True) != sent for m in read)


def test_a_changed_field_changes_the_digest(types: MessageTypes) -> None:
    base = cluster()
    sent = bytes_digest(CDS, to_any_bytes(base), types)
    changed = cluster()
    changed.connect_timeout.seconds = 11
    assert json_digest(CDS, as_envoy_dumps(changed), types) != sent
    nested = cluster()  # a field inside a nested Any
    options = http_protocol_options_pb2.HttpProtocolOptions()
    options.common_http_protocol_options.idle_timeout.seconds = 301
    options.use_downstream_protocol_config.http2_protocol_options.SetInParent()
    nested.typed_extension_protocol_options[OPTIONS].Pack(options)
    assert json_digest(CDS, as_envoy_dumps(nested), types) != sent
    renamed = listener()
    renamed.filter_chains[0].filters[0].name = "envoy.filters.network.tcp_proxy"
    assert bytes_digest(LDS, to_any_bytes(renamed), types) != bytes_digest(
        LDS, to_any_bytes(listener()), types
    )


def test_version_fields_of_the_dump_and_unknown_fields_are_not_part_of_the_resource(
    types: MessageTypes,
) -> None:
    message = cluster()
    sent = bytes_digest(CDS, to_any_bytes(message), types)
    dumped = as_envoy_dumps(message)
    dumped["a_field_these_protos_do_not_know"] = {"x": 1}
    assert json_digest(CDS, dumped, types) == sent


def test_unreadable_resources_say_why(types: MessageTypes) -> None:
    with pytest.raises(Unreadable, match="no @type"):
        json_digest(CDS, {"name": "x"}, types)
    with pytest.raises(Unreadable, match="unknown message type"):
        json_digest(CDS, {"@type": "type.googleapis.com/envoy.nothing.v3.Nope"}, types)
    with pytest.raises(Unreadable):
        json_digest(
            CDS,
            {
                "@type": f"type.googleapis.com/{cluster_pb2.Cluster.DESCRIPTOR.full_name}",
                "connect_timeout": "soon",
            },
            types,
        )
    with pytest.raises(Unreadable):
        bytes_digest(CDS, b"\xff\xff not an Any", types)


# -- endpoints: Envoy rebuilds the assignment from its hosts ----------------------------

REVIEWS = "outbound|9080|v3|reviews.bookinfo.svc.cluster.local"


def assignment(
    *, weight: int = 2, health: str = "HEALTHY", ports: tuple[int, ...] = (19084,)
) -> Any:
    made = endpoint_pb2.ClusterLoadAssignment(cluster_name=REVIEWS)
    group = made.endpoints.add()
    group.locality.region, group.locality.zone = "local", "zone-b"
    group.load_balancing_weight.value = weight * len(ports)
    for port in ports:
        member = group.lb_endpoints.add()
        member.endpoint.address.socket_address.address = "127.0.0.1"
        member.endpoint.address.socket_address.port_value = port
        member.health_status = health
        member.load_balancing_weight.value = weight
        fields = member.metadata.filter_metadata["envoy.lb"].fields
        fields["app"].string_value = "reviews"
        fields["version"].string_value = "v3"
    return made


ENVOY_DUMPED = {
    # What Envoy 1.40's /config_dump?include_eds printed for the assignment above.
    "@type": "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
    "cluster_name": REVIEWS,
    "endpoints": [
        {
            "locality": {"region": "local", "zone": "zone-b"},
            "lb_endpoints": [
                {
                    "endpoint": {
                        "address": {
                            "socket_address": {"address": "127.0.0.1", "port_value": 19084}
                        },
                        "health_check_config": {},
                    },
                    "health_status": "HEALTHY",
                    "metadata": {
                        "filter_metadata": {"envoy.lb": {"version": "v3", "app": "reviews"}}
                    },
                    "load_balancing_weight": 2,
                }
            ],
            "load_balancing_weight": 2,
        }
    ],
    "policy": {"overprovisioning_factor": 140},
}


def test_an_assignment_as_envoy_dumps_it_has_the_digest_of_the_one_sent(
    types: MessageTypes,
) -> None:
    assert json_digest(EDS, ENVOY_DUMPED, types) == bytes_digest(
        EDS, to_any_bytes(assignment()), types
    )


def test_runtime_health_and_written_out_defaults_do_not_count(types: MessageTypes) -> None:
    sent = bytes_digest(EDS, to_any_bytes(assignment(health="UNKNOWN")), types)
    dumped = json.loads(json.dumps(ENVOY_DUMPED))
    dumped["endpoints"][0]["lb_endpoints"][0]["health_status"] = "UNHEALTHY"  # failed a check
    assert json_digest(EDS, dumped, types) == sent


def test_what_endpoints_there_are_and_their_weights_count(types: MessageTypes) -> None:
    dumped = json_digest(EDS, ENVOY_DUMPED, types)
    assert bytes_digest(EDS, to_any_bytes(assignment(weight=3)), types) != dumped
    assert bytes_digest(EDS, to_any_bytes(assignment(ports=(19084, 19086))), types) != dumped
    assert bytes_digest(EDS, to_any_bytes(assignment(ports=(19086,))), types) != dumped
    moved = assignment()
    moved.endpoints[0].locality.zone = "zone-c"
    assert bytes_digest(EDS, to_any_bytes(moved), types) != dumped


def test_endpoint_and_locality_order_does_not_count(types: MessageTypes) -> None:
    forward = assignment(ports=(19084, 19086))
    second = forward.endpoints.add()
    second.locality.zone = "zone-a"
    backward = endpoint_pb2.ClusterLoadAssignment()
    backward.CopyFrom(forward)
    backward.endpoints.reverse()
    members = list(backward.endpoints[1].lb_endpoints)
    del backward.endpoints[1].lb_endpoints[:]
    backward.endpoints[1].lb_endpoints.extend(reversed(members))
    assert bytes_digest(EDS, to_any_bytes(forward), types) == bytes_digest(
        EDS, to_any_bytes(backward), types
    )


# -- message types ----------------------------------------------------------------------

PROBE = """
import sys
from pilothouse.inspector.message_types import MessageTypes
types = MessageTypes()
name = "envoy.extensions.filters.http.buffer.v3.Buffer"
assert "envoy.extensions.filters.http.buffer.v3.buffer_pb2" not in sys.modules
print(types.new("type.googleapis.com/" + name).DESCRIPTOR.full_name)
for outside in ("os.path.Nope", "json.decoder.JSONDecoder"):
    try:
        types.FindMessageTypeByName(outside)
    except KeyError:
        pass
    assert not any(m.startswith("json.decoder.") for m in sys.modules if m != "json.decoder")
print("refused")
"""


def test_types_are_imported_when_first_named_and_only_from_proto_packages() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["envoy.extensions.filters.http.buffer.v3.Buffer", "refused"]
