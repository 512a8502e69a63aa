"""What a well-formed answer from a Kubernetes API server looks like, checked before use.

An informer reads JSON it did not write: a list page, a watch line, an object in either.
Everything here takes that JSON as ``object`` (not as the dict it should be) and says
what is wrong with it in a short phrase, or None when it has the shape the informers and
their consumers rely on:

- an **object**: a JSON object whose ``metadata`` is an object with a non-empty string
  ``name``, a string ``namespace`` (non-empty for a namespaced resource), a non-empty
  string ``resourceVersion``; ``labels`` and ``annotations``, when present, objects of
  strings; ``apiVersion`` and ``kind`` strings; ``spec``, ``status`` and ``data``
  objects. What ``spec`` holds is its consumer's business (the config loader's
  validation, the registry's conversion);
- a **list answer**: a JSON object of a ``...List`` kind whose ``metadata`` is an object
  with a non-empty string ``resourceVersion`` (and a string ``continue`` when present),
  and whose ``items`` is a JSON array. An answer without ``items`` is not an empty list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ObjectKey = tuple[str, str]
"""(namespace, name); the namespace is "" for a cluster-scoped object."""

_OBJECT_PARTS = ("spec", "status", "data")
_STRING_MAPS = ("labels", "annotations")


class MalformedList(ValueError):
    """A list answer that is not a well-formed list: an error of the whole list (the
    informer keeps what it holds and tries again), never read as an empty one."""


def json_type(value: object) -> str:
    """The JSON name of ``value``'s type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def readable_key(obj: object, *, namespaced: bool) -> ObjectKey | None:
    """The (namespace, name) of ``obj`` when its metadata says them properly, else None."""
    if not isinstance(obj, dict):
        return None
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return None
    name, namespace = meta.get("name"), meta.get("namespace", "")
    if not isinstance(name, str) or not name:
        return None
    if namespace is None:
        namespace = ""
    if not isinstance(namespace, str) or (namespaced and not namespace):
        return None
    return (namespace if namespaced else "", name)


def key_problem(obj: object, *, namespaced: bool) -> str | None:
    """What keeps ``obj``'s key from being read (enough for a DELETED event), or None."""
    if not isinstance(obj, dict):
        return f"the object is {json_type(obj)}, not an object"
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return f"metadata is {json_type(meta)}, not an object"
    name = meta.get("name")
    if not isinstance(name, str):
        return f"metadata.name is {json_type(name)}, not a string"
    if not name:
        return "metadata.name is empty"
    namespace = meta.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        return f"metadata.namespace is {json_type(namespace)}, not a string"
    if namespaced and not namespace:
        return "metadata.namespace is missing"
    return None


def object_problem(obj: object, *, namespaced: bool) -> str | None:
    """What is wrong with the shape of ``obj``, or None when it is a well-formed object."""
    problem = key_problem(obj, namespaced=namespaced)
    if problem is not None:
        return problem
    assert isinstance(obj, dict)
    meta: Mapping[str, Any] = obj["metadata"]
    version = meta.get("resourceVersion")
    if not isinstance(version, str) or not version:
        what = "empty" if version == "" else f"{json_type(version)}, not a string"
        return f"metadata.resourceVersion is {what}"
    for part in _STRING_MAPS:
        value = meta.get(part)
        if value is None:
            continue
        if not isinstance(value, dict):
            return f"metadata.{part} is {json_type(value)}, not an object"
        for key, text in value.items():
            if not isinstance(text, str):
                return f"metadata.{part}[{key!r}] is {json_type(text)}, not a string"
    for field in ("apiVersion", "kind"):
        value = obj.get(field)
        if value is not None and not isinstance(value, str):
            return f"{field} is {json_type(value)}, not a string"
    for field in _OBJECT_PARTS:
        value = obj.get(field)
        if value is not None and not isinstance(value, dict):
            return f"{field} is {json_type(value)}, not an object"
    return None


def list_problem(page: object) -> str | None:
    """What makes ``page`` not a well-formed list answer, or None."""
    if not isinstance(page, dict):
        return f"the answer is {json_type(page)}, not an object"
    kind = page.get("kind")
    if not isinstance(kind, str) or not kind.endswith("List"):
        shown = repr(kind) if isinstance(kind, str) else json_type(kind)
        return f"the answer's kind is {shown}, not a list kind"
    meta = page.get("metadata")
    if not isinstance(meta, dict):
        return f"the list's metadata is {json_type(meta)}, not an object"
    version = meta.get("resourceVersion")
    if not isinstance(version, str) or not version:
        what = "empty" if version == "" else f"{json_type(version)}, not a string"
        return f"the list's metadata.resourceVersion is {what}"
    token = meta.get("continue")
    if token is not None and not isinstance(token, str):
        return f"the list's metadata.continue is {json_type(token)}, not a string"
    if "items" not in page:
        return "the list has no items"
    items = page["items"]
    if items is not None and not isinstance(items, list):
        return f"the list's items is {json_type(items)}, not an array"
    api_version = page.get("apiVersion")
    if api_version is not None and not isinstance(api_version, str):
        return f"the list's apiVersion is {json_type(api_version)}, not a string"
    return None
