"""What Kubernetes asks of a config object around its spec, checked before the spec.

The :class:`~pilothouse.config.load.Loader` reads an object's kind and apiVersion into
its schema (an unknown kind names the supported ones and the nearest spelling), and its
ObjectMeta: a name that is a lowercase RFC 1123 subdomain, a namespace that is a
lowercase RFC 1123 label (for a namespaced kind), labels and annotations that map names
to strings, and no top-level field other than ``apiVersion``, ``kind``, ``metadata``,
``spec`` and ``status``. Each problem is pinned to its field path by the caller's
:class:`Pin`.
"""

from __future__ import annotations

import datetime
import difflib
import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from pilothouse.config.model import ConfigKey
from pilothouse.config.problems import Problem
from pilothouse.config.schema import Schema, SchemaSet

_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_TOP_LEVEL = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})


class Pin(Protocol):
    """Makes a Problem for a field path of the object being loaded."""

    def __call__(self, path: str, message: str, key: ConfigKey | None = None) -> Problem: ...


def schema_of(
    schemas: SchemaSet, data: Mapping[str, Any], problem: Pin
) -> tuple[Schema | None, list[Problem]]:
    """The schema of the object's kind and apiVersion, or None and why."""
    kind = data.get("kind")
    api_version = data.get("apiVersion")
    if not isinstance(kind, str) or not kind:
        return None, [problem("kind", "kind is required")]
    schema = schemas.by_manifest(kind, api_version)
    if schema is None:
        manifest_kinds = sorted(dict.fromkeys(s.manifest_kind for s in schemas))
        supported = ", ".join(manifest_kinds)
        hint = _nearest_kind(kind, manifest_kinds)
        return None, [problem("kind", f"unknown kind {kind!r}{hint}; supported kinds: {supported}")]
    if not isinstance(api_version, str) or api_version not in schema.api_versions:
        accepted = ", ".join(schema.api_versions)
        shown = repr(api_version) if api_version is not None else "missing"
        return None, [
            problem("apiVersion", f"apiVersion {shown} is not valid for {kind}; use {accepted}")
        ]
    return schema, []


def metadata_problems(
    data: Mapping[str, Any],
    metadata: Mapping[str, Any],
    schema: Schema,
    key: ConfigKey,
    problem: Pin,
) -> list[Problem]:
    """Unknown top-level fields, a name or namespace Kubernetes would refuse, and labels
    or annotations that are not strings."""
    found: list[Problem] = []
    for extra in sorted(set(data) - _TOP_LEVEL):
        found.append(problem(extra, f"{extra}: unknown top-level field", key))
    text = isinstance(metadata.get("namespace", key.namespace), str)
    naming = name_problems(schema, key, namespace_text=text)
    found.extend(problem(path, message, key) for path, message in naming)
    for section in ("labels", "annotations"):
        values = metadata.get(section)
        if values is None:
            continue
        if not isinstance(values, Mapping) or not all(isinstance(v, str) for v in values.values()):
            found.append(
                problem(
                    f"metadata.{section}",
                    f"metadata.{section} must map names to strings (quote numbers and booleans)",
                    key,
                )
            )
    return found


def name_problems(
    schema: Schema, key: ConfigKey, *, namespace_text: bool = True
) -> list[tuple[str, str]]:
    """``(field path, message)`` for a name or namespace Kubernetes would refuse (a
    namespace that was not text in the manifest, ``namespace_text`` False, is refused)."""
    found: list[tuple[str, str]] = []
    if not _object_name_ok(key.name):
        found.append(
            ("metadata.name", f"metadata.name {key.name!r} must be a lowercase RFC 1123 subdomain")
        )
    if schema.namespaced and not (namespace_text and _namespace_ok(key.namespace)):
        found.append(
            (
                "metadata.namespace",
                f"metadata.namespace {key.namespace!r} must be a lowercase RFC 1123 label",
            )
        )
    return found


def name_ok(schema: Schema, namespace: str, name: str) -> bool:
    """True when :func:`name_problems` would find nothing (without spelling anything out)."""
    return _object_name_ok(name) and (not schema.namespaced or _namespace_ok(namespace))


def creation_time(value: Any) -> datetime.datetime | None:
    """``metadata.creationTimestamp`` as an aware datetime (UTC when it names no zone), or
    None when it is missing or not a timestamp."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return parsed


def _object_name_ok(name: str) -> bool:
    return len(name) <= 253 and _DNS1123_SUBDOMAIN.fullmatch(name) is not None


@functools.lru_cache(maxsize=1024)
def _namespace_ok(namespace: str) -> bool:
    return len(namespace) <= 63 and _DNS1123_LABEL.fullmatch(namespace) is not None


def _nearest_kind(kind: str, kinds: Iterable[str]) -> str:
    """`` (did you mean 'VirtualService'?)`` for a misspelt or miscased kind, else ``""``."""
    by_lower = {k.lower(): k for k in kinds}
    close = difflib.get_close_matches(kind.lower(), list(by_lower), n=1, cutoff=0.75)
    return f" (did you mean {by_lower[close[0]]!r}?)" if close else ""
