"""What a delta response holds: a pure function of the watch and the current resources.

``plan_delta(watch, available, decision, changed)``:

- **resources** — every subscribed resource whose version differs from what the
  client holds, plus the names the decision says to resend even if held (names
  just subscribed, unsubscribed names the wildcard still covers), or every
  subscribed resource when the decision says ``resend_all`` (or a forced push asks
  for ``resend_all``), plus the names a push asks to ``refresh`` (sent again even
  if held: an EDS cluster that changed warms only on a fresh assignment).
  Resources of a rejected unit whose content has not changed are held back.
- **removed** — names the client holds that no longer exist, names just
  subscribed (or unsubscribed but still covered) that do not exist, and names of
  a rejected response that no longer exist (so the client's error is settled).

``available`` maps every current resource of the type to its version (a content
hash).  ``changed`` (optional) limits a server-initiated push to the names whose
config changed, so that the cost follows the change, not the total.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pilothouse.xds.protocol.delta import DeltaDecision
from pilothouse.xds.protocol.delta_watch import DeltaWatch


def _no_versions() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True)
class DeltaPlan:
    """The body of a ``DeltaDiscoveryResponse``: resources by version, and removals."""

    resources: Mapping[str, str] = field(default_factory=_no_versions)
    removed: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not self.resources and not self.removed


def plan_delta(
    watch: DeltaWatch,
    available: Mapping[str, str],
    decision: DeltaDecision | None = None,
    changed: Collection[str] | None = None,
    *,
    resend_all: bool = False,
    refresh: Collection[str] = frozenset(),
) -> DeltaPlan:
    """Plan a response on ``watch``: after a decision, or (``decision=None``) for a push."""
    subscription = watch.subscription
    held = watch.held
    force = decision.resend if decision is not None else frozenset(refresh)
    report = decision.subscribed if decision is not None else frozenset()
    resend_all = resend_all or (decision is not None and decision.resend_all)

    candidates: Collection[str]
    if changed is None or resend_all:
        candidates = available.keys()
        gone_candidates: Collection[str] = held.keys()
    else:
        candidates = {*changed, *force, *report}
        gone_candidates = candidates

    withheld = watch.withheld(available)
    resources: dict[str, str] = {}
    for name in candidates:
        version = available.get(name)
        if version is None or name in withheld or not subscription.covers(name):
            continue
        if resend_all or name in force or held.get(name) != version:
            resources[name] = version

    removed = {name for name in gone_candidates if name in held and name not in available}
    removed.update(
        name for name in (*report, *force) if name not in available and subscription.covers(name)
    )
    # A rejected resource that has since gone away is reported removed, so the client
    # answers (clearing the recorded error) and the rejected unit is settled.
    for unit in watch.rejected:
        if any(available.get(n) != v for n, v in unit.items()):
            removed.update(n for n in unit if n not in available and n not in resources)
    return DeltaPlan(MappingProxyType(resources), frozenset(removed))
