"""``WITHHELD``: a generator's way of saying "send no response at all for this type".

An empty mapping of resources is an answer: in SotW an empty response (for a
full-state type, "every resource is gone"). Sometimes there is nothing to say yet
and the client must not be answered: SDS for a proxy without a verified identity
(istiod sends it nothing), or a workload certificate still being signed (it is pushed
once issued). A generator then returns :data:`WITHHELD`, an empty mapping the stream
engine recognises: the request stays unanswered and a later push answers it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final, NoReturn

from pilothouse.push.cache import Resource


class Withheld(Mapping[str, Resource]):
    """An empty mapping that means "no response" (use the :data:`WITHHELD` instance)."""

    __slots__ = ()

    def __getitem__(self, name: str) -> NoReturn:
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "WITHHELD"


WITHHELD: Final = Withheld()


def withheld(resources: Mapping[str, Resource]) -> bool:
    """Whether ``resources`` is the generator's "send nothing"."""
    return type(resources) is Withheld  # exact: an ABC isinstance check costs a Python call
