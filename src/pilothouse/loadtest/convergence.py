"""Conditions a test or benchmark waits for on a simulated proxy.

Each is a ``ProxyPredicate``: a function of the proxy, cheap enough to run
after every response.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from pilothouse.loadtest.proxy import ProxyPredicate, SimulatedProxy


def settled(proxy: SimulatedProxy) -> bool:
    """Everything the proxy wants is accepted and held (``SimulatedProxy.settled``)."""
    return proxy.settled()


def holding(type_url: str, names: Collection[str]) -> ProxyPredicate:
    """The proxy holds at least these names of the type."""
    wanted = frozenset(names)

    def check(proxy: SimulatedProxy) -> bool:
        return wanted <= proxy.holds(type_url).keys()

    return check


def holding_exactly(type_url: str, names: Collection[str]) -> ProxyPredicate:
    """The proxy holds exactly these names of the type."""
    wanted = frozenset(names)

    def check(proxy: SimulatedProxy) -> bool:
        return proxy.holds(type_url).keys() == wanted

    return check


def holding_versions(type_url: str, versions: Mapping[str, str]) -> ProxyPredicate:
    """The proxy holds these names at these versions."""
    wanted = dict(versions)

    def check(proxy: SimulatedProxy) -> bool:
        held = proxy.holds(type_url)
        return all(
            name in held and held[name].version == version for name, version in wanted.items()
        )

    return check


def all_of(*predicates: ProxyPredicate) -> ProxyPredicate:
    """Every predicate holds."""

    def check(proxy: SimulatedProxy) -> bool:
        return all(predicate(proxy) for predicate in predicates)

    return check
