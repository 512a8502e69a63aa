"""YAML scalars into plain values, and which YAML tags Istio config may carry.

Istio config is plain data: strings, numbers, booleans and null, plus what Kubernetes
also reads (timestamps and base64 ``!!binary``, both turned into strings). Whatever
else a tag asks for (``!!python/...``, ``!!set``, application tags like ``!foo``), a
tagged value its tag does not fit (``!!bool Sidecar``, ``!!timestamp x``) and a number
longer than :data:`MAX_NUMBER_CHARS` are refused with a :class:`ScalarProblem` that
names the tag or the size: a problem of that one field, never a crash.

A value with no tag written that merely looks like something (``2024-13-45`` looks
like a date, ``0b_`` like a number) stays the string it is, as in Kubernetes; so do
YAML 1.1's base-60 numbers (``1:30``, or an IPv6 address such as ``1:2:3:4:5:6:7:8``),
which Kubernetes' YAML does not have.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import yaml

MAX_NUMBER_CHARS = 64
"""Longest number accepted, in characters (a 64-bit integer needs at most 20 digits)."""

_PREFIX = "tag:yaml.org,2002:"
STR_TAG = _PREFIX + "str"
MAP_TAG = _PREFIX + "map"
SEQ_TAG = _PREFIX + "seq"
_INT_TAG = _PREFIX + "int"
_FLOAT_TAG = _PREFIX + "float"
_NULL_TAG = _PREFIX + "null"
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_CONSTRUCTED = frozenset(
    _PREFIX + name for name in ("null", "bool", "int", "float", "timestamp", "binary")
)
_PLAIN = (str, int, float, bool, type(None))
_SHOWN_CHARS = 40


class ScalarProblem(Exception):
    """A scalar that cannot become a plain value; ``message`` says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def short_tag(tag: str) -> str:
    """``tag:yaml.org,2002:bool`` as written, ``!!bool``; other tags unchanged."""
    return "!!" + tag[len(_PREFIX) :] if tag.startswith(_PREFIX) else tag


def shown(text: str) -> str:
    """``text`` quoted for a message, cut when it is long."""
    if len(text) <= _SHOWN_CHARS:
        return repr(text)
    return repr(text[:_SHOWN_CHARS]) + f"... ({len(text)} characters)"


def collection_tag_problem(node: yaml.Node) -> str | None:
    """Why the tag of a mapping or sequence node cannot be used, or None when it can."""
    if isinstance(node, yaml.MappingNode) and node.tag != MAP_TAG:
        return f"YAML tag {short_tag(node.tag)} is not supported on a mapping; remove it"
    if isinstance(node, yaml.SequenceNode) and node.tag != SEQ_TAG:
        return f"YAML tag {short_tag(node.tag)} is not supported on a list; remove it"
    return None


def scalar_value(node: yaml.ScalarNode, loader: yaml.SafeLoader) -> Any:
    """The plain value of ``node``; raises :class:`ScalarProblem` when there is none."""
    tag = node.tag
    if tag == STR_TAG:
        return node.value
    if tag not in _CONSTRUCTED:
        if _implicit(node, loader):
            return node.value  # a plain `=` or `<<` in value position: just text
        raise ScalarProblem(
            f"YAML tag {short_tag(tag)} is not supported (Istio config holds plain values);"
            " remove the tag or quote the value"
        )
    if tag in (_INT_TAG, _FLOAT_TAG) and ":" in node.value and _implicit(node, loader):
        return node.value  # YAML 1.1 base 60 (``1:30`` = 90): Kubernetes reads text
    if tag in (_INT_TAG, _FLOAT_TAG) and len(node.value) > MAX_NUMBER_CHARS:
        raise ScalarProblem(
            f"number too long ({len(node.value)} characters; at most {MAX_NUMBER_CHARS})"
        )
    try:
        if tag == _NULL_TAG and node.value not in _NULLS:
            raise ValueError("not a null")  # PyYAML would take anything as null
        value = loader.construct_object(node, deep=True)
    except Exception:
        if _implicit(node, loader):
            return node.value
        raise ScalarProblem(f"{shown(node.value)} is not a valid {short_tag(tag)} value") from None
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if not isinstance(value, _PLAIN):
        raise ScalarProblem(f"{shown(node.value)} is not a plain value")
    return value


def _implicit(node: yaml.ScalarNode, loader: yaml.SafeLoader) -> bool:
    """True when the node's tag was not written but guessed from how the value looks."""
    if node.style:  # quoted or block: only a written tag makes it anything but text
        return False
    resolve: Callable[[type[yaml.Node], str, tuple[bool, bool]], str] = loader.resolve
    return bool(node.tag == resolve(yaml.ScalarNode, node.value, (True, False)))
