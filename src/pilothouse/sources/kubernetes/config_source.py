"""The ``k8s://`` config source: Istio custom resources read from a Kubernetes API server.

One :class:`~pilothouse.sources.kubernetes.informer.Informer` per kind of the schema table, at the
version istiod watches (``v1``; older versions a cluster may serve instead are tried when
``v1`` is not served). The API server serves every version of a kind from one stored
object, so objects written as ``v1beta1`` or ``v1alpha3`` arrive too.

- Each object goes through the loader, as a file's objects do
  (:meth:`~pilothouse.config.load.Loader.load_object`): an invalid one is logged with its
  kind, namespace and name and skipped; if it was valid before, its last good version is
  kept (as for files). Deleting it deletes it.
- A kind whose CRD is not installed, or that the service account may not read, is a
  warning; the other kinds carry on (see the informer).
- The source is synced once every kind has had its first list.
- It is *unavailable* (:meth:`KubeConfigSource.availability`, shown by ``/ready``, the
  debug views and the metrics) while any kind cannot be listed or watched: the API server
  unreachable, an error status, or an answer that is not a well-formed list. Its last
  good objects stay served meanwhile; a malformed list is never read as an empty one.
  Malformed objects and watch events are skipped one by one (see the informer).
- ``namespace`` limits every watch to one namespace (server side; cluster-scoped kinds
  such as GatewayClass are then not read); ``label_selector`` to the objects it selects.
- With ``write_status``, each object's ``status.validationMessages`` is kept to what
  validation found, as istiod's analysis writes it (``type`` name and code IST0106,
  ``level``, ``documentationUrl``, plus the ``message``), with ``observedGeneration``;
  and :meth:`KubeConfigSource.publish_status` writes a status computed elsewhere (the
  Gateway API's conditions). Without it nothing is written to the API server.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pilothouse.backoff import Backoff
from pilothouse.config.documents import RawObject
from pilothouse.config.load import Loader, Problem
from pilothouse.config.model import Config, ConfigKey, Origin
from pilothouse.config.schema import Schema
from pilothouse.config.validation.report import Severity
from pilothouse.sources.availability import Availability
from pilothouse.sources.kubernetes.client import (
    KubeApiError,
    KubeConfigError,
    ResourceRef,
    new_api_client,
    request,
)
from pilothouse.sources.kubernetes.events import KubeEvent, WatchEventType
from pilothouse.sources.kubernetes.informer import Informer
from pilothouse.sources.memory import MemoryStore

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient

log = logging.getLogger("pilothouse.sources.kubernetes")

SCHEMA_ERROR_CODE = "IST0106"
SCHEMA_ERROR_NAME = "SchemaValidationError"
DOCUMENTATION = "https://istio.io/latest/docs/reference/config/analysis/ist0106/"


def resource_refs(schema: Schema) -> tuple[ResourceRef, ...]:
    """The versions of ``schema``'s resource to read, preferred first."""
    return tuple(
        ResourceRef(schema.group, version, schema.plural, schema.namespaced)
        for version in schema.versions
    )


class KubeConfigSource:
    """Istio config from a Kubernetes API server into its own :class:`MemoryStore`."""

    def __init__(
        self,
        name: str,
        loader: Loader,
        *,
        kubeconfig: str | None = None,
        namespace: str = "",
        label_selector: str = "",
        write_status: bool = False,
        backoff: Backoff | None = None,
        absent_retry: float = 30.0,
    ) -> None:
        self.loader = loader
        self.store = MemoryStore(name=name)
        self.namespace = namespace
        self.label_selector = label_selector
        self.write_status = write_status
        self._kubeconfig = kubeconfig
        self._backoff = backoff
        self._absent_retry = absent_retry
        self._stop = asyncio.Event()
        self._problems: dict[ConfigKey, tuple[Problem, ...]] = {}
        self.informers: list[Informer] = []
        self._writes: set[asyncio.Task[None]] = set()
        self._by_kind: dict[str, Informer] = {}
        self._client: ApiClient | None = None
        self._setup_problem: str | None = None
        self._state = Availability(name, False, "not connected yet", time.time())

    @property
    def name(self) -> str:
        return self.store.name

    def availability(self) -> Availability:
        """Unavailable while the cluster configuration is unusable, before the first
        lists, or while any kind's list or watch fails (the first such kind and why);
        available otherwise, naming the kinds that cannot be read (403/404) and the
        malformed objects skipped."""
        available, reason = self._judge()
        was = self._state
        if (available, reason) != (was.available, was.reason):
            since = was.since if available == was.available else time.time()
            self._state = Availability(self.name, available, reason, since)
        return self._state

    def _judge(self) -> tuple[bool, str]:
        if self._setup_problem is not None:
            return False, self._setup_problem
        if not self.informers:
            return False, "not connected yet"
        failing = [(i.resource, i.problem) for i in self.informers if i.problem is not None]
        if failing:
            resource, problem = failing[0]
            more = f" (and {len(failing) - 1} more kinds)" if len(failing) > 1 else ""
            return False, f"{resource}: {problem}{more}"
        if not self.has_synced():
            return False, "not listed yet"
        notes = []
        unread = self.unread()
        if unread:
            notes.append(f"{len(unread)} kinds cannot be read, first {min(unread)}")
        skipped = sum(i.skipped.count for i in self.informers)
        if skipped:
            notes.append(f"{skipped} malformed objects or events skipped")
        return True, "; ".join(notes)

    def has_synced(self) -> bool:
        return self.store.has_synced()

    def problems(self) -> dict[ConfigKey, tuple[Problem, ...]]:
        """What validation found in each object that has problems now."""
        return dict(self._problems)

    def unread(self) -> dict[str, str]:
        """The resources that cannot be read now, and why (``404 NotFound``: the CRD is
        not installed; ``403 Forbidden``: not allowed)."""
        return {i.resource: i.absent for i in self.informers if i.absent is not None}

    def config_errors(self) -> int:
        """Objects rejected now (a valid older version may still be served)."""
        return sum(
            1
            for problems in self._problems.values()
            if any(p.severity is Severity.ERROR for p in problems)
        )

    def close(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        """Read every kind until :meth:`close`. A cluster configuration that cannot be
        used is logged and the source stays unsynced (so ``/ready`` says so)."""
        try:
            client = await new_api_client(self._kubeconfig)
        except KubeConfigError as problem:
            log.error("%s: %s", self.name, problem)
            self._setup_problem = str(problem)
            await self._stop.wait()
            return
        self._client = client
        try:
            for schema in self.loader.schemas:
                if self.namespace and not schema.namespaced:
                    continue  # limited to one namespace: cluster-scoped kinds are not read
                first, *others = resource_refs(schema)
                informer = Informer(
                    client,
                    first,
                    fallbacks=tuple(others),
                    namespace=self.namespace,
                    label_selector=self.label_selector,
                    backoff=self._backoff,
                    absent_retry=self._absent_retry,
                )
                informer.subscribe(self._handler(schema, informer))
                self.informers.append(informer)
                self._by_kind[schema.kind] = informer
            async with asyncio.TaskGroup() as tasks:
                running = [tasks.create_task(i.run()) for i in self.informers]
                synced = tasks.create_task(self._mark_synced())
                await self._stop.wait()
                for informer in self.informers:
                    informer.close()
                for task in [*running, synced, *self._writes]:
                    task.cancel()
        finally:
            self._client = None
            await client.close()

    async def _mark_synced(self) -> None:
        await asyncio.gather(*(i.wait_synced() for i in self.informers))
        self.store.mark_synced()
        missing = [i.resource for i in self.informers if i.absent is not None]
        log.info(
            "Kubernetes config synced",
            extra={"source": self.name, "objects": len(self.store), "unread": len(missing)},
        )

    def _handler(self, schema: Schema, informer: Informer) -> Callable[[KubeEvent], None]:
        def on_event(event: KubeEvent) -> None:
            meta = event.obj.get("metadata") or {}
            namespace = str(meta.get("namespace") or "") if schema.namespaced else ""
            key = ConfigKey(schema.kind, namespace, str(meta.get("name") or ""))
            if event.type is WatchEventType.DELETED:
                self._problems.pop(key, None)
                self.store.delete(key)
                return
            self._load(schema, informer, key, event.obj)

        return on_event

    def _load(
        self, schema: Schema, informer: Informer, key: ConfigKey, obj: dict[str, Any]
    ) -> None:
        path = informer.ref.path(key.namespace, key.name)
        raw = RawObject(obj, self.name, 0, {})
        config, found, _named = self.loader.load_object(raw)
        # The API server's JSON has no lines: problems name the source and the object.
        problems = tuple(
            Problem(p.severity, self.name, None, p.message, p.key or key) for p in found
        )
        if problems != self._problems.get(key, ()):
            # Logged when they change, not again for each status-only update.
            for problem in problems:
                if problem.severity is Severity.ERROR:
                    log.warning("%s", problem)
                else:
                    log.info("%s", problem)
            if config is None and self.store.get(key) is not None:
                log.warning("%s: keeping its last good version", key)
        if problems:
            self._problems[key] = problems
        else:
            self._problems.pop(key, None)
        if config is not None:
            self.store.apply(_with_origin(config, Origin(self.name, path)))
        if self.write_status:
            self._write_status(informer, key, obj, problems)

    # -- --write-status ------------------------------------------------------------------

    def _write_status(
        self,
        informer: Informer,
        key: ConfigKey,
        obj: dict[str, Any],
        problems: tuple[Problem, ...],
    ) -> None:
        status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
        assert isinstance(status, dict)
        wanted = validation_messages(problems)
        generation = (obj.get("metadata") or {}).get("generation")
        same = (status.get("validationMessages") or []) == wanted and (
            not wanted or status.get("observedGeneration") == generation
        )
        if same or self._client is None:
            return
        patch: dict[str, Any] = {
            "status": {
                "validationMessages": wanted or None,
                "observedGeneration": generation,
            }
        }
        path = informer.ref.path(key.namespace, key.name, "status")
        task = asyncio.get_running_loop().create_task(self._patch(path, patch, key))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    def publish_status(self, key: ConfigKey, status: dict[str, Any]) -> bool:
        """Merge ``status`` into the ``status`` of the object ``key`` names, when this
        source holds it and writes status (a controller's status computed elsewhere, such
        as the Gateway API's conditions); False when it does not."""
        informer = self._by_kind.get(key.kind)
        if not self.write_status or informer is None or self.store.get(key) is None:
            return False
        path = informer.ref.path(key.namespace, key.name, "status")
        task = asyncio.get_running_loop().create_task(self._patch(path, {"status": status}, key))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)
        return True

    async def _patch(self, path: str, patch: dict[str, Any], key: ConfigKey) -> None:
        client = self._client
        if client is None:
            return
        try:
            await request(
                client, "PATCH", path, body=patch, content_type="application/merge-patch+json"
            )
        except KubeApiError as problem:
            # istiod ignores conflicts too: the next event brings the object back here.
            log.warning("cannot write the status of %s: %s", key, problem)
        except Exception as problem:
            log.warning("cannot write the status of %s: %s", key, type(problem).__name__)


def validation_messages(problems: tuple[Problem, ...]) -> list[dict[str, Any]]:
    """``status.validationMessages`` for ``problems``, as istiod's analysis writes them."""
    return [
        {
            "type": {"name": SCHEMA_ERROR_NAME, "code": SCHEMA_ERROR_CODE},
            "level": "ERROR" if p.severity is Severity.ERROR else "WARNING",
            "documentationUrl": DOCUMENTATION,
            "message": p.message,
        }
        for p in problems
    ]


def _with_origin(config: Config, origin: Origin) -> Config:
    return Config(
        kind=config.kind,
        name=config.name,
        namespace=config.namespace,
        spec=config.spec,
        labels=config.labels,
        annotations=config.annotations,
        resource_version=config.resource_version,
        creation_time=config.creation_time,
        origin=origin,
    )
