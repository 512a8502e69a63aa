"""Istio rules as RBAC policies, the jwt_authn filter, and real Envoy accepting them all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envoy.config.rbac.v3 import rbac_pb2
from google.protobuf.json_format import ParseDict

from pilothouse.api.istio.security.v1beta1.authorization_policy_pb2 import Rule
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.authorization import WorkloadAuthorization
from pilothouse.push.inputs import ConfigRevision
from pilothouse.push.peer_authentication import MtlsMode
from pilothouse.xds.builders.jwt_authn import inline_keys
from pilothouse.xds.builders.listener_sidecar import build_inbound_listener
from pilothouse.xds.builders.rbac_rules import RuleContext, build_policy
from tests.e2e.test_listener_envoy_validate import envoy_validate, write_bootstrap
from tests.unit.security.sample_keys import RSA_2048

ISSUER = "https://issuer.test"
HTTP_ALLOW = RuleContext(tcp=False, allow=True, issuers=(ISSUER,))


def policy(rule: dict[str, Any], context: RuleContext = HTTP_ALLOW) -> Any:
    return build_policy(ParseDict(rule, Rule()), context)


def principal_matcher(principal: Any) -> Any:
    return principal.authenticated.principal_name


def test_principals_match_the_spiffe_uri() -> None:
    made = policy(
        {"from": [{"source": {"principals": ["cluster.local/ns/a/sa/b", "*-admin", "x/*"]}}]}
    )
    exact, suffix, prefix = (principal_matcher(p) for p in made.principals[0].or_ids.ids)
    assert exact.exact == "spiffe://cluster.local/ns/a/sa/b"
    assert suffix.suffix == "-admin"
    assert prefix.prefix == "spiffe://x/"
    anyone = policy({"from": [{"source": {"principals": ["*"]}}]})
    assert principal_matcher(anyone.principals[0]).safe_regex.regex == ".+"


def test_a_bare_service_account_is_of_the_policys_namespace() -> None:
    context = RuleContext(tcp=False, allow=True, namespace="shop")
    made = policy({"from": [{"source": {"serviceAccounts": ["web"]}}]}, context)
    assert principal_matcher(made.principals[0]).safe_regex.regex == "spiffe://[^/]+/ns/shop/sa/web"


def test_namespaces_service_accounts_and_negations() -> None:
    made = policy({"from": [{"source": {"namespaces": ["prod-*"], "notServiceAccounts": ["a/b"]}}]})
    namespace, not_account = made.principals[0].and_ids.ids
    assert (
        principal_matcher(namespace).safe_regex.regex == r"spiffe://[^/]+/ns/prod\-[^/]*/sa/[^/]+"
    )
    assert principal_matcher(not_account.not_id).safe_regex.regex == "spiffe://[^/]+/ns/a/sa/b"


def test_operations_hosts_methods_paths_ports() -> None:
    operation = {"hosts": ["*.Example.com"], "methods": ["GET"], "notPaths": ["/admin*"]}
    made = policy({"to": [{"operation": {**operation, "ports": ["8080"]}}]})
    parts = made.permissions[0].and_rules.rules
    port, host, method, not_path = parts
    assert port.destination_port == 8080
    assert host.header.name == ":authority" and host.header.string_match.ignore_case
    assert host.header.string_match.suffix == ".Example.com"
    assert method.header.string_match.exact == "GET"
    assert not_path.not_rule.url_path.path.prefix == "/admin"
    assert made.principals[0].any


def test_path_templates_use_the_uri_template_matcher() -> None:
    made = policy({"to": [{"operation": {"paths": ["/users/{*}/keys/{**}"]}}]})
    extension = made.permissions[0].uri_template
    assert extension.name == "envoy.path.match.uri_template.uri_template_matcher"
    assert b"/users/*/keys/**" in extension.typed_config.value


def test_request_principals_read_the_jwt_payload() -> None:
    def subject(value: str) -> Any:
        found = policy({"from": [{"source": {"requestPrincipals": [value]}}]}).principals[0]
        return found.sourced_metadata.metadata_matcher

    exact = subject(f"{ISSUER}/alice")
    assert [p.key for p in exact.path] == [ISSUER, "sub"]
    assert exact.value.string_match.exact == "alice"
    assert subject(f"{ISSUER}/*").value.string_match.safe_regex.regex == ".+"  # any subject
    assert subject("*").value.present_match
    assert subject(f"{ISSUER}/ali*").value.string_match.prefix == "ali"
    # an issuer the workload does not accept can never match
    other = policy({"from": [{"source": {"requestPrincipals": ["https://other/x"]}}]})
    assert other.principals[0].not_id.any


def test_when_conditions_go_to_their_side() -> None:
    made = policy(
        {
            "when": [
                {"key": "request.headers[x-tenant]", "values": ["blue"]},
                {"key": "destination.port", "notValues": ["9000"]},
                {"key": "request.auth.claims[groups][team]", "values": ["ops"]},
                {"key": "remote.ip", "values": ["10.0.0.0/8"]},
            ]
        }
    )
    (not_port,) = [made.permissions[0].not_rule]
    assert not_port.destination_port == 9000
    header, claim, remote = made.principals[0].and_ids.ids
    assert header.header.name == "x-tenant" and header.header.string_match.exact == "blue"
    string, listed = claim.or_ids.ids
    path = [p.key for p in string.sourced_metadata.metadata_matcher.path]
    assert path == [ISSUER, "groups", "team"]
    assert (
        listed.sourced_metadata.metadata_matcher.value.list_match.one_of.string_match.exact == "ops"
    )
    assert remote.remote_ip.address_prefix == "10.0.0.0" and remote.remote_ip.prefix_len.value == 8


def test_tcp_drops_http_fields_closed() -> None:
    rule = {
        "from": [{"source": {"principals": ["a/b"]}}],
        "to": [{"operation": {"methods": ["GET"]}}],
    }
    assert policy(rule, RuleContext(tcp=True, allow=True)) is None
    deny = policy(rule, RuleContext(tcp=True, allow=False))
    assert deny.permissions[0].any
    assert principal_matcher(deny.principals[0]).exact == "spiffe://a/b"
    experimental = {"when": [{"key": "experimental.envoy.filters.x[y]", "values": ["z"]}]}
    assert policy(experimental) is None
    assert policy(experimental, RuleContext(tcp=False, allow=False)).permissions[0].any


POLICIES = """\
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: everything, namespace: shop}
spec:
  rules:
  - from:
    - source:
        principals: [cluster.local/ns/shop/sa/a, "*"]
        notNamespaces: ["dev-*"]
        requestPrincipals: ["https://issuer.test/*"]
        ipBlocks: [10.0.0.0/8, "2001:db8::/32"]
        remoteIpBlocks: [192.168.1.1]
        trustDomains: [cluster.local]
    to:
    - operation: {hosts: ["*.shop.example"], methods: [GET, POST], paths: [/api/*], ports: ["8080"]}
    - operation: {paths: ["/users/{*}/keys/{**}", "/static/{**}/index.html", "relative"]}
    when:
    - {key: "request.headers[x-user]", values: [alice]}
    - {key: "request.auth.claims[groups]", values: [admin]}
    - {key: source.namespace, notValues: [evil]}
    - {key: destination.ip, values: [127.0.0.1]}
    - {key: connection.sni, values: [web.shop]}
    - {key: request.auth.audiences, values: [api]}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny, namespace: shop}
spec:
  action: DENY
  rules: [{to: [{operation: {paths: [/admin]}}]}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: audit, namespace: shop}
spec:
  action: AUDIT
  rules: [{}]
---
apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt, namespace: shop}
spec:
  jwtRules:
  - issuer: https://issuer.test
    audiences: [api]
    jwks: '{"keys": [{"kty": "EC", "crv": "P-256", "kid": "k",
      "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
      "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}'
    fromHeaders: [{name: x-token, prefix: "Bearer "}]
    fromParams: [token]
    outputPayloadToHeader: x-payload
    outputClaimToHeaders: [{header: x-sub, claim: sub}]
    forwardOriginalToken: true
"""


def test_envoy_accepts_the_access_control_filters(tmp_path: Path) -> None:
    configs = Loader(SCHEMAS).load_strict(POLICIES, "policies.yaml")
    revisions = [ConfigRevision.of(c) for c in configs]
    authorization = WorkloadAuthorization(
        tuple(r for r in revisions if r is not None and r.key.kind == "AuthorizationPolicy"),
        tuple(r for r in revisions if r is not None and r.key.kind == "RequestAuthentication"),
    )
    listeners = [
        build_inbound_listener(
            "127.0.0.1", 8080, "HTTP", mtls=MtlsMode.PERMISSIVE, authorization=authorization
        ),
        build_inbound_listener(
            "127.0.0.1", 6379, "TCP", mtls=MtlsMode.STRICT, authorization=authorization
        ),
    ]
    names = [f.name for f in listeners[1].filter_chains[0].filters]
    assert names == ["envoy.filters.network.rbac"] * 3 + ["envoy.filters.network.tcp_proxy"]
    bootstrap = tmp_path / "bootstrap.json"
    write_bootstrap(bootstrap, listeners)
    code, output = envoy_validate(bootstrap)
    assert code == 0, output


def test_rbac_policies_are_valid_protos() -> None:
    made = policy({})
    assert made == rbac_pb2.Policy(permissions=[{"any": True}], principals=[{"any": True}])


def test_inline_keys_are_relayed_checked_and_public_only() -> None:
    """An inline ``jwks`` reaches the filter as checked keys with their public members:
    a URL (``x5u``), a private member or an unknown one is not relayed; a set with no
    good key gives the rule no provider rather than a key set Envoy would refuse."""
    key = {"kty": "RSA", "kid": "k", **{m: RSA_2048[m] for m in ("n", "e")}}
    text = json.dumps({"keys": [{**key, "x5u": "http://127.0.0.1:15014/", "d": "x", "z": 1}]})
    assert json.loads(inline_keys(text) or "") == {"keys": [key]}
    assert inline_keys('{"keys": [{"kty": "RSA", "n": "SECRET-DATA-IN-N", "e": "AQAB"}]}') is None
    assert inline_keys("{not json") is None
