"""One list of a Kubernetes resource, page by page, into checked objects.

A list is a consistent read of one API version: pages of at most :data:`PAGE_SIZE`
items joined by their ``continue`` token (a token that expired between two pages, 410,
starts the list again). Each item is checked
(:func:`~pilothouse.sources.kubernetes.object_shape.object_problem`): a malformed one is
skipped and logged once per distinct problem, its key kept where it can be read so the
informer holds on to its last good version; an answer that is not a well-formed list
raises :class:`~pilothouse.sources.kubernetes.object_shape.MalformedList`. 403 and 404
raise :class:`Absent`. The informer (:mod:`~pilothouse.sources.kubernetes.informer`)
decides what a list means for what it holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from pilothouse.sources.kubernetes.client import KubeApiError, ResourceRef, request
from pilothouse.sources.kubernetes.object_shape import (
    MalformedList,
    ObjectKey,
    list_problem,
    object_problem,
    readable_key,
)
from pilothouse.sources.kubernetes.skipped import SkippedObjects

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient

Obj = dict[str, Any]

PAGE_SIZE = 500


class Absent(Exception):
    """403 or 404: the resource cannot be read (not allowed, or not installed)."""

    def __init__(self, problem: KubeApiError) -> None:
        super().__init__(str(problem))
        self.problem = problem


class Listed(NamedTuple):
    """What one list read: the well-formed objects by key, the keys of the malformed
    items that have a readable key, and the list's resourceVersion."""

    objects: dict[ObjectKey, Obj]
    unreadable: set[ObjectKey]
    resource_version: str


async def list_objects(
    client: ApiClient,
    ref: ResourceRef,
    namespace: str,
    query: list[tuple[str, str]],
    skipped: SkippedObjects,
) -> Listed:
    """Every well-formed object of ``ref`` (in ``namespace``; empty: all), page by page."""
    found: dict[ObjectKey, Obj] = {}
    unreadable: set[ObjectKey] = set()
    token = ""
    while True:
        page_query = [*query, ("limit", str(PAGE_SIZE))]
        if token:
            page_query.append(("continue", token))
        try:
            page = await request(client, "GET", ref.path(namespace), page_query, timeout=60)
        except KubeApiError as problem:
            if problem.code == 410 and token:
                # The pages' snapshot expired between two pages: start again.
                found, unreadable, token = {}, set(), ""
                continue
            if problem.code in (403, 404):
                raise Absent(problem) from None
            raise
        wrong = list_problem(page)
        if wrong is not None:
            raise MalformedList(f"malformed list answer: {wrong}")
        kind = str(page["kind"]).removesuffix("List")
        api_version = str(page.get("apiVersion") or "")
        for item in page["items"] or ():
            wrong = object_problem(item, namespaced=ref.namespaced)
            if wrong is not None:
                key = readable_key(item, namespaced=ref.namespaced)
                skipped.skip("list item", key, wrong)
                if key is not None:
                    unreadable.add(key)
                continue
            # List items carry no apiVersion/kind of their own: give them the list's.
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
            strip_managed_fields(item)
            key = checked_key(item, ref.namespaced)
            skipped.forget(key)
            found[key] = item
        meta = page["metadata"]
        token = meta.get("continue") or ""
        if not token:
            return Listed(found, unreadable, meta["resourceVersion"])


def strip_managed_fields(obj: Obj) -> None:
    """Drop ``metadata.managedFields`` (server-side apply bookkeeping nobody here reads;
    istiod strips it too): often the largest part of an object."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)


def checked_key(obj: Obj, namespaced: bool) -> ObjectKey:
    """The key of a checked object (see
    :func:`~pilothouse.sources.kubernetes.object_shape.key_problem`)."""
    key = readable_key(obj, namespaced=namespaced)
    assert key is not None
    return key
