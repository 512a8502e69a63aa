"""The generation-cost benchmark's arithmetic: tallies, the weighted baseline, the targets.

A :class:`Tally` adds up what one pass over the proxies generated: per type URL the
seconds spent in the generator and the resources it returned, and how often each
distinct resource (type and content hash) was returned. The serialisation baseline
is priced per distinct resource and weighted by those counts
(:func:`weighted_us_per_resource`), which equals serialising every returned resource
once without paying for millions of calls. Targets: at most 5 µs per resource per
push, and, when one service changes, at least 95 % cache hits.

A pass's ``resources_built`` comes from :class:`BuildCounter`: every Envoy generator turns
a freshly built message into a resource through ``encode``, imported by name into each
generator module; while active, the counter swaps each module's ``encode`` for a counting
wrapper (and puts the original back), so the figures tell new work from what the
ResourceCache returned. The generators are not changed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS, short_name
from pilothouse.push.cache import CacheStats, Resource
from pilothouse.xds.generators import cds, eds, lds, rds

US_PER_RESOURCE_TARGET = 5.0
HIT_RATE_TARGET = 0.95

ResourceKey = tuple[str, str]
"""(type URL, content hash): resources with equal keys serialise to equal bytes."""


@dataclass
class Tally:
    """Seconds and resources of one pass, per type URL, and each distinct resource's count."""

    proxies: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    resources: dict[str, int] = field(default_factory=dict)
    occurrences: Counter[ResourceKey] = field(default_factory=Counter)
    samples: dict[ResourceKey, tuple[str, Resource]] = field(default_factory=dict)
    built: dict[str, int] = field(default_factory=dict)

    def add(self, type_url: str, generated: Mapping[str, Resource], seconds: float) -> None:
        self.seconds[type_url] = self.seconds.get(type_url, 0.0) + seconds
        self.resources[type_url] = self.resources.get(type_url, 0) + len(generated)
        occurrences = self.occurrences
        samples = self.samples
        for resource in generated.values():
            key = (type_url, resource.version)
            occurrences[key] += 1
            if key not in samples:
                samples[key] = (type_url, resource)

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds.values())

    @property
    def total_resources(self) -> int:
        return sum(self.resources.values())

    @property
    def us_per_resource(self) -> float | None:
        total = self.total_resources
        return self.total_seconds * 1e6 / total if total else None

    @property
    def total_built(self) -> int:
        return sum(self.built.values())

    @property
    def reused_share(self) -> float | None:
        """Share of returned resources that were not built in this pass (cache or memo)."""
        total = self.total_resources
        return 1 - self.total_built / total if total else None

    def built_by_type(self) -> str:
        return "; ".join(f"{short_name(t)} {n:,}" for t, n in self.built.items())

    def by_type(self) -> str:
        """``CDS 1,234 in 0.12 s; ...`` in push order of the types seen."""
        return "; ".join(
            f"{short_name(t)} {self.resources[t]:,} in {self.seconds[t]:.3f} s"
            for t in self.resources
        )


@dataclass(frozen=True)
class CacheDelta:
    """ResourceCache lookups between two readings of its counters."""

    hits: int
    misses: int

    @classmethod
    def between(cls, before: CacheStats, after: CacheStats) -> CacheDelta:
        return cls(after.hits - before.hits, after.misses - before.misses)

    @property
    def lookups(self) -> int:
        return self.hits + self.misses

    @property
    def hit_rate(self) -> float | None:
        return self.hits / self.lookups if self.lookups else None


def weighted_us_per_resource(
    occurrences: Mapping[ResourceKey, int], seconds_each: Mapping[ResourceKey, float]
) -> float | None:
    """µs per resource to serialise every occurrence, from one price per distinct resource."""
    count = sum(occurrences.values())
    if not count:
        return None
    total = sum(n * seconds_each[key] for key, n in occurrences.items())
    return total * 1e6 / count


def ratio(baseline: float | None, measured: float | None) -> float | None:
    """baseline ÷ measured (1 = as cheap as the baseline), or None when unknown."""
    if baseline is None or not measured:
        return None
    return round(baseline / measured, 3)


@dataclass(frozen=True)
class Verdict:
    target: str
    met: bool
    missed_by: str | None


def judge(us_per_resource: float | None, hit_rate: float | None, *, hits_count: bool) -> Verdict:
    """The targets for a pass; the hit-rate target only counts when ``hits_count``."""
    wanted = [f"≤ {US_PER_RESOURCE_TARGET:g} µs amortised per resource per push"]
    misses: list[str] = []
    if us_per_resource is None or us_per_resource > US_PER_RESOURCE_TARGET:
        if us_per_resource is None:
            misses.append("no resources generated")
        else:
            times = us_per_resource / US_PER_RESOURCE_TARGET
            over = us_per_resource - US_PER_RESOURCE_TARGET
            misses.append(
                f"{us_per_resource:.2f} µs per resource is {times:.2f}× the target"
                f" ({over:.2f} µs over)"
            )
    if hits_count:
        wanted.append(f"≥ {HIT_RATE_TARGET:.0%} cache hits")
        if hit_rate is None:
            misses.append("no cache lookups")
        elif hit_rate < HIT_RATE_TARGET:
            points = (HIT_RATE_TARGET - hit_rate) * 100
            misses.append(f"hit rate {hit_rate:.2%} is {points:.2f} points short")
    return Verdict(", ".join(wanted), not misses, "; ".join(misses) or None)


ENCODE = "encode"
"""The name each generator module calls to turn a built message into a resource."""

ENCODERS: Mapping[str, ModuleType] = {CDS: cds, EDS: eds, LDS: lds, RDS: rds}
"""Type URL → the generator module whose ``encode`` builds that type's resources."""


class BuildCounter:
    """How many resources of each type were encoded while :meth:`active`."""

    def __init__(self, modules: Mapping[str, ModuleType] = ENCODERS) -> None:
        self._modules = modules
        self.built: dict[str, int] = dict.fromkeys(modules, 0)

    def reset(self) -> dict[str, int]:
        """The counts so far, then zero."""
        counts = dict(self.built)
        self.built = dict.fromkeys(self._modules, 0)
        return counts

    @contextmanager
    def active(self) -> Iterator[BuildCounter]:
        originals: dict[str, Callable[..., Any]] = {}
        try:
            for type_url, module in self._modules.items():
                original = getattr(module, ENCODE)
                originals[type_url] = original
                setattr(module, ENCODE, self._counting(type_url, original))
            yield self
        finally:
            for type_url, original in originals.items():
                setattr(self._modules[type_url], ENCODE, original)

    def _counting(self, type_url: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def encode(message: Any, name: str) -> Any:
            self.built[type_url] += 1
            return original(message, name)

        return encode
