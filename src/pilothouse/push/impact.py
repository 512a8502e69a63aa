"""A change's impact before it lands: the push the server would plan for candidate objects.

Given candidate objects (what ``apply`` would write), :func:`plan_impact` answers what
the push pipeline would do once they reached the store, without touching the store,
the current PushContext, the cache or any connection:

1. The candidates are laid over the live store (:class:`CandidateStore`, read-only);
   those whose content equals the stored object's change nothing and are set aside.
2. The request a store event for each changed key asks for (full, reason ``config``,
   :func:`~pilothouse.push.changes.config_request`) is merged and planned by the
   pipeline's own planner (:meth:`PushPipeline.preview`): the PushContext it would
   build from the overlaid store, reusing the current one's untouched indexes, and the
   connections it would choose, each with the request queued for its scope.
3. Each chosen connection's push is planned as the push service plans a settled
   connection's (:func:`~pilothouse.push.proxy_push.full_push`): which types it
   generates.

Kinds the registry turns into services and endpoints (ServiceEntry, WorkloadEntry:
:data:`~pilothouse.push.changes.REGISTRY_KINDS`) reach the context through the
registry, which an overlay of the store does not change: changes of them are refused
(:class:`NotPredicted`) rather than predicted wrong (unchanged ones are only set aside).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from pilothouse.config.model import Config, ConfigKey
from pilothouse.push.changes import REGISTRY_KINDS, config_request
from pilothouse.push.context import PushContext
from pilothouse.push.pipeline import PushPipeline
from pilothouse.push.proxy_push import FullPush, full_push
from pilothouse.push.request import merge_all
from pilothouse.push.target import ProxyWatches
from pilothouse.sources.events import ConfigStore, Handler, Unsubscribe

C = TypeVar("C", bound=ProxyWatches)


class NotPredicted(ValueError):
    """Candidates whose impact cannot be computed from an overlay of the store."""


class CandidateStore:
    """The live store with candidate objects in place of (or beside) the stored ones.

    Read-only: nothing is written to the live store, and no event is ever emitted."""

    def __init__(self, live: ConfigStore, candidates: Mapping[ConfigKey, Config]) -> None:
        self._live = live
        self._candidates = dict(candidates)

    @property
    def name(self) -> str:
        return f"{self._live.name}+candidates"

    @property
    def revision(self) -> int:
        return self._live.revision

    def get(self, key: ConfigKey) -> Config | None:
        found = self._candidates.get(key)
        return found if found is not None else self._live.get(key)

    def configs(self, kind: str, namespace: str | None = None) -> list[Config]:
        candidates = self._candidates
        found = [
            candidates.get(config.key, config) for config in self._live.configs(kind, namespace)
        ]
        held = {config.key for config in found}
        found += [
            config
            for key, config in candidates.items()
            if key.kind == kind
            and key not in held
            and (namespace is None or key.namespace == namespace)
        ]
        return found

    def keys(self) -> list[ConfigKey]:
        live = self._live.keys()
        held = set(live)
        return live + [key for key in self._candidates if key not in held]

    def subscribe(self, handler: Handler) -> Unsubscribe:
        return _nothing

    def has_synced(self) -> bool:
        return self._live.has_synced()


@dataclass(frozen=True, slots=True)
class ImpactPlan(Generic[C]):
    """What the pipeline would do with the candidates."""

    changed: tuple[ConfigKey, ...]
    """The candidates that differ from (or are missing in) the live store."""
    unchanged: tuple[ConfigKey, ...]
    """The candidates equal to the stored objects: they change nothing."""
    context: PushContext | None
    """The PushContext the change would build; None when nothing changes."""
    pushes: tuple[tuple[C, FullPush], ...] = ()
    """Each connection the change would push, with what its push would generate."""
    failed: tuple[C, ...] = ()
    """Connections for which choosing raised (logged): a real push would end them."""


def split_candidates(
    live: ConfigStore, candidates: Iterable[Config]
) -> tuple[dict[ConfigKey, Config], tuple[ConfigKey, ...]]:
    """The candidates that change the live store (the last of each key wins), and the
    keys of those that do not."""
    latest = {config.key: config for config in candidates}
    changed: dict[ConfigKey, Config] = {}
    unchanged: list[ConfigKey] = []
    for key, config in latest.items():
        stored = live.get(key)
        if stored is not None and stored.same_content(config):
            unchanged.append(key)
        else:
            changed[key] = config
    return changed, tuple(sorted(unchanged))


def plan_impact(
    pipeline: PushPipeline[C], live: ConfigStore, candidates: Sequence[Config]
) -> ImpactPlan[C]:
    """What applying ``candidates`` to ``live`` would push (see the module doc).

    Raises :class:`NotPredicted` for changed candidates of the registry's kinds, and
    LookupError before the pipeline has its first PushContext."""
    changed, unchanged = split_candidates(live, candidates)
    registry = sorted({key.kind for key in changed if key.kind in REGISTRY_KINDS})
    if registry:
        raise NotPredicted(
            f"the impact of {', '.join(registry)} changes is not predicted: their services"
            " and endpoints come from the registry, which candidates do not reach"
        )
    keys = tuple(sorted(changed))
    if not changed:
        return ImpactPlan(keys, unchanged, None)
    request = merge_all(config_request(key) for key in keys)
    assert request is not None
    context, pushes, failed = pipeline.preview(CandidateStore(live, changed), request)
    plans: dict[int, FullPush] = {}
    planned: list[tuple[C, FullPush]] = []
    for connection, queued in pushes:
        plan = plans.get(id(queued))
        if plan is None:
            plan = plans[id(queued)] = full_push(queued, settled=True)
        planned.append((connection, plan))
    return ImpactPlan(keys, unchanged, context, tuple(planned), failed)


def _nothing() -> None:
    """What unsubscribing from a candidate store does."""
