"""Cache inputs: the one value a cached builder reads, which is also its key and names its
dependencies.

A cached builder declares a frozen dataclass whose fields are exactly what it reads (a
Service, a port, a DestinationRule's revision, the mesh settings, the endpoints at a
version...) and takes that value and nothing else. The ResourceCache stores what it built
under that very value (equal inputs, equal output), and :func:`dependencies` derives the
config keys the entry is evicted by from the value's compared fields, by type, in one
place:

- a :class:`~pilothouse.config.model.ConfigKey` is itself a dependency;
- a :class:`~pilothouse.config.model.Config` depends on its key;
- a :class:`~pilothouse.registry.model.Service` on the ServiceEntry it comes from;
- a :class:`~pilothouse.registry.model.ServiceKey` on the service's own key (what an
  endpoint change names);
- tuples, frozensets, :class:`InputKey` parts and dataclass fields (those that take part
  in comparison) are walked; anything else names nothing (nor do
  :class:`~pilothouse.registry.model.Labels`, string pairs, which are not walked: every
  workload's inputs hold its labels).

An inputs value of many parts that the cache hashes often (a scope's hundreds of
services), or one made for every proxy on every push (a workload's ports, its inbound
listeners, its policies), is hashed once and walked once: an :class:`InputKey` of parts,
or a dataclass with named fields built on :class:`FrozenInputs` (a lookup that hits
hashes the key twice, to find it and to refresh its place in the LRU). Both also
remember the last value they were found equal to: scopes that see the same services
each gather an equal key of their own, and each of their proxies looks its scope's key
up in the cache, where an equal key of another scope is stored; the first comparison
walks the parts, the later ones find the two already known equal (values never change,
so neither can their equality).

Nothing writes a key or a dependency set by hand, so neither can forget an input.
Dependencies only free memory early: correctness comes from the key, which holds every
input.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pilothouse.config.model import Config, ConfigKey
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.model import Endpoint, Labels, Service, ServiceKey


class InputKey:
    """A key of many parts, hashed once (and its dependencies walked once).

    A tuple hashes every part again on each use, and the cache hashes a key when it is
    looked up, stored and registered under each dependency: for a key that holds a
    scope's hundreds of services, that is most of the work. Two keys are equal when
    their parts are (compared once per pair met in a row: see the module docstring).
    """

    __slots__ = ("_depends", "_equal", "_hash", "parts")

    def __init__(self, parts: tuple[Hashable, ...]) -> None:
        self.parts = parts
        self._hash = hash(parts)
        self._depends: frozenset[ConfigKey] | None = None
        self._equal: InputKey | None = None
        """The last other key found equal to this one (see the module docstring)."""

    @property
    def depends_on(self) -> frozenset[ConfigKey]:
        """The config keys the parts name (see :func:`dependencies`)."""
        found = self._depends
        if found is None:
            found = self._depends = dependencies(self.parts)
        return found

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, InputKey):
            return NotImplemented
        if self._equal is other or other._equal is self:
            return True
        if type(self) is type(other) and self._hash == other._hash and self.parts == other.parts:
            self._equal = other
            other._equal = self
            return True
        return False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.parts)} parts)"


class FrozenInputs:
    """Base of a frozen inputs dataclass of many parts: hashed once, its dependencies
    walked once.

    Subclass as ``@dataclass(frozen=True, slots=True, eq=False)``: equality and the hash
    come from here and cover every field that takes part in comparison (fields with
    ``compare=False`` may hold what is derived from the others, made on first use). Two
    values are equal when they are of the same class and their compared fields are: the
    fields are read into a tuple once, at construction, and a comparison (every cache
    hit makes one) compares the hashes, then the two tuples.
    """

    __slots__ = ("_compared", "_depends", "_equal", "_hash")

    _hash: int
    _compared: tuple[object, ...]
    """The compared fields' values, read once (what equality compares after the hash)."""
    _depends: frozenset[ConfigKey] | None
    _equal: FrozenInputs | None
    """The last other value found equal to this one (see the module docstring)."""
    _compared_getter: ClassVar[Callable[[Any], tuple[object, ...]]]
    """Reads the compared fields of an instance (made once per class, on first use)."""

    def __post_init__(self) -> None:
        compared = self._read_compared()
        object.__setattr__(self, "_compared", compared)
        object.__setattr__(self, "_hash", hash(compared))
        object.__setattr__(self, "_depends", None)
        object.__setattr__(self, "_equal", None)

    def compared(self) -> tuple[object, ...]:
        """The values of the fields that take part in comparison, in field order."""
        return self._compared

    def _read_compared(self) -> tuple[object, ...]:
        kind = type(self)
        try:
            getter = kind.__dict__["_compared_getter"]
        except KeyError:
            names = tuple(f.name for f in dataclasses.fields(self) if f.compare)  # type: ignore[arg-type]
            getter = kind._compared_getter = _reader(names)
        return getter(self)  # type: ignore[no-any-return]

    @property
    def depends_on(self) -> frozenset[ConfigKey]:
        """The config keys the compared fields name (see :func:`dependencies`)."""
        found = self._depends
        if found is None:
            found = dependencies(self._compared)
            object.__setattr__(self, "_depends", found)
        return found

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, FrozenInputs)
        if self._equal is other or other._equal is self:
            return True
        if self._hash == other._hash and self._compared == other._compared:
            object.__setattr__(self, "_equal", other)
            object.__setattr__(other, "_equal", self)
            return True
        return False


def _reader(names: tuple[str, ...]) -> Callable[[Any], tuple[object, ...]]:
    """A function giving the values of attributes ``names`` of its argument, as a tuple."""
    if len(names) >= 2:
        return operator.attrgetter(*names)
    return lambda value: tuple(getattr(value, name) for name in names)


@dataclass(frozen=True, slots=True)
class ConfigRevision:
    """A config as a cache input: compared by key, source and resource version.

    Comparing two Configs serialises their specs; a revision compares three short
    values and still changes with every edit (the resource version does). The config
    rides along, uncompared, for the builder to read.
    """

    key: ConfigKey
    source: str
    resource_version: str
    config: Config = field(compare=False, repr=False)

    @classmethod
    def of(cls, config: Config | None) -> ConfigRevision | None:
        if config is None:
            return None
        return cls(config.key, config.origin.source, config.resource_version, config)


@dataclass(frozen=True, slots=True)
class EndpointsAt:
    """A service's endpoints as a cache input: named by the index's version for the service.

    The endpoint index is the one input that changes in place; its per-service version
    names what it holds, so the version is compared and the index rides along for the
    builder to read what that version holds (:meth:`read` refuses if it moved on).
    """

    service: ServiceKey
    version: int
    index: EndpointIndex = field(compare=False, repr=False)

    @classmethod
    def of(cls, service: ServiceKey, index: EndpointIndex) -> EndpointsAt:
        return cls(service, index.version(service), index)

    def read(self, port_name: str, labels: dict[str, str] | None) -> tuple[Endpoint, ...]:
        """The endpoints of one port (and subset labels) at this version."""
        if self.index.version(self.service) != self.version:
            raise RuntimeError(f"endpoints of {self.service} moved past version {self.version}")
        return self.index.endpoints_for(self.service, port_name, labels)


def dependencies(
    value: object, compared: dict[type, tuple[str, ...]] | None = None
) -> frozenset[ConfigKey]:
    """The config keys ``value`` (a cache input) names, by the rules in the module docstring.

    ``compared`` remembers each dataclass's compared fields across calls (the resource
    cache keeps one); without it they are looked up for each walk.
    """
    found: set[ConfigKey] = set()
    _collect(value, found, {} if compared is None else compared)
    return frozenset(found)


_LEAVES = frozenset({str, int, float, bool, bytes, type(None), Labels})


def _collect(value: object, found: set[ConfigKey], compared: dict[type, tuple[str, ...]]) -> None:
    """Add what ``value`` names to ``found``; ``compared`` remembers each dataclass's
    compared fields."""
    kind = type(value)
    if kind in _LEAVES:
        return
    if kind is ConfigKey:
        found.add(value)  # type: ignore[arg-type]
    elif kind is ServiceKey:
        found.add(value.config_key)  # type: ignore[attr-defined]
    elif kind is tuple or kind is frozenset:
        for part in value:  # type: ignore[attr-defined]
            _collect(part, found, compared)
    elif kind is ConfigRevision:  # the commonest dataclass: its key is all it names
        found.add(value.key)  # type: ignore[attr-defined]
    elif isinstance(value, Service):
        found.add(value.source)
    elif isinstance(value, Config):
        found.add(value.key)
    elif isinstance(value, (InputKey, FrozenInputs)):
        found.update(value.depends_on)
    elif isinstance(value, (ConfigKey, ServiceKey)):  # subclasses, never seen in practice
        found.add(value if isinstance(value, ConfigKey) else value.config_key)
    elif isinstance(value, (tuple, frozenset)):
        for part in value:
            _collect(part, found, compared)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = compared.get(kind)
        if names is None:
            names = compared[kind] = tuple(f.name for f in dataclasses.fields(value) if f.compare)
        for name in names:
            _collect(getattr(value, name), found, compared)
