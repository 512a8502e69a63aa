"""Which proxies a Gateway API change concerns: what each generated Istio config was made of.

The translation (:mod:`.translation`) turns Gateway API objects into Istio Gateways and
VirtualServices. Each generated object keeps an :class:`Origin`: the Gateway API objects
it was made from (a listener's Gateway and its GatewayClass; the routes whose rules a
VirtualService holds), the namespaces its references cross into (a backend or
certificate in another namespace, allowed or not by the ReferenceGrants there), and
what it is bound to (a generated VirtualService: its listener's Istio Gateway, or the
mesh). :meth:`Origins.concerns` reads them for one proxy scope: a gateway proxy is
concerned by what made the gateways selecting it and the routes bound to them; a
sidecar by what made the mesh routes it sees (the hosts its scope admits). The push
scope asks this of the context before and after a change, so a route that moves from
one gateway to another reaches both.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pilothouse.config.model import ConfigKey


@dataclass(frozen=True, slots=True)
class Origin:
    """What one generated Istio Gateway or VirtualService was made from."""

    sources: frozenset[ConfigKey]
    """The Gateway API objects it was made from."""
    referenced: frozenset[str] = frozenset()
    """The namespaces its references cross into (their ReferenceGrants decide them)."""
    bound_to: ConfigKey | None = None
    """A generated Gateway: itself. A generated VirtualService: the generated Gateway it
    is bound to, or None when it is the mesh's (GAMMA, for sidecars)."""


@dataclass(frozen=True, slots=True)
class Concerns:
    """What a change must touch to concern one proxy scope."""

    sources: frozenset[ConfigKey] = frozenset()
    """The Gateway API objects the scope's generated config was made from."""
    namespaces: frozenset[str] = frozenset()
    """The namespaces that config's references cross into."""


NONE = Concerns()


@dataclass(frozen=True, slots=True)
class Origins:
    """Each generated config's :class:`Origin`, by its key."""

    by_key: Mapping[ConfigKey, Origin] = field(default_factory=lambda: MappingProxyType({}))

    def concerns(
        self,
        gateways: Iterable[ConfigKey],
        virtual_services: Iterable[ConfigKey],
        *,
        mesh: bool,
    ) -> Concerns:
        """What concerns a scope holding ``gateways`` (those selecting its proxies) and
        seeing ``virtual_services``: the origins of its generated gateways and of the
        generated routes bound to them, and, when ``mesh`` (a sidecar), of the mesh's."""
        by_key = self.by_key
        if not by_key:
            return NONE
        selected = frozenset(gateways)
        sources: set[ConfigKey] = set()
        namespaces: set[str] = set()
        for key in (*selected, *virtual_services):
            origin = by_key.get(key)
            if origin is None:
                continue
            bound = origin.bound_to
            if (bound is None and mesh) or (bound is not None and bound in selected):
                sources |= origin.sources
                namespaces |= origin.referenced
        if not sources and not namespaces:
            return NONE
        return Concerns(frozenset(sources), frozenset(namespaces))


class OriginTally:
    """Gathers origins while one translation runs, under the translation's own keys for
    the objects it is about to make (a local of :func:`~.translation.translate`)."""

    def __init__(self) -> None:
        self._sources: dict[Hashable, set[ConfigKey]] = {}
        self._referenced: dict[Hashable, set[str]] = {}

    def add(self, at: Hashable, source: ConfigKey, referenced: Iterable[str] = ()) -> None:
        """The object to be made under ``at`` draws on ``source`` (and ``referenced``)."""
        self._sources.setdefault(at, set()).add(source)
        self._referenced.setdefault(at, set()).update(referenced)

    def origin(self, at: Hashable, bound_to: ConfigKey | None) -> Origin:
        """The origin of the object made under ``at``."""
        return Origin(
            frozenset(self._sources.get(at, ())),
            frozenset(self._referenced.get(at, ())),
            bound_to,
        )
