"""The config model: one validated Istio object (`Config`) and the key that names it."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

from google.protobuf.message import Message

EMPTY: Mapping[str, str] = MappingProxyType({})
_ASSIGN = object.__setattr__


class ConfigKey(NamedTuple):
    """Names one config object: kind, namespace and name (namespace is "" when cluster-wide).

    A named tuple, not a dataclass: keys are hashed and compared on every event, cache
    lookup and push, and a tuple does both in C (several times faster). Keys order by
    kind, then namespace, then name.
    """

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return (
            f"{self.kind} {self.namespace}/{self.name}"
            if self.namespace
            else (f"{self.kind} {self.name}")
        )


@dataclass(frozen=True, slots=True)
class Origin:
    """Where an object came from: the source's name, and the file and line when there is one."""

    source: str
    file: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        if self.file is None:
            return self.source
        return f"{self.file}:{self.line}" if self.line is not None else self.file


UNKNOWN_ORIGIN = Origin("unknown")
"""The origin of a Config built without one (tests, synthesised objects)."""


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Config:
    """One validated object of a known kind.

    ``spec`` is a protobuf message and therefore technically mutable: nothing in
    pilothouse mutates it after loading, and code that needs a changed spec builds a new
    Config. Two Configs compare equal when their metadata and
    the serialized spec are equal, which is what "did this object change" means.
    """

    kind: str
    name: str
    namespace: str
    spec: Message
    labels: Mapping[str, str] = field(default_factory=lambda: EMPTY)
    annotations: Mapping[str, str] = field(default_factory=lambda: EMPTY)
    resource_version: str = ""
    creation_time: datetime.datetime | None = None
    origin: Origin = field(default_factory=lambda: UNKNOWN_ORIGIN)
    key: ConfigKey = field(init=False, repr=False)
    """kind, namespace and name as one value (made once: it is looked up on every event)."""

    def __init__(
        self,
        kind: str,
        name: str,
        namespace: str,
        spec: Message,
        labels: Mapping[str, str] = EMPTY,
        annotations: Mapping[str, str] = EMPTY,
        resource_version: str = "",
        creation_time: datetime.datetime | None = None,
        origin: Origin | None = None,
    ) -> None:
        # Written out rather than generated: a frozen dataclass's __init__ looks up
        # object.__setattr__ for every field, and a bulk load builds 100,000 of these.
        assign = _ASSIGN
        assign(self, "kind", kind)
        assign(self, "name", name)
        assign(self, "namespace", namespace)
        assign(self, "spec", spec)
        assign(self, "labels", labels)
        assign(self, "annotations", annotations)
        assign(self, "resource_version", resource_version)
        assign(self, "creation_time", creation_time)
        assign(self, "origin", origin if origin is not None else UNKNOWN_ORIGIN)
        assign(self, "key", ConfigKey(kind, namespace, name))

    def same_content(self, other: Config) -> bool:
        """True when ``other`` says the same thing (origin and resource version aside)."""
        return (
            self.key == other.key
            and dict(self.labels) == dict(other.labels)
            and dict(self.annotations) == dict(other.annotations)
            and self.spec.SerializeToString(deterministic=True)
            == other.spec.SerializeToString(deterministic=True)
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Config):
            return NotImplemented
        return (
            self.same_content(other)
            and self.resource_version == other.resource_version
            and self.origin == other.origin
        )

    def __hash__(self) -> int:
        return hash((self.key, self.resource_version))
