"""The node agent's copy of its node's set, kept by delta MCP-over-xDS from pilothouse.

:class:`NodeSetClient` holds one stream to pilothouse's node-set service
(:mod:`pilothouse.nodesets`), naming the node by its addresses in the node metadata
(``INSTANCE_IPS``) and subscribing to the WorkloadEntries and the selecting kinds. The
first response of each kind is the node's set, later ones only what changed; each
resource is decoded and validated as the ``xds://`` source does
(:class:`~pilothouse.config.mcp_resource.ResourceDecoder`; Pods and Services, whose
bodies are ``Struct`` s, by :func:`~pilothouse.nodesets.kubernetes.decode_kube_resource`).
A response with a bad resource is NACKed whole and the copy keeps its last good
objects. When the stream breaks the client dials again with backoff, telling pilothouse
what it holds (``initial_resource_versions``), so a reconnect is sent only the
difference. Given several addresses (pilothouse's replicas), a broken stream moves
to the next one at once, as the agent's xDS upstream (:mod:`pilothouse.agent.upstream`)
does, with backoff only once every replica has failed in a row; a replica that answered
starts the count again.

With ``endpoint`` (a :class:`~pilothouse.agent.remote_authority.CaEndpoint`: the TLS
port, the roots it must chain to, the node identity's token file) the stream goes over
TLS with ``authorization: Bearer <token>``, the token read again on every dial, and
pilothouse gives it only the set of a node that identity runs on
(:mod:`pilothouse.nodesets.node_access`); without one, plaintext (the loopback xDS
port).

What the agent uses it for: its local view, :meth:`NodeSetClient.view` (served as
``/debug/nodez`` on its status port), which lists the workloads pilothouse places on
this node and the policies that concern them. It does not generate xDS: Envoy's config
still comes from pilothouse through the xDS proxy.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import grpc
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import json_format

from pilothouse.agent.remote_authority import CaEndpoint
from pilothouse.backoff import Backoff
from pilothouse.config.mcp_resource import Rejection, ResourceDecoder
from pilothouse.config.model import Config, Origin
from pilothouse.kinds.table import SCHEMAS
from pilothouse.nodesets.kubernetes import KUBE_TYPES, decode_kube_resource
from pilothouse.nodesets.membership import WORKLOAD_KINDS, placed
from pilothouse.nodesets.service import DELTA_NODE_SETS, NODE_ADDRESSES_KEY, NODE_SET_SERVICE
from pilothouse.nodesets.session import node_set_types as type_kinds

log = logging.getLogger("pilothouse.agent.node_set")

RECONNECT = Backoff(0.1, 5.0)
"""Delay before dialling again after a stream ended, or once every replica failed in a row."""


def node_set_types() -> tuple[str, ...]:
    """The type names a node agent subscribes to (the first GVK spelling of each Istio
    kind, then ``core/v1/Pod`` and ``core/v1/Service``)."""
    return tuple(type_kinds())


Decode = Callable[[bytes], Config | Rejection]
"""One received resource's bytes as a Config, or why it was refused."""


class NodeSetClient:
    """The node's set, kept in step with pilothouse over one stream at a time."""

    def __init__(
        self,
        addresses: str | Sequence[str],
        node_ips: Sequence[str],
        node_id: str = "",
        *,
        backoff: Backoff = RECONNECT,
        endpoint: CaEndpoint | None = None,
    ) -> None:
        """``addresses``: one ``host:port`` or several (replicas, tried in turn);
        ``endpoint``: dial them with TLS, proving the node identity with its token
        (None: plaintext)."""
        if not node_ips:
            raise ValueError("a node set needs the node's address (nodeIP)")
        self.addresses = (addresses,) if isinstance(addresses, str) else tuple(addresses)
        if not self.addresses:
            raise ValueError("a node set needs where pilothouse serves it (an address)")
        self._index = 0
        self.node_ips = tuple(node_ips)
        self.node_id = node_id or f"node-agent~{self.node_ips[0]}"
        self.kinds = type_kinds()
        """Type name → the kind its resources are."""
        self.types = tuple(self.kinds)
        self.held: dict[str, dict[str, Config]] = {t: {} for t in self.types}
        """Type name → ``ns/name`` → the object as last accepted."""
        self.versions: dict[str, dict[str, str]] = {t: {} for t in self.types}
        self.synced = asyncio.Event()
        self.changed = asyncio.Event()
        self.connects = 0
        self.responses = 0
        """Responses taken (ACKed or NACKed) over every stream so far."""
        self.nacks = 0
        self.problem = ""
        """Why the last stream ended (its gRPC status), until a response arrives."""
        self._answered: set[str] = set()
        source = f"node-set://{','.join(self.addresses)}"
        self._decoders: dict[str, Decode] = {}
        for type_url, kind in self.kinds.items():
            if type_url in KUBE_TYPES:
                self._decoders[type_url] = functools.partial(
                    decode_kube_resource, kind, origin=Origin(source)
                )
            elif (schema := SCHEMAS.by_gvk(type_url)) is not None:
                self._decoders[type_url] = ResourceDecoder(schema, source).decode_bytes
        self._backoff = backoff
        self._endpoint = endpoint
        self._rng = random.Random()
        self._stop = asyncio.Event()

    @property
    def address(self) -> str:
        """The replica dialled now (or next)."""
        return self.addresses[self._index]

    def close(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        failures = 0
        # streams in a row that broke with no response
        while not self._stop.is_set():
            answered = self.responses
            try:
                await self._stream()
                failures = 0
            except grpc.aio.AioRpcError as problem:
                failures = 1 if self.responses > answered else failures + 1
                self.problem = f"{problem.code().name}: {problem.details()}"
                report = log.warning if failures == 1 else log.debug  # once per outage
                report("node-set stream to %s broke: %s", self.address, self.problem)
                self._index = (self._index + 1) % len(self.addresses)
            if self._stop.is_set():
                return
            if 0 < failures < len(self.addresses):
                continue  # the next replica, at once
            rounds = max(failures - len(self.addresses) + 1, 1)
            delay = self._backoff.delay(rounds, self._rng)
            try:
                async with asyncio.timeout(delay):
                    await self._stop.wait()
            except TimeoutError:
                pass

    def _first_requests(self) -> list[discovery_pb2.DeltaDiscoveryRequest]:
        requests = []
        for i, type_url in enumerate(self.types):
            request = discovery_pb2.DeltaDiscoveryRequest(type_url=type_url)
            request.initial_resource_versions.update(self.versions[type_url])
            if i == 0:
                request.node.id = self.node_id
                request.node.metadata.update({NODE_ADDRESSES_KEY: ",".join(self.node_ips)})
            requests.append(request)
        return requests

    async def _stream(self) -> None:
        outgoing: asyncio.Queue[discovery_pb2.DeltaDiscoveryRequest | None] = asyncio.Queue()
        for request in self._first_requests():
            outgoing.put_nowait(request)

        async def requests() -> AsyncIterator[discovery_pb2.DeltaDiscoveryRequest]:
            while (request := await outgoing.get()) is not None:
                yield request

        metadata: tuple[tuple[str, str], ...] = ()
        endpoint = self._endpoint
        if endpoint is None:
            channel = grpc.aio.insecure_channel(self.address)
        else:
            channel = grpc.aio.secure_channel(
                self.address, endpoint.channel_credentials(None), endpoint.channel_options()
            )
            token = endpoint.token()
            if token is not None:
                metadata = (("authorization", f"Bearer {token}"),)
        async with channel:
            self.connects += 1
            call: Any = channel.stream_stream(
                f"/{NODE_SET_SERVICE}/{DELTA_NODE_SETS}",
                request_serializer=discovery_pb2.DeltaDiscoveryRequest.SerializeToString,
                response_deserializer=discovery_pb2.DeltaDiscoveryResponse.FromString,
            )(requests(), metadata=metadata)
            stopping = asyncio.create_task(self._stop.wait())
            try:
                while True:
                    reading = asyncio.create_task(call.read())
                    done, _ = await asyncio.wait(
                        {reading, stopping}, return_when=asyncio.FIRST_COMPLETED
                    )
                    if reading not in done:
                        reading.cancel()
                        call.cancel()
                        return
                    response = reading.result()
                    if response is grpc.aio.EOF:
                        return
                    outgoing.put_nowait(self.apply(response))
            finally:
                stopping.cancel()
                outgoing.put_nowait(None)

    def apply(
        self, response: discovery_pb2.DeltaDiscoveryResponse
    ) -> discovery_pb2.DeltaDiscoveryRequest:
        """Take one response; the ACK (or NACK) to send back."""
        self.responses += 1
        self.problem = ""
        type_url = response.type_url
        ack = discovery_pb2.DeltaDiscoveryRequest(type_url=type_url, response_nonce=response.nonce)
        decoder = self._decoders.get(type_url)
        if decoder is None:
            ack.error_detail.message = f"not a type this agent asked for: {type_url!r}"
            self.nacks += 1
            return ack
        taken: dict[str, tuple[str, Config]] = {}
        for resource in response.resources:
            decoded = decoder(resource.resource.value)
            if isinstance(decoded, Rejection):
                ack.error_detail.message = f"{resource.name}: {decoded.reason}"
                self.nacks += 1
                log.warning("node set: rejected %s: %s", resource.name, decoded.reason)
                return ack  # the whole response is refused; what is held stays
            taken[resource.name] = (resource.version, decoded)
        held, versions = self.held[type_url], self.versions[type_url]
        for name in response.removed_resources:
            held.pop(name, None)
            versions.pop(name, None)
        for name, (version, config) in taken.items():
            held[name] = config
            versions[name] = version
        self._answered.add(type_url)
        if len(self._answered) == len(self.types):
            self.synced.set()
        self.changed.set()
        return ack

    def workloads(self) -> list[Config]:
        """The workloads pilothouse places on this node: WorkloadEntries, and Pods when
        it reads a Kubernetes cluster."""
        found: list[Config] = []
        for type_url in self.types:
            if self.kinds[type_url] in WORKLOAD_KINDS:
                found += self.held[type_url].values()
        return found

    @staticmethod
    def service_account(workload: Config) -> str:
        """The service account a workload of the set runs as."""
        return placed(workload).service_account

    def view(self) -> dict[str, Any]:
        """The node's set as ``/debug/nodez`` shows it."""
        kinds: dict[str, list[dict[str, Any]]] = {}
        for type_url in self.types:
            kinds[self.kinds[type_url]] = [
                {
                    "name": name,
                    "version": self.versions[type_url].get(name, ""),
                    "labels": dict(config.labels),
                    "spec": json_format.MessageToDict(config.spec),
                }
                for name, config in sorted(self.held[type_url].items())
            ]
        return {
            "node": list(self.node_ips),
            "server": self.address,
            "servers": list(self.addresses),
            "tls": self._endpoint is not None,
            "synced": self.synced.is_set(),
            "connects": self.connects,
            "responses": self.responses,
            "nacks": self.nacks,
            "problem": self.problem,
            "kinds": kinds,
        }
