"""An informer: one Kubernetes resource listed, then watched, kept in memory.

The protocol is client-go's reflector without a watch cache of its own:

- **List** (paginated, a consistent read:
  :mod:`~pilothouse.sources.kubernetes.listing`), then **watch** from the list's
  resourceVersion with bookmarks on and a random 5–10 minute ``timeoutSeconds``.
- A watch that ends (timeout, server closed it) is opened again **from the last
  resourceVersion seen**; BOOKMARK events advance it without an object.
- A dropped connection or an unreachable server: the watch is opened again from the last
  resourceVersion after a backoff with jitter (:class:`~pilothouse.backoff.Backoff`);
  nothing is lost, since the server replays every change after that version.
- **410 Gone** (the version was compacted away; an ``ERROR`` event in a watch, or the
  status of a list page): **relist** and deliver only the differences against what was
  held (:mod:`~pilothouse.sources.kubernetes.held_objects`: what a list or a watch event
  means for what is held, and the events it delivers).
- **403 / 404** (not allowed, or a CRD not installed): one warning, the informer holds
  nothing and counts as synced, and it looks again every ``absent_retry`` seconds, so a
  CRD installed later is picked up.

- **Malformed answers** (see :mod:`~pilothouse.sources.kubernetes.object_shape`) stop at their
  unit. A list item or watch event of the wrong shape (not an object, metadata not an object,
  name/namespace/resourceVersion not strings, spec not an object, an unknown event type,
  no object, a line that is not a JSON object) is skipped and logged once per distinct
  problem (:class:`~pilothouse.sources.kubernetes.skipped.SkippedObjects`); the good ones around it
  are delivered, and an object held before keeps its last good version. A list answer
  that is not a well-formed list (no ``items``, ``items`` not an array, no
  ``resourceVersion``, not a list kind, not JSON) fails the whole list: nothing held
  changes, and it is tried again with the backoff.
- While a list or watch cannot be made (unreachable server, error status, malformed
  list), :attr:`Informer.problem` says why (logged when it starts or changes, and when it
  clears); what is held stays held.

Handlers (the :class:`~pilothouse.sources.kubernetes.events.KubeFeed` protocol) run on the event
loop, one event at a time; a handler that raises is logged and the informer goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable
from typing import TYPE_CHECKING

import aiohttp

from pilothouse.backoff import Backoff
from pilothouse.sources.kubernetes.client import KubeApiError, ResourceRef, open_stream
from pilothouse.sources.kubernetes.events import KubeEvent, KubeHandler, WatchEventType
from pilothouse.sources.kubernetes.held_objects import Expired, HeldObjects
from pilothouse.sources.kubernetes.listing import Absent, Listed, Obj, list_objects
from pilothouse.sources.kubernetes.object_shape import MalformedList
from pilothouse.sources.kubernetes.skipped import SkippedObjects
from pilothouse.sources.kubernetes.watch_lines import watch_lines

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient

log = logging.getLogger("pilothouse.sources.kubernetes")

MAX_WATCH_LINE = 16 * 1024 * 1024
"""A watch line longer than this (bytes) is skipped unread (an object the API server
stores is at most about 1.5 MB)."""
WATCH_TIMEOUT = (300, 600)
"""client-go's watch timeout: a random number of seconds in this range."""


class _Cut(Exception):
    """An open watch was cut (a dropped connection): reopened after a backoff, without
    counting as a problem unless reopening it fails."""


_FAILURES = (
    KubeApiError,
    aiohttp.ClientError,
    OSError,
    TimeoutError,
    ValueError,
    RecursionError,
)
"""What a list or watch can fail with: the server's answer or the connection to it."""


class Informer:
    """List-then-watch of one resource; a
    :class:`~pilothouse.sources.kubernetes.events.KubeFeed`."""

    def __init__(
        self,
        client: ApiClient | None,
        ref: ResourceRef,
        *,
        namespace: str = "",
        label_selector: str = "",
        field_selector: str = "",
        backoff: Backoff | None = None,
        absent_retry: float = 30.0,
        watch_timeout: tuple[int, int] = WATCH_TIMEOUT,
        max_line: int = MAX_WATCH_LINE,
        rng: random.Random | None = None,
        fallbacks: tuple[ResourceRef, ...] = (),
    ) -> None:
        """``fallbacks``: other versions of the same resource, tried in order when the
        API server does not serve ``ref`` (404), as for an older CRD. ``client`` may be
        given later (:meth:`connect`), before :meth:`run`."""
        self._client = client
        self.ref = ref
        self._refs = (ref, *fallbacks)
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self._backoff = backoff if backoff is not None else Backoff(0.5, 30.0)
        self._absent_retry = absent_retry
        self._watch_timeout = watch_timeout
        self._max_line = max_line
        self._rng = rng if rng is not None else random.Random()
        self._handlers: tuple[KubeHandler, ...] = ()
        self._synced = asyncio.Event()
        self._stop = asyncio.Event()
        self._version: str | None = None
        self._absent: str | None = None
        """Why the resource cannot be read now (None while it can)."""
        self._problem: str | None = None
        self._attempted = asyncio.Event()
        self.skipped = SkippedObjects(ref.name, log)
        """Malformed list items and watch events skipped (counted and logged)."""
        self._held = HeldObjects(self.skipped, self._emit, max_line)
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
        return self._held.ordered()

    def get(self, namespace: str, name: str) -> Obj | None:
        return self._held.get((namespace, name))

    @property
    def absent(self) -> str | None:
        """Why the resource cannot be read (403/404), or None."""
        return self._absent

    @property
    def problem(self) -> str | None:
        """Why the last list or watch of the resource failed (the server unreachable, an
        error status, a malformed list), or None since one succeeded. What is held is
        kept meanwhile."""
        return self._problem

    async def wait_attempted(self) -> None:
        """Until the first list has been tried, whatever came of it."""
        await self._attempted.wait()

    @property
    def resource_version(self) -> str | None:
        return self._version

    # -- running -------------------------------------------------------------------------

    def connect(self, client: ApiClient) -> None:
        """The client to read with, when none was given at construction."""
        self._client = client

    def close(self) -> None:
        self._stop.set()

    @property
    def client(self) -> ApiClient:
        if self._client is None:
            raise RuntimeError(f"the informer of {self.resource} has no client yet")
        return self._client

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
            except Expired:
                log.info("watch of %s expired (410 Gone); listing again", self.resource)
                self._version = None
                continue
            except Absent as absent:
                self._go_absent(absent.problem)
                await self._pause(self._absent_retry)
                continue
            except _Cut as cut:
                failures += 1
                delay = self._backoff.delay(failures, self._rng)
                log.info(
                    "the watch of %s was cut (%s); reopening it in %.1fs",
                    self.resource,
                    cut,
                    delay,
                    extra={"resource": self.resource},
                )
                await self._pause(delay)
            except _FAILURES as exc:
                failures += 1
                delay = self._backoff.delay(failures, self._rng)
                self._failed(_describe(exc), delay, failures)
                await self._pause(delay)
            except Exception as exc:  # a fault of this informer stops here
                failures += 1
                delay = self._backoff.delay(failures, self._rng)
                log.exception("reading %s failed unexpectedly", self.resource)
                self._failed(_describe(exc), delay, failures)
                await self._pause(delay)

    def _failed(self, reason: str, delay: float, failures: int) -> None:
        """A list or watch failed: logged when the reason is new, at debug while it
        repeats (an unreachable server would otherwise log every retry)."""
        level = logging.DEBUG if reason == self._problem else logging.WARNING
        log.log(
            level,
            "reading %s failed (%s); holding its last %d objects, again in %.1fs",
            self.resource,
            reason,
            len(self._held),
            delay,
            extra={"resource": self.resource, "failures": failures},
        )
        self._problem = reason
        self._attempted.set()

    def _recovered(self) -> None:
        if self._problem is not None:
            log.info(
                "%s can be read again (was: %s)",
                self.resource,
                self._problem,
                extra={"resource": self.resource},
            )
            self._problem = None

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

    async def _list(self) -> Listed:
        """What the list of the first version served read."""
        self.lists += 1
        for index, ref in enumerate(self._refs):
            try:
                listed = await list_objects(
                    self.client, ref, self.namespace, self._query(), self.skipped
                )
            except Absent as absent:
                if absent.problem.code == 404 and index + 1 < len(self._refs):
                    continue
                raise
            if ref != self.ref:
                log.info("reading %s at %s", self.resource, ref.version)
            self.ref = ref
            return listed
        raise AssertionError("unreachable: the last version raised")

    async def _relist(self) -> None:
        """List, then deliver only the differences against what is held."""
        listed, unreadable, version = await self._list()
        if self._absent is not None:
            log.info("%s can be read again", self.resource, extra={"resource": self.resource})
            self._absent = None
        self._recovered()
        self._held.replace(listed, unreadable)
        self._version = version
        self._synced.set()
        self._attempted.set()

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
        self._problem = None  # it answered: not unreachable, just not readable
        self._version = None
        self._held.clear()
        self._synced.set()
        self._attempted.set()

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
                self.client, self.ref.path(self.namespace), query, read_timeout=timeout + 30
            )
        except KubeApiError as problem:
            if problem.code == 410:
                raise Expired from None
            if problem.code in (403, 404):
                raise Absent(problem) from None
            raise
        self._recovered()
        try:
            async for line in watch_lines(response, self._max_line):
                if self._stop.is_set():
                    return
                version = self._held.apply_line(line, self.ref.namespaced)
                if version:
                    self._version = version
        except (aiohttp.ClientError, OSError, TimeoutError) as cut:
            raise _Cut(_describe(cut)) from None
        finally:
            response.release()

    def _emit(self, kind: WatchEventType, obj: Obj) -> None:
        event = KubeEvent(kind, obj)
        for handler in self._handlers:
            try:
                handler(event)
            except Exception:
                log.exception(
                    "a handler of %s failed", self.resource, extra={"resource": self.resource}
                )


def _describe(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, MalformedList):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
