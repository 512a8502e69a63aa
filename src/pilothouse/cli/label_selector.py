"""kubectl's ``-l`` label selectors for ``get``, ``apply`` and ``delete``.

A selector is requirements separated by commas, all of which must hold:
``app=reviews`` (or ``==``), ``tier!=web``, ``app`` (has the label), ``!canary``
(lacks it), ``version in (v1,v2)``, ``version notin (v3)``. :func:`parse_selector` reads
one and raises :class:`BadSelector` naming the part it cannot read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

_KEY: Final = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE: Final = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET: Final = re.compile(rf"^({_KEY})\s+(in|notin)\s+\(([^()]*)\)$")
_EQUALS: Final = re.compile(rf"^({_KEY})\s*(==|=|!=)\s*({_VALUE})$")
_EXISTS: Final = re.compile(rf"^(!?)\s*({_KEY})$")


class BadSelector(ValueError):
    """A ``-l`` value that is not a label selector."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One part of a selector: ``key`` ``operator`` ``values``."""

    key: str
    operator: str
    """``in``, ``notin``, ``exists`` or ``!`` (does not exist)."""
    values: frozenset[str] = frozenset()

    def holds(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "exists":
            return self.key in labels
        if self.operator == "!":
            return self.key not in labels
        if self.operator == "in":
            return labels.get(self.key) in self.values
        return labels.get(self.key) not in self.values  # notin: absent labels pass too


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """Requirements that must all hold; no requirement selects everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.holds(labels) for r in self.requirements)


def parse_selector(text: str | None) -> LabelSelector:
    """The selector ``text`` writes (None or empty: everything)."""
    if not text or not text.strip():
        return LabelSelector()
    requirements = []
    for part in _split(text):
        requirements.append(_requirement(part, text))
    return LabelSelector(tuple(requirements))


def _split(text: str) -> list[str]:
    """``text`` cut at the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    parts.append(text[start:].strip())
    return parts


def _requirement(part: str, whole: str) -> Requirement:
    if found := _SET.match(part):
        values = frozenset(v.strip() for v in found.group(4).split(",") if v.strip())
        if not values:
            raise BadSelector(f"-l {whole!r}: {part!r} lists no values")
        return Requirement(found.group(1), found.group(3), values)
    if found := _EQUALS.match(part):
        operator = "notin" if found.group(3) == "!=" else "in"
        return Requirement(found.group(1), operator, frozenset({found.group(4)}))
    if found := _EXISTS.match(part):
        return Requirement(found.group(2), "!" if found.group(1) else "exists")
    raise BadSelector(
        f"-l {whole!r}: cannot read {part!r} (expected key=value, key!=value, key, !key, "
        "key in (a,b) or key notin (a,b))"
    )
