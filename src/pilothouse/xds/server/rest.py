"""REST-JSON discovery: what Envoy's ``api_type: REST`` subscriptions poll.

Envoy POSTs a proto3-JSON ``DiscoveryRequest`` to ``/v3/discovery:<type>`` every
``refresh_delay`` and applies the JSON ``DiscoveryResponse`` it gets back; a **304**
means "nothing changed" (Envoy counts it as an update attempt, not a success). There
is no stream and no ACK state: each request is answered on its own from the current
PushContext, through the same generators and resource cache as gRPC.

- The type comes from the path (``clusters``, ``endpoints``, ``listeners``,
  ``routes``); a ``type_url`` in the body, if any, must agree.
- Wildcard types (CDS, LDS) always get everything the proxy sees; per-name types
  (EDS, RDS) get the requested ``resource_names``, or everything when none are named.
- The response ``version_info`` is a hash of the type and each resource's name and
  content version, so it holds still while nothing changes; a request carrying it
  gets 304 with an empty body.
- Resources that point at other resources are generated for REST
  (``GenerationInput.rest``): an EDS cluster polls REST for its endpoints, since a
  REST-mode proxy has no ADS stream.
- Turning a resource's ``Any`` bytes into JSON is the expensive step, so each
  rendering is kept in a bounded LRU under (name, content version): a repeated poll
  that returns 200 costs a join of cached strings.
- Envoy's requests are large (about 77 KB, mostly ``node.extensions``, which
  pilothouse never reads); the extensions are dropped before the proto3 JSON
  mapping runs. On a 2-core VM, ``json_format.Parse`` of a whole real Envoy 1.40
  request took about 16 ms; with the extensions dropped a whole poll takes about
  1 ms, most of it ``json.loads`` of the body.
- A NACK (``error_detail``) is logged and counted; nothing else changes.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType
from typing import Any, Final, Protocol

from aiohttp import web
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2, json_format

from pilothouse.bootstrap.envoy import XDS_REST_CLUSTER
from pilothouse.push.cache import Resource, ResourceCache
from pilothouse.push.context import PushContext
from pilothouse.push.proxy import BadNode, ProxyIdentity
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.xds.builders.cluster import RestPolling
from pilothouse.xds.generators.base import GenerationInput, Generator
from pilothouse.xds.protocol.type_urls import CDS, EDS, LDS, RDS, is_wildcard_type, short_name
from pilothouse.xds.server.ads import node_identity

log = logging.getLogger("pilothouse.xds.rest")

REST_TYPES: Final = MappingProxyType(
    {"clusters": CDS, "endpoints": EDS, "listeners": LDS, "routes": RDS}
)
"""The ``/v3/discovery:<kind>`` path suffixes and their type URLs."""

DISCOVERY_PATH: Final = "/v3/discovery:{kind}"
JSON_CONTENT_TYPE: Final = "application/json"


@dataclass(frozen=True, slots=True)
class RestSettings:
    """Knobs of the REST endpoint.

    ``polling`` is what served resources tell a REST-mode proxy about polling for
    the resources they point at (the bootstrap's REST cluster and its pace); keep its
    ``refresh_delay`` equal to the bootstrap's.
    """

    max_body_bytes: int = 4 * 1024 * 1024
    json_cache_entries: int = 20_000
    polling: RestPolling = field(
        default_factory=lambda: RestPolling(
            XDS_REST_CLUSTER, timedelta(seconds=1), timedelta(seconds=1)
        )
    )


@dataclass
class RestStats:
    """Counters for ``/metrics``; statuses other than 200 and 304 go to ``errors``."""

    requests: int = 0
    responses: int = 0  # 200
    not_modified: int = 0  # 304
    errors: dict[int, int] = field(default_factory=dict)  # by HTTP status
    by_type: dict[str, int] = field(default_factory=dict)  # requests by short type name
    nacks: dict[str, int] = field(default_factory=dict)  # error_detail by short type name

    def count(self, status: int) -> None:
        if status == 200:
            self.responses += 1
        elif status == 304:
            self.not_modified += 1
        else:
            self.errors[status] = self.errors.get(status, 0) + 1


class RestBackend(Protocol):
    """What REST discovery reads from the discovery server."""

    @property
    def context(self) -> PushContext: ...

    @property
    def endpoints(self) -> EndpointIndex: ...

    @property
    def cache(self) -> ResourceCache: ...

    def ready(self) -> bool: ...

    def generator(self, type_url: str) -> Generator | None: ...


@dataclass(frozen=True, slots=True)
class RestAnswer:
    """An HTTP answer: status, body and its content type (none for 304)."""

    status: int
    body: bytes = b""
    content_type: str | None = JSON_CONTENT_TYPE


class ResourceJsonCache:
    """The proto3 JSON of each resource (with ``@type``), by (name, content version), LRU."""

    def __init__(self, max_entries: int) -> None:
        self._entries: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._max = max_entries
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def render(self, resource: Resource) -> str:
        key = (resource.name, resource.version)
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            self.hits += 1
            return found
        self.misses += 1
        packed = any_pb2.Any.FromString(resource.body)
        text = json.dumps(
            json_format.MessageToDict(packed, preserving_proto_field_name=True),
            separators=(",", ":"),
        )
        self._entries[key] = text
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
        return text


def response_version(type_url: str, resources: Mapping[str, Resource]) -> str:
    """A content hash of a response: its type and every resource's name and version."""
    digest = hashlib.blake2b(type_url.encode(), digest_size=8)
    for name in sorted(resources):
        digest.update(b"\n%s\0%s" % (name.encode(), resources[name].version.encode()))
    return digest.hexdigest()


class _Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class RestDiscovery:
    """Answers REST discovery requests; :meth:`routes` mounts it on an aiohttp app."""

    def __init__(self, backend: RestBackend, settings: RestSettings | None = None) -> None:
        self.backend = backend
        self.settings = settings if settings is not None else RestSettings()
        self.stats = RestStats()
        self.json = ResourceJsonCache(self.settings.json_cache_entries)

    def routes(self) -> list[web.RouteDef]:
        return [web.post(DISCOVERY_PATH, self.handle)]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        kind = request.match_info.get("kind", "")
        answer: RestAnswer
        if request.content_length is not None and (
            request.content_length > self.settings.max_body_bytes
        ):
            answer = self._refuse_early(413, self._too_large())
        elif request.content_type != JSON_CONTENT_TYPE and not request.content_type.endswith(
            "+json"
        ):
            answer = self._refuse_early(415, f"content type {request.content_type!r} is not JSON")
        else:
            try:
                body = await request.read()
            except web.HTTPRequestEntityTooLarge:
                answer = self._refuse_early(413, self._too_large())
            else:
                answer = self.answer(kind, body)
        if answer.status == 304:
            return web.Response(status=304)
        response = web.Response(
            status=answer.status, body=answer.body, content_type=answer.content_type
        )
        if answer.status == 413:
            # The unread body is drained (closing now would reset the connection before
            # the client reads the answer); then the connection closes.
            response.force_close()
        return response

    def answer(self, kind: str, body: bytes) -> RestAnswer:
        """The answer to a POST of ``body`` to ``/v3/discovery:<kind>`` (no HTTP involved)."""
        self.stats.requests += 1
        try:
            return self._answer(kind, body)
        except _Refused as refused:
            return self._refuse(refused.status, refused.reason)

    # -- the steps ----------------------------------------------------------------------

    def _answer(self, kind: str, body: bytes) -> RestAnswer:
        type_url = REST_TYPES.get(kind)
        if type_url is None:
            raise _Refused(404, f"unknown discovery type {kind!r}; known: {', '.join(REST_TYPES)}")
        short = short_name(type_url)
        self.stats.by_type[short] = self.stats.by_type.get(short, 0) + 1
        if len(body) > self.settings.max_body_bytes:
            raise _Refused(413, self._too_large())
        if not self.backend.ready():
            raise _Refused(503, "pilothouse is not ready: config has not synced yet")
        request = _parse_request(body)
        if request.type_url and request.type_url != type_url:
            raise _Refused(400, f"type_url {request.type_url!r} sent to /v3/discovery:{kind}")
        if not request.HasField("node") or not request.node.id:
            raise _Refused(400, "the request must carry a node with an id")
        try:
            proxy = node_identity(request.node)
        except BadNode as problem:
            raise _Refused(400, str(problem)) from None
        if request.HasField("error_detail"):
            self.stats.nacks[short] = self.stats.nacks.get(short, 0) + 1
            log.warning(
                "proxy rejected %s version %s: %s",
                short,
                request.version_info or "(none)",
                request.error_detail.message,
                extra={"node": proxy.node_id, "type_url": type_url},
            )
        names: frozenset[str] | None = None
        if not is_wildcard_type(type_url) and request.resource_names:
            names = frozenset(request.resource_names)
        resources = self._generate(type_url, proxy, names)
        version = response_version(type_url, resources)
        if request.version_info == version:
            self.stats.count(304)
            return RestAnswer(304, content_type=None)
        rendered = ",".join(self.json.render(resources[name]) for name in sorted(resources))
        text = (
            f'{{"version_info":"{version}","resources":[{rendered}],'
            f'"type_url":{json.dumps(type_url)}}}'
        )
        self.stats.count(200)
        return RestAnswer(200, text.encode())

    def _generate(
        self, type_url: str, proxy: ProxyIdentity, names: frozenset[str] | None
    ) -> Mapping[str, Resource]:
        generator = self.backend.generator(type_url)
        if generator is None:
            return {}
        context = self.backend.context
        given = GenerationInput(
            proxy=proxy,
            scope=context.scope(proxy),
            context=context,
            endpoints=self.backend.endpoints,
            cache=self.backend.cache,
            names=names,
            rest=self.settings.polling,
        )
        return generator.generate(given)

    def _refuse_early(self, status: int, reason: str) -> RestAnswer:
        """A refusal before the body is read (:meth:`answer` counts its own requests)."""
        self.stats.requests += 1
        return self._refuse(status, reason)

    def _refuse(self, status: int, reason: str) -> RestAnswer:
        self.stats.count(status)
        # Debug only: a proxy polling before readiness would repeat it every refresh_delay.
        log.debug("REST discovery answered %d: %s", status, reason)
        return RestAnswer(status, json.dumps({"error": reason, "status": status}).encode())

    def _too_large(self) -> str:
        return f"request body is larger than {self.settings.max_body_bytes} bytes"


def _parse_request(body: bytes) -> Any:
    """A ``DiscoveryRequest`` from proto3 JSON, unknown fields ignored.

    ``node.extensions`` (hundreds of entries in Envoy's requests) is dropped unread:
    nothing in pilothouse looks at it, and mapping it would cost most of the poll.
    """
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as problem:
        raise _Refused(400, f"request body is not JSON: {problem}") from None
    if not isinstance(data, dict):
        raise _Refused(400, "request body is not a JSON object (a DiscoveryRequest)")
    node = data.get("node")
    if isinstance(node, dict):
        node.pop("extensions", None)
    request = discovery_pb2.DiscoveryRequest()
    try:
        json_format.ParseDict(data, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as problem:
        raise _Refused(400, f"request is not a DiscoveryRequest: {problem}") from None
    return request
