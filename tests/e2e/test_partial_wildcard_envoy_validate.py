"""A ServiceEntry with a partial-wildcard host, which istiod accepts, is config a real
Envoy accepts: ``envoy --mode validate`` over what a sidecar would receive.

``*x.example.com`` is a first label of ``*`` glued to a DNS label (validation warns and
accepts it, as istiod). The sidecar's cluster for it and the route configuration whose
virtual host names it go into a static bootstrap, and Envoy checks both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from pilothouse.push.proxy import parse_node
from tests.e2e.harness.envoy import validate_bootstrap
from tests.golden.xds_snapshot import snapshot

ENTRY = """\
apiVersion: networking.istio.io/v1alpha3
kind: ServiceEntry
metadata: {name: partial, namespace: default}
spec:
  hosts: ["*x.example.com"]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: NONE
  location: MESH_EXTERNAL
"""
CLUSTER = "outbound|80||*x.example.com"


def _plain(document: Any) -> dict[str, Any]:
    data = dict(document if isinstance(document, dict) else json_format.MessageToDict(document))
    data.pop("@type", None)
    return data


async def test_partial_wildcard_host_passes_envoy_validation(tmp_path: Path) -> None:
    mesh = tmp_path / "mesh"
    mesh.mkdir()
    (mesh / "entry.yaml").write_text(ENTRY)
    node = parse_node("sidecar~127.0.0.1~p.default~default.svc.cluster.local", {})
    resources = (await snapshot(mesh, {"p": node}))["p"].resources
    cluster = _plain(resources["cds"][CLUSTER])
    routes = _plain(resources["rds"]["80"])
    domains = [d for host in routes["virtualHosts"] for d in host["domains"]]
    assert "*x.example.com" in domains
    manager = {
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager"
        ".v3.HttpConnectionManager",
        "statPrefix": "outbound_80",
        "routeConfig": routes,
        "httpFilters": [
            {
                "name": "envoy.filters.http.router",
                "typedConfig": {
                    "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
                },
            }
        ],
    }
    listener = {
        "name": "outbound_80",
        "address": {"socketAddress": {"address": "127.0.0.1", "portValue": 10080}},
        "filterChains": [{"filters": [{"name": "hcm", "typedConfig": manager}]}],
    }
    bootstrap = {"staticResources": {"clusters": [cluster], "listeners": [listener]}}
    path = tmp_path / "bootstrap.json"
    path.write_text(json.dumps(bootstrap))
    passed, output = await validate_bootstrap(path)
    assert passed, output
