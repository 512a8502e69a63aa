"""A resource group names its resources once, for every proxy that shares it."""

from __future__ import annotations

from pilothouse.push.cache import Resource, ResourceGroup


def test_a_group_names_its_resources_once() -> None:
    group = ResourceGroup((Resource("a", "1", b"a"), Resource("b", "1", b"b")))
    named = group.named()
    assert dict(named) == {"a": group.resources[0], "b": group.resources[1]}
    assert group.named() is named
    assert group == ResourceGroup(group.resources)  # the mapping is not compared
