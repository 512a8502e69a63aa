"""What candidate objects would change for each connected proxy: ``/debug/impact``'s answer.

The push stage plans (:func:`pilothouse.push.impact.plan_impact`: the PushContext the
candidates would build, the connections the pipeline would choose and the types each
would generate); this module generates those types for each chosen proxy under that
context, as its push would (its scope, its watched names, the same generators), and
compares them by name and content hash with what the proxy acknowledged
(``StreamEngine.acked``): the resources added, changed and removed per type, and how many
the proxy would hold before and after.

Nothing live is touched: generation uses a cache of its own (the live cache is keyed by
inputs and could not serve a wrong answer, but candidates that are never applied must
not push live entries out), and the store, context and streams are only read.

Types compared: :data:`COMPARED_TYPES`. SDS is left out (config objects do not change a
secret's content, and generating one may issue a certificate); an MCP-over-xDS client's
Istio kinds are left out too (the ``api`` generator answers from the live store): such
types are listed as ``notCompared``.

Bounded: proxies are evaluated in batches with a yield to the event loop between them
(pushes go on meanwhile), until ``timeout`` seconds; proxies not reached by then are
counted as ``skipped`` and the answer says it is not complete. Each name list is cut
at :data:`NAMES_SHOWN` (the counts stay whole). Proxies that share a scope share their
generated resources through the cache, and equal comparisons are made once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pilothouse.config.model import Config, ConfigKey
from pilothouse.protocol.type_urls import CDS, ECDS, EDS, LDS, RDS, push_order_key, short_name
from pilothouse.push.cache import Resource, ResourceCache
from pilothouse.push.context import PushContext
from pilothouse.push.impact import plan_impact
from pilothouse.push.proxy_push import FullPush
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.server.connection import Connection
from pilothouse.xds.server.discovery import DiscoveryServer

log = logging.getLogger("pilothouse.xds")

COMPARED_TYPES: Final = frozenset({CDS, EDS, LDS, RDS, ECDS})
"""The types generated and compared for each chosen proxy."""
NAMES_SHOWN: Final = 20
"""Names listed per type and per list (added, changed, removed); the counts are whole."""
BATCH: Final = 64
"""Proxies evaluated between two yields to the event loop."""
SCRATCH_ENTRIES: Final = 200_000
"""The bound of the scratch cache one answer generates into."""


@dataclass(frozen=True, slots=True)
class TypeDiff:
    """One type's difference for one proxy."""

    added: tuple[str, ...]
    changed: tuple[str, ...]
    removed: tuple[str, ...]
    before: int
    after: int

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed)

    def view(self) -> dict[str, Any]:
        return {
            "added": list(self.added[:NAMES_SHOWN]),
            "changed": list(self.changed[:NAMES_SHOWN]),
            "removed": list(self.removed[:NAMES_SHOWN]),
            "addedCount": len(self.added),
            "changedCount": len(self.changed),
            "removedCount": len(self.removed),
            "before": self.before,
            "after": self.after,
        }


@dataclass(frozen=True, slots=True)
class ProxyImpact:
    """What one chosen proxy would be pushed."""

    proxy_id: str
    node_id: str
    connection_id: str
    types: Mapping[str, TypeDiff]
    """By type URL, in push order: every type its push would generate and compare."""
    not_compared: tuple[str, ...] = ()

    @property
    def changes(self) -> bool:
        return any(not diff.empty for diff in self.types.values())

    def view(self) -> dict[str, Any]:
        return {
            "proxy": self.proxy_id,
            "nodeID": self.node_id,
            "connectionID": self.connection_id,
            "changes": self.changes,
            "types": {short_name(t): diff.view() for t, diff in self.types.items()},
            "notCompared": [short_name(t) for t in self.not_compared],
        }


@dataclass(slots=True)
class ImpactReport:
    """The answer for one set of candidates."""

    replica: str
    changed: tuple[ConfigKey, ...]
    unchanged: tuple[ConfigKey, ...]
    connected: int
    proxies: list[ProxyImpact] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: int = 0
    seconds: float = 0.0

    def view(self) -> dict[str, Any]:
        return {
            "replica": self.replica,
            "changed": [_key(k) for k in self.changed],
            "unchanged": [_key(k) for k in self.unchanged],
            "connected": self.connected,
            "pushed": len(self.proxies) + len(self.failed) + self.skipped,
            "complete": self.skipped == 0,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 3),
            "proxies": [p.view() for p in sorted(self.proxies, key=lambda p: p.proxy_id)],
            "failed": sorted(self.failed),
        }


def _key(key: ConfigKey) -> str:
    return f"{key.kind}/{key.namespace}/{key.name}" if key.namespace else f"{key.kind}/{key.name}"


async def predict(
    discovery: DiscoveryServer, candidates: Sequence[Config], *, timeout: float
) -> ImpactReport:
    """The impact of applying ``candidates`` on ``discovery``'s connected proxies.

    Raises :class:`~pilothouse.push.impact.NotPredicted` for candidates whose impact is
    not computed, LookupError before the server has its first PushContext."""
    started = time.monotonic()
    deadline = started + timeout
    pipeline = discovery.pushes.pipeline
    plan = plan_impact(pipeline, discovery.store, candidates)
    report = ImpactReport(
        discovery.identity.replica, plan.changed, plan.unchanged, len(pipeline.connections)
    )
    report.failed.extend(c.proxy.id for c in plan.failed)
    context = plan.context
    if context is not None:
        scratch = ResourceCache(SCRATCH_ENTRIES)
        compared: dict[Hashable, tuple[TypeDiff, object, object]] = {}
        for done, (connection, push) in enumerate(plan.pushes):
            if done % BATCH == 0 and done:
                await asyncio.sleep(0)
                if time.monotonic() > deadline:
                    report.skipped = len(plan.pushes) - done
                    break
            if connection.failure is not None or connection.id not in pipeline.connections:
                continue  # gone meanwhile: nothing to push
            try:
                report.proxies.append(
                    _proxy_impact(connection, push, context, discovery, scratch, compared)
                )
            except Exception:  # this proxy's answer only: the others are still evaluated
                log.exception("predicting the impact for %s failed", connection.id)
                report.failed.append(connection.proxy.id)
    report.seconds = time.monotonic() - started
    return report


def _proxy_impact(
    connection: Connection,
    push: FullPush,
    context: PushContext,
    discovery: DiscoveryServer,
    cache: ResourceCache,
    compared: dict[Hashable, tuple[TypeDiff, object, object]],
) -> ProxyImpact:
    """Generate under ``context`` what ``push`` names for ``connection``'s proxy and
    compare it with what the proxy acknowledged."""
    proxy = connection.proxy
    acked = connection.engine.acked()
    scope = context.scope(proxy)
    types: dict[str, TypeDiff] = {}
    not_compared: list[str] = []
    for type_url in sorted(connection.watched_types(), key=push_order_key):
        if type_url not in COMPARED_TYPES:
            not_compared.append(type_url)
            continue
        if type_url in push.unchanged or (type_url == EDS and not push.endpoints):
            continue
        generator = discovery.generator(type_url)
        if generator is None:
            continue
        generated = generator.generate(
            GenerationInput(
                proxy=proxy,
                scope=scope,
                context=context,
                endpoints=discovery.endpoints,
                cache=cache,
                names=connection.watched_names(type_url),
            )
        )
        held = acked.get(type_url, {})
        memo = (type_url, id(generated), id(held))
        found = compared.get(memo)
        if found is None or found[1] is not generated or found[2] is not held:
            found = compared[memo] = (_diff(held, generated), generated, held)
        types[type_url] = found[0]
    return ProxyImpact(proxy.id, proxy.node_id, connection.id, types, tuple(not_compared))


def _diff(before: Mapping[str, Resource], after: Mapping[str, Resource]) -> TypeDiff:
    added = sorted(name for name in after if name not in before)
    removed = sorted(name for name in before if name not in after)
    changed = sorted(
        name
        for name, resource in after.items()
        if (held := before.get(name)) is not None and held.version != resource.version
    )
    return TypeDiff(tuple(added), tuple(changed), tuple(removed), len(before), len(after))
