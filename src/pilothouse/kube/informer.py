"""An informer: one Kubernetes resource listed, then watched, kept in memory.

The protocol is client-go's reflector without a watch cache of its own:

- **List** (paginated, a consistent read), then **watch** from the list's
  resourceVersion with bookmarks on and a random 5–10 minute ``timeoutSeconds``.
- A watch that ends (timeout, server closed it) is opened again **from the last
  resourceVersion seen**; BOOKMARK events advance it without an object.
- A dropped connection or an unreachable server: the watch is opened again from the last
  resourceVersion after a backoff with jitter (:class:`~pilothouse.backoff.Backoff`);
  nothing is lost, since the server replays every change after that version.
- **410 Gone** (the version was compacted away; an ``ERROR`` event in a watch, or the
  status of a list page): **relist** and deliver only the differences against what was
  held: ADDED for new objects, MODIFIED for a changed resourceVersion, DELETED for the
  vanished ones. Never a replay of everything.
- **403 / 404** (not allowed, or a CRD not installed): one warning, the informer holds
  nothing and counts as synced, and it looks again every ``absent_retry`` seconds, so a
  CRD installed later is picked up.

Handlers (the :class:`~pilothouse.kube.events.KubeFeed` protocol) run on the event loop,
one event at a time; a handler that raises is logged and the informer goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
from kubernetes_asyncio.client import ApiClient

from pilothouse.backoff import Backoff
from pilothouse.kube.client import KubeApiError, ResourceRef, open_stream, request
from pilothouse.kube.events import KubeEvent, KubeHandler, WatchEventType

log = logging.getLogger("pilothouse.kube")

Obj = dict[str, Any]
ObjectKey = tuple[str, str]

PAGE_SIZE = 500
WATCH_TIMEOUT = (300, 600)
"""client-go's watch timeout: a random number of seconds in this range."""


class _Expired(Exception):
    """410 Gone: the resourceVersion is too old; relist."""


class _Absent(Exception):
    """403 or 404: the resource cannot be read (not allowed, or not installed)."""

    def __init__(self, problem: KubeApiError) -> None:
        super().__init__(str(problem))
        self.problem = problem


def object_key(obj: Obj) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _version(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Informer:
    """List-then-watch of one resource; a :class:`~pilothouse.kube.events.KubeFeed`."""

    def __init__(
        self,
        client: ApiClient,
        ref: ResourceRef,
        *,
        namespace: str = "",
        label_selector: str = "",
        field_selector: str = "",
        backoff: Backoff | None = None,
        absent_retry: float = 30.0,
        watch_timeout: tuple[int, int] = WATCH_TIMEOUT,
        rng: random.Random | None = None,
        fallbacks: tuple[ResourceRef, ...] = (),
    ) -> None:
        """``fallbacks``: other versions of the same resource, tried in order when the
        API server does not serve ``ref`` (404), as for an older CRD."""
        self._client = client
        self.ref = ref
        self._refs = (ref, *fallbacks)
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self._backoff = backoff if backoff is not None else Backoff(0.5, 30.0)
        self._absent_retry = absent_retry
        self._watch_timeout = watch_timeout
        self._rng = rng if rng is not None else random.Random()
        self._objects: dict[ObjectKey, Obj] = {}
        self._handlers: tuple[KubeHandler, ...] = ()
        self._synced = asyncio.Event()
        self._stop = asyncio.Event()
        self._version: str | None = None
        self._absent: str | None = None
        """Why the resource cannot be read now (None while it can)."""
        self.lists = 0
        """Lists made so far (the first one and every relist)."""
        self.watches = 0
        """Watch requests made so far."""

    # -- KubeFeed ------------------------------------------------------------------------

    @property
    def resource(self) -> str:
        return self.ref.name

    def subscribe(self, handler: KubeHandler) -> Callable[[], None]:
        self._handlers = (*self._handlers, handler)

        def unsubscribe() -> None:
            if handler in self._handlers:
                held = list(self._handlers)
                held.remove(handler)
                self._handlers = tuple(held)

        return unsubscribe

    def has_synced(self) -> bool:
        return self._synced.is_set()

    # -- reads ---------------------------------------------------------------------------

    async def wait_synced(self) -> None:
        await self._synced.wait()

    def objects(self) -> list[Obj]:
        return [self._objects[k] for k in sorted(self._objects)]

    def get(self, namespace: str, name: str) -> Obj | None:
        return self._objects.get((namespace, name))

    @property
    def absent(self) -> str | None:
        """Why the resource cannot be read (403/404), or None."""
        return self._absent

    @property
    def resource_version(self) -> str | None:
        return self._version

    # -- running -------------------------------------------------------------------------

    def close(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        """List and watch until :meth:`close`."""
        failures = 0
        while not self._stop.is_set():
            try:
                if self._version is None:
                    await self._relist()
                await self._watch()
                failures = 0
                continue
            except _Expired:
                log.info("watch of %s expired (410 Gone); listing again", self.resource)
                self._version = None
                continue
            except _Absent as absent:
                self._go_absent(absent.problem)
                await self._pause(self._absent_retry)
                continue
            except (KubeApiError, aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
                failures += 1
                delay = self._backoff.delay(failures, self._rng)
                log.warning(
                    "reading %s failed (%s); again in %.1fs",
                    self.resource,
                    _describe(exc),
                    delay,
                    extra={"resource": self.resource, "failures": failures},
                )
                await self._pause(delay)

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)

    def _query(self) -> list[tuple[str, str]]:
        query: list[tuple[str, str]] = []
        if self.label_selector:
            query.append(("labelSelector", self.label_selector))
        if self.field_selector:
            query.append(("fieldSelector", self.field_selector))
        return query

    async def _list(self) -> tuple[dict[ObjectKey, Obj], str]:
        """Every object of the first version served, and the list's resourceVersion."""
        self.lists += 1
        for index, ref in enumerate(self._refs):
            try:
                listed = await self._list_version(ref)
            except _Absent as absent:
                if absent.problem.code == 404 and index + 1 < len(self._refs):
                    continue
                raise
            if ref != self.ref:
                log.info("reading %s at %s", self.resource, ref.version)
            self.ref = ref
            return listed
        raise AssertionError("unreachable: the last version raised")

    async def _list_version(self, ref: ResourceRef) -> tuple[dict[ObjectKey, Obj], str]:
        """Every object at ``ref``, page by page, and the list's resourceVersion."""
        found: dict[ObjectKey, Obj] = {}
        token = ""
        while True:
            query = [*self._query(), ("limit", str(PAGE_SIZE))]
            if token:
                query.append(("continue", token))
            try:
                page = await request(
                    self._client, "GET", ref.path(self.namespace), query, timeout=60
                )
            except KubeApiError as problem:
                if problem.code == 410 and token:
                    # The pages' snapshot expired between two pages: start again.
                    found, token = {}, ""
                    continue
                if problem.code in (403, 404):
                    raise _Absent(problem) from None
                raise
            kind = str(page.get("kind", "")).removesuffix("List")
            api_version = str(page.get("apiVersion", ""))
            for item in page.get("items") or []:
                # List items carry no apiVersion/kind of their own: give them the list's.
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", kind)
                _strip(item)
                found[object_key(item)] = item
            meta = page.get("metadata") or {}
            token = str(meta.get("continue") or "")
            if not token:
                return found, str(meta.get("resourceVersion") or "")

    async def _relist(self) -> None:
        """List, then deliver only the differences against what is held."""
        listed, version = await self._list()
        if self._absent is not None:
            log.info("%s can be read again", self.resource, extra={"resource": self.resource})
            self._absent = None
        held = self._objects
        self._objects = dict(listed)
        for key, obj in listed.items():
            before = held.get(key)
            if before is None:
                self._emit(WatchEventType.ADDED, obj)
            elif _version(before) != _version(obj):
                self._emit(WatchEventType.MODIFIED, obj)
        for key in sorted(set(held) - set(listed)):
            self._emit(WatchEventType.DELETED, held[key])
        self._version = version
        self._synced.set()

    def _go_absent(self, problem: KubeApiError) -> None:
        reason = f"{problem.code} {problem.reason}"
        if self._absent != reason:
            what = "not installed" if problem.code == 404 else "not allowed"
            log.warning(
                "cannot read %s (%s: %s); holding none of them and looking again every %gs",
                self.resource,
                what,
                problem.message,
                self._absent_retry,
                extra={"resource": self.resource},
            )
        self._absent = reason
        self._version = None
        held, self._objects = self._objects, {}
        for key in sorted(held):
            self._emit(WatchEventType.DELETED, held[key])
        self._synced.set()

    async def _watch(self) -> None:
        """One watch request, until the server ends it (its timeout) or it fails."""
        assert self._version is not None
        low, high = self._watch_timeout
        timeout = self._rng.randint(low, high)
        query = [
            *self._query(),
            ("watch", "1"),
            ("resourceVersion", self._version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout)),
        ]
        self.watches += 1
        try:
            response = await open_stream(
                self._client, self.ref.path(self.namespace), query, read_timeout=timeout + 30
            )
        except KubeApiError as problem:
            if problem.code == 410:
                raise _Expired from None
            if problem.code in (403, 404):
                raise _Absent(problem) from None
            raise
        try:
            async for line in _lines(response):
                if self._stop.is_set():
                    return
                self._on_line(line)
        finally:
            response.release()

    def _on_line(self, line: bytes) -> None:
        event = json.loads(line)
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            code = int(obj.get("code") or 0)
            problem = KubeApiError(code, str(obj.get("reason")), str(obj.get("message")))
            if code == 410:
                raise _Expired
            if code in (403, 404):
                raise _Absent(problem)
            raise problem
        version = _version(obj)
        if kind == "BOOKMARK":
            if version:
                self._version = version
            return
        key = object_key(obj)
        _strip(obj)
        if kind in ("ADDED", "MODIFIED"):
            before = self._objects.get(key)
            self._objects[key] = obj
            self._emit(WatchEventType.ADDED if before is None else WatchEventType.MODIFIED, obj)
        elif kind == "DELETED":
            before = self._objects.pop(key, None)
            if before is not None:
                self._emit(WatchEventType.DELETED, obj)
        else:
            raise ValueError(f"unknown watch event type {kind!r}")
        if version:
            self._version = version

    def _emit(self, kind: WatchEventType, obj: Obj) -> None:
        event = KubeEvent(kind, obj)
        for handler in self._handlers:
            try:
                handler(event)
            except Exception:
                log.exception(
                    "a handler of %s failed", self.resource, extra={"resource": self.resource}
                )


async def _lines(response: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """The JSON lines of a watch body, however the chunks fall."""
    pending = b""
    async for chunk in response.content.iter_any():
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if line.strip():
                yield line
    if pending.strip():
        yield pending


def _strip(obj: Obj) -> None:
    """Drop ``metadata.managedFields`` (server-side apply bookkeeping nobody here reads;
    istiod strips it too): often the largest part of an object."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
