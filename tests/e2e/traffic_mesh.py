"""Small meshes for the traffic suite: Istio objects as dicts, the proxies that run them.

Each traffic test builds its own namespaced mesh from these pieces (services whose
endpoints are the harness's local upstreams, a Gateway bound to 127.0.0.1 on a free
port, VirtualServices, DestinationRules, a Sidecar), renders it to YAML with
:func:`render`, and serves it from an in-process pilothouse (:class:`ControlPlane`) to
one real Envoy started by :func:`start_gateway` or :func:`start_sidecar`.  Both wait
until the proxy's listener accepts connections: Envoy activates a listener only after
its clusters and routes have warmed, so from then on routing is what pilothouse sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTransport, envoy_bootstrap
from tests.e2e.harness.control_plane import ControlPlane
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, wait_for_port
from tests.e2e.harness.upstreams import Upstream

NETWORKING = "networking.istio.io/v1"
GATEWAY_LABELS: Mapping[str, str] = {"istio": "ingressgateway"}
TRANSPORTS = (XdsTransport.SOTW, XdsTransport.DELTA)
"""Every traffic test runs over both ADS flavours."""

Obj = dict[str, Any]


def fqdn(name: str, namespace: str) -> str:
    return f"{name}.{namespace}.svc.cluster.local"


def _object(kind: str, name: str, namespace: str, spec: Obj) -> Obj:
    return {
        "apiVersion": NETWORKING,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def service(
    name: str,
    namespace: str,
    port: int,
    endpoints: Iterable[tuple[Upstream, Mapping[str, str]]],
    *,
    protocol: str = "HTTP",
) -> Obj:
    """A MESH_INTERNAL ServiceEntry ``<name>.<namespace>.svc.cluster.local:<port>`` whose
    endpoints are the given upstreams, each with its labels (e.g. ``{"version": "v1"}``)."""
    return _object(
        "ServiceEntry",
        name,
        namespace,
        {
            "hosts": [fqdn(name, namespace)],
            "location": "MESH_INTERNAL",
            "resolution": "STATIC",
            "ports": [{"number": port, "name": "http", "protocol": protocol}],
            "endpoints": [
                {"address": upstream.host, "ports": {"http": upstream.port}, "labels": dict(labels)}
                for upstream, labels in endpoints
            ],
        },
    )


def destination_rule(name: str, namespace: str, subsets: Mapping[str, Mapping[str, str]]) -> Obj:
    """A DestinationRule for service ``name`` with ``{subset: labels}``."""
    return _object(
        "DestinationRule",
        name,
        namespace,
        {
            "host": fqdn(name, namespace),
            "subsets": [
                {"name": subset, "labels": dict(labels)} for subset, labels in subsets.items()
            ],
        },
    )


def gateway(
    namespace: str,
    port: int,
    *,
    name: str = "gateway",
    hosts: Sequence[str] = ("*",),
    protocol: str = "HTTP",
    tls: Obj | None = None,
) -> Obj:
    """A Gateway for the ``istio: ingressgateway`` proxies, one server on 127.0.0.1:``port``."""
    server: Obj = {
        "port": {"number": port, "name": protocol.lower(), "protocol": protocol},
        "bind": LOOPBACK,
        "hosts": list(hosts),
    }
    if tls is not None:
        server["tls"] = tls
    return _object(
        "Gateway", name, namespace, {"selector": dict(GATEWAY_LABELS), "servers": [server]}
    )


def virtual_service(
    name: str,
    namespace: str,
    http: Sequence[Obj],
    *,
    hosts: Sequence[str] = ("*",),
    gateways: Sequence[str] = ("gateway",),
) -> Obj:
    """A VirtualService with ``http`` routes; bound to the test gateway unless told otherwise."""
    spec: Obj = {"hosts": list(hosts), "http": list(http)}
    if gateways:
        spec["gateways"] = list(gateways)
    return _object("VirtualService", name, namespace, spec)


def to(host: str, subset: str | None = None, weight: int | None = None) -> Obj:
    """One ``route`` destination."""
    destination: Obj = {"host": host}
    if subset is not None:
        destination["subset"] = subset
    entry: Obj = {"destination": destination}
    if weight is not None:
        entry["weight"] = weight
    return entry


def prefix(path: str) -> list[Obj]:
    """A ``match`` list of one URI prefix."""
    return [{"uri": {"prefix": path}}]


def sidecar(namespace: str, port: int, hosts: Sequence[str] = ("./*",)) -> Obj:
    """A namespace-wide Sidecar whose egress listener Envoy binds on 127.0.0.1:``port``."""
    egress = {
        "port": {"number": port, "protocol": "HTTP", "name": "egress-http"},
        "bind": LOOPBACK,
        "captureMode": "NONE",
        "hosts": list(hosts),
    }
    return _object("Sidecar", "default", namespace, {"egress": [egress]})


def render(*objects: Obj) -> str:
    """Objects as one multi-document YAML text, as a user would write them."""
    return yaml.safe_dump_all(objects, sort_keys=False)


# -- proxies ----------------------------------------------------------------------------


def gateway_node(namespace: str) -> str:
    return f"router~127.0.0.1~ingressgateway-1.{namespace}~{namespace}.svc.cluster.local"


def sidecar_node(namespace: str, workload: str = "client-1") -> str:
    return f"sidecar~127.0.0.1~{workload}.{namespace}~{namespace}.svc.cluster.local"


def gateway_bootstrap(namespace: str, xds_port: int, transport: XdsTransport) -> dict[str, Any]:
    options = EnvoyBootstrapOptions(
        node_id=gateway_node(namespace),
        node_metadata={"NAMESPACE": namespace, "LABELS": dict(GATEWAY_LABELS)},
        xds_port=xds_port,
        admin_port=0,
        transport=transport,
    )
    return envoy_bootstrap(options)


def sidecar_bootstrap(namespace: str, xds_port: int, transport: XdsTransport) -> dict[str, Any]:
    options = EnvoyBootstrapOptions(
        node_id=sidecar_node(namespace),
        node_metadata={"NAMESPACE": namespace, "LABELS": {"app": "client"}},
        xds_port=xds_port,
        admin_port=0,
        transport=transport,
    )
    return envoy_bootstrap(options)


async def serve(mesh: str) -> ControlPlane:
    """An in-process pilothouse serving ``mesh`` (YAML)."""
    plane = ControlPlane()
    plane.apply_yaml(mesh)
    await plane.start()
    return plane


async def start_gateway(
    envoy_factory: EnvoyFleet,
    plane: ControlPlane,
    namespace: str,
    listen_port: int,
    transport: XdsTransport,
) -> EnvoyProcess:
    """An Envoy gateway of ``namespace`` on ``plane``, once it accepts on ``listen_port``."""
    envoy = await envoy_factory(gateway_bootstrap(namespace, plane.port, transport))
    await wait_for_port(listen_port, timeout=10)
    return envoy


async def start_sidecar(
    envoy_factory: EnvoyFleet,
    plane: ControlPlane,
    namespace: str,
    listen_port: int,
    transport: XdsTransport,
) -> EnvoyProcess:
    """An Envoy sidecar (``client-1.<namespace>``) once its egress listener accepts."""
    envoy = await envoy_factory(sidecar_bootstrap(namespace, plane.port, transport))
    await wait_for_port(listen_port, timeout=10)
    return envoy
