"""The resource cache interns inputs values and names a group's resources once.

A scope's inputs are gathered again in each PushContext that does not take the scope
over; interned, the new value is the very object the cache's keys already hold, so a
lookup compares it by identity instead of field by field.
"""

from __future__ import annotations

from dataclasses import dataclass

from pilothouse.config.model import ConfigKey
from pilothouse.push.cache import Resource, ResourceCache, ResourceGroup

RULE = ConfigKey("DestinationRule", "ns", "a")


@dataclass(frozen=True, slots=True)
class Gathered:
    """Stands for a scope's inputs: compared by value, naming a config key."""

    rule: ConfigKey
    hosts: tuple[str, ...]


def test_an_equal_value_interns_to_the_first_one_until_its_config_changes() -> None:
    cache = ResourceCache()
    first = Gathered(RULE, ("a", "b"))
    again = Gathered(RULE, ("a", "b"))
    assert again == first and again is not first
    assert cache.intern(first) is first
    assert cache.intern(again) is first
    other = Gathered(RULE, ("a",))
    assert cache.intern(other) is other
    assert cache.invalidate([RULE]) == 2  # both interned values name the rule
    assert cache.intern(again) is again


def test_an_interned_value_is_not_mistaken_for_a_resource_under_the_same_inputs() -> None:
    cache = ResourceCache()
    inputs = Gathered(RULE, ("a",))
    built = Resource("a", "1", b"a")
    assert cache.resource(inputs, lambda _inputs: built) is built
    interned = cache.intern(Gathered(RULE, ("a",)))
    assert isinstance(interned, Gathered) and interned == inputs
    assert cache.get(inputs) is built  # the resource under the inputs themselves stays


def test_a_group_names_its_resources_once() -> None:
    group = ResourceGroup((Resource("a", "1", b"a"), Resource("b", "1", b"b")))
    named = group.named()
    assert dict(named) == {"a": group.resources[0], "b": group.resources[1]}
    assert group.named() is named
    assert group == ResourceGroup(group.resources)  # the mapping is not compared
