"""A simulated proxy's client: the xDS client engine, reading and judging what it receives.

The protocol (subscribe, ACK/NACK, follow-ups, resume) is the client engine's
(``xds/protocol/client``); ``ProxyClient`` adds what a simulated proxy does
with content: it reads each resource's name and references with a shared
``ResourceReader``, judges the response, keeps a log of the latest responses,
and answers.  ``SotwClient`` and ``DeltaClient`` pick the protocol.

A response is NACKed, whole, when a resource does not decode, names the wrong
type, appears twice, or when the caller's ``reject`` hook returns a message for
it.  A NACK changes nothing the proxy holds.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf.message import DecodeError

from pilothouse.loadtest.holdings import ReceivedResource, XdsEvent
from pilothouse.loadtest.identity import ProxyNode, node_message
from pilothouse.loadtest.plans import RequestPlan
from pilothouse.loadtest.references import ResourceReader
from pilothouse.protocol.client import (
    ClientEngine,
    Incoming,
    RejectedResponse,
)
from pilothouse.protocol.client_delta import DeltaClientEngine
from pilothouse.protocol.client_requests import ClientRequest
from pilothouse.protocol.client_sotw import SotwClientEngine
from pilothouse.protocol.client_watch import ClientWatch

RejectHook = Callable[[str, ReceivedResource], str | None]
"""``reject(type_url, resource)`` → a NACK message, or None to accept the resource."""


class ProxyClient:
    """One simulated proxy's protocol state across its streams, and its judgement."""

    engine_type: type[ClientEngine] = SotwClientEngine

    def __init__(
        self,
        identity: ProxyNode,
        plan: RequestPlan,
        reader: ResourceReader,
        reject: RejectHook | None = None,
        event_log_size: int = 256,
    ) -> None:
        self.identity = identity
        self.plan = plan
        self.reject = reject
        self._reader = reader
        self.engine = self.engine_type(plan, node_message(identity), reader.held)
        self.events: deque[XdsEvent] = deque(maxlen=event_log_size)

    # -- what callers read -----------------------------------------------------

    @property
    def states(self) -> Mapping[str, ClientWatch]:
        return self.engine.watches

    def state(self, type_url: str) -> ClientWatch:
        return self.engine.watch(type_url)

    def settled(self) -> bool:
        return self.engine.settled()

    # -- transitions -----------------------------------------------------------

    def open_stream(self) -> list[ClientRequest]:
        """The requests that start a (new) stream: every subscription, the node on the first."""
        return self.engine.open_stream()

    def on_response(self, response: Any, size: int, now: float) -> list[ClientRequest]:
        """Apply one response; return the requests to send, in order."""
        engine = self.engine
        delivery = engine.receive(response, size, now)
        type_url = delivery.type_url
        removed = delivery.removed
        try:
            incoming = engine.read(response, self._reader.read)
            error = self._verdict(type_url, incoming)
        except RejectedResponse as exc:
            incoming, removed, error = [], (), str(exc)
        except (DecodeError, ValueError) as exc:
            incoming, removed, error = [], (), f"cannot decode {type_url}: {exc}"
        names = tuple(resource.name for resource, _ in incoming)
        if error is not None:
            self.events.append(
                XdsEvent(
                    now, type_url, delivery.version, names, removed, delivery.nonce, False, error
                )
            )
            return engine.nack(delivery, error)
        requests = engine.ack(delivery, incoming, now)
        self.events.append(
            XdsEvent(now, type_url, delivery.version, names, removed, delivery.nonce)
        )
        return requests

    def _verdict(self, type_url: str, incoming: list[Incoming]) -> str | None:
        seen: set[str] = set()
        for resource, _ in incoming:
            name = resource.name
            if name in seen:
                return f"duplicate {type_url} resource {name!r} in one response"
            seen.add(name)
        if self.reject is None:
            return None
        for resource, version in incoming:
            message = self.reject(
                type_url, ReceivedResource(type_url, resource.name, version, resource.body)
            )
            if message is not None:
                return message
        return None


class SotwClient(ProxyClient):
    """A simulated proxy on a SotW ADS stream."""

    engine_type = SotwClientEngine


class DeltaClient(ProxyClient):
    """A simulated proxy on a delta ADS stream."""

    engine_type = DeltaClientEngine
