"""What a client subscribed to for one type: explicit names and the wildcard flag.

SotW: the wildcard is an explicit ``"*"`` in ``resource_names`` or, for a
wildcard type (CDS, LDS, Istio types), the legacy empty list on a stream that has
never named anything for that type.  Once a type has been named, an empty list
means nothing.  Delta: ``"*"`` in ``resource_names_subscribe`` (or both lists
empty on the first request for a wildcard type) turns the wildcard on, ``"*"``
in ``resource_names_unsubscribe`` turns it off, and names subscribed beside the
wildcard are tracked separately.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from pilothouse.protocol.type_urls import is_wildcard_type

WILDCARD: Final = "*"


@dataclass(frozen=True)
class Subscription:
    """Names explicitly requested (never ``"*"``) plus the wildcard flag."""

    names: frozenset[str] = frozenset()
    wildcard: bool = False

    @property
    def empty(self) -> bool:
        return not self.wildcard and not self.names

    def covers(self, name: str) -> bool:
        """Whether the resource ``name`` is subscribed, by name or by the wildcard."""
        return self.wildcard or name in self.names

    def resolve(self, available: Collection[str]) -> frozenset[str]:
        """The names to send: all available for a wildcard, else the requested ones that exist."""
        if self.wildcard:
            return frozenset(available)
        return frozenset(name for name in self.names if name in available)

    def missing(self, available: Collection[str]) -> frozenset[str]:
        """Names requested explicitly that do not exist (remember them; send when they appear)."""
        return frozenset(name for name in self.names if name not in available)

    def select(self, resources: Mapping[str, str]) -> dict[str, str]:
        """The subset of ``resources`` (name → version) this subscription asks for: always
        a new dict (a SotW watch keeps it as the content it sent)."""
        if self.wildcard:
            return dict(resources)
        names = self.names
        if len(resources) < len(names):  # walk the smaller side (a push of a few changes)
            return {name: version for name, version in resources.items() if name in names}
        return {name: resources[name] for name in names if name in resources}


def sotw_subscription(type_url: str, names: Iterable[str], named_before: bool) -> Subscription:
    """The subscription a SotW ``resource_names`` list expresses.

    ``named_before`` says whether this stream has ever named resources for the type;
    only then is an empty list for a wildcard type "nothing" rather than the
    legacy wildcard.
    """
    # Interned: a thousand proxies watching the same clusters then share one copy of
    # each name instead of holding a thousand.
    requested = frozenset(map(sys.intern, names))
    explicit = requested - {WILDCARD}
    if WILDCARD in requested:
        return Subscription(explicit, wildcard=True)
    if not explicit and not named_before and is_wildcard_type(type_url):
        return Subscription(frozenset(), wildcard=True)
    return Subscription(explicit, wildcard=False)


@dataclass(frozen=True)
class SubscriptionChange:
    """The effect of one delta request's subscribe/unsubscribe lists."""

    before: Subscription
    after: Subscription
    subscribed: frozenset[str]
    """Names in ``resource_names_subscribe`` (without ``"*"``): all must be (re)sent."""
    unsubscribed: frozenset[str]
    """Names that were explicitly subscribed and are not any more."""
    wildcard_added: bool

    @property
    def changed(self) -> bool:
        return self.before != self.after or bool(self.subscribed)

    @property
    def still_covered(self) -> frozenset[str]:
        """Unsubscribed names the wildcard still covers: answer them in resources or removed."""
        if not self.after.wildcard:
            return frozenset()
        return self.unsubscribed


def delta_initial_subscription(
    type_url: str, subscribe: Collection[str], unsubscribe: Collection[str]
) -> Subscription:
    """The subscription of the first delta request for a type on a stream."""
    explicit = frozenset(map(sys.intern, subscribe)) - {WILDCARD} - frozenset(unsubscribe)
    wildcard = WILDCARD in subscribe and WILDCARD not in unsubscribe
    legacy = not subscribe and not unsubscribe and is_wildcard_type(type_url)
    return Subscription(explicit, wildcard=wildcard or legacy)


def delta_change(
    before: Subscription, subscribe: Collection[str], unsubscribe: Collection[str]
) -> SubscriptionChange:
    """Apply a later delta request's lists: subscribe first, then unsubscribe.

    A name unsubscribed that was never subscribed is ignored.  A name in both
    lists ends up unsubscribed.
    """
    subscribe_set = frozenset(map(sys.intern, subscribe))
    unsubscribe_set = frozenset(unsubscribe)
    wildcard = before.wildcard
    if WILDCARD in subscribe_set:
        wildcard = True
    if WILDCARD in unsubscribe_set:
        wildcard = False
    named = (before.names | (subscribe_set - {WILDCARD})) - unsubscribe_set
    after = Subscription(named, wildcard)
    return SubscriptionChange(
        before=before,
        after=after,
        subscribed=(subscribe_set - {WILDCARD}) - unsubscribe_set,
        unsubscribed=(before.names & unsubscribe_set),
        wildcard_added=wildcard and not before.wildcard,
    )
