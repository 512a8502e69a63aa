"""Kubernetes Services into registry services, as istiod converts them.

- hostname ``<name>.<namespace>.svc.<domain suffix>``, in the Service's namespace;
- one :class:`ServicePort` per ``spec.ports[]`` entry, its protocol read from
  ``protocol: UDP``, else ``appProtocol``, else the port name's prefix (see
  :func:`port_protocol`); a numeric ``targetPort`` is kept;
- ``clusterIP`` (all ``clusterIPs`` when several) is the service address, resolved
  through EDS (:attr:`Resolution.STATIC`);
- a headless Service (``clusterIP: None``) has no address and passthrough resolution
  (:attr:`Resolution.NONE`: an ORIGINAL_DST cluster, as istiod gives sidecars);
- an ExternalName Service is a mesh-external DNS service whose one endpoint per port is
  the external name (:func:`external_name_endpoints`): istiod's conversion without the
  alias feature, where Envoy resolves the name itself;
- annotation ``networking.istio.io/exportTo`` (comma list, ``.`` = own namespace) is the
  export list; ``alpha.istio.io/canonical-serviceaccounts`` (verbatim) and
  ``alpha.istio.io/kubernetes-serviceaccounts`` (as SPIFFE identities) are the subject
  alt names; ``spec.selector`` is the workload selector (none when absent).

The service's ``source`` is its own :attr:`ServiceKey.config_key`: pushes and cache
evictions name a Kubernetes Service by its host, as they name any registry service.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from pilothouse.registry.model import (
    Endpoint,
    Labels,
    Location,
    Resolution,
    Service,
    ServiceKey,
    ServicePort,
)

EXPORT_TO_ANNOTATION = "networking.istio.io/exportTo"
CANONICAL_ACCOUNTS_ANNOTATION = "alpha.istio.io/canonical-serviceaccounts"
KUBERNETES_ACCOUNTS_ANNOTATION = "alpha.istio.io/kubernetes-serviceaccounts"
HEADLESS = "None"
EXTERNAL_NAME = "ExternalName"

_APP_PROTOCOLS = {
    "kubernetes.io/h2c": "HTTP2",
    "kubernetes.io/ws": "HTTP",
    "kubernetes.io/wss": "HTTPS",
}
_NAME_PREFIXES = frozenset(
    {"tcp", "udp", "grpc", "http", "http_proxy", "http2", "https", "tls", "mongo", "redis", "mysql"}
)
_WELL_KNOWN_TCP_PORTS = frozenset({25, 53, 3306, 27017})


def hostname(name: str, namespace: str, domain_suffix: str) -> str:
    return f"{name}.{namespace}.svc.{domain_suffix}"


def service_key(name: str, namespace: str, domain_suffix: str) -> ServiceKey:
    """The registry key the Service ``namespace/name`` has (or would have)."""
    return ServiceKey(hostname(name, namespace, domain_suffix), namespace)


def port_protocol(port: Mapping[str, Any]) -> str:
    """The protocol of one ``spec.ports[]`` entry, upper-case; "" means detect it.

    Istio's order: ``protocol: UDP``; ``appProtocol`` (Kubernetes' own values mapped,
    otherwise read like a name); ``grpc-web`` prefix; the text before the first ``-``
    (``http2foo`` is not HTTP2); unknown on ports 25, 53, 3306 and 27017 is TCP.
    """
    if str(port.get("protocol") or "").upper() == "UDP":
        return "UDP"
    app = str(port.get("appProtocol") or "")
    if app in _APP_PROTOCOLS:
        return _APP_PROTOCOLS[app]
    name = (app or str(port.get("name") or "")).lower()
    if name.startswith("grpc-web"):
        return "GRPC-WEB"
    prefix = name.split("-", 1)[0]
    if prefix in _NAME_PREFIXES:
        return prefix.upper()
    if int(port.get("port") or 0) in _WELL_KNOWN_TCP_PORTS:
        return "TCP"
    return ""


def _ports(spec: Mapping[str, Any]) -> tuple[ServicePort, ...]:
    ports = []
    for port in spec.get("ports") or ():
        target = port.get("targetPort")
        ports.append(
            ServicePort(
                name=str(port.get("name") or ""),
                number=int(port["port"]),
                protocol=port_protocol(port),
                target_port=target if isinstance(target, int) else 0,
            )
        )
    return tuple(ports)


def _addresses(spec: Mapping[str, Any]) -> tuple[str, ...]:
    ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    return tuple(str(ip) for ip in ips if ip and ip != HEADLESS)


def _export_to(annotations: Mapping[str, str], namespace: str) -> frozenset[str]:
    raw = annotations.get(EXPORT_TO_ANNOTATION, "")
    entries = (entry.strip() for entry in raw.split(","))
    return frozenset(namespace if entry == "." else entry for entry in entries if entry)


def _subject_alt_names(
    annotations: Mapping[str, str], namespace: str, trust_domain: str
) -> tuple[str, ...]:
    names: list[str] = []
    for raw in annotations.get(CANONICAL_ACCOUNTS_ANNOTATION, "").split(","):
        if raw.strip():
            names.append(raw.strip())
    for raw in annotations.get(KUBERNETES_ACCOUNTS_ANNOTATION, "").split(","):
        if raw.strip():
            names.append(f"spiffe://{trust_domain}/ns/{namespace}/sa/{raw.strip()}")
    return tuple(dict.fromkeys(names))


def _created(metadata: Mapping[str, Any]) -> datetime.datetime | None:
    raw = metadata.get("creationTimestamp")
    if not raw:
        return None
    return datetime.datetime.fromisoformat(str(raw).replace("Z", "+00:00"))


def is_external_name(obj: Mapping[str, Any]) -> bool:
    return (obj.get("spec") or {}).get("type") == EXTERNAL_NAME


def service_of(obj: Mapping[str, Any], domain_suffix: str, trust_domain: str) -> Service:
    """The registry service of a Kubernetes Service object (raises KeyError/ValueError/
    TypeError on a malformed one)."""
    metadata = obj["metadata"]
    name, namespace = str(metadata["name"]), str(metadata["namespace"])
    spec = obj.get("spec") or {}
    annotations = metadata.get("annotations") or {}
    key = service_key(name, namespace, domain_suffix)
    selector = spec.get("selector")
    addresses: tuple[str, ...] = ()
    if is_external_name(obj):
        resolution, location, addresses = Resolution.DNS, Location.MESH_EXTERNAL, ()
    elif spec.get("clusterIP") == HEADLESS:
        resolution, location, addresses = Resolution.NONE, Location.MESH_INTERNAL, ()
    else:
        resolution, location = Resolution.STATIC, Location.MESH_INTERNAL
        addresses = _addresses(spec)
    return Service(
        hostname=key.hostname,
        namespace=namespace,
        ports=_ports(spec),
        resolution=resolution,
        location=location,
        source=key.config_key,
        addresses=addresses,
        export_to=_export_to(annotations, namespace),
        subject_alt_names=_subject_alt_names(annotations, namespace, trust_domain),
        workload_selector=Labels.of(selector) if selector is not None else None,
        creation_time=_created(metadata),
    )


def external_name_endpoints(obj: Mapping[str, Any], service: Service) -> tuple[Endpoint, ...]:
    """An ExternalName Service's endpoints: the external name on each service port."""
    external = str((obj.get("spec") or {}).get("externalName") or "")
    if not external:
        return ()
    return tuple(
        Endpoint(
            address=external,
            port=port.number,
            service_port_name=port.name,
            source=service.source,
        )
        for port in service.ports
    )
