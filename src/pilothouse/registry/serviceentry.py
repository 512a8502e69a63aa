"""ServiceEntry and WorkloadEntry configs into services and endpoints (pure conversion).

Rules (Istio's):

- one :class:`Service` per host, in the ServiceEntry's namespace; ``exportTo: ["."]``
  becomes the namespace itself; protocols are upper-cased;
- every inline endpoint gives one :class:`Endpoint` per service port, on port
  ``endpoint.ports[port.name]`` if given, else the port's ``targetPort``, else its number;
  a ``unix://`` endpoint has port 0 (a socket has no port); weight 0 becomes 1;
- a WorkloadEntry is selected by a ServiceEntry's ``workloadSelector`` when both are in the
  same namespace and the selector's labels are a subset of the entry's labels (spec labels
  merged with metadata labels, metadata winning); it then gives endpoints like an inline one.
  Selection does not depend on the resolution;
- a DNS or DNS_ROUND_ROBIN ServiceEntry with neither endpoints nor a selector gets its host
  as the endpoint address (one endpoint per port, on the target port or the port number),
  so that Envoy resolves the host itself. NONE and DYNAMIC_DNS entries have no endpoints.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping

from pilothouse.api.istio.networking.v1alpha3.service_entry_pb2 import ServiceEntry
from pilothouse.api.istio.networking.v1alpha3.workload_entry_pb2 import WorkloadEntry
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds import service_entry, workload_entry
from pilothouse.registry.endpoint_index import DeferredShard
from pilothouse.registry.model import (
    NO_LABELS,
    Endpoint,
    Labels,
    Location,
    Resolution,
    Service,
    ServiceKey,
    ServicePort,
    Workload,
)

SERVICE_ENTRY = service_entry.KIND.name
WORKLOAD_ENTRY = workload_entry.KIND.name
UNIX_PREFIX = "unix://"

_RESOLUTIONS = {
    ServiceEntry.NONE: Resolution.NONE,
    ServiceEntry.STATIC: Resolution.STATIC,
    ServiceEntry.DNS: Resolution.DNS,
    ServiceEntry.DNS_ROUND_ROBIN: Resolution.DNS_ROUND_ROBIN,
    ServiceEntry.DYNAMIC_DNS: Resolution.DYNAMIC_DNS,
}
_LOCATIONS = {
    ServiceEntry.MESH_EXTERNAL: Location.MESH_EXTERNAL,
    ServiceEntry.MESH_INTERNAL: Location.MESH_INTERNAL,
}


def _service_entry(config: Config) -> ServiceEntry:
    if config.kind != SERVICE_ENTRY or not isinstance(config.spec, ServiceEntry):
        raise TypeError(f"expected a ServiceEntry, got {config.key}")
    return config.spec


def _workload_entry(config: Config) -> WorkloadEntry:
    if config.kind != WORKLOAD_ENTRY or not isinstance(config.spec, WorkloadEntry):
        raise TypeError(f"expected a WorkloadEntry, got {config.key}")
    return config.spec


@functools.lru_cache(maxsize=4096)
def _service_ports(declared: tuple[tuple[str, int, str, int], ...]) -> tuple[ServicePort, ...]:
    """The ports of a service from ``(name, number, protocol, target port)`` as written.

    Remembered: most ServiceEntries of a mesh declare the same few port lists, so a bulk
    load shares one tuple of ports instead of building (and keeping) one per entry.
    """
    return tuple(
        ServicePort(name, number, protocol.upper(), target_port)
        for name, number, protocol, target_port in declared
    )


def services_of(config: Config) -> tuple[Service, ...]:
    """The services a ServiceEntry declares, one per host, in host order."""
    spec = _service_entry(config)
    ports = _service_ports(
        tuple((port.name, port.number, port.protocol, port.target_port) for port in spec.ports)
    )
    export_to = frozenset(config.namespace if entry == "." else entry for entry in spec.export_to)
    selector = (
        Labels.of(spec.workload_selector.labels) if spec.HasField("workload_selector") else None
    )
    resolution = _RESOLUTIONS.get(spec.resolution, Resolution.NONE)
    location = _LOCATIONS.get(spec.location, Location.MESH_EXTERNAL)
    addresses = tuple(spec.addresses)
    subject_alt_names = tuple(spec.subject_alt_names)
    return tuple(
        Service(
            host,
            config.namespace,
            ports,
            resolution,
            location,
            config.key,
            addresses,
            export_to,
            subject_alt_names,
            selector,
            config.creation_time,
        )
        for host in dict.fromkeys(spec.hosts)  # in order, repeats dropped
    )


def workload_from_entry(entry: WorkloadEntry, source: ConfigKey, namespace: str) -> Workload:
    """An inline ServiceEntry endpoint (or a WorkloadEntry's spec) as a :class:`Workload`."""
    return Workload(
        source=source,
        namespace=namespace,
        address=entry.address,
        ports=tuple(sorted(entry.ports.items())),
        labels=Labels.of(entry.labels),
        network=entry.network,
        locality=entry.locality,
        weight=entry.weight,
        service_account=entry.service_account,
    )


def workload_of(config: Config) -> Workload:
    """A WorkloadEntry config as a :class:`Workload` (metadata labels win over spec labels)."""
    spec = _workload_entry(config)
    workload = workload_from_entry(spec, config.key, config.namespace)
    if config.labels:
        return dataclasses.replace(workload, labels=workload.labels.merged(config.labels))
    return workload


def workload_endpoints(workload: Workload, service: Service) -> tuple[Endpoint, ...]:
    """One endpoint per port of ``service`` for ``workload``."""
    unix = workload.address.startswith(UNIX_PREFIX)
    weight = workload.weight or 1
    return tuple(
        Endpoint(
            address=workload.address,
            port=0 if unix else (workload.port(port.name) or port.endpoint_port),
            service_port_name=port.name,
            source=workload.source,
            labels=workload.labels,
            locality=workload.locality,
            weight=weight,
            network=workload.network,
            service_account=workload.service_account,
        )
        for port in service.ports
    )


def selects(service: Service, workload: Workload) -> bool:
    """Whether ``service``'s workload selector picks ``workload`` (same namespace only)."""
    return (
        service.workload_selector is not None
        and service.namespace == workload.namespace
        and workload.labels.matches(service.workload_selector)
    )


def host_endpoints(service: Service) -> tuple[Endpoint, ...]:
    """For a DNS service without endpoints: the host itself, once per port."""
    return tuple(
        Endpoint(
            address=service.hostname,
            port=port.endpoint_port,
            service_port_name=port.name,
            source=service.source,
            labels=NO_LABELS,
        )
        for port in service.ports
    )


def inline_endpoints(
    config: Config, services: tuple[Service, ...] | None = None
) -> Mapping[ServiceKey, tuple[Endpoint, ...]]:
    """The endpoints a ServiceEntry carries itself, per service it declares.

    That is its inline ``endpoints``, or the host for a DNS entry with neither endpoints nor
    a selector. Services with no such endpoints are left out.
    """
    spec = _service_entry(config)
    if services is None:
        services = services_of(config)
    out: dict[ServiceKey, tuple[Endpoint, ...]] = {}
    if spec.endpoints:
        workloads = [
            workload_from_entry(entry, config.key, config.namespace) for entry in spec.endpoints
        ]
        for service in services:
            endpoints = tuple(
                endpoint
                for workload in workloads
                for endpoint in workload_endpoints(workload, service)
            )
            if endpoints:
                out[service.key] = endpoints
    elif not spec.HasField("workload_selector"):
        for service in services:
            if service.resolution.is_dns and service.ports:
                out[service.key] = host_endpoints(service)
    return out


def inline_shards(config: Config, services: tuple[Service, ...]) -> dict[ServiceKey, DeferredShard]:
    """:func:`inline_endpoints`, deferred: per service, what its endpoints are made from
    (the service's ports and the entry's endpoint messages, or the host for DNS) and how
    to make them when first read."""
    spec = _service_entry(config)
    out: dict[ServiceKey, DeferredShard] = {}
    if spec.endpoints:
        entries = tuple(spec.endpoints)
        for service in services:
            if service.ports:
                out[service.key] = DeferredShard(
                    (service.ports, entries), functools.partial(_inline_of, config, service)
                )
    elif not spec.HasField("workload_selector"):
        for service in services:
            if service.resolution.is_dns and service.ports:
                out[service.key] = DeferredShard(
                    (service.hostname, service.ports), functools.partial(host_endpoints, service)
                )
    return out


def _inline_of(config: Config, service: Service) -> tuple[Endpoint, ...]:
    spec = _service_entry(config)
    return tuple(
        endpoint
        for entry in spec.endpoints
        for endpoint in workload_endpoints(
            workload_from_entry(entry, config.key, config.namespace), service
        )
    )
