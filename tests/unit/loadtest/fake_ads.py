"""A small fake ADS server that stands in for pilothouse's xDS server in the loadtest tests.

pilothouse's own server lands separately; the simulated proxies must work
against *any* ADS server, so they are tested against this one: a grpc.aio
``AggregatedDiscoveryService`` that serves a fixed set of resources over SotW
and delta, pushes changes (``update``), records every request it receives, and
can be stopped and started again on the same port.

Its rules are the plain ones of the spec, written here independently of the
project's protocol engines:

- SotW: answer the first request for a type, or one with an empty nonce;
  ignore stale nonces and NACKs; answer an ACK whose names grew (and, for CDS
  and LDS, any change of names).  Versions count per type.
- Delta: versions are content hashes; the first request for a type is always
  answered (only what differs from ``initial_resource_versions``); newly
  subscribed names are always sent; subscription changes apply whatever the
  nonce.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import grpc
from envoy.service.discovery.v3 import ads_pb2_grpc, discovery_pb2
from google.protobuf import any_pb2
from google.protobuf.message import Message

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS

FULL_STATE = frozenset({CDS, LDS})
PUSH_ORDER = (CDS, EDS, LDS, RDS)


def content_version(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()[:12]


@dataclass(frozen=True)
class Recorded:
    """One message the server received or sent, with the stream it went on."""

    stream: int
    message: Any
    peer: str = ""


@dataclass
class _SotwWatch:
    names: frozenset[str]
    wildcard: bool
    named_before: bool
    nonce_sent: str = ""


@dataclass
class _DeltaWatch:
    wildcard: bool
    names: set[str]
    sent: dict[str, str] = field(default_factory=dict)


class _Stream:
    def __init__(self, stream_id: int, peer: str) -> None:
        self.id = stream_id
        self.peer = peer
        self.outbox: asyncio.Queue[Any] = asyncio.Queue()
        self.nonces = itertools.count(1)

    def nonce(self) -> str:
        return f"s{self.id}-{next(self.nonces)}"


class FakeAds(ads_pb2_grpc.AggregatedDiscoveryServiceServicer):  # type: ignore[misc]
    """The servicer: resources by type, streams, and the request log."""

    def __init__(self, resources: Mapping[str, Mapping[str, Message]]) -> None:
        self.bodies: dict[str, dict[str, bytes]] = {
            type_url: {name: message.SerializeToString() for name, message in named.items()}
            for type_url, named in resources.items()
        }
        self.versions: dict[str, dict[str, str]] = {
            type_url: {name: content_version(body) for name, body in named.items()}
            for type_url, named in self.bodies.items()
        }
        self.type_versions: dict[str, int] = dict.fromkeys(self.bodies, 1)
        self.requests: list[Recorded] = []
        self.sent: list[Recorded] = []
        """Every response sent, with its stream."""
        self._ids = itertools.count(1)
        self._sotw: dict[_Stream, dict[str, _SotwWatch]] = {}
        self._delta: dict[_Stream, dict[str, _DeltaWatch]] = {}

    # -- what tests read --------------------------------------------------------

    def requests_of(self, type_url: str, stream: int | None = None) -> list[Any]:
        return [
            entry.message
            for entry in self.requests
            if entry.message.type_url == type_url and (stream is None or entry.stream == stream)
        ]

    def sent_of(self, type_url: str, stream: int | None = None) -> list[Any]:
        return [
            entry.message
            for entry in self.sent
            if entry.message.type_url == type_url and (stream is None or entry.stream == stream)
        ]

    @property
    def stream_count(self) -> int:
        return len(self._sotw) + len(self._delta)

    # -- changes ----------------------------------------------------------------

    def update(self, changes: Mapping[str, Mapping[str, Message | None]]) -> None:
        """Change resources (None deletes) and push to every stream that watches them."""
        for type_url in sorted(changes, key=_push_rank):
            named = self.bodies.setdefault(type_url, {})
            versions = self.versions.setdefault(type_url, {})
            for name, message in changes[type_url].items():
                if message is None:
                    named.pop(name, None)
                    versions.pop(name, None)
                else:
                    named[name] = message.SerializeToString()
                    versions[name] = content_version(named[name])
            self.type_versions[type_url] = self.type_versions.get(type_url, 0) + 1
            changed = frozenset(changes[type_url])
            for stream, watches in self._sotw.items():
                watch = watches.get(type_url)
                if watch is not None and (watch.wildcard or watch.names & changed):
                    self._send_sotw(stream, type_url, watch)
            for stream, delta_watches in self._delta.items():
                delta_watch = delta_watches.get(type_url)
                if delta_watch is not None:
                    self._send_delta(stream, type_url, delta_watch, always=False)

    # -- SotW -------------------------------------------------------------------

    async def StreamAggregatedResources(
        self, request_iterator: AsyncIterator[Any], context: Any
    ) -> AsyncIterator[Any]:
        stream = _Stream(next(self._ids), context.peer())
        self._sotw[stream] = {}
        reader = asyncio.create_task(self._read(stream, request_iterator, self._on_sotw))
        try:
            async for response in _drain(stream, reader):
                yield response
        finally:
            reader.cancel()
            del self._sotw[stream]

    def _on_sotw(self, stream: _Stream, request: Any) -> None:
        if request.HasField("error_detail"):
            return
        watches = self._sotw[stream]
        type_url = request.type_url
        names = frozenset(request.resource_names)
        watch = watches.get(type_url)
        named_before = watch is not None and watch.named_before
        wildcard = "*" in names or (not names and not named_before and type_url in FULL_STATE)
        names = names - {"*"}
        if watch is None or not request.response_nonce:
            watch = watches[type_url] = _SotwWatch(names, wildcard, named_before or bool(names))
            self._send_sotw(stream, type_url, watch)
            return
        if request.response_nonce != watch.nonce_sent:
            return
        grew = bool(names - watch.names) or (wildcard and not watch.wildcard)
        changed = names != watch.names or wildcard != watch.wildcard
        watch.names, watch.wildcard = names, wildcard
        watch.named_before = watch.named_before or bool(names)
        if grew or (changed and type_url in FULL_STATE):
            self._send_sotw(stream, type_url, watch)

    def _send_sotw(self, stream: _Stream, type_url: str, watch: _SotwWatch) -> None:
        named = self.bodies.get(type_url, {})
        chosen = sorted(named) if watch.wildcard else sorted(watch.names & named.keys())
        watch.nonce_sent = stream.nonce()
        response = discovery_pb2.DiscoveryResponse(
            type_url=type_url,
            version_info=f"v{self.type_versions.get(type_url, 0)}",
            nonce=watch.nonce_sent,
            resources=[any_pb2.Any(type_url=type_url, value=named[name]) for name in chosen],
        )
        self.sent.append(Recorded(stream.id, response, stream.peer))
        stream.outbox.put_nowait(response)

    # -- delta ------------------------------------------------------------------

    async def DeltaAggregatedResources(
        self, request_iterator: AsyncIterator[Any], context: Any
    ) -> AsyncIterator[Any]:
        stream = _Stream(next(self._ids), context.peer())
        self._delta[stream] = {}
        reader = asyncio.create_task(self._read(stream, request_iterator, self._on_delta))
        try:
            async for response in _drain(stream, reader):
                yield response
        finally:
            reader.cancel()
            del self._delta[stream]

    def _on_delta(self, stream: _Stream, request: Any) -> None:
        if request.HasField("error_detail"):
            return
        watches = self._delta[stream]
        type_url = request.type_url
        subscribe = set(request.resource_names_subscribe)
        unsubscribe = set(request.resource_names_unsubscribe)
        watch = watches.get(type_url)
        if watch is None:
            legacy = not subscribe and not unsubscribe and type_url in FULL_STATE
            watch = watches[type_url] = _DeltaWatch(
                wildcard="*" in subscribe or legacy,
                names=subscribe - {"*"},
                sent=dict(request.initial_resource_versions),
            )
            self._send_delta(stream, type_url, watch, always=True)
            return
        if "*" in subscribe:
            watch.wildcard = True
        if "*" in unsubscribe:
            watch.wildcard = False
        for name in subscribe - {"*"}:
            watch.names.add(name)
            watch.sent.pop(name, None)
        for name in unsubscribe - {"*"}:
            watch.names.discard(name)
            if not watch.wildcard:
                watch.sent.pop(name, None)
        if subscribe or unsubscribe:
            self._send_delta(stream, type_url, watch, always=False)

    def _send_delta(
        self, stream: _Stream, type_url: str, watch: _DeltaWatch, *, always: bool
    ) -> None:
        named = self.bodies.get(type_url, {})
        versions = self.versions.get(type_url, {})
        scope = named.keys() if watch.wildcard else watch.names & named.keys()
        resources = []
        for name in sorted(scope):
            version = versions[name]
            if watch.sent.get(name) != version:
                watch.sent[name] = version
                resources.append(
                    discovery_pb2.Resource(
                        name=name,
                        version=version,
                        resource=any_pb2.Any(type_url=type_url, value=named[name]),
                    )
                )
        removed = sorted(name for name in watch.sent if name not in named)
        for name in removed:
            del watch.sent[name]
        if not (resources or removed or always):
            return
        response = discovery_pb2.DeltaDiscoveryResponse(
            type_url=type_url,
            system_version_info=f"v{self.type_versions.get(type_url, 0)}",
            nonce=stream.nonce(),
            resources=resources,
            removed_resources=removed,
        )
        self.sent.append(Recorded(stream.id, response, stream.peer))
        stream.outbox.put_nowait(response)

    # -- shared -----------------------------------------------------------------

    async def _read(self, stream: _Stream, requests: AsyncIterator[Any], handle: Any) -> None:
        try:
            async for request in requests:
                self.requests.append(Recorded(stream.id, request, stream.peer))
                handle(stream, request)
        finally:
            stream.outbox.put_nowait(None)


async def _drain(stream: _Stream, reader: asyncio.Task[None]) -> AsyncIterator[Any]:
    while True:
        response = await stream.outbox.get()
        if response is None:
            return
        yield response


def _push_rank(type_url: str) -> int:
    return PUSH_ORDER.index(type_url) if type_url in PUSH_ORDER else len(PUSH_ORDER)


class FakeAdsServer:
    """A grpc.aio server on 127.0.0.1 running ``FakeAds``; restartable on the same port."""

    def __init__(self, resources: Mapping[str, Mapping[str, Message]]) -> None:
        self.resources = {type_url: dict(named) for type_url, named in resources.items()}
        self.ads = FakeAds(self.resources)
        self.port = 0
        self._server: grpc.aio.Server | None = None

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self) -> None:
        server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
        ads_pb2_grpc.add_AggregatedDiscoveryServiceServicer_to_server(self.ads, server)
        self.port = server.add_insecure_port(f"127.0.0.1:{self.port}")
        await server.start()
        self._server = server

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(grace=None)
            self._server = None

    async def restart(
        self, resources: Mapping[str, Mapping[str, Message]] | None = None
    ) -> FakeAds:
        """Stop, then serve a fresh ``FakeAds`` (no stream state) on the same port."""
        await self.stop()
        current = resources if resources is not None else self._current_messages()
        self.ads = FakeAds(current)
        await self.start()
        return self.ads

    def _current_messages(self) -> dict[str, dict[str, Message]]:
        return {type_url: dict(named) for type_url, named in self.resources.items()}

    def update(self, changes: Mapping[str, Mapping[str, Message | None]]) -> None:
        for type_url, named in changes.items():
            for name, message in named.items():
                if message is None:
                    self.resources.setdefault(type_url, {}).pop(name, None)
                else:
                    self.resources.setdefault(type_url, {})[name] = message
        self.ads.update(changes)


def names_of(requests: Iterable[Any]) -> list[list[str]]:
    return [list(request.resource_names) for request in requests]
