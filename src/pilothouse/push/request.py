"""PushRequest: what changed, why, and since when — the value that flows through the push stage.

A config event becomes a ``PushRequest``. Requests merge while they wait (in the debouncer and
in the per-connection push queue), so merging is associative and commutative: the order in
which events arrive never changes what is finally pushed.

Meaning of the fields:

- ``full``: the proxy state must be recomputed (a new PushContext); a non-full request is an
  EDS-only (endpoint) push.
- ``configs_updated``: the keys of the configs that changed. On a *full* request an empty set
  means "everything changed" (:attr:`PushRequest.is_everything`). A non-full request names the
  changed keys; a non-full request with no keys changes nothing and is the identity of merge.
- ``reasons``: how many triggers of each kind were merged into this request (the
  ``pilot_push_triggers`` label values).
- ``start``: when the earliest merged trigger happened (for convergence time); ``inf`` (the
  default) means "not known yet" and loses to any known time, so ``PushRequest()`` is exactly
  the identity of merge. The debouncer stamps a missing start with the time it receives it.
- ``forced``: push every connection whatever its scope, and send it every type it
  watches even where nothing changed (istiod's ``Forced``; the admin API's full push).
- ``inert``: ``(type URL, key)`` pairs, set by the pipeline for one connection: comparing
  the push contexts showed that the change of ``key`` leaves that connection's resources
  of that type as they were (:mod:`pilothouse.push.affected_types`). Only keys in
  ``configs_updated`` can be inert. Merged, a pair stays only if every request naming its
  key holds it: a key changed twice is inert only if neither change altered the type.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from pilothouse.config.model import ConfigKey


class TriggerReason(StrEnum):
    """Why a push was triggered; the values are istiod's ``pilot_push_triggers`` labels."""

    ENDPOINT = "endpoint"
    CONFIG = "config"
    SERVICE = "service"
    PROXY = "proxy"
    GLOBAL = "global"
    UNKNOWN = "unknown"
    DEBUG = "debug"
    SECRET = "secret"
    NETWORKS = "networks"
    PROXY_REQUEST = "proxyrequest"
    NAMESPACE = "namespace"
    CLUSTER = "cluster"


_NO_REASONS: Mapping[TriggerReason, int] = MappingProxyType({})


def _frozen_reasons(
    reasons: Mapping[TriggerReason, int] | Mapping[str, int],
) -> Mapping[TriggerReason, int]:
    if reasons is _NO_REASONS:
        return _NO_REASONS
    counts: dict[TriggerReason, int] = {}
    for reason, count in reasons.items():
        if count < 0:
            raise ValueError(f"trigger count for {reason!r} must not be negative, got {count}")
        if count:
            key = TriggerReason(reason)
            counts[key] = counts.get(key, 0) + count
    return MappingProxyType(counts) if counts else _NO_REASONS


@dataclass(frozen=True, slots=True)
class PushRequest:
    """A request to push config to proxies; immutable, combined with :meth:`merge`."""

    full: bool = False
    configs_updated: frozenset[ConfigKey] = frozenset()
    reasons: Mapping[TriggerReason, int] = field(default_factory=lambda: _NO_REASONS, hash=False)
    start: float = math.inf
    forced: bool = False
    inert: frozenset[tuple[str, ConfigKey]] = frozenset()

    def __post_init__(self) -> None:
        # Normalise whatever mapping the caller gave into a read-only one without zero counts,
        # and any iterable of keys into a frozenset, so that equal requests compare equal.
        object.__setattr__(self, "reasons", _frozen_reasons(self.reasons))
        if not isinstance(self.configs_updated, frozenset):
            object.__setattr__(self, "configs_updated", frozenset(self.configs_updated))
        if self.inert:
            named = self.configs_updated
            object.__setattr__(self, "inert", frozenset(p for p in self.inert if p[1] in named))

    @classmethod
    def everything(
        cls,
        reason: TriggerReason = TriggerReason.GLOBAL,
        *,
        start: float = math.inf,
        forced: bool = False,
    ) -> PushRequest:
        """A full push in which everything counts as changed."""
        return cls(full=True, reasons={reason: 1}, start=start, forced=forced)

    @classmethod
    def for_configs(
        cls,
        keys: Iterable[ConfigKey],
        reason: TriggerReason = TriggerReason.CONFIG,
        *,
        start: float = math.inf,
        full: bool = True,
    ) -> PushRequest:
        """A push for the given changed keys (full unless told otherwise)."""
        return cls(full=full, configs_updated=frozenset(keys), reasons={reason: 1}, start=start)

    @property
    def is_everything(self) -> bool:
        """True for a full push that treats every config as changed."""
        return self.full and not self.configs_updated

    @property
    def has_start(self) -> bool:
        """Whether a start time is known."""
        return not math.isinf(self.start)

    @property
    def trigger_count(self) -> int:
        """How many triggers were merged into this request."""
        return sum(self.reasons.values())

    def touches(self, kind: str) -> bool:
        """Whether configs of ``kind`` may have changed."""
        return self.is_everything or any(key.kind == kind for key in self.configs_updated)

    def touches_any(self, kinds: Iterable[str]) -> bool:
        """Whether configs of any of ``kinds`` may have changed."""
        if self.is_everything:
            return True
        wanted = frozenset(kinds)
        return any(key.kind in wanted for key in self.configs_updated)

    def kinds(self) -> frozenset[str]:
        """The kinds named in ``configs_updated`` (empty for :attr:`is_everything`)."""
        return frozenset(key.kind for key in self.configs_updated)

    def with_default_reason(self) -> PushRequest:
        """This request, with a single ``unknown`` trigger if it carries no reason at all."""
        if self.reasons:
            return self
        return PushRequest(
            full=self.full,
            configs_updated=self.configs_updated,
            reasons={TriggerReason.UNKNOWN: 1},
            start=self.start,
            forced=self.forced,
            inert=self.inert,
        )

    def with_inert(self, inert: frozenset[tuple[str, ConfigKey]]) -> PushRequest:
        """This request, with ``inert`` (pairs of keys it does not name are dropped)."""
        return PushRequest(
            full=self.full,
            configs_updated=self.configs_updated,
            reasons=self.reasons,
            start=self.start,
            forced=self.forced,
            inert=inert,
        )

    def merge(self, other: PushRequest) -> PushRequest:
        """Combine two requests into one that pushes at least what either would have pushed.

        ``full`` and ``forced`` are or-ed, the earlier ``start`` is kept, trigger counts add
        up, and the changed keys are united — except that if either side means "everything"
        the result does too.
        """
        if self.is_everything or other.is_everything:
            configs: frozenset[ConfigKey] = frozenset()
        elif not other.configs_updated:
            configs = self.configs_updated
        elif not self.configs_updated:
            configs = other.configs_updated
        else:
            configs = self.configs_updated | other.configs_updated
        if not other.reasons:
            reasons = self.reasons
        elif not self.reasons:
            reasons = other.reasons
        else:
            summed = dict(self.reasons)
            for reason, count in other.reasons.items():
                summed[reason] = summed.get(reason, 0) + count
            reasons = MappingProxyType(summed)
        inert: frozenset[tuple[str, ConfigKey]] = frozenset()
        if (self.inert or other.inert) and configs:
            inert = _inert_in_all((self, other))
        return _normalised(
            self.full or other.full,
            configs,
            reasons,
            min(self.start, other.start),
            self.forced or other.forced,
            inert,
        )


def _inert_in_all(requests: Iterable[PushRequest]) -> frozenset[tuple[str, ConfigKey]]:
    """The inert pairs every request naming their key holds."""
    held = tuple(requests)
    return frozenset(
        pair
        for pair in frozenset().union(*(r.inert for r in held))
        if all(pair in r.inert for r in held if pair[1] in r.configs_updated)
    )


def _normalised(
    full: bool,
    configs_updated: frozenset[ConfigKey],
    reasons: Mapping[TriggerReason, int],
    start: float,
    forced: bool,
    inert: frozenset[tuple[str, ConfigKey]] = frozenset(),
) -> PushRequest:
    """A request from parts already in normal form (a frozenset of keys, read-only reason
    counts without zeros), skipping ``__post_init__``: the push queue merges a request
    per connection on every push, and normalising what is normal was a tenth of it."""
    request = object.__new__(PushRequest)
    assign = object.__setattr__
    assign(request, "full", full)
    assign(request, "configs_updated", configs_updated)
    assign(request, "reasons", reasons)
    assign(request, "start", start)
    assign(request, "forced", forced)
    assign(request, "inert", inert)
    return request


def merge_all(requests: Iterable[PushRequest]) -> PushRequest | None:
    """Merge any number of requests in one pass; None when there are none.

    The same as folding :meth:`PushRequest.merge` over them, but linear in the number of
    keys: the keys are gathered into one set instead of a new frozenset per request, which
    matters when a source loads thousands of objects at once.
    """
    first: PushRequest | None = None
    seen: list[PushRequest] = []
    any_inert = False
    keys: set[ConfigKey] = set()
    reasons: dict[TriggerReason, int] = {}
    full = forced = everything = False
    start = math.inf
    count = 0
    for request in requests:
        count += 1
        seen.append(request)
        any_inert = any_inert or bool(request.inert)
        if first is None:
            first = request
        full = full or request.full
        forced = forced or request.forced
        start = min(start, request.start)
        if request.is_everything:
            everything = True
        elif not everything:
            keys.update(request.configs_updated)
        for reason, times in request.reasons.items():
            reasons[reason] = reasons.get(reason, 0) + times
    if first is None or count == 1:
        return first
    return PushRequest(
        full=full,
        configs_updated=frozenset() if everything else frozenset(keys),
        reasons=reasons,
        start=start,
        forced=forced,
        inert=_inert_in_all(seen) if any_inert and not everything else frozenset(),
    )
