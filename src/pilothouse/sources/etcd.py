"""The etcd config source (``etcd://host:port[,host:port…]/prefix``): Istio objects kept in
etcd, one JSON object per key (layout in :mod:`pilothouse.sources.etcd_layout`).

How it follows etcd:

- **List, then watch.** It lists every key under the prefix (in pages, at one revision),
  fills its :class:`MemoryStore`, and is *synced*; then it watches the prefix from the
  list revision + 1. Each object's resource version is its key's mod revision, so every
  replica on the same etcd serves the same objects with the same versions.
- **Compaction.** When the revision it would resume from has been compacted, it lists
  again and applies only the differences (added, changed and removed objects).
- **Outages.** ``aetcd``'s watch does not reconnect: when the stream or a request fails,
  the source dials the next endpoint with exponential backoff and jitter, and resumes the
  watch after the last revision it applied (etcd sends all events of one revision in
  one response, and aetcd queues a response whole before any error). Meanwhile the
  store keeps every object, the source reports itself unavailable (``/ready`` details,
  a warning in the log), and says when it is back.
- **Status.** A change of an object's ``status`` alone (a controller's, as ``serve
  --write-status`` writes the Gateway API's conditions) keeps the object as it was: no
  event, so no push. With ``write_status``, :meth:`EtcdSource.publish_status` merges a
  status into a stored object (:mod:`pilothouse.sources.etcd_status`) when it says
  something else, and writes it back when another writer (an ``apply`` of the object)
  leaves a stored status that is not the one published.
- **Invalid objects.** A value that does not decode, fails validation, or names another
  object than its key (written by another tool) is skipped with a warning naming the
  key, never served, and treated as absent, so that every replica holds the same set
  whatever it saw before; the other objects are unaffected.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

import aetcd
import aetcd.exceptions
import aetcd.utils
import grpc

from pilothouse.backoff import Backoff
from pilothouse.config.load import Loader
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds.table import SCHEMAS
from pilothouse.settings import EtcdSettings
from pilothouse.sources.availability import Availability
from pilothouse.sources.etcd_client import (
    EtcdUnavailable,
    Listing,
    check_revision,
    client_for,
    list_prefix,
    reason,
)
from pilothouse.sources.etcd_layout import EtcdLayout, StoredObject
from pilothouse.sources.etcd_status import same_status, write_status
from pilothouse.sources.gc_pause import collector_paused
from pilothouse.sources.memory import MemoryStore

log = logging.getLogger("pilothouse.sources.etcd")

_FAILURES = (
    EtcdUnavailable,
    aetcd.exceptions.ClientError,
    grpc.RpcError,
    OSError,
    TimeoutError,
)


class EtcdSource:
    """Keeps a :class:`MemoryStore` equal to the valid objects under one etcd prefix."""

    def __init__(
        self,
        endpoints: Sequence[tuple[str, int]],
        prefix: str = "/",
        *,
        loader: Loader | None = None,
        backoff: Backoff | None = None,
        request_timeout: float = 10.0,
        rng: random.Random | None = None,
        security: EtcdSettings | None = None,
        write_status: bool = False,
    ) -> None:
        if not endpoints:
            raise ValueError("an etcd source needs at least one endpoint")
        self.endpoints = tuple(endpoints)
        self.layout = EtcdLayout(prefix, loader.schemas if loader is not None else None)
        hosts = ",".join(f"{h}:{p}" for h, p in self.endpoints)
        name = f"etcd://{hosts}{self.layout.prefix or '/'}"
        self.loader = loader if loader is not None else Loader(SCHEMAS, source=name)
        self.store = MemoryStore(name=name)
        self._backoff = backoff if backoff is not None else Backoff(0.25, 10.0)
        self._timeout = request_timeout
        self._security = security if security is not None else EtcdSettings()
        self._rng = rng if rng is not None else random.Random()
        self._stop = asyncio.Event()
        self._revision = 0
        """The last revision applied (from a list or an event); 0 before the first list."""
        self._relist = True
        self._endpoint = 0
        self._failures = 0
        self._state = Availability(name, False, "not connected yet", time.time())
        self._skipped: dict[str, StoredObject] = {}
        self.relists = 0
        """Completed lists (the first one included), for tests and the debug views."""
        self.write_status = write_status
        self._statuses: dict[ConfigKey, Any] = {}
        """The stored ``status`` of each object that has one."""
        self._published: dict[ConfigKey, Mapping[str, Any]] = {}
        """The status last published for each object (with ``write_status``)."""
        self._client: aetcd.Client | None = None
        self._writes: set[asyncio.Task[None]] = set()

    @property
    def name(self) -> str:
        return self.store.name

    @property
    def revision(self) -> int:
        """The etcd revision this source has caught up with."""
        return self._revision

    def has_synced(self) -> bool:
        return self.store.has_synced()

    def availability(self) -> Availability:
        state = self._state
        if state.available and self._skipped:
            first = min(self._skipped)
            reason = f"{len(self._skipped)} invalid stored object(s) skipped, first {first}"
            return Availability(state.source, True, reason, state.since)
        return state

    def skipped(self) -> dict[str, StoredObject]:
        """Stored values that were skipped, by key, with their problems."""
        return dict(self._skipped)

    def config_errors(self) -> int:
        """Stored values skipped as invalid (``pilothouse_config_source_errors``)."""
        return len(self._skipped)

    def close(self) -> None:
        self._stop.set()
        for task in self._writes:
            task.cancel()

    def status_writes(self) -> int:
        """Status writes in flight (for tests and the debug views)."""
        return len(self._writes)

    def publish_status(self, key: ConfigKey, status: Mapping[str, Any]) -> bool:
        """Merge ``status`` into the stored status of the object ``key`` names, when this
        source holds it and writes status (written only when the stored status says
        something else); False when it does not, or is not connected."""
        if not self.write_status or self.store.get(key) is None or self._client is None:
            return False
        self._published[key] = status
        if not same_status(self._statuses.get(key), status):
            self._write(key, status)
        return True

    def _write(self, key: ConfigKey, status: Mapping[str, Any]) -> None:
        client = self._client
        if client is None:
            return  # the next listing compares again (_take)
        task = asyncio.get_running_loop().create_task(self._put_status(client, key, status))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _put_status(
        self, client: aetcd.Client, key: ConfigKey, status: Mapping[str, Any]
    ) -> None:
        try:
            await write_status(client, self.layout.key_of(key), status)
        except _FAILURES as problem:
            log.warning(
                "cannot write the status of %s to %s: %s",
                key,
                self.name,
                reason(problem, self._security),
                extra={"source": self.name},
            )

    def _take(self, config: Config, status: Any) -> None:
        """Apply ``config`` stored with ``status``: a change of the status alone keeps the
        object held (no event); a status that is not the one published is written back."""
        key = config.key
        before = self._statuses.pop(key, None)
        if status is not None:
            self._statuses[key] = status
        old = self.store.get(key)
        status_only = old is not None and status != before and old.same_content(config)
        self.store.apply(config, compare_version=not status_only)
        published = self._published.get(key)
        if published is not None and not same_status(status, published):
            self._write(key, published)

    def _forget(self, key: ConfigKey) -> None:
        self.store.delete(key)
        self._statuses.pop(key, None)
        self._published.pop(key, None)

    async def run(self) -> None:
        """List and watch until :meth:`close`, redialling on every failure."""
        while not self._stop.is_set():
            host, port = self.endpoints[self._endpoint % len(self.endpoints)]
            client = client_for(host, port, timeout=self._timeout, security=self._security)
            self._client = client
            try:
                await self._session(client)
            except aetcd.exceptions.RevisionCompactedError as gone:
                log.info(
                    "etcd revision %d is compacted (oldest kept: %d); listing %s again",
                    self._revision + 1,
                    gone.compacted_revision,
                    self.name,
                    extra={"source": self.name},
                )
                self._relist = True
            except _FAILURES as problem:
                self._lost(f"{host}:{port}: {reason(problem, self._security)}")
                await self._pause()
            except Exception as problem:  # a bug of ours: this source only, never the server
                log.exception("the etcd source %s failed; starting over", self.name)
                self._lost(f"internal error: {type(problem).__name__}")
                self._relist = True
                await self._pause()
            finally:
                self._client = None
                with contextlib.suppress(Exception):
                    await client.close()

    async def _pause(self) -> None:
        """The next endpoint, after a backoff with jitter (or until closed)."""
        self._endpoint += 1
        self._failures += 1
        delay = self._backoff.delay(self._failures, self._rng)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), delay)

    async def _session(self, client: aetcd.Client) -> None:
        """One connection: list if needed, then watch until stopped or failed."""
        if self._relist:
            listing = await list_prefix(client, self.layout.root)
            self._apply_listing(listing)
            # the store holds the listing's revision: a failure before the watch is set up
            # resumes from it (after check_revision), it need not list again
            self._relist = False
        else:
            await check_revision(client, self.layout.root, self._revision)
        # etcd answered: available from now, not only once the watch is set up (a store
        # just marked synced must not be read as synced from an unavailable source)
        self._up()
        watch = await client.watch(
            self.layout.root,
            range_end=aetcd.utils.prefix_range_end(self.layout.root),
            start_revision=self._revision + 1,
            progress_notify=True,
        )
        self._up()
        events = asyncio.ensure_future(self._follow(watch))
        stopped = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({events, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            if not events.done():
                events.cancel()
                with contextlib.suppress(BaseException):
                    await watch.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await events
        if events.done() and not events.cancelled():
            events.result()  # raises what ended the watch
            raise EtcdUnavailable("the watch stream ended")

    async def _follow(self, watch: Any) -> None:
        async for event in watch:
            self._on_event(event)

    def _apply_listing(self, listing: Listing) -> None:
        """Make the store equal to ``listing``: only differences become events."""
        wanted: dict[ConfigKey, StoredObject] = {}
        skipped: dict[str, StoredObject] = {}
        with collector_paused():
            for kv in listing.kvs:
                if self.layout.is_reserved(kv.key):
                    continue
                stored = self.layout.decode(self.loader, kv.key, kv.value, kv.mod_revision)
                if stored.config is None:
                    skipped[stored.key] = stored
                    continue
                wanted[stored.config.key] = stored
            for held in wanted.values():
                assert held.config is not None
                self._take(held.config, held.status)
            for key in self.store.keys():
                if key not in wanted:
                    self._forget(key)
        for where, stored in skipped.items():
            self._skip(stored, kv_changed=where not in self._skipped)
        self._skipped = skipped
        self._revision = listing.revision
        self.relists += 1
        if not self.store.has_synced():
            log.info(
                "listed %d objects from %s at revision %d",
                len(wanted),
                self.name,
                listing.revision,
                extra={"source": self.name, "objects": len(wanted), "skipped": len(skipped)},
            )
        self.store.mark_synced()

    def _on_event(self, event: Any) -> None:
        kv = event.kv
        self._revision = max(self._revision, kv.mod_revision)
        if self.layout.is_reserved(kv.key):
            return
        where = kv.key.decode("utf-8", "replace")
        if event.kind == "DELETE":
            self._skipped.pop(where, None)
            key = self.layout.config_key(kv.key)
            if key is not None:
                self._forget(key)
            return
        stored = self.layout.decode(self.loader, kv.key, kv.value, kv.mod_revision)
        if stored.config is not None:
            self._skipped.pop(where, None)
            self._take(stored.config, stored.status)
            return
        self._skipped[where] = stored
        self._skip(stored, kv_changed=True)
        key = self.layout.config_key(kv.key)
        if key is not None:
            self._forget(key)

    def _skip(self, stored: StoredObject, *, kv_changed: bool) -> None:
        if not kv_changed:
            return
        log.warning(
            "skipping the invalid object at etcd key %s: %s",
            stored.key,
            "; ".join(p.message for p in stored.problems),
            extra={"source": self.name, "key": stored.key},
        )

    def _up(self) -> None:
        self._failures = 0
        if self._state.available:
            return
        if self._state.reason != "not connected yet":
            log.info(
                "etcd is reachable again; %s is following it from revision %d",
                self.name,
                self._revision,
                extra={"source": self.name},
            )
        self._state = Availability(self.name, True, "", time.time())

    def _lost(self, why: str) -> None:
        was = self._state
        if was.available or was.reason == "not connected yet":
            log.warning(
                "etcd is unreachable (%s); %s keeps serving its last good state (%d objects)",
                why,
                self.name,
                len(self.store),
                extra={"source": self.name, "objects": len(self.store)},
            )
        since = was.since if not was.available else time.time()
        self._state = Availability(self.name, False, why, since)
