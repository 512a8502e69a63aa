"""The node agent's copy of its node's set (:class:`NodeSetClient`): what it subscribes
to, how it takes delta responses (adds, changes, removals, ACKs), that a response with a
bad resource is NACKed whole and the copy keeps its last good objects, what it tells
the server when it reconnects, and the node config's ``nodeIP``. Responses are made by
the server's own encoder (no stream here: the integration test runs real processes)."""

from __future__ import annotations

import pytest
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.agent.node_agent import NodeConfigError, read_node_config
from pilothouse.agent.node_set import NodeSetClient
from pilothouse.api.istio.networking.v1alpha3 import workload_entry_pb2
from pilothouse.config.model import Config
from pilothouse.nodesets.server import NodeSetServer
from pilothouse.nodesets.service import NODE_ADDRESSES_KEY
from pilothouse.sources.memory import MemoryStore

WE = "networking.istio.io/v1/WorkloadEntry"


def response(
    server: NodeSetServer, nonce: str, *configs: Config, removed: tuple[str, ...] = ()
) -> discovery_pb2.DeltaDiscoveryResponse:
    made = discovery_pb2.DeltaDiscoveryResponse(type_url=WE, nonce=nonce)
    for config in configs:
        resource = server.resource(config)
        item = made.resources.add(name=resource.name, version=resource.version)
        item.resource.ParseFromString(resource.body)
    made.removed_resources.extend(removed)
    return made


def entry(name: str, address: str) -> Config:
    return Config("WorkloadEntry", name, "shop", workload_entry_pb2.WorkloadEntry(address=address))


def test_the_client_keeps_its_set_from_delta_responses_and_resumes_with_it() -> None:
    client = NodeSetClient("127.0.0.1:1", ["10.0.0.1", "10.0.0.9"], "node~a")
    assert WE in client.types and "security.istio.io/v1/AuthorizationPolicy" in client.types
    first = client._first_requests()
    assert first[0].node.metadata.fields[NODE_ADDRESSES_KEY].string_value == "10.0.0.1,10.0.0.9"
    assert {r.type_url for r in first} == set(client.types)
    server = NodeSetServer(MemoryStore())
    ack = client.apply(response(server, "1", entry("a1", "10.0.0.1"), entry("a2", "10.0.0.1")))
    assert ack.response_nonce == "1" and not ack.HasField("error_detail")
    assert sorted(c.name for c in client.workloads()) == ["a1", "a2"]
    client.apply(response(server, "2", removed=("shop/a1",)))
    assert [c.name for c in client.workloads()] == ["a2"]
    view = client.view()
    assert view["kinds"]["WorkloadEntry"][0]["spec"] == {"address": "10.0.0.1"}
    assert view["responses"] == 2 and not view["synced"]  # other kinds not answered yet
    resumed = {r.type_url: r for r in client._first_requests()}[WE]
    assert dict(resumed.initial_resource_versions) == {
        "shop/a2": server.resource(entry("a2", "10.0.0.1")).version
    }


def test_a_bad_resource_is_nacked_and_the_last_good_set_stays() -> None:
    client = NodeSetClient("127.0.0.1:1", ["10.0.0.1"])
    server = NodeSetServer(MemoryStore())
    client.apply(response(server, "1", entry("a1", "10.0.0.1")))
    bad = response(server, "2", entry("a2", "10.0.0.1"))
    bad.resources[0].resource.value = b"\xff\xff"
    nack = client.apply(bad)
    assert nack.response_nonce == "2" and "shop/a2" in nack.error_detail.message
    assert [c.name for c in client.workloads()] == ["a1"] and client.nacks == 1


def test_node_ip_needs_where_node_sets_are_served() -> None:
    base = "rootCert: /r.pem\nworkloads:\n- {name: w, namespace: n, serviceAccount: s, "
    base += "uids: [1], token: /t, sdsSocket: /s, xdsSocket: /x}\n"
    config = read_node_config(base + "nodeIP: 10.0.0.1, 10.0.0.2\nnodeSetAddress: h:1\n", "f")
    assert config.node_ips == ("10.0.0.1", "10.0.0.2") and config.node_set_address == "h:1"
    assert read_node_config(base, "f").node_ips == ()
    with pytest.raises(NodeConfigError, match=r"nodeIP needs nodeIdentity .* or nodeSetAddress"):
        read_node_config(base + "nodeIP: 10.0.0.1\n", "f")
    with pytest.raises(NodeConfigError, match="nodeIP: an address"):
        read_node_config(base + "nodeIP: [1]\nnodeSetAddress: h:1\n", "f")


def test_a_node_identity_takes_the_node_set_to_the_tls_port() -> None:
    base = "xdsAddresses: [tls:15012, other:15012]\nrootCert: /r.pem\nworkloads:\n"
    base += "- {name: w, namespace: n, serviceAccount: s, uids: [1], token: /t, sdsSocket: /s,"
    base += " xdsSocket: /x}\nnodeIP: 10.0.0.1\n"
    identity = "nodeIdentity: {namespace: istio-system, serviceAccount: node-agent, token: /nt}\n"
    config = read_node_config(base + identity, "f")
    assert config.node_set_address == "tls:15012"  # the first xDS address: the TLS port
    assert config.node_set_addresses == ("tls:15012", "other:15012")  # every one, in turn
    assert config.node_identity is not None
    assert config.node_identity.identity.uri == (
        "spiffe://cluster.local/ns/istio-system/sa/node-agent"
    )
    assert str(config.node_identity.token) == "/nt"
    elsewhere = read_node_config(base + identity + "nodeSetAddress: h:2\n", "f")
    assert elsewhere.node_set_addresses == ("h:2",)
    replicas = read_node_config(base + identity + "nodeSetAddress: [h:2, h:3]\n", "f")
    assert replicas.node_set_addresses == ("h:2", "h:3")
    with pytest.raises(NodeConfigError, match="nodeSetAddress must be host:port or a list"):
        read_node_config(base + identity + "nodeSetAddress: [h:2, 3]\n", "f")
    with pytest.raises(NodeConfigError, match=r"nodeIdentity.serviceAccount: required"):
        read_node_config(base + "nodeIdentity: {namespace: n, token: /t}\n", "f")
