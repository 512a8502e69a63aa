"""The service registry's values: services, their ports, workloads and endpoints.

Everything here is frozen and hashable, so services and endpoints can be compared (did
anything change?), put in sets, and used as cache keys by the generators. Label maps are
:class:`Labels`, an immutable mapping; selectors (a ServiceEntry's ``workloadSelector``,
a DestinationRule subset's ``labels``) match with :meth:`Labels.matches`.
"""

from __future__ import annotations

import datetime
import functools
import operator
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from pilothouse.config.model import ConfigKey
from pilothouse.kinds import service as service_kind

SERVICE_KIND = service_kind.KIND.name
"""The kind of the :class:`ConfigKey` that names a registry service in a PushRequest.

A ServiceKey travels in ``PushRequest.configs_updated`` as
``ConfigKey(SERVICE_KIND, namespace, hostname)``: the push stage can then tell which hosts
(and so which clusters) changed, even for a ServiceEntry that has since been deleted.
"""

EXPORT_ALL = "*"
EXPORT_NONE = "~"


@dataclass(frozen=True, slots=True)
class Labels(Mapping[str, str]):
    """An immutable label map, hashable and ordered by key."""

    pairs: tuple[tuple[str, str], ...] = ()
    _lookup: dict[str, str] = field(
        init=False, repr=False, compare=False, hash=False, default_factory=dict
    )
    _hash: int = field(init=False, repr=False, compare=False, default=0)
    """Made once: labels are part of the cache inputs of every workload's inbound ports
    and access policies, hashed on each lookup."""

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.pairs))
        object.__setattr__(self, "pairs", ordered)
        object.__setattr__(self, "_lookup", dict(ordered))
        object.__setattr__(self, "_hash", hash(ordered))
        if len(self._lookup) != len(ordered):
            raise ValueError(f"duplicate label keys in {ordered!r}")

    def __hash__(self) -> int:
        return self._hash

    @classmethod
    def of(cls, labels: Mapping[str, str] | Iterable[tuple[str, str]] | None = None) -> Labels:
        """Labels from a mapping or from (key, value) pairs."""
        if labels is None:
            return NO_LABELS
        if isinstance(labels, Labels):
            return labels
        pairs = tuple(labels.items()) if isinstance(labels, Mapping) else tuple(labels)
        return cls(pairs) if pairs else NO_LABELS

    def __getitem__(self, key: str) -> str:
        return self._lookup[key]

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    def __contains__(self, key: object) -> bool:
        return key in self._lookup

    def matches(self, selector: Mapping[str, str] | None) -> bool:
        """True when every label of ``selector`` is here with the same value.

        An empty or missing selector matches everything (as in Istio).
        """
        if not selector:
            return True
        lookup = self._lookup
        pairs = selector.pairs if isinstance(selector, Labels) else selector.items()
        return all(lookup.get(key) == value for key, value in pairs)

    def merged(self, over: Mapping[str, str]) -> Labels:
        """These labels with ``over`` added; ``over`` wins on a shared key."""
        if not over:
            return self
        combined = dict(self._lookup)
        combined.update(over)
        return Labels.of(combined)

    def __str__(self) -> str:
        return ",".join(f"{key}={value}" for key, value in self.pairs)


NO_LABELS = Labels()


class Resolution(StrEnum):
    """How a service's endpoints are found (ServiceEntry ``resolution``)."""

    NONE = "NONE"
    STATIC = "STATIC"
    DNS = "DNS"
    DNS_ROUND_ROBIN = "DNS_ROUND_ROBIN"
    DYNAMIC_DNS = "DYNAMIC_DNS"

    @property
    def is_dns(self) -> bool:
        """DNS and DNS_ROUND_ROBIN: Envoy resolves the endpoint addresses itself."""
        return self in (Resolution.DNS, Resolution.DNS_ROUND_ROBIN)

    @property
    def endpoints_in_cluster(self) -> bool:
        """The endpoints travel inside the cluster (STRICT_DNS / LOGICAL_DNS clusters carry
        their ``load_assignment``), not over EDS: an endpoint change is a cluster change."""
        return self in (Resolution.DNS, Resolution.DNS_ROUND_ROBIN, Resolution.DYNAMIC_DNS)


class Location(StrEnum):
    """Whether a service is part of the mesh (ServiceEntry ``location``)."""

    MESH_EXTERNAL = "MESH_EXTERNAL"
    MESH_INTERNAL = "MESH_INTERNAL"


class ServiceKey(NamedTuple):
    """Names a service: its hostname and the namespace that declares it.

    A named tuple, like :class:`ConfigKey`: it is hashed on every endpoint and push
    lookup, which a tuple does in C. Keys order by hostname, then namespace.
    """

    hostname: str
    namespace: str

    @property
    def config_key(self) -> ConfigKey:
        """This service as a key for ``PushRequest.configs_updated``."""
        return ConfigKey(SERVICE_KIND, self.namespace, self.hostname)

    @classmethod
    def from_config_key(cls, key: ConfigKey) -> ServiceKey | None:
        """The ServiceKey carried by ``key``, or None when ``key`` names something else."""
        if key.kind != SERVICE_KIND:
            return None
        return cls(key.name, key.namespace)

    def __str__(self) -> str:
        return f"{self.hostname}/{self.namespace}"


@functools.lru_cache(maxsize=64)
@functools.lru_cache(maxsize=8)
def service_hosts(keys: frozenset[ConfigKey]) -> frozenset[str]:
    """The hostnames of the services among ``keys`` (a push request names a service as a
    ConfigKey of kind :data:`SERVICE_KIND` whose name is the hostname).

    Remembered for the last few key sets: a push asks once per connection with the same
    request's keys, and only the first of those walks them."""
    return frozenset(k.name for k in keys if k.kind == SERVICE_KIND)


@dataclass(frozen=True, slots=True)
class ServicePort:
    """One port of a service. ``protocol`` is upper-cased ("" = not given, detect it);
    ``target_port`` 0 means unset (endpoints listen on ``number``)."""

    name: str
    number: int
    protocol: str = ""
    target_port: int = 0

    @property
    def endpoint_port(self) -> int:
        """The port an endpoint listens on when it does not say: target port, else number."""
        return self.target_port or self.number


@dataclass(frozen=True, slots=True, init=False, eq=False)
class Service:
    """One host of a ServiceEntry, as the rest of the mesh sees it.

    ``export_to`` is as written with ``.`` replaced by the service's namespace; empty means
    "not given" (the mesh default, normally every namespace). ``workload_selector`` is None
    when the ServiceEntry has none (an empty selector selects every workload of the
    namespace).
    """

    hostname: str
    namespace: str
    ports: tuple[ServicePort, ...]
    resolution: Resolution
    location: Location
    source: ConfigKey
    addresses: tuple[str, ...] = ()
    export_to: frozenset[str] = frozenset()
    subject_alt_names: tuple[str, ...] = ()
    workload_selector: Labels | None = None
    creation_time: datetime.datetime | None = None
    key: ServiceKey = field(init=False, repr=False, compare=False)
    """hostname and namespace as one value (made once: it is looked up all the time)."""
    _hash: int = field(init=False, repr=False, compare=False)
    """The hash of the compared fields, 0 until first asked for: a Service is part of
    the cache inputs of every cluster and scope that holds it, hashed on each lookup.
    Equality compares it first when both sides have one."""

    def __init__(
        self,
        hostname: str,
        namespace: str,
        ports: tuple[ServicePort, ...],
        resolution: Resolution,
        location: Location,
        source: ConfigKey,
        addresses: tuple[str, ...] = (),
        export_to: frozenset[str] = frozenset(),
        subject_alt_names: tuple[str, ...] = (),
        workload_selector: Labels | None = None,
        creation_time: datetime.datetime | None = None,
    ) -> None:
        # Written out, as Config's: a registry load builds one per ServiceEntry host.
        assign = object.__setattr__
        assign(self, "hostname", hostname)
        assign(self, "namespace", namespace)
        assign(self, "ports", ports)
        assign(self, "resolution", resolution)
        assign(self, "location", location)
        assign(self, "source", source)
        assign(self, "addresses", addresses)
        assign(self, "export_to", export_to)
        assign(self, "subject_alt_names", subject_alt_names)
        assign(self, "workload_selector", workload_selector)
        assign(self, "creation_time", creation_time)
        assign(self, "key", ServiceKey(hostname, namespace))
        assign(self, "_hash", 0)

    def __hash__(self) -> int:
        found = self._hash
        if not found:
            found = hash(_service_fields(self)) or 1
            object.__setattr__(self, "_hash", found)
        return found

    def __eq__(self, other: object) -> bool:
        # the same object, or hashes both known and different, answer without the fields
        if self is other:
            return True
        if type(other) is not Service:
            return NotImplemented
        mine, theirs = self._hash, other._hash
        if mine and theirs and mine != theirs:
            return False
        return bool(_service_fields(self) == _service_fields(other))

    @property
    def headless(self) -> bool:
        """Resolution NONE without an address (a Kubernetes Service with ``clusterIP:
        None``, a ServiceEntry host of resolution NONE without addresses): sidecars
        listen for its non-HTTP ports at its endpoints' addresses (lds_headless.py)."""
        return self.resolution is Resolution.NONE and not self.addresses

    def port_by_number(self, number: int) -> ServicePort | None:
        for port in self.ports:
            if port.number == number:
                return port
        return None

    def port_by_name(self, name: str) -> ServicePort | None:
        for port in self.ports:
            if port.name == name:
                return port
        return None

    def is_exported_to(self, namespace: str, default: frozenset[str] = frozenset()) -> bool:
        """Whether proxies in ``namespace`` may see this service.

        ``default`` is used when ``export_to`` is empty (mesh ``defaultServiceExportTo``;
        an empty default means every namespace, as Istio's default ``*``).
        """
        export_to = self.export_to or default
        if not export_to or EXPORT_ALL in export_to:
            return True
        return namespace in export_to


_service_fields = operator.attrgetter(
    "hostname",
    "namespace",
    "ports",
    "resolution",
    "location",
    "source",
    "addresses",
    "export_to",
    "subject_alt_names",
    "workload_selector",
    "creation_time",
)
"""The fields a Service compares by (every one but ``key`` and ``_hash``), as a tuple."""


@dataclass(frozen=True, slots=True)
class Workload:
    """A WorkloadEntry (or a ServiceEntry's inline endpoint) before it meets a service.

    ``labels`` of a WorkloadEntry are its spec labels merged with its metadata labels
    (metadata wins, as in Istio); ``ports`` are the named ports it declares.
    """

    source: ConfigKey
    namespace: str
    address: str
    ports: tuple[tuple[str, int], ...] = ()
    labels: Labels = NO_LABELS
    network: str = ""
    locality: str = ""
    weight: int = 0
    service_account: str = ""

    def port(self, name: str) -> int:
        """The declared port for service port ``name``, or 0."""
        for port_name, number in self.ports:
            if port_name == name:
                return number
        return 0


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One address:port serving one port of one service.

    ``port`` is the workload's port number, ``weight`` is at least 1 (0 = unset = 1),
    ``locality`` is ``region/zone/subzone`` as written, ``source`` the config it came from.
    """

    address: str
    port: int
    service_port_name: str
    source: ConfigKey
    labels: Labels = NO_LABELS
    locality: str = ""
    weight: int = 1
    network: str = ""
    service_account: str = ""

    def sort_key(self) -> tuple[Any, ...]:
        """A total order over endpoints, used wherever endpoints must come out the same way."""
        return (
            self.address,
            self.port,
            self.service_port_name,
            self.network,
            self.locality,
            self.weight,
            self.service_account,
            self.labels.pairs,
            self.source,
        )
