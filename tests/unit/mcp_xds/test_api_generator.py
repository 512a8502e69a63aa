"""The ``api`` generator: every GVK spelling, unknown kinds, MeshConfig, versions, the cache."""

from __future__ import annotations

import dataclasses
import datetime
import unittest.mock

import pytest
from google.protobuf import any_pb2

from pilothouse.api.istio.mcp.v1alpha1 import resource_pb2
from pilothouse.api.istio.mesh.v1alpha1 import config_pb2
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config, ConfigKey, Origin
from pilothouse.push.cache import Resource, ResourceCache
from pilothouse.push.context import build_context
from pilothouse.push.proxy import parse_node
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.generators import api as api_module
from pilothouse.xds.generators.api import (
    ApiGenerator,
    KindGenerator,
    MeshConfigGenerator,
    UnknownKindGenerator,
    watched_kinds,
)
from pilothouse.xds.generators.base import GenerationInput, Resources
from tests.unit.mcp_xds.mesh_objects import (
    AUTHORIZATION_POLICY,
    PEER_AUTHENTICATION,
    REQUEST_AUTHENTICATION,
    SERVICE_ENTRY,
    load,
)

NODE = "sidecar~10.0.0.2~istiod-1.istio-system~istio-system.svc.cluster.local"


def given(
    store: MemoryStore,
    cache: ResourceCache | None = None,
    mesh: MeshSettings | None = None,
    names: frozenset[str] | None = None,
) -> GenerationInput:
    proxy = parse_node(NODE, {"GENERATOR": "api"})
    context = build_context(store, lambda: (), mesh or MeshSettings(), "v1")
    return GenerationInput(
        proxy=proxy,
        scope=context.scope(proxy),
        context=context,
        endpoints=EndpointIndex(),
        cache=cache if cache is not None else ResourceCache(),
        names=names,
    )


def generate(api: ApiGenerator, type_name: str, store: MemoryStore, **kw: object) -> Resources:
    generator = api.for_type(type_name)
    assert generator is not None
    assert generator.type_url == type_name
    return generator.generate(given(store, **kw))  # type: ignore[arg-type]


@pytest.fixture
def store() -> MemoryStore:
    memory = MemoryStore("fs:///mesh")
    memory.apply(load(SERVICE_ENTRY, resource_version=""))
    memory.apply(load(SERVICE_ENTRY.replace("httpbin\n", "echo\n", 1), resource_version=""))
    memory.apply(load(PEER_AUTHENTICATION, resource_version=""))
    memory.apply(load(AUTHORIZATION_POLICY, resource_version=""))
    memory.apply(load(REQUEST_AUTHENTICATION, resource_version=""))
    return memory


@pytest.mark.parametrize("version", ["v1", "v1beta1", "v1alpha3"])
def test_every_networking_spelling_lists_the_same_objects(store: MemoryStore, version: str) -> None:
    api = ApiGenerator(store)
    resources = generate(api, f"networking.istio.io/{version}/ServiceEntry", store)
    assert sorted(resources) == ["shop/echo", "shop/httpbin"]
    for name, resource in resources.items():
        entry = any_pb2.Any.FromString(resource.body)
        assert resource_pb2.Resource.FromString(entry.value).metadata.name == name


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
def test_security_spellings(store: MemoryStore, version: str) -> None:
    api = ApiGenerator(store)
    resources = generate(api, f"security.istio.io/{version}/PeerAuthentication", store)
    assert list(resources) == ["istio-system/default"]


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
@pytest.mark.parametrize(
    ("kind", "name"),
    [("AuthorizationPolicy", "shop/reviews-viewer"), ("RequestAuthentication", "shop/jwt")],
)
def test_access_control_kinds_are_served_with_content(
    store: MemoryStore, version: str, kind: str, name: str
) -> None:
    api = ApiGenerator(store)
    resources = generate(api, f"security.istio.io/{version}/{kind}", store)
    assert list(resources) == [name]
    body = resource_pb2.Resource.FromString(any_pb2.Any.FromString(resources[name].body).value)
    assert body.body.type_url == f"type.googleapis.com/istio.security.v1beta1.{kind}"
    held = store.get(ConfigKey(kind, *name.split("/")))
    assert held is not None
    assert body.body.value == held.spec.SerializeToString(deterministic=True)


def test_metadata_version_is_the_resource_version(store: MemoryStore) -> None:
    api = ApiGenerator(store)
    held = store.get(ConfigKey("ServiceEntry", "shop", "httpbin"))
    assert held is not None and held.resource_version
    resource = generate(api, "networking.istio.io/v1/ServiceEntry", store)["shop/httpbin"]
    body = resource_pb2.Resource.FromString(any_pb2.Any.FromString(resource.body).value)
    assert body.metadata.version == held.resource_version


@pytest.mark.parametrize(
    "type_name",
    [
        "telemetry.istio.io/v1/NoSuchKind",
        "networking.istio.io/v1/ProxyConfig",
        "security.istio.io/v1alpha1/PeerAuthentication",
    ],
)
def test_kinds_without_a_schema_are_answered_empty(store: MemoryStore, type_name: str) -> None:
    api = ApiGenerator(store)
    assert isinstance(api.for_type(type_name), UnknownKindGenerator)
    assert generate(api, type_name, store) == {}


@pytest.mark.parametrize(
    "type_name",
    ["type.googleapis.com/envoy.config.cluster.v3.Cluster", "istio.io/debug/syncz", "foo"],
)
def test_non_istio_types_are_not_the_api_generators(store: MemoryStore, type_name: str) -> None:
    assert ApiGenerator(store).for_type(type_name) is None


def test_generators_are_made_once_per_type_name(store: MemoryStore) -> None:
    api = ApiGenerator(store)
    first = api.for_type("networking.istio.io/v1/ServiceEntry")
    assert isinstance(first, KindGenerator)
    assert api.for_type("networking.istio.io/v1/ServiceEntry") is first
    assert isinstance(api.for_type("core/v1alpha1/MeshConfig"), MeshConfigGenerator)


def test_mesh_config_comes_from_the_servers_mesh_settings(store: MemoryStore) -> None:
    api = ApiGenerator(store)
    mesh = MeshSettings(root_namespace="control", trust_domain="corp.example")
    resources = generate(api, "core/v1alpha1/MeshConfig", store, mesh=mesh)
    (resource,) = resources.values()
    entry = any_pb2.Any.FromString(resource.body)
    assert entry.type_url == "type.googleapis.com/istio.mesh.v1alpha1.MeshConfig"
    message = config_pb2.MeshConfig.FromString(entry.value)
    assert (message.root_namespace, message.trust_domain) == ("control", "corp.example")


def test_each_object_is_encoded_once_for_every_spelling(store: MemoryStore) -> None:
    api = ApiGenerator(store)
    first = generate(api, "networking.istio.io/v1/ServiceEntry", store)
    again = generate(api, "networking.istio.io/v1alpha3/ServiceEntry", store)
    assert first and all(again[name] is first[name] for name in first)


def test_warm_encodes_ahead_and_requests_reuse_it(store: MemoryStore) -> None:
    api = ApiGenerator(store)
    assert api.warm() == len(store)
    generator = api.for_type("networking.istio.io/v1/ServiceEntry")
    assert isinstance(generator, KindGenerator)
    with unittest.mock.patch.object(api_module, "encode_api_resource", side_effect=AssertionError):
        served = generate(api, "networking.istio.io/v1/ServiceEntry", store)
    assert set(served) == {"shop/httpbin", "shop/echo"}


def test_only_changed_objects_are_encoded_again(store: MemoryStore) -> None:
    api = ApiGenerator(store)
    before = generate(api, "networking.istio.io/v1/ServiceEntry", store)
    edited = load(SERVICE_ENTRY.replace("18000", "18001"), resource_version="")
    store.apply(edited)
    after = generate(api, "networking.istio.io/v1/ServiceEntry", store)
    assert after["shop/httpbin"].version != before["shop/httpbin"].version
    assert after["shop/echo"] is before["shop/echo"]
    held = store.get(ConfigKey("ServiceEntry", "shop", "httpbin"))
    assert held is not None
    moved = MemoryStore("other")
    moved.apply(dataclasses.replace(held, origin=Origin("xds://elsewhere:1")))
    elsewhere = generate(ApiGenerator(moved), "networking.istio.io/v1/ServiceEntry", moved)
    assert elsewhere["shop/httpbin"] is not after["shop/httpbin"]
    assert elsewhere["shop/httpbin"].body == after["shop/httpbin"].body


def test_deleted_objects_leave_the_answer(store: MemoryStore) -> None:
    api = ApiGenerator(store)
    generate(api, "networking.istio.io/v1/ServiceEntry", store)
    store.delete(ConfigKey("ServiceEntry", "shop", "echo"))
    assert list(generate(api, "networking.istio.io/v1/ServiceEntry", store)) == ["shop/httpbin"]


def test_changed_labels_change_the_resource_version(store: MemoryStore) -> None:
    api = ApiGenerator(store)
    before = generate(api, "networking.istio.io/v1/ServiceEntry", store)["shop/httpbin"]
    store.apply(load(SERVICE_ENTRY.replace("tier: backend", "tier: edge"), resource_version=""))
    after = generate(api, "networking.istio.io/v1/ServiceEntry", store)["shop/httpbin"]
    assert after.version != before.version


def test_named_watch_gets_only_its_names(store: MemoryStore) -> None:
    api = ApiGenerator(store)
    chosen = generate(
        api, "networking.istio.io/v1/ServiceEntry", store, names=frozenset({"shop/echo", "x/y"})
    )
    assert list(chosen) == ["shop/echo"]


def test_watched_kinds() -> None:
    assert watched_kinds(
        [
            "networking.istio.io/v1/ServiceEntry",
            "networking.istio.io/v1alpha3/ServiceEntry",
            "core/v1alpha1/MeshConfig",
            "type.googleapis.com/envoy.config.cluster.v3.Cluster",
        ]
    ) == frozenset({"ServiceEntry", "MeshConfig"})


def test_an_object_is_encoded_once_per_revision_and_again_when_it_comes_back(
    store: MemoryStore,
) -> None:
    """Encodings are reused exactly while an object's inputs are equal: nothing is encoded
    again on a second pass, one edit encodes one object, and an object deleted then put
    back is a new object (a new first-seen time)."""
    api = ApiGenerator(store)
    encoded: list[str] = []
    real = api_module.encode_api_resource

    def counting(config: Config, first_seen: datetime.datetime) -> Resource:
        encoded.append(str(config.key))
        return real(config, first_seen)

    se = "networking.istio.io/v1/ServiceEntry"
    with unittest.mock.patch.object(api_module, "encode_api_resource", counting):
        assert api.warm() == len(store) == len(encoded)
        encoded.clear()
        generate(api, se, store)
        assert encoded == []
        store.apply(load(SERVICE_ENTRY.replace("18000", "18001"), resource_version=""))
        generate(api, se, store)
        assert encoded == ["ServiceEntry shop/httpbin"]
        echo = store.get(ConfigKey("ServiceEntry", "shop", "echo"))
        assert echo is not None
        store.delete(echo.key)
        generate(api, se, store)
        store.apply(echo)
        generate(api, se, store)
        assert encoded == ["ServiceEntry shop/httpbin", "ServiceEntry shop/echo"]
