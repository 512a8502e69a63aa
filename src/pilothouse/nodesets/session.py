"""One node agent's delta subscription to its node's set, without I/O.

A :class:`NodeSetSession` remembers, per subscribed type name, the version of every
resource it has sent (or that the agent said it holds, in ``initial_resource_versions``
when it reconnects), and turns the node's current set into what must go out:
:meth:`NodeSetSession.delta` returns the new and changed resources and the names to
remove, and records them as sent. ACKs and NACKs are recorded, not waited for (delta
xDS lets responses overlap); a NACKed version is not resent until the object changes,
since the session records it as sent all the same.

Request rules: a request whose type name is not a kind of the node set ends the stream
(:class:`UnknownType`); the first request of a type subscribes to the whole set of that
kind (the resource names it lists are not a filter: the node is); a request with
``response_nonce`` is an ACK, or a NACK when it carries ``error_detail``; unsubscribing
every name (``resource_names_unsubscribe: ["*"]``) drops the type.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pilothouse.config.schema import SchemaSet
from pilothouse.kinds.table import SCHEMAS
from pilothouse.nodesets.kubernetes import KUBE_TYPES
from pilothouse.nodesets.membership import NODE_SET_KINDS
from pilothouse.push.cache import Resource


class UnknownType(ValueError):
    """A type name that is not a kind of the node set."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One response's content: changed resources and removed names of one type."""

    type_url: str
    kind: str
    resources: tuple[Resource, ...]
    removed: tuple[str, ...]


@dataclass(slots=True)
class SessionStats:
    responses: int = 0
    acks: int = 0
    nacks: int = 0
    last_nack: str = ""


def node_set_types(schemas: SchemaSet = SCHEMAS) -> dict[str, str]:
    """The type names of the node set (an Istio kind's first GVK, then Kubernetes'
    ``core/v1/Pod`` and ``core/v1/Service``) and their kinds, in the set's order."""
    found = {}
    for kind in NODE_SET_KINDS:
        schema = schemas.by_kind(kind)
        if schema is not None:
            found[schema.gvks[0]] = kind
    found.update(KUBE_TYPES)
    return found


def node_set_kind(type_url: str, schemas: SchemaSet = SCHEMAS) -> str:
    """The kind behind a type name of the node set (any GVK spelling of an Istio kind);
    UnknownType otherwise."""
    kube = KUBE_TYPES.get(type_url)
    if kube is not None:
        return kube
    schema = schemas.by_gvk(type_url)
    if schema is None or schema.kind not in NODE_SET_KINDS:
        raise UnknownType(
            f"{type_url!r} is not a kind of a node's set; ask for one of "
            + ", ".join(node_set_types(schemas))
        )
    return schema.kind


@dataclass(slots=True)
class NodeSetSession:
    """What one stream subscribed to and what it sent, by type name."""

    subscribed: dict[str, str] = field(default_factory=dict)
    """Type name → kind, in subscription order."""
    sent: dict[str, dict[str, str]] = field(default_factory=dict)
    """Type name → resource name → version the agent holds."""
    stats: SessionStats = field(default_factory=SessionStats)
    _nonces: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def request(
        self,
        type_url: str,
        *,
        nonce: str = "",
        error: str = "",
        initial_versions: Mapping[str, str] | None = None,
        unsubscribe: Iterable[str] = (),
    ) -> bool:
        """Take one request; True when the type was newly subscribed (answer it now)."""
        if "*" in unsubscribe and type_url in self.subscribed:
            del self.subscribed[type_url]
            self.sent.pop(type_url, None)
            return False
        if nonce and type_url in self.subscribed:
            if error:
                self.stats.nacks += 1
                self.stats.last_nack = error
            else:
                self.stats.acks += 1
            return False
        if type_url in self.subscribed:
            return False
        self.subscribed[type_url] = node_set_kind(type_url)
        self.sent[type_url] = dict(initial_versions or {})
        return True

    def delta(
        self, type_url: str, current: Mapping[str, Resource], *, answer: bool = False
    ) -> Outgoing | None:
        """What must go out for ``type_url`` given the node's ``current`` resources of
        its kind (None: nothing changed, unless ``answer``: the first answer of a type
        goes out even when empty, so the agent knows its set); recorded as sent."""
        sent = self.sent[type_url]
        changed = tuple(r for name, r in current.items() if sent.get(name) != r.version)
        removed = tuple(name for name in sent if name not in current)
        if not changed and not removed and not answer:
            return None
        for name in removed:
            del sent[name]
        for resource in changed:
            sent[resource.name] = resource.version
        self.stats.responses += 1
        return Outgoing(type_url, self.subscribed[type_url], changed, removed)

    def nonce(self) -> str:
        return str(next(self._nonces))
