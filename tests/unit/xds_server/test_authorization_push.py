"""AuthorizationPolicy and RequestAuthentication edits: who is pushed, what their listeners get.

The store, registry, pipeline, context, cache and generators are real (the set-up of
test_peer_authentication_push); connections are stand-ins that only tell the pipeline
who their proxy is.
"""

from __future__ import annotations

import json
from typing import Any

from envoy.config.listener.v3 import listener_pb2
from envoy.config.rbac.v3 import rbac_pb2
from envoy.extensions.filters.http.jwt_authn.v3 import config_pb2 as jwt_pb2
from envoy.extensions.filters.http.rbac.v3 import rbac_pb2 as http_rbac_pb2
from envoy.extensions.filters.network.http_connection_manager.v3 import (
    http_connection_manager_pb2 as hcm_pb2,
)
from envoy.extensions.filters.network.rbac.v3 import rbac_pb2 as network_rbac_pb2

from pilothouse.push.proxy import parse_node
from pilothouse.xds.generators.cds import ClusterGenerator
from pilothouse.xds.generators.lds import ListenerGenerator
from pilothouse.xds.generators.rds import RouteGenerator
from tests.unit.security.sample_keys import RSA_2048
from tests.unit.xds_server.test_peer_authentication_push import (
    DB,
    TOOL,
    WEB,
    Connection,
    Stage,
    unpack,
)

GATEWAY = """\
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: edge, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 8080, name: http, protocol: HTTP}
    hosts: ["*"]
"""

WEB_ALLOW = """\
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: web-allow, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  rules:
  - from:
    - source: {principals: [cluster.local/ns/shop/sa/frontend]}
"""


def policy(name: str, namespace: str, spec: str) -> str:
    return (
        "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
        f"metadata: {{name: {name}, namespace: {namespace}}}\nspec:\n{spec}"
    )


def listener(listeners: dict[str, bytes], name: str) -> Any:
    return unpack(listeners[name], listener_pb2.Listener())


def http_filters(found: Any) -> list[Any]:
    chain = found.filter_chains[0]
    manager = unpack(
        chain.filters[0].typed_config.SerializeToString(), hcm_pb2.HttpConnectionManager()
    )
    return list(manager.http_filters)


def rbac_of(http_filter: Any) -> Any:
    return unpack(http_filter.typed_config.SerializeToString(), http_rbac_pb2.RBAC()).rules


def test_a_workload_policy_pushes_and_changes_only_the_proxy_it_selects() -> None:
    stage = Stage()
    before = {
        c.id: {
            g: stage.generate(c, g()) for g in (ListenerGenerator, ClusterGenerator, RouteGenerator)
        }
        for c in (WEB, DB, TOOL)
    }
    assert stage.apply(WEB_ALLOW) == ["web"]
    after = {
        c.id: {
            g: stage.generate(c, g()) for g in (ListenerGenerator, ClusterGenerator, RouteGenerator)
        }
        for c in (WEB, DB, TOOL)
    }
    # only web's listeners change; clusters and routes stay byte for byte as they were
    assert after["web"][ListenerGenerator] != before["web"][ListenerGenerator]
    assert after["web"][ClusterGenerator] == before["web"][ClusterGenerator]
    assert after["web"][RouteGenerator] == before["web"][RouteGenerator]
    assert after["db"] == before["db"] and after["tool"] == before["tool"]

    names = [
        f.name for f in http_filters(listener(after["web"][ListenerGenerator], "inbound|8080||"))
    ]
    assert names == [
        "envoy.filters.http.rbac",
        "envoy.filters.http.fault",
        "envoy.filters.http.cors",
        "envoy.filters.http.router",
    ]
    rules = rbac_of(http_filters(listener(after["web"][ListenerGenerator], "inbound|8080||"))[0])
    assert rules.action == rbac_pb2.RBAC.ALLOW
    (name,) = rules.policies
    assert name == "ns[shop]-policy[web-allow]-rule[0]"
    principal = rules.policies[name].principals[0].authenticated.principal_name
    assert principal.exact == "spiffe://cluster.local/ns/shop/sa/frontend"


def test_moving_a_selector_pushes_the_old_and_the_new_workload() -> None:
    stage = Stage()
    stage.apply(WEB_ALLOW)
    moved = WEB_ALLOW.replace("app: web", "app: db")
    assert stage.apply(moved) == ["db", "web"]
    web = listener(stage.generate(WEB, ListenerGenerator()), "inbound|8080||")
    assert http_filters(web)[0].name == "envoy.filters.http.fault"


def test_namespace_and_mesh_wide_policies() -> None:
    stage = Stage()
    assert stage.apply(policy("deny-nothing", "shop", "  action: DENY\n")) == ["db", "web"]
    assert stage.apply(policy("allow-nothing", "istio-system", "  {}\n")) == ["db", "tool", "web"]
    # mesh-wide ALLOW without rules: an ALLOW filter with no policies refuses everything;
    # the DENY without rules refuses nothing and makes no filter
    tool = listener(stage.generate(TOOL, ListenerGenerator()), "inbound|8080||")
    (only,) = http_filters(tool)[:-3]
    assert rbac_of(only).action == rbac_pb2.RBAC.ALLOW and not rbac_of(only).policies
    # the TCP port gets the network filter, before tcp_proxy, stat prefix tcp.
    db = listener(stage.generate(DB, ListenerGenerator()), "inbound|5432||")
    for chain in db.filter_chains:
        assert [f.name for f in chain.filters] == [
            "envoy.filters.network.rbac",
            "envoy.filters.network.tcp_proxy",
        ]
        network = unpack(chain.filters[0].typed_config.SerializeToString(), network_rbac_pb2.RBAC())
        assert network.stat_prefix == "tcp." and network.rules.action == rbac_pb2.RBAC.ALLOW


def test_filters_follow_istiods_order_and_tcp_drops_http_only_rules() -> None:
    stage = Stage()
    for name, spec in (
        ("allow-get", "  rules:\n  - to: [{operation: {methods: [GET]}}]\n"),
        ("deny-admin", "  action: DENY\n  rules:\n  - to: [{operation: {paths: [/admin*]}}]\n"),
        ("audit", "  action: AUDIT\n  rules: [{}]\n"),
        (
            "ext",
            "  action: CUSTOM\n  provider: {name: ext}\n"
            "  rules: [{to: [{operation: {paths: [/ext]}}]}]\n",
        ),
    ):
        stage.apply(policy(name, "shop", spec))
    web = listener(stage.generate(WEB, ListenerGenerator()), "inbound|8080||")
    actions = [rbac_of(f).action for f in http_filters(web)[:-3]]
    assert actions == [
        rbac_pb2.RBAC.DENY,
        rbac_pb2.RBAC.LOG,
        rbac_pb2.RBAC.DENY,
        rbac_pb2.RBAC.ALLOW,
    ]
    custom, _, deny, allow = (rbac_of(f) for f in http_filters(web)[:-3])
    assert list(custom.policies) == ["ns[shop]-policy[ext]-rule[0]"]
    assert (
        deny.policies["ns[shop]-policy[deny-admin]-rule[0]"].permissions[0].url_path.path.prefix
        == "/admin"
    )
    assert (
        allow.policies["ns[shop]-policy[allow-get]-rule[0]"].permissions[0].header.name == ":method"
    )

    db = listener(stage.generate(DB, ListenerGenerator()), "inbound|5432||")
    rules = [
        unpack(f.typed_config.SerializeToString(), network_rbac_pb2.RBAC()).rules
        for f in db.filter_chains[0].filters[:-1]
    ]
    # CUSTOM and DENY on paths cannot be checked on TCP: they refuse every connection;
    # the ALLOW on methods can never match there: an ALLOW filter with no policies
    assert [r.action for r in rules] == [
        rbac_pb2.RBAC.DENY,
        rbac_pb2.RBAC.LOG,
        rbac_pb2.RBAC.DENY,
        rbac_pb2.RBAC.ALLOW,
    ]
    assert rules[2].policies["ns[shop]-policy[deny-admin]-rule[0]"].permissions[0].any
    assert not rules[3].policies


JWKS = json.dumps({"keys": [{**RSA_2048, "kid": "one"}]})


def test_request_authentication_adds_jwt_authn_before_rbac_and_feeds_request_principals() -> None:
    stage = Stage()
    authn = (
        "apiVersion: security.istio.io/v1\nkind: RequestAuthentication\n"
        "metadata: {name: jwt, namespace: shop}\nspec:\n"
        "  selector: {matchLabels: {app: web}}\n"
        f"  jwtRules:\n  - issuer: https://issuer.test\n    jwks: '{JWKS}'\n"
        "    outputPayloadToHeader: x-jwt-payload\n"
    )
    assert stage.apply(authn) == ["web"]
    stage.apply(
        policy("need-jwt", "shop", "  rules:\n  - from: [{source: {requestPrincipals: ['*']}}]\n")
    )
    web = listener(stage.generate(WEB, ListenerGenerator()), "inbound|8080||")
    filters = http_filters(web)
    assert [f.name for f in filters[:2]] == [
        "envoy.filters.http.jwt_authn",
        "envoy.filters.http.rbac",
    ]
    jwt = unpack(filters[0].typed_config.SerializeToString(), jwt_pb2.JwtAuthentication())
    provider = jwt.providers["origins-0"]
    assert provider.issuer == "https://issuer.test"
    assert provider.payload_in_metadata == "https://issuer.test"
    assert provider.forward_payload_header == "x-jwt-payload"
    assert json.loads(provider.local_jwks.inline_string) == json.loads(JWKS)
    requirements = jwt.rules[0].requires.requires_any.requirements
    assert [r.provider_name for r in requirements] == ["origins-0", ""]
    assert requirements[1].HasField("allow_missing")
    principal = rbac_of(filters[1]).policies["ns[shop]-policy[need-jwt]-rule[0]"].principals[0]
    payload = principal.sourced_metadata.metadata_matcher
    assert payload.filter == "envoy.filters.http.jwt_authn"
    assert [p.key for p in payload.path] == ["https://issuer.test", "sub"]
    assert payload.value.present_match


def test_a_policy_selecting_a_gateway_guards_its_listeners() -> None:
    stage = Stage(GATEWAY)
    gateway = Connection(
        "gateway", _router("gw-1", "istio-system", "10.0.0.8", istio="ingressgateway")
    )
    stage.pipeline.connect(gateway)
    before = stage.generate(gateway, ListenerGenerator())
    spec = (
        "  selector: {matchLabels: {istio: ingressgateway}}\n  action: DENY\n"
        "  rules: [{to: [{operation: {paths: [/private]}}]}]\n"
    )
    assert stage.apply(policy("edge-deny", "istio-system", spec)) == ["gateway"]
    after = stage.generate(gateway, ListenerGenerator())
    assert before != after
    (name,) = after
    names = [f.name for f in http_filters(listener(after, name))]
    assert names[0] == "envoy.filters.http.rbac"


def _router(name: str, namespace: str, address: str, **labels: str) -> Any:
    return parse_node(
        f"router~{address}~{name}.{namespace}~{namespace}.svc.cluster.local", {"LABELS": labels}
    )
