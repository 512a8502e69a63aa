"""The verdict on one proxy: what it holds against what it acknowledged, resource by resource.

Both sides are ``{type_url: {resource name: digest}}``: what the proxy holds (its Envoy's
``/config_dump``, :mod:`pilothouse.inspector.config_dump`) and what pilothouse sent it
and it ACKed (``/debug/acked``). Clusters, endpoints, listeners and route
configurations are compared; a resource differs when it is

- held but not acked: the proxy has it, and pilothouse never sent it or the proxy never
  accepted it (another control plane, a stale copy);
- acked but not held: the proxy accepted it and no longer has it;
- different: both have it, with different content.

No difference: SYNCED. Any: DIVERGED.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS

COMPARED: Final = (CDS, EDS, LDS, RDS)
"""The types compared, in push order."""

Digests = Mapping[str, Mapping[str, str]]
"""Type URL → resource name → digest."""


class Verdict(enum.StrEnum):
    SYNCED = "SYNCED"
    DIVERGED = "DIVERGED"


class Kind(enum.StrEnum):
    """How one resource differs."""

    NOT_ACKED = "held-not-acked"
    NOT_HELD = "acked-not-held"
    DIFFERENT = "different"


@dataclass(frozen=True, slots=True)
class Difference:
    type_url: str
    name: str
    kind: Kind
    held: str | None
    """The digest of what the proxy holds; None when it holds nothing of that name."""
    acked: str | None
    """The digest of what it ACKed; None when it ACKed nothing of that name."""


@dataclass(frozen=True, slots=True)
class TypeCounts:
    """Resources of one type: held, acked, and held with the digest acked."""

    held: int
    acked: int
    same: int


@dataclass(frozen=True)
class Comparison:
    counts: Mapping[str, TypeCounts]
    """Per compared type URL."""
    differences: tuple[Difference, ...]
    """In push order of their types, then by name."""

    @property
    def verdict(self) -> Verdict:
        return Verdict.DIVERGED if self.differences else Verdict.SYNCED


def compare(held: Digests, acked: Digests) -> Comparison:
    """Compare the compared types of ``held`` and ``acked``."""
    counts: dict[str, TypeCounts] = {}
    differences: list[Difference] = []
    for type_url in COMPARED:
        holds = held.get(type_url, {})
        accepted = acked.get(type_url, {})
        same = 0
        for name in sorted(holds.keys() | accepted.keys()):
            mine, theirs = holds.get(name), accepted.get(name)
            if mine == theirs:
                same += 1
                continue
            if theirs is None:
                kind = Kind.NOT_ACKED
            elif mine is None:
                kind = Kind.NOT_HELD
            else:
                kind = Kind.DIFFERENT
            differences.append(Difference(type_url, name, kind, mine, theirs))
        counts[type_url] = TypeCounts(len(holds), len(accepted), same)
    return Comparison(counts, tuple(differences))
