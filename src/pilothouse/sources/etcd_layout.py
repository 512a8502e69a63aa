"""Where Istio objects live in etcd and how they are written there.

One object per key, ``<prefix>/<group>/<Kind>/<namespace>/<name>``, for example
``/mesh/networking.istio.io/VirtualService/bookinfo/reviews``. The value is the object
as users write it (``apiVersion``, ``kind``, ``metadata``, ``spec``) in compact JSON.
The object's resource version is not stored: it is the key's etcd mod revision.
Keys under ``<prefix>/pilothouse/`` are pilothouse's own (the CA's root, see
:mod:`pilothouse.security.ca_store_etcd`): not objects, never read as config.

Both the ``etcd://`` source (reading) and ``pilothouse apply/get/delete`` (writing) use
this module, so that the two always agree on the layout. A stored value is decoded and
validated by the same :class:`~pilothouse.config.load.Loader` as a file; a value that
does not decode, fails validation, or names another object than its key is rejected
with problems that name the key.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pilothouse.config.documents import RawObject
from pilothouse.config.load import Loader, Problem
from pilothouse.config.model import Config, ConfigKey, Origin
from pilothouse.config.schema import Schema, SchemaSet
from pilothouse.config.validation.report import Severity
from pilothouse.kinds.table import SCHEMAS


@dataclass(frozen=True, slots=True)
class StoredObject:
    """One value read from etcd: the object (or None) and what was wrong with it."""

    key: str
    config: Config | None
    problems: tuple[Problem, ...]
    status: Any = None
    """The stored ``status`` (a controller's, written with ``serve --write-status``)."""


class EtcdLayout:
    """The key layout under one prefix (``""`` for the root, else ``/something``)."""

    def __init__(self, prefix: str, schemas: SchemaSet | None = None) -> None:
        self.prefix = prefix.rstrip("/")
        self.schemas = schemas if schemas is not None else SCHEMAS

    @property
    def root(self) -> bytes:
        """Every object's key starts with this (the range a source lists and watches)."""
        return f"{self.prefix}/".encode()

    @property
    def reserved(self) -> bytes:
        """Keys under this are pilothouse's own data, not Istio objects."""
        return f"{self.prefix}/pilothouse/".encode()

    def is_reserved(self, key: bytes) -> bool:
        return key.startswith(self.reserved)

    def key_of(self, key: ConfigKey) -> bytes:
        schema = self._schema(key.kind)
        return f"{self.prefix}/{schema.group}/{key.kind}/{key.namespace}/{key.name}".encode()

    def kind_range(self, kind: str, namespace: str | None = None) -> bytes:
        """The key prefix of every object of ``kind`` (in ``namespace`` when given)."""
        schema = self._schema(kind)
        base = f"{self.prefix}/{schema.group}/{kind}/"
        return (base + (f"{namespace}/" if namespace is not None else "")).encode()

    def config_key(self, key: bytes) -> ConfigKey | None:
        """The object a key names, or None when it is not one of this layout's keys."""
        text = key.decode("utf-8", "replace")
        if not text.startswith(f"{self.prefix}/"):
            return None
        parts = text[len(self.prefix) + 1 :].split("/")
        if len(parts) != 4 or not all(parts):
            return None
        group, kind, namespace, name = parts
        schema = self.schemas.by_kind(kind)
        if schema is None or schema.group != group:
            return None
        return ConfigKey(kind, namespace, name)

    def decode(self, loader: Loader, key: bytes, value: bytes, mod_revision: int) -> StoredObject:
        """The validated object stored at ``key``; its resource version is ``mod_revision``."""
        where = key.decode("utf-8", "replace")
        named = self.config_key(key)
        if named is None:
            usage = f"{self.prefix}/<group>/<Kind>/<namespace>/<name>"
            return _rejected(where, f"not an object key: use {usage}")
        try:
            data = json.loads(value)
        except (ValueError, UnicodeDecodeError) as problem:
            return _rejected(where, f"the value is not JSON: {problem}", named)
        if not isinstance(data, dict):
            return _rejected(where, "the value is not a JSON object", named)
        raw = RawObject(data=data, file=where, line=1, lines={})
        config, problems, found = loader.load_object(raw)
        if config is None:
            errors = [p for p in problems if p.severity is Severity.ERROR]
            return StoredObject(where, None, tuple(errors or problems))
        if found != named:
            return _rejected(where, f"the value is {found}, not the {named} its key names", named)
        config = dataclasses.replace(
            config, resource_version=str(mod_revision), origin=Origin(loader.source, where)
        )
        return StoredObject(where, config, tuple(problems), data.get("status"))

    def _schema(self, kind: str) -> Schema:
        schema = self.schemas.by_kind(kind)
        if schema is None:
            raise KeyError(f"unknown kind {kind!r}")
        return schema


def stored_value(data: Mapping[str, Any], namespace: str, created: str) -> bytes:
    """The JSON written for an object as the user wrote it: ``metadata.namespace`` filled
    in, ``metadata.resourceVersion`` dropped, ``metadata.creationTimestamp`` kept or set
    to ``created``."""
    metadata = dict(data.get("metadata") or {})
    metadata.pop("resourceVersion", None)
    if namespace:
        metadata["namespace"] = namespace
    metadata.setdefault("creationTimestamp", created)
    body = {k: v for k, v in data.items() if k != "status"}
    body["metadata"] = metadata
    return json.dumps(body, separators=(",", ":"), sort_keys=True, default=str).encode()


def _rejected(where: str, message: str, key: ConfigKey | None = None) -> StoredObject:
    return StoredObject(where, None, (Problem(Severity.ERROR, where, None, message, key),))
