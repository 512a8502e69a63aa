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
  rendering is kept in a bounded LRU under (name, content version): a new answer
  made of resources rendered before costs a join of cached strings.
- Envoy's requests are large (about 77 KB, mostly ``node.extensions``, which
  pilothouse never reads); the extensions are dropped before the proto3 JSON
  mapping runs. On a 2-core VM, ``json_format.Parse`` of a whole real Envoy 1.40
  request took about 16 ms; with the extensions dropped a whole poll takes about
  1 ms, most of it ``json.loads`` of the body.
- Every 200 carries ``control_plane.identifier``, as gRPC responses do.
- A NACK (``error_detail``) is logged and counted; nothing else changes.
- Every request is answered on its own (:meth:`RestDiscovery.answer` is the boundary):
  a body that is not UTF-8, not JSON (:func:`~pilothouse.boundary.json_body.read_json`:
  nested deeper than 256 levels, numbers of more than 400 digits, ``NaN``...), not a
  DiscoveryRequest, or from a malformed node is 400 with what was wrong (reading a
  request is :mod:`.rest_poll`); any other exception is a fault of ours: logged with its
  traceback, answered 500 with a generic message, and the next request is served as if
  nothing happened.

Polls repeat, so the work is remembered, in bounded LRUs (:mod:`.rest_cache`), for as
long as nothing the answers are made from changes: the PushContext (its identity and
version), the config store's revision (every endpoint change starts as a store event,
and the registry applies it before the event returns) and the discovery server's push
version. When any of the three moves, the remembered answers and versions are dropped
before the next request is answered; until then the same request gets the same answer:

- a request body seen before gets the very answer it got then (200 with its body, or
  304): one dict lookup keyed by the body bytes, no JSON parsing at all;
- otherwise a plain poll (:mod:`.rest_request`) is read from ``json.loads``' dict,
  and its node's identity is looked up by the node's JSON text; anything else, and any
  node not seen before, takes the full ``ParseDict`` path (and its error messages);
- the response version for (type, node, requested names) is kept, so a poll with a new
  body but an unchanged answer (304) costs no generation or hashing;
- the body of a 200 is kept by (type, response version), which names its content, so
  proxies that see the same resources share one rendering.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType
from typing import Final, Generic, Protocol, TypeVar

from aiohttp import web
from google.protobuf import any_pb2, json_format

from pilothouse.bootstrap.envoy import XDS_REST_CLUSTER
from pilothouse.boundary.contain import INTERNAL_ERROR, json_error_body
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS, short_name
from pilothouse.push.cache import Resource
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.settings import RestSettings as RestSettings
from pilothouse.sources.events import ConfigStore
from pilothouse.xds.builders.cluster import RestPolling
from pilothouse.xds.generators.base import GenerationInput, Generator
from pilothouse.xds.server.backend import Backend
from pilothouse.xds.server.control_plane import ControlPlaneIdentity
from pilothouse.xds.server.rest_cache import Lru
from pilothouse.xds.server.rest_poll import Poll, PollReader, Refused

log = logging.getLogger("pilothouse.xds.rest")

REST_TYPES: Final = MappingProxyType(
    {"clusters": CDS, "endpoints": EDS, "listeners": LDS, "routes": RDS}
)
"""The ``/v3/discovery:<kind>`` path suffixes and their type URLs."""

DISCOVERY_PATH: Final = "/v3/discovery:{kind}"
JSON_CONTENT_TYPE: Final = "application/json"


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


class RestBackend(Backend, Protocol):
    """What REST discovery reads from the discovery server: the backend a connection
    generates from, plus the store (its revision) and readiness."""

    @property
    def store(self) -> ConfigStore: ...

    @property
    def identity(self) -> ControlPlaneIdentity:
        """Which replica answers (``control_plane`` of every response)."""
        ...

    def ready(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class RestAnswer:
    """An HTTP answer: status, body and its content type (none for 304)."""

    status: int
    body: bytes = b""
    content_type: str | None = JSON_CONTENT_TYPE


NOT_MODIFIED: Final = RestAnswer(304, content_type=None)

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class _Known(Generic[_T]):
    """A remembered result and the generator it came from (one registered later makes
    it stale)."""

    generator: Generator | None
    value: _T


class ResourceJsonCache:
    """The proto3 JSON of each resource (with ``@type``), by (name, content version), LRU."""

    def __init__(self, max_entries: int) -> None:
        self._entries: Lru[tuple[str, str], str] = Lru(max_entries)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def hits(self) -> int:
        return self._entries.hits

    @property
    def misses(self) -> int:
        return self._entries.misses

    def render(self, resource: Resource) -> str:
        key = (resource.name, resource.version)
        found = self._entries.get(key)
        if found is not None:
            return found
        packed = any_pb2.Any.FromString(resource.body)
        text = json.dumps(
            json_format.MessageToDict(packed, preserving_proto_field_name=True),
            separators=(",", ":"),
        )
        self._entries.put(key, text)
        return text


def response_version(type_url: str, resources: Mapping[str, Resource]) -> str:
    """A content hash of a response: its type and every resource's name and version."""
    digest = hashlib.blake2b(type_url.encode(), digest_size=8)
    for name in sorted(resources):
        digest.update(b"\n%s\0%s" % (name.encode(), resources[name].version.encode()))
    return digest.hexdigest()


class RestDiscovery:
    """Answers REST discovery requests; :meth:`routes` mounts it on an aiohttp app."""

    def __init__(self, backend: RestBackend, settings: RestSettings | None = None) -> None:
        self.backend = backend
        self.settings = settings if settings is not None else RestSettings()
        # What served resources tell a REST-mode proxy about polling for the resources
        # they point at: the bootstrap's REST cluster, at the bootstrap's pace.
        self.polling = RestPolling(
            XDS_REST_CLUSTER,
            timedelta(seconds=self.settings.refresh_delay),
            timedelta(seconds=self.settings.request_timeout),
        )
        self.stats = RestStats()
        self.json = ResourceJsonCache(self.settings.json_cache_entries)
        entries = self.settings.answer_cache_entries
        budget = self.settings.answer_cache_bytes
        # (kind, request body) -> the RestAnswer it got
        self.answers: Lru[tuple[str, bytes], _Known[RestAnswer]] = Lru(entries, budget)
        # (type_url, node key, names) -> the response version
        self.versions: Lru[tuple[str, str, frozenset[str] | None], _Known[str]] = Lru(entries)
        # (type_url, response version) -> the 200 answer; the version names the content
        self.bodies: Lru[tuple[str, str], RestAnswer] = Lru(entries, budget)
        # node key -> (node key, identity): the key object is shared by the entries above
        self.nodes: Lru[str, tuple[str, ProxyIdentity]] = Lru(entries)
        self.reader = PollReader(self.nodes, self.stats.nacks)
        self._seen: tuple[int, str, int, str] | None = None

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
        except Refused as refused:
            return self._refuse(refused.status, refused.reason)
        except Exception:
            # A fault of ours: it stops at this request (logged once, with its traceback).
            log.exception("REST discovery failed to answer a %s request", kind)
            self.stats.count(500)
            return RestAnswer(500, json_error_body(500, INTERNAL_ERROR))

    # -- the steps ----------------------------------------------------------------------

    def _answer(self, kind: str, body: bytes) -> RestAnswer:
        type_url = REST_TYPES.get(kind)
        if type_url is None:
            raise Refused(404, f"unknown discovery type {kind!r}; known: {', '.join(REST_TYPES)}")
        short = short_name(type_url)
        self.stats.by_type[short] = self.stats.by_type.get(short, 0) + 1
        if len(body) > self.settings.max_body_bytes:
            raise Refused(413, self._too_large())
        if not self.backend.ready():
            raise Refused(503, "pilothouse is not ready: config has not synced yet")
        self._forget_if_changed()
        generator = self.backend.generator(type_url)
        key = (kind, body)
        known = self.answers.get(key)
        if known is not None and known.generator is generator:
            answer = known.value
        else:
            poll = self.reader.read(kind, type_url, short, body)
            answer = self._respond(type_url, generator, poll)
            if poll.repeatable:
                self.answers.put(key, _Known(generator, answer), len(body) + len(answer.body))
        self.stats.count(answer.status)
        return answer

    def _forget_if_changed(self) -> None:
        """Drop remembered answers and versions when what they were made from changed."""
        backend = self.backend
        context = backend.context
        seen = (id(context), context.version, backend.store.revision, backend.version)
        if seen != self._seen:
            self.answers.clear()
            self.versions.clear()
            self._seen = seen

    def _respond(self, type_url: str, generator: Generator | None, poll: Poll) -> RestAnswer:
        """200 with the resources, or 304 when the proxy holds their version already."""
        key = (type_url, poll.node_key, poll.names)
        known = self.versions.get(key)
        if known is not None and known.generator is generator:
            version = known.value
            if poll.version_info == version:
                return NOT_MODIFIED
            done = self.bodies.get((type_url, version))
            if done is not None:
                return done
        resources = self._generate(generator, poll.proxy, poll.names)
        version = response_version(type_url, resources)
        self.versions.put(key, _Known(generator, version))
        if poll.version_info == version:
            return NOT_MODIFIED
        done = self.bodies.get((type_url, version))
        if done is None:
            done = RestAnswer(200, self._render(type_url, version, resources))
            self.bodies.put((type_url, version), done, len(done.body))
        return done

    def _render(self, type_url: str, version: str, resources: Mapping[str, Resource]) -> bytes:
        rendered = ",".join(self.json.render(resources[name]) for name in sorted(resources))
        identifier = json.dumps(self.backend.identity.identifier)
        text = (
            f'{{"version_info":"{version}","resources":[{rendered}],'
            f'"type_url":{json.dumps(type_url)},'
            f'"control_plane":{{"identifier":{identifier}}}}}'
        )
        return text.encode()

    def _generate(
        self, generator: Generator | None, proxy: ProxyIdentity, names: frozenset[str] | None
    ) -> Mapping[str, Resource]:
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
            rest=self.polling,
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
        return RestAnswer(status, json_error_body(status, reason))

    def _too_large(self) -> str:
        return f"request body is larger than {self.settings.max_body_bytes} bytes"
