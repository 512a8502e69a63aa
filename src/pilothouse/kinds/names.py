"""The names a user may type for a kind, as kubectl and istioctl accept them.

``VirtualService``, ``virtualservice``, ``virtualservices``, the CRD short name ``vs``,
each optionally followed by its group (``vs.networking.istio.io``), a CRD category
naming several kinds (``gateway-api``), and comma-separated lists of those (``vs,dr``).
A name that matches no kind is an :class:`UnknownKind` whose message suggests the
nearest name. The store commands (``get``, ``apply``, ``delete``)
and the admin API's ``/debug/configz?kind=`` read kinds through here.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from types import MappingProxyType

from pilothouse.config.schema import Schema, SchemaSet
from pilothouse.kinds import table
from pilothouse.kinds.gateway_api import kinds as gateway_api

SHORT_NAMES: Mapping[str, str] = MappingProxyType(
    {short: kind.name for kind in table.KINDS if kind.served for short in kind.short_names}
)
"""Istio's CRD short names (``kubectl get vs``), as each kind declares them."""

CATEGORIES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {gateway_api.CATEGORY: tuple(kind.name for kind in gateway_api.KINDS)}
)
"""CRD categories, each naming its kinds in table order (``kubectl get gateway-api``)."""


class UnknownKind(ValueError):
    """A KIND that names no kind; the message is kubectl's, with a hint."""


def resolve_kind(text: str, schemas: SchemaSet) -> Schema | None:
    """The kind a user means: ``VirtualService``, ``virtualservice``, ``virtualservices``,
    ``vs``, or any of those followed by ``.networking.istio.io`` (``gateways`` alone is
    Istio's; the Gateway API's is ``gateways.gateway.networking.k8s.io``)."""
    name, _, group = text.partition(".")
    wanted = SHORT_NAMES.get(name.lower(), name).lower()
    for schema in schemas:
        if group and group != schema.group:
            continue
        if wanted in (schema.kind.lower(), schema.manifest_kind.lower(), schema.plural.lower()):
            return schema
    return None


def nearest_kind_name(text: str, schemas: SchemaSet) -> str | None:
    """The short name or kind closest to a misspelt ``text``, if one is close."""
    names = sorted({*SHORT_NAMES, *CATEGORIES, *(s.kind.lower() for s in schemas)})
    close = difflib.get_close_matches(text.lower(), names, n=1, cutoff=0.6)
    return close[0] if close else None


def resolve_kinds(text: str, schemas: SchemaSet) -> list[Schema]:
    """The kinds a comma-separated list names (``vs,dr``), without repeats; UnknownKind
    for the first that names none, with the nearest short name or kind."""
    found: list[Schema] = []
    for word in (w.strip() for w in text.split(",")):
        category = CATEGORIES.get(word.lower(), ())
        found.extend(s for s in schemas if s.kind in category and s not in found)
        if category:
            continue
        schema = resolve_kind(word, schemas) if word else None
        if schema is None:
            close = nearest_kind_name(word, schemas)
            hint = f" (did you mean {close!r}?)" if close else ""
            raise UnknownKind(f'the server doesn\'t have a resource type "{word}"{hint}')
        if schema not in found:
            found.append(schema)
    return found
