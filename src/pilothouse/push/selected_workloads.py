"""Who a change of a kind that selects workloads concerns, and which types it leaves alone.

No proxy scope answers for a kind whose audience is
:attr:`~pilothouse.kinds.kind.Audience.SELECTED_WORKLOADS` (its objects pick workloads
by labels, proxy by proxy): a change concerns the proxies its version before or after
the change selects, which the kind's index in the old and the new PushContext answers
(:attr:`~pilothouse.kinds.kind.Kind.index`, a :class:`WorkloadSelection`). Two more
declarations of the kind are read here:

- :attr:`~pilothouse.kinds.kind.Kind.changed_types`: the types one object's spec can
  change. A change is marked inert (``PushRequest.inert``) for each type of
  :data:`NARROWED_TYPES` neither version changes, so the proxies it reaches regenerate
  only the others.
- :attr:`~pilothouse.kinds.kind.Kind.uncompared_audience`: a change that reached a
  context before the request naming it (:func:`moved_selections`, kept by the pipeline
  as its unsettled keys), or any change while the mesh settings changed, cannot be
  compared: the scope rule of that audience decides, and no type is left out. A kind
  that declares none is always compared, and :func:`moved_selections` does not track it.

:func:`selected_change` reads a request's keys once per plan; the pipeline then asks
:meth:`SelectedChange.seen_by` once per pair of scopes and
:meth:`SelectedChange.selects` per proxy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Protocol

from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds.kind import Audience, Kind
from pilothouse.kinds.table import KINDS
from pilothouse.protocol.type_urls import CDS, LDS, RDS
from pilothouse.push.context import PushContext
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.scope import AUDIENCE_RULES, ProxyScope, SeesRule


class WorkloadSelection(Protocol):
    """What the push-context index of a kind that selects workloads answers."""

    @property
    def by_key(self) -> Mapping[ConfigKey, Config]:
        """Every object of the index by key."""
        ...

    def selects(self, key: ConfigKey, proxy: ProxyIdentity) -> bool:
        """Whether the object ``key`` (if the index holds it) applies to ``proxy``."""
        ...


NARROWED_TYPES: Final = frozenset({CDS, LDS, RDS})
"""The types a kind's ``changed_types`` can leave out: those a full push regenerates
from config (EDS follows the clusters CDS changed; SDS and the MCP kinds are never
left out by kind)."""

SELECTING: Final[Mapping[str, Kind]] = MappingProxyType(
    {k.name: k for k in KINDS if k.audience is Audience.SELECTED_WORKLOADS}
)
"""The kinds whose audience is the workloads they select, by name."""

_TRACKED: Final = tuple(k for k in SELECTING.values() if k.uncompared_audience is not None)


@dataclass(frozen=True, slots=True)
class SelectedChange:
    """A request's changed keys, those of kinds that select workloads read against the
    old and the new context."""

    others: frozenset[ConfigKey]
    """The changed keys of every other kind: the scopes' audiences decide for those."""
    compared: tuple[tuple[ConfigKey, WorkloadSelection, WorkloadSelection], ...] = ()
    """Each compared key, with its kind's index in the old and the new context."""
    uncompared: tuple[tuple[ConfigKey, SeesRule], ...] = ()
    """Each key that cannot be compared, with the scope rule of its kind's
    ``uncompared_audience``."""
    inert: frozenset[tuple[str, ConfigKey]] = frozenset()
    """(type URL, key) for each compared key and each narrowed type neither version
    changes: a push for it leaves those types alone."""

    def seen_by(self, old: ProxyScope, new: ProxyScope, root: str) -> bool:
        """Whether an uncompared key concerns the proxies of these scopes (the scope
        before and after the change)."""
        return any(rule(old, key, root) or rule(new, key, root) for key, rule in self.uncompared)

    def selects(self, proxy: ProxyIdentity) -> bool:
        """Whether the old or the new version of a compared key applies to ``proxy``."""
        return any(
            before.selects(key, proxy) or after.selects(key, proxy)
            for key, before, after in self.compared
        )


def selected_change(
    keys: frozenset[ConfigKey],
    old: PushContext,
    new: PushContext,
    unsettled: frozenset[ConfigKey] | None,
) -> SelectedChange:
    """Split a request's changed ``keys`` between the scopes and the selecting kinds.

    ``unsettled``: the keys that changed in a context before this request named them
    (None: nothing is compared, the mesh settings changed)."""
    mine = [k for k in keys if k.kind in SELECTING]
    if not mine:
        return SelectedChange(keys)
    compared: list[tuple[ConfigKey, WorkloadSelection, WorkloadSelection]] = []
    uncompared: list[tuple[ConfigKey, SeesRule]] = []
    inert: set[tuple[str, ConfigKey]] = set()
    for key in mine:
        kind = SELECTING[key.kind]
        if kind.uncompared_audience is not None and (unsettled is None or key in unsettled):
            uncompared.append((key, AUDIENCE_RULES[kind.uncompared_audience]))
            continue
        before, after = index_of(old, kind), index_of(new, kind)
        compared.append((key, before, after))
        if kind.changed_types is not None:
            changed = _changed_types(kind, before, key) | _changed_types(kind, after, key)
            inert.update((t, key) for t in NARROWED_TYPES - kind.unread_by - changed)
    return SelectedChange(
        keys.difference(mine), tuple(compared), tuple(uncompared), frozenset(inert)
    )


def moved_selections(old: PushContext, new: PushContext) -> frozenset[ConfigKey]:
    """The objects of the kinds that declare an ``uncompared_audience`` added, removed or
    replaced between two contexts: a request that names them later cannot compare
    their versions."""
    found: set[ConfigKey] = set()
    for kind in _TRACKED:
        before, after = index_of(old, kind), index_of(new, kind)
        if before is after:
            continue
        was, now = before.by_key, after.by_key
        found.update(
            k for k in was.keys() | now.keys() if k.kind == kind.name and was.get(k) != now.get(k)
        )
    return frozenset(found)


def index_of(context: PushContext, kind: Kind) -> WorkloadSelection:
    """The index of ``kind`` in ``context`` (the field its ``index`` names)."""
    if kind.index is None:
        raise LookupError(f"{kind.name} selects workloads but names no push-context index")
    index: WorkloadSelection = getattr(context, kind.index)
    return index


def _changed_types(kind: Kind, index: WorkloadSelection, key: ConfigKey) -> frozenset[str]:
    config = index.by_key.get(key)
    if config is None or kind.changed_types is None:
        return frozenset()
    return kind.changed_types(config.spec)
