"""A fake Kubernetes API server for tests and benchmarks: a fake because no real API
server (nor etcd behind one) can run on these machines.

It speaks the real list/watch protocol over HTTP on loopback, and is strict: where the
real server refuses a request, this one refuses too, with the same status code and a
``Status`` object (reason and message) in the body.

- Paths: ``/api/v1/...`` for the core group and ``/apis/<group>/<version>/...`` for the
  others; namespaced resources under ``namespaces/<ns>/<plural>`` and (list/watch only)
  across all namespaces at ``<plural>``; cluster-scoped ones only at ``<plural>``; one
  object at ``.../<plural>/<name>`` and its ``/status`` subresource (GET, PUT, merge
  PATCH).
- Served: core/v1 Services, Pods, Nodes, Namespaces, ConfigMaps, Secrets;
  discovery.k8s.io/v1 EndpointSlices; the Istio CRDs (networking.istio.io v1, v1beta1,
  v1alpha3; security.istio.io v1, v1beta1; telemetry and extensions as istiod's table).
  Every version of a kind reads the same stored object (no conversion, like Istio's CRDs);
  ``apiVersion`` is rewritten to the version asked for.
- One resourceVersion counter for everything, as etcd's revision. List answers carry it
  in ``metadata.resourceVersion``; ``limit``/``continue`` paginate from one snapshot, and
  a continue token older than the compaction point is ``410 Gone`` (reason Expired).
- ``?watch=1&resourceVersion=N`` streams JSON lines: every change after N (ADDED,
  MODIFIED, DELETED), BOOKMARKs when ``allowWatchBookmarks`` is set (every
  ``bookmark_interval`` seconds and on :meth:`FakeApiServer.bookmark`); with no
  resourceVersion or ``0``, the current objects first as ADDED. N older than what the
  server keeps (see :meth:`FakeApiServer.compact`) gives one ``ERROR`` event holding a
  410 Expired Status, as the real watch cache does. ``timeoutSeconds`` ends the stream.
  ``sendInitialEvents=true`` (watch-list) needs ``resourceVersionMatch=NotOlderThan`` and
  bookmarks, and ends its initial events with the ``k8s.io/initial-events-end`` bookmark.
- ``labelSelector`` (``=``, ``==``, ``!=``, ``in``, ``notin``, exists, ``!``) and
  ``fieldSelector`` (``metadata.name``, ``metadata.namespace``, plus the few fields the
  real server indexes per kind; any other field is 400) filter lists and watches; a watch
  sees an object leave its selector as DELETED and enter it as ADDED.
- :meth:`FakeApiServer.use_rbac` authorizes by Roles' rules (``resourceNames`` too);
  :meth:`FakeApiServer.forbid` makes a resource answer 403; :meth:`uninstall` removes a
  CRD (404 on all its paths, and its open watches end); a bearer token, when set, is
  required (401 otherwise). :meth:`drop_watches` cuts every open watch connection.

For tests of what a client does with answers no real server should give,
:meth:`FakeApiServer.script_list` answers the next list requests of a resource with given
bytes, and :meth:`FakeApiServer.send_raw` writes a given line into its open watches.

Usage: ``async with FakeApiServer() as api: api.create({...}); api.kubeconfig(path)``.
Objects are created, replaced and deleted with :meth:`create`, :meth:`replace`,
:meth:`delete` (or over HTTP with POST, PUT and DELETE); :meth:`replace` and :meth:`apply`
leave ``status`` alone, as the real server does, and :meth:`update_status` writes it.
For a test's convenience, :meth:`create` keeps a ``status`` given with the object (a
POST over HTTP drops it, as the real server does).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import datetime
import json
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Resource:
    """One resource the server knows: its group, served versions, plural and kind."""

    group: str
    versions: tuple[str, ...]
    plural: str
    kind: str
    namespaced: bool = True
    fields: frozenset[str] = frozenset()
    """Field-selector fields beyond metadata.name and metadata.namespace."""

    @property
    def name(self) -> str:
        """``<plural>.<group>`` (just the plural for the core group), as CRDs are named."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def is_crd(self) -> bool:
        return self.group.endswith(".istio.io")

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version


_NETWORKING = ("v1", "v1beta1", "v1alpha3")
_SECURITY = ("v1", "v1beta1")

RESOURCES: tuple[Resource, ...] = (
    Resource("", ("v1",), "services", "Service"),
    Resource("", ("v1",), "pods", "Pod",
             fields=frozenset({"spec.nodeName", "status.phase", "status.podIP",
                               "spec.serviceAccountName"})),
    Resource("", ("v1",), "nodes", "Node", namespaced=False),
    Resource("", ("v1",), "namespaces", "Namespace", namespaced=False,
             fields=frozenset({"status.phase"})),
    Resource("", ("v1",), "configmaps", "ConfigMap"),
    Resource("", ("v1",), "secrets", "Secret", fields=frozenset({"type"})),
    Resource("discovery.k8s.io", ("v1",), "endpointslices", "EndpointSlice"),
    *(
        Resource("networking.istio.io", _NETWORKING, plural, kind)
        for kind, plural in (
            ("VirtualService", "virtualservices"),
            ("DestinationRule", "destinationrules"),
            ("Gateway", "gateways"),
            ("ServiceEntry", "serviceentries"),
            ("Sidecar", "sidecars"),
            ("WorkloadEntry", "workloadentries"),
            ("WorkloadGroup", "workloadgroups"),
        )
    ),
    Resource("networking.istio.io", ("v1alpha3",), "envoyfilters", "EnvoyFilter"),
    Resource("networking.istio.io", ("v1beta1",), "proxyconfigs", "ProxyConfig"),
    *(
        Resource("security.istio.io", _SECURITY, plural, kind)
        for kind, plural in (
            ("PeerAuthentication", "peerauthentications"),
            ("AuthorizationPolicy", "authorizationpolicies"),
            ("RequestAuthentication", "requestauthentications"),
        )
    ),
    Resource("telemetry.istio.io", ("v1", "v1alpha1"), "telemetries", "Telemetry"),
    Resource("extensions.istio.io", ("v1alpha1",), "wasmplugins", "WasmPlugin"),
    Resource("gateway.networking.k8s.io", ("v1", "v1beta1"), "gatewayclasses", "GatewayClass",
             namespaced=False),
    *(
        Resource("gateway.networking.k8s.io", versions, plural, kind)
        for kind, plural, versions in (
            ("Gateway", "gateways", ("v1", "v1beta1")),
            ("HTTPRoute", "httproutes", ("v1", "v1beta1")),
            ("GRPCRoute", "grpcroutes", ("v1",)),
            ("TCPRoute", "tcproutes", ("v1alpha2",)),
            ("TLSRoute", "tlsroutes", ("v1alpha2", "v1alpha3")),
            ("ReferenceGrant", "referencegrants", ("v1beta1", "v1")),
        )
    ),
)  # fmt: skip

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


class ApiError(Exception):
    """A refusal: the HTTP status, the Status reason and a message."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message

    def status(self) -> Obj:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }

    def response(self) -> web.Response:
        return web.json_response(self.status(), status=self.code)


def _expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


# -- selectors ----------------------------------------------------------------------------

_REQUIREMENT = re.compile(
    r"^\s*(?P<neg>!)?\s*(?P<key>[A-Za-z0-9_./-]+)\s*"
    r"(?:(?P<op>==|!=|=|\s+in\s+|\s+notin\s+)\s*(?P<value>.*?))?\s*$"
)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _split_selector(text: str) -> list[str]:
    """Split at commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p for p in parts if p.strip()]


def parse_label_selector(text: str) -> Callable[[dict[str, str]], bool]:
    """A predicate over labels; ApiError 400 for a selector the real server refuses."""
    tests: list[Callable[[dict[str, str]], bool]] = []
    for part in _split_selector(text):
        match = _REQUIREMENT.match(part)
        if match is None:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {part!r}")
        key, op, value, neg = match["key"], match["op"], match["value"], match["neg"]
        if op is None:
            tests.append((lambda k: lambda have: k not in have)(key) if neg else
                         (lambda k: lambda have: k in have)(key))  # fmt: skip
            continue
        if neg:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {part!r}")
        op = op.strip()
        if op in ("in", "notin"):
            if not (value.startswith("(") and value.endswith(")")):
                raise ApiError(400, "BadRequest", f"found {value!r}, expected: '('")
            values = {v.strip() for v in value[1:-1].split(",") if v.strip()}
        else:
            values = {value}
        for item in values:
            if len(item) > 63 or not _LABEL_VALUE.match(item):
                raise ApiError(400, "BadRequest", f"invalid label value: {item!r}")
        if op in ("=", "==", "in"):
            tests.append((lambda k, vs: lambda have: have.get(k) in vs)(key, values))
        else:
            tests.append((lambda k, vs: lambda have: have.get(k) not in vs)(key, values))
    return lambda labels: all(test(labels) for test in tests)


def _field_value(obj: Obj, path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def parse_field_selector(text: str, resource: Resource) -> Callable[[Obj], bool]:
    allowed = {"metadata.name", "metadata.namespace"} | resource.fields
    tests: list[Callable[[Obj], bool]] = []
    for part in _split_selector(text):
        match = re.match(r"^\s*([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*?)\s*$", part)
        if match is None:
            raise ApiError(400, "BadRequest", f"invalid field selector: {part!r}")
        name, op, value = match.groups()
        if name not in allowed:
            raise ApiError(
                400,
                "BadRequest",
                f'"{name}" is not a known field selector: only "{", ".join(sorted(allowed))}"',
            )
        if op == "!=":
            tests.append((lambda n, v: lambda o: _field_value(o, n) != v)(name, value))
        else:
            tests.append((lambda n, v: lambda o: _field_value(o, n) == v)(name, value))
    return lambda obj: all(test(obj) for test in tests)


# -- storage -------------------------------------------------------------------------------


@dataclass
class _Event:
    rv: int
    type: str
    obj: Obj
    old: Obj | None = None
    """The previous state on MODIFIED (a watch with a selector needs it)."""


@dataclass(eq=False)
class _Watch:
    resource: Resource
    queue: asyncio.Queue[_Event | None] = field(default_factory=asyncio.Queue)


@dataclass
class _Kept:
    """What the server keeps of one resource: its objects and its recent events."""

    objects: dict[tuple[str, str], Obj] = field(default_factory=dict)
    events: list[_Event] = field(default_factory=list)


@dataclass
class RequestRecord:
    method: str
    path: str
    query: dict[str, str]


class FakeApiServer:
    """The fake API server; see the module docstring."""

    def __init__(
        self,
        *,
        token: str | None = None,
        bookmark_interval: float = 1.0,
        resources: Iterable[Resource] = RESOURCES,
    ) -> None:
        self.token = token
        self.bookmark_interval = bookmark_interval
        self._resources = {r.name: r for r in resources}
        self._kept = {name: _Kept() for name in self._resources}
        self._installed = {name for name, r in self._resources.items()}
        self._forbidden: set[tuple[str, str]] = set()
        self._versions: dict[str, tuple[str, ...]] = {}
        self._rbac: list[tuple[str | None, Obj]] | None = None
        self._revision = 1
        self._compacted = 0
        """Events at or below this revision are forgotten."""
        self._watches: set[_Watch] = set()
        self._watch_tasks: set[asyncio.Task[Any]] = set()
        self.requests: list[RequestRecord] = []
        self._scripted: dict[str, list[bytes]] = {}
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- life cycle --------------------------------------------------------------------

    async def start(self) -> int:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None and server.sockets  # type: ignore[attr-defined]
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        return self.port

    async def stop(self) -> None:
        self.drop_watches()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeApiServer:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kubeconfig(self, path: Path, *, namespace: str = "default") -> Path:
        """Write a kubeconfig that points at this server (with its token if it has one)."""
        user: Obj = {"token": self.token} if self.token else {}
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": user}],
            "contexts": [
                {
                    "name": "fake",
                    "context": {"cluster": "fake", "user": "tester", "namespace": namespace},
                }
            ],
            "current-context": "fake",
        }
        path.write_text(json.dumps(config))
        return path

    # -- what tests control ---------------------------------------------------------------

    @property
    def revision(self) -> int:
        return self._revision

    def resource(self, name: str) -> Resource:
        """A resource by ``<plural>.<group>`` (or the plural for core)."""
        return self._resources[name]

    def forbid(self, name: str, verb: str = "*") -> None:
        """Requests for resource ``name`` (``list``, ``watch``, ``update`` … or ``*``) get 403."""
        self._forbidden.add((name, verb))

    def allow(self, name: str) -> None:
        self._forbidden = {f for f in self._forbidden if f[0] != name}

    def uninstall(self, name: str) -> None:
        """The CRD ``name`` is not installed: 404 on its paths; open watches on it end."""
        self._installed.discard(name)
        self._kept[name] = _Kept()
        for watch in list(self._watches):
            if watch.resource.name == name:
                watch.queue.put_nowait(None)

    def install(self, name: str) -> None:
        self._installed.add(name)

    def use_rbac(self, documents: Iterable[Obj]) -> None:
        """Authorize every request by these ClusterRoles and Roles (their rules only;
        bindings are taken as granted to the caller): whatever no rule allows is 403."""
        self._rbac = []
        for document in documents:
            if document.get("kind") not in ("ClusterRole", "Role"):
                continue
            scope = None if document["kind"] == "ClusterRole" else document["metadata"]["namespace"]
            self._rbac += [(scope, rule) for rule in document.get("rules") or []]

    def _rbac_allows(
        self, resource: Resource, verb: str, sub: str, namespace: str, name: str = ""
    ) -> bool:
        if self._rbac is None:
            return True
        target = f"{resource.plural}/{sub}" if sub else resource.plural
        for scope, rule in self._rbac:
            if scope is not None and scope != namespace:
                continue
            if resource.group not in rule.get("apiGroups", ()) and "*" not in rule.get(
                "apiGroups", ()
            ):
                continue
            if target not in rule.get("resources", ()) and "*" not in rule.get("resources", ()):
                continue
            if rule.get("resourceNames") and name not in rule["resourceNames"]:
                continue  # as the real server: such a rule grants requests naming one of them
            if verb in rule.get("verbs", ()) or "*" in rule.get("verbs", ()):
                return True
        return False

    def serve_versions(self, name: str, *versions: str) -> None:
        """Serve only ``versions`` of ``name`` (an older CRD); the others are 404."""
        self._versions[name] = versions

    def compact(self) -> int:
        """Forget every event so far (as etcd compaction does): a watch or a continue
        token from an older resourceVersion gets 410 Gone. Returns the revision kept."""
        self._compacted = self._revision
        for kept in self._kept.values():
            kept.events.clear()
        return self._compacted

    def drop_watches(self) -> int:
        """Cut every open watch connection (as a load balancer or a restart does)."""
        count = len(self._watches)
        for task in list(self._watch_tasks):
            task.cancel()
        return count

    def bookmark(self) -> None:
        """Send a BOOKMARK now to every watch that allows them."""
        for watch in list(self._watches):
            watch.queue.put_nowait(_Event(self._revision, "BOOKMARK", {}))

    def script_list(self, name: str, *bodies: bytes) -> None:
        """Answer the next list requests of resource ``name`` (one per body, in order)
        with ``200`` and these bytes as they are, whatever the request asked."""
        self._scripted.setdefault(name, []).extend(bodies)

    def unscript(self, name: str) -> None:
        """Forget the scripted list answers of ``name`` not given yet."""
        self._scripted.pop(name, None)

    def scripted_left(self, name: str) -> int:
        """Scripted list answers of ``name`` not given yet."""
        return len(self._scripted.get(name, ()))

    def send_raw(self, name: str, line: bytes) -> int:
        """Write ``line`` (and a newline) as it is into every open watch of resource
        ``name``, in order with its other events; returns how many watches got it."""
        count = 0
        for watch in list(self._watches):
            if watch.resource.name == name:
                watch.queue.put_nowait(_Event(self._revision, "RAW", {"line": line}))
                count += 1
        return count

    def open_watches(self, name: str) -> int:
        return sum(1 for watch in self._watches if watch.resource.name == name)

    def objects(self, name: str) -> list[Obj]:
        kept = self._kept[name]
        return [copy.deepcopy(kept.objects[k]) for k in sorted(kept.objects)]

    def get(self, name: str, namespace: str, object_name: str) -> Obj | None:
        found = self._kept[name].objects.get((namespace, object_name))
        return copy.deepcopy(found) if found is not None else None

    def create(self, obj: Obj) -> Obj:
        """Store a new object (its resource found from apiVersion and kind)."""
        resource, version = self._resource_of(obj)
        return self._create(resource, version, copy.deepcopy(obj))

    def replace(self, obj: Obj) -> Obj:
        """Replace an object (a resourceVersion in it must match, as PUT)."""
        resource, version = self._resource_of(obj)
        return self._replace(resource, version, copy.deepcopy(obj), status_only=False)

    def update_status(self, obj: Obj) -> Obj:
        """Replace only the object's ``status`` (the ``/status`` subresource): how a
        kubelet marks a Pod ready, or a controller writes a Service's load balancer."""
        resource, version = self._resource_of(obj)
        return self._replace(resource, version, copy.deepcopy(obj), status_only=True)

    def apply(self, obj: Obj) -> Obj:
        """Create, or replace whatever is stored (a test's ``kubectl apply``)."""
        resource, version = self._resource_of(obj)
        meta = obj.get("metadata", {})
        key = (meta.get("namespace", "") if resource.namespaced else "", meta.get("name", ""))
        if key not in self._kept[resource.name].objects:
            return self._create(resource, version, copy.deepcopy(obj))
        body = copy.deepcopy(obj)
        body["metadata"].pop("resourceVersion", None)
        return self._replace(resource, version, body, status_only=False)

    def delete(self, name: str, namespace: str, object_name: str) -> Obj:
        return self._delete(self._resources[name], namespace, object_name)

    def _resource_of(self, obj: Obj) -> tuple[Resource, str]:
        group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
        for resource in self._resources.values():
            if (
                resource.group == group
                and resource.kind == obj.get("kind")
                and version in resource.versions
            ):
                return resource, version
        raise ValueError(f"no resource for {obj.get('apiVersion')} {obj.get('kind')}")

    # -- storage -------------------------------------------------------------------------

    def _next(self) -> int:
        self._revision += 1
        return self._revision

    def _record(self, resource: Resource, event: _Event) -> None:
        self._kept[resource.name].events.append(event)
        for watch in list(self._watches):
            if watch.resource.name == resource.name:
                watch.queue.put_nowait(event)

    def _create(self, resource: Resource, version: str, obj: Obj) -> Obj:
        meta = obj.setdefault("metadata", {})
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            raise ApiError(422, "Invalid", f"{resource.kind} is invalid: metadata.name: Required")
        if resource.namespaced:
            if not meta.get("namespace"):
                raise ApiError(
                    422, "Invalid", f"{resource.kind} is invalid: metadata.namespace: Required"
                )
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            raise ApiError(
                422,
                "Invalid",
                f'{resource.kind} "{name}" is invalid: metadata.resourceVersion: '
                "must not be set on create",
            )
        key = (meta.get("namespace", ""), name)
        kept = self._kept[resource.name]
        if key in kept.objects:
            raise ApiError(409, "AlreadyExists", f'{resource.plural} "{name}" already exists')
        rv = self._next()
        meta["resourceVersion"] = str(rv)
        meta["uid"] = str(uuid.uuid4())
        meta["generation"] = 1
        meta["creationTimestamp"] = _now()
        obj["apiVersion"] = resource.api_version(version)
        obj["kind"] = resource.kind
        kept.objects[key] = obj
        self._record(resource, _Event(rv, "ADDED", obj))
        return copy.deepcopy(obj)

    def _replace(self, resource: Resource, version: str, obj: Obj, *, status_only: bool) -> Obj:
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace", "") if resource.namespaced else "", meta.get("name", ""))
        kept = self._kept[resource.name]
        old = kept.objects.get(key)
        if old is None:
            raise ApiError(404, "NotFound", f'{resource.plural} "{key[1]}" not found')
        given = meta.get("resourceVersion")
        if given and given != old["metadata"]["resourceVersion"]:
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {resource.name} "{key[1]}": the object has '
                "been modified; please apply your changes to the latest version and try again",
            )
        new = copy.deepcopy(old)
        if status_only:
            new["status"] = obj.get("status")
            if new["status"] is None:
                new.pop("status")
        else:
            for part in set(new) | set(obj):
                if part in ("metadata", "apiVersion", "kind", "status"):
                    continue
                if part in obj:
                    new[part] = obj[part]
                else:
                    new.pop(part, None)
            for part in ("labels", "annotations"):
                if part in meta:
                    new["metadata"][part] = meta[part]
                else:
                    new["metadata"].pop(part, None)
            if {k: v for k, v in new.items() if k not in ("metadata", "status")} != {
                k: v for k, v in old.items() if k not in ("metadata", "status")
            }:
                new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
        if new == old:
            return copy.deepcopy(old)  # a no-op update keeps its resourceVersion
        rv = self._next()
        new["metadata"]["resourceVersion"] = str(rv)
        kept.objects[key] = new
        self._record(resource, _Event(rv, "MODIFIED", new, old))
        return copy.deepcopy(new)

    def _delete(self, resource: Resource, namespace: str, name: str) -> Obj:
        kept = self._kept[resource.name]
        old = kept.objects.pop((namespace if resource.namespaced else "", name), None)
        if old is None:
            raise ApiError(404, "NotFound", f'{resource.plural} "{name}" not found')
        rv = self._next()
        gone = copy.deepcopy(old)
        gone["metadata"]["resourceVersion"] = str(rv)
        self._record(resource, _Event(rv, "DELETED", gone))
        return copy.deepcopy(gone)

    # -- HTTP ----------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(RequestRecord(request.method, request.path, dict(request.query)))
        try:
            if self.token is not None and (
                request.headers.get("Authorization") != f"Bearer {self.token}"
            ):
                raise ApiError(401, "Unauthorized", "Unauthorized")
            return await self._route(request)
        except ApiError as refused:
            return refused.response()

    async def _route(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        if parts == ["version"]:
            return web.json_response({"major": "1", "minor": "36", "gitVersion": "v1.36.0-fake"})
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        namespace = ""
        if len(rest) >= 3 and rest[0] == "namespaces" and rest[2:] != ["status"]:
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        resource = self._served(group, version, rest[0])
        if namespace and not resource.namespaced:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) >= 2 else ""
        sub = rest[2] if len(rest) == 3 else ""
        if sub not in ("", "status"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if name and resource.namespaced and not namespace:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        watching = _flag(request.query.get("watch", ""))
        method = request.method
        verb = {
            "GET": "watch" if watching else ("get" if name else "list"),
            "POST": "create",
            "PUT": "update",
            "PATCH": "patch",
            "DELETE": "delete",
        }.get(method)
        if verb is None:
            raise ApiError(405, "MethodNotAllowed", f"{method} is not supported")
        self._authorize(resource, verb, sub, namespace, name)
        if verb == "list":
            return self._list(request, resource, version, namespace)
        if verb == "watch":
            if name:
                raise ApiError(400, "BadRequest", "watch of a single object: use a fieldSelector")
            return await self._watch(request, resource, version, namespace)
        if verb == "get":
            return web.json_response(self._get(resource, version, namespace, name))
        return await self._write(request, resource, version, namespace, name, verb, sub)

    def _served(self, group: str, version: str, plural: str) -> Resource:
        for resource in self._resources.values():
            if resource.group == group and resource.plural == plural:
                served = self._versions.get(resource.name, resource.versions)
                if resource.name not in self._installed or version not in served:
                    break
                return resource
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    def _authorize(
        self, resource: Resource, verb: str, sub: str, namespace: str, name: str = ""
    ) -> None:
        target = f"{resource.name}/{sub}" if sub else resource.name
        refused = (resource.name, "*") in self._forbidden or (
            resource.name,
            verb,
        ) in self._forbidden
        if refused or not self._rbac_allows(resource, verb, sub, namespace, name):
            scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
            group = resource.group or '""'
            raise ApiError(
                403,
                "Forbidden",
                f'{target} is forbidden: User "system:serviceaccount:istio-system:pilothouse" '
                f'cannot {verb} resource "{resource.plural}" in API group "{group}" {scope}',
            )

    def _visible(self, resource: Resource, version: str, obj: Obj) -> Obj:
        shown = copy.deepcopy(obj)
        shown["apiVersion"] = resource.api_version(version)
        return shown

    def _selectors(
        self, request: web.Request, resource: Resource, namespace: str
    ) -> Callable[[Obj], bool]:
        labels = parse_label_selector(request.query.get("labelSelector", ""))
        fields = parse_field_selector(request.query.get("fieldSelector", ""), resource)

        def selected(obj: Obj) -> bool:
            meta = obj.get("metadata", {})
            if namespace and meta.get("namespace") != namespace:
                return False
            return labels(meta.get("labels") or {}) and fields(obj)

        return selected

    def _get(self, resource: Resource, version: str, namespace: str, name: str) -> Obj:
        found = self._kept[resource.name].objects.get((namespace, name))
        if found is None:
            raise ApiError(404, "NotFound", f'{resource.plural} "{name}" not found')
        return self._visible(resource, version, found)

    def _list(
        self, request: web.Request, resource: Resource, version: str, namespace: str
    ) -> web.Response:
        scripted = self._scripted.get(resource.name)
        if scripted:
            return web.Response(body=scripted.pop(0), content_type="application/json")
        query = request.query
        for flag in ("allowWatchBookmarks", "sendInitialEvents"):
            if flag in query and flag == "sendInitialEvents":
                raise ApiError(422, "Invalid", "sendInitialEvents is forbidden for list")
        rv_text = query.get("resourceVersion", "")
        match = query.get("resourceVersionMatch", "")
        if match and not rv_text:
            raise ApiError(
                422, "Invalid", "resourceVersionMatch is forbidden unless resourceVersion is set"
            )
        if match not in ("", "NotOlderThan", "Exact"):
            raise ApiError(422, "Invalid", f"resourceVersionMatch: unsupported value {match!r}")
        if rv_text:
            rv = _revision(rv_text)
            if rv > self._revision:
                raise ApiError(
                    504, "Timeout", f"Too large resource version: {rv}, current: {self._revision}"
                )
            if match == "Exact" and rv != self._revision:
                raise _expired(f"too old resource version: {rv} ({self._compacted})")
        selected = self._selectors(request, resource, namespace)
        limit = _count(query.get("limit", "0"), "limit")
        after: tuple[str, str] | None = None
        snapshot = self._revision
        token = query.get("continue", "")
        if token:
            if rv_text:
                raise ApiError(
                    422, "Invalid", "specifying resource version is not allowed with continue"
                )
            snapshot, after = _read_continue(token)
            if snapshot <= self._compacted or snapshot != self._revision:
                # The fake keeps no history of objects: a snapshot that moved on is gone.
                raise _expired(
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter."
                )
        kept = self._kept[resource.name].objects
        keys = [k for k in sorted(kept) if after is None or k > after]
        items: list[Obj] = []
        following = ""
        last = ("", "")
        for key in keys:
            if not selected(kept[key]):
                continue
            if limit and len(items) == limit:
                following = _write_continue(snapshot, last)
                break
            items.append(self._visible(resource, version, kept[key]))
            last = key
        metadata: Obj = {"resourceVersion": str(snapshot)}
        if following:
            metadata["continue"] = following
        return web.json_response(
            {
                "kind": f"{resource.kind}List",
                "apiVersion": resource.api_version(version),
                "metadata": metadata,
                "items": items,
            }
        )

    async def _watch(
        self, request: web.Request, resource: Resource, version: str, namespace: str
    ) -> web.StreamResponse:
        query = request.query
        bookmarks = _flag(query.get("allowWatchBookmarks", ""))
        initial = _flag(query.get("sendInitialEvents", ""))
        rv_text = query.get("resourceVersion", "")
        match = query.get("resourceVersionMatch", "")
        if initial and (match != "NotOlderThan" or not bookmarks):
            raise ApiError(
                422,
                "Invalid",
                "sendInitialEvents requires allowWatchBookmarks=true and "
                "resourceVersionMatch=NotOlderThan",
            )
        if match and not initial:
            raise ApiError(
                422, "Invalid", "resourceVersionMatch is forbidden for watch unless "
                "sendInitialEvents is set",
            )  # fmt: skip
        if "limit" in query or "continue" in query:
            raise ApiError(400, "BadRequest", "limit and continue are not allowed on watch")
        timeout = _count(query.get("timeoutSeconds", "0"), "timeoutSeconds")
        selected = self._selectors(request, resource, namespace)
        start = _revision(rv_text) if rv_text not in ("", "0") else None
        if start is not None and start > self._revision:
            raise ApiError(
                504, "Timeout", f"Too large resource version: {start}, current: {self._revision}"
            )
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        try:
            await response.prepare(request)
        except ConnectionResetError:
            return response  # the client went away before the stream began
        watch = _Watch(resource)
        task = asyncio.current_task()
        assert task is not None
        self._watches.add(watch)
        self._watch_tasks.add(task)
        try:
            await self._stream(response, watch, version, start, initial, bookmarks, timeout,
                               selected)  # fmt: skip
        except asyncio.CancelledError:
            # A dropped watch: the connection is cut without the closing chunk.
            if request.transport is not None:
                request.transport.abort()
            raise
        except ConnectionResetError:
            return response  # the client went away
        finally:
            self._watches.discard(watch)
            self._watch_tasks.discard(task)
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response

    async def _stream(
        self,
        response: web.StreamResponse,
        watch: _Watch,
        version: str,
        start: int | None,
        initial: bool,
        bookmarks: bool,
        timeout: int,
        selected: Callable[[Obj], bool],
    ) -> None:
        resource = watch.resource

        async def send(kind: str, obj: Obj) -> None:
            line = json.dumps({"type": kind, "object": obj}) + "\n"
            await response.write(line.encode())

        def mark(rv: int, end: bool = False) -> Obj:
            meta: Obj = {"resourceVersion": str(rv)}
            if end:
                meta["annotations"] = {INITIAL_EVENTS_END: "true"}
            return {"kind": resource.kind, "apiVersion": resource.api_version(version),
                    "metadata": meta}  # fmt: skip

        seen = self._revision
        if start is None or initial:
            kept = self._kept[resource.name].objects
            for key in sorted(kept):
                if selected(kept[key]):
                    await send("ADDED", self._visible(resource, version, kept[key]))
            if initial:
                await send("BOOKMARK", mark(seen, end=True))
        else:
            if start < self._compacted:
                await send(
                    "ERROR",
                    _expired(f"too old resource version: {start} ({self._compacted})").status(),
                )
                return  # fmt: skip
            for event in self._kept[resource.name].events:
                if event.rv > start:
                    await self._send_event(send, resource, version, event, selected)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout if timeout else None
        next_mark = loop.time() + self.bookmark_interval
        while True:
            now = loop.time()
            wait = next_mark - now if bookmarks else None
            if deadline is not None:
                left = deadline - now
                if left <= 0:
                    return
                wait = left if wait is None else min(wait, left)
            try:
                event = await asyncio.wait_for(watch.queue.get(), wait)
            except TimeoutError:
                if bookmarks and loop.time() >= next_mark:
                    await send("BOOKMARK", mark(self._revision))
                    next_mark = loop.time() + self.bookmark_interval
                continue
            if event is None:
                return  # the resource went away
            if event.type == "RAW":
                await response.write(event.obj["line"] + b"\n")
                continue
            if event.type == "BOOKMARK":
                if bookmarks:
                    await send("BOOKMARK", mark(event.rv))
                continue
            if event.rv <= seen and (start is None or initial):
                continue  # already in the initial ADDED events
            await self._send_event(send, resource, version, event, selected)

    async def _send_event(
        self,
        send: Callable[[str, Obj], Any],
        resource: Resource,
        version: str,
        event: _Event,
        selected: Callable[[Obj], bool],
    ) -> None:
        now_in = selected(event.obj)
        kind = event.type
        if kind == "MODIFIED" and event.old is not None:
            was_in = selected(event.old)
            if was_in and not now_in:
                kind, now_in = "DELETED", True
            elif now_in and not was_in:
                kind = "ADDED"
        if now_in:
            await send(kind, self._visible(resource, version, event.obj))

    async def _write(
        self,
        request: web.Request,
        resource: Resource,
        version: str,
        namespace: str,
        name: str,
        verb: str,
        sub: str,
    ) -> web.Response:
        if verb == "create" and (name or sub):
            raise ApiError(405, "MethodNotAllowed", "POST is only allowed on a collection")
        if verb != "create" and not name:
            raise ApiError(405, "MethodNotAllowed", f"{request.method} needs an object name")
        if verb == "delete":
            if sub:
                raise ApiError(405, "MethodNotAllowed", "DELETE on a subresource")
            return web.json_response(
                self._visible(resource, version, self._delete(resource, namespace, name))
            )
        try:
            body = await request.json()
        except ValueError:
            raise ApiError(400, "BadRequest", "the request body is not JSON") from None
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the request body is not an object")
        if verb == "patch":
            kind = request.headers.get("Content-Type", "")
            if kind.split(";")[0].strip() != "application/merge-patch+json":
                raise ApiError(
                    415, "UnsupportedMediaType", "the body of the request was in an unknown "
                    "format - accepted media types include: application/merge-patch+json",
                )  # fmt: skip
            current = self._get(resource, version, namespace, name)
            body = _merge_patch(current, body)
        if (
            body.get("apiVersion") != resource.api_version(version)
            or body.get("kind") != resource.kind
        ):
            raise ApiError(
                400,
                "BadRequest",
                f"the API version in the data ({body.get('apiVersion')}, kind {body.get('kind')}) "
                f"does not match the path ({resource.api_version(version)}/{resource.kind})",
            )
        meta = body.setdefault("metadata", {})
        if resource.namespaced:
            given = meta.setdefault("namespace", namespace)
            if given != namespace:
                raise ApiError(
                    400, "BadRequest", "the namespace of the provided object does not match "
                    "the namespace sent on the request",
                )  # fmt: skip
        if verb == "create":
            body.pop("status", None)  # a create over HTTP sets no status, as the real server
            stored = self._create(resource, version, body)
            return web.json_response(self._visible(resource, version, stored), status=201)
        if meta.get("name") != name:
            raise ApiError(
                400, "BadRequest", "the name of the object does not match the name on the URL"
            )
        stored = self._replace(resource, version, body, status_only=sub == "status")
        return web.json_response(self._visible(resource, version, stored))


# -- small helpers -------------------------------------------------------------------------


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _flag(text: str) -> bool:
    if text in ("", "0", "false", "False"):
        return False
    if text in ("1", "true", "True"):
        return True
    raise ApiError(400, "BadRequest", f"invalid boolean value {text!r}")


def _revision(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ApiError(
            400, "BadRequest", f'resourceVersion: Invalid value: "{text}": must be an integer'
        ) from None
    if value < 0:
        raise ApiError(400, "BadRequest", f'resourceVersion: Invalid value: "{text}"')
    return value


def _count(text: str, name: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ApiError(400, "BadRequest", f"{name}: invalid value {text!r}") from None
    if value < 0:
        raise ApiError(400, "BadRequest", f"{name}: must not be negative")
    return value


def _write_continue(rv: int, last: tuple[str, str]) -> str:
    text = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": list(last)})
    return base64.urlsafe_b64encode(text.encode()).decode()


def _read_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except (ValueError, KeyError, IndexError, TypeError):
        raise ApiError(400, "BadRequest", "continue key is not valid") from None


def _merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge_patch(result.get(key), value)
    return result
