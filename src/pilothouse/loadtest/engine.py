"""The client side of one xDS stream, without I/O: response in, requests out.

``ClientEngine`` holds a simulated proxy's per-type state across streams and
turns each response into the requests a real client would send next: the
follow-up subscriptions the response causes (from the ``RequestPlan``) and its
ACK or NACK, in the flavour's order.  ``SotwClient`` and ``DeltaClient``
(``sotw_client``, ``delta_client``) supply the message shapes.

A response is NACKed, whole, when a resource does not decode, names the wrong
type, appears twice, or when the caller's ``reject`` hook returns a message for
it.  A NACK changes nothing the proxy holds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final

from google.protobuf.message import DecodeError
from google.rpc import status_pb2

from pilothouse.loadtest.holdings import HeldResource, ReceivedResource, TypeState, XdsEvent
from pilothouse.loadtest.identity import ProxyNode, node_message
from pilothouse.loadtest.plans import RequestPlan
from pilothouse.loadtest.references import ResourceFacts, ResourceReader
from pilothouse.xds.protocol.subscriptions import Subscription

RejectHook = Callable[[str, ReceivedResource], str | None]
"""``reject(type_url, resource)`` → a NACK message, or None to accept the resource."""

NACK_CODE: Final = 13
"""``INTERNAL``, as Envoy sets it in ``error_detail``."""


class RejectedResponse(ValueError):
    """A response the client must NACK; the message becomes ``error_detail.message``."""


Incoming = tuple[ResourceFacts, str]
"""One resource of a response as the engine reads it: its facts and its version."""


class ClientEngine(ABC):
    """Per-proxy protocol state shared by the SotW and delta clients."""

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
        self._node = node_message(identity)
        self._node_due = True
        self._states: dict[str, TypeState] = {url: TypeState(url) for url in plan.order}
        self.events: deque[XdsEvent] = deque(maxlen=event_log_size)

    # -- what callers read -----------------------------------------------------

    @property
    def states(self) -> Mapping[str, TypeState]:
        return MappingProxyType(self._states)

    def state(self, type_url: str) -> TypeState:
        known = self._states.get(type_url)
        if known is None:
            known = self._states[type_url] = TypeState(type_url)
        return known

    # -- transitions -----------------------------------------------------------

    def open_stream(self) -> list[Any]:
        """The requests that start a (new) stream: every subscription, the node on the first."""
        self._node_due = True
        for state in self._states.values():
            state.stream_restarted()
        return self._with_node(self._follow_ups(exclude=None))

    def on_response(self, response: Any, size: int, now: float) -> list[Any]:
        """Apply one response; return the requests to send, in order."""
        state = self.state(response.type_url)
        state.count_response(size, now)
        state.nonce = response.nonce
        try:
            incoming, removed = self._read(state, response)
            error = self._verdict(state.type_url, incoming)
        except RejectedResponse as exc:
            incoming, removed, error = [], [], str(exc)
        except (DecodeError, ValueError) as exc:
            incoming, removed, error = [], [], f"cannot decode {state.type_url}: {exc}"
        names = tuple(facts.name for facts, _ in incoming)
        version = self._response_version(response)
        if error is not None:
            state.count_nack(error)
            self.events.append(
                XdsEvent(
                    now, state.type_url, version, names, tuple(removed), state.nonce, False, error
                )
            )
            return self._with_node([self._nack(state, error)])
        before = state.held
        held, created = self._apply(state, incoming, removed)
        changed = created or len(held) != len(before)
        if changed:
            state.hold(held)
        self._accepted(state, response)
        state.count_ack(changed, now)
        self.events.append(
            XdsEvent(now, state.type_url, version, names, tuple(removed), state.nonce)
        )
        ack = self._ack(state)
        follow_ups = self._follow_ups(exclude=state.type_url)
        requests = [ack, *follow_ups] if self.plan.ack_first else [*follow_ups, ack]
        return self._with_node(requests)

    # -- shared pieces ---------------------------------------------------------

    def _verdict(self, type_url: str, incoming: list[Incoming]) -> str | None:
        seen: set[str] = set()
        for facts, _ in incoming:
            name = facts.name
            if name in seen:
                return f"duplicate {type_url} resource {name!r} in one response"
            seen.add(name)
        if self.reject is None:
            return None
        for facts, version in incoming:
            message = self.reject(
                type_url, ReceivedResource(type_url, facts.name, version, facts.body)
            )
            if message is not None:
                return message
        return None

    keeps_version_of_unchanged = False
    """SotW: a resource whose content did not change keeps the version that last changed it."""

    def _merge(
        self, state: TypeState, incoming: Iterable[Incoming], held: dict[str, HeldResource]
    ) -> bool:
        """Put the subscribed incoming resources into ``held``; True if any is new or changed.

        A resource equal to the one held (same bytes, and same version unless
        ``keeps_version_of_unchanged``) keeps its held value.
        """
        subscription = state.subscription
        wildcard = subscription.wildcard
        names = subscription.names
        current = state.held
        keep_version = self.keeps_version_of_unchanged
        created = False
        for facts, version in incoming:
            name = facts.name
            if not wildcard and name not in names:
                continue
            known = current.get(name)
            if (
                known is not None
                and known.body == facts.body
                and (keep_version or known.version == version)
            ):
                held[name] = known
            else:
                held[name] = self._reader.held(facts, version)
                created = True
        return created

    def _read_facts(self, type_url: str, body: bytes, name: str | None = None) -> ResourceFacts:
        return self._reader.read(type_url, body, name)

    def _follow_ups(self, exclude: str | None) -> list[Any]:
        """Requests for every type whose wanted subscription differs from what was asked."""
        wanted = self.plan.desired(self._states)
        requests: list[Any] = []
        for type_url, subscription in wanted.items():
            if type_url == exclude:
                continue
            state = self.state(type_url)
            if state.requested_on_stream and state.subscription == subscription:
                continue
            request = self._subscribe(state, subscription)
            state.subscription = subscription
            state.started = True
            state.requested_on_stream = True
            stale = [name for name in state.held if not subscription.covers(name)]
            if stale:
                state.hold({k: v for k, v in state.held.items() if subscription.covers(k)})
            if request is not None:
                state.count_request()
                requests.append(request)
        requests.sort(key=lambda request: self._rank(request.type_url))
        return requests

    def _rank(self, type_url: str) -> int:
        order = self.plan.order
        return order.index(type_url) if type_url in order else len(order)

    def _with_node(self, requests: list[Any]) -> list[Any]:
        """Put the node on the stream's first request only."""
        if self._node_due and requests:
            requests[0].node.CopyFrom(self._node)
            self._node_due = False
        return requests

    @staticmethod
    def _status(message: str) -> Any:
        return status_pb2.Status(code=NACK_CODE, message=message)

    @staticmethod
    def _skip_empty(subscription: Subscription) -> bool:
        """A new stream does not ask for a type it wants nothing of.

        (An empty list there would mean the legacy wildcard for CDS and LDS.)
        """
        return subscription.empty

    # -- message shapes --------------------------------------------------------

    @abstractmethod
    def _read(self, state: TypeState, response: Any) -> tuple[list[Incoming], list[str]]:
        """The resources of a response, and the names it removes.

        Raises ``RejectedResponse`` for a response the client must reject, and
        lets ``ValueError`` or a protobuf ``DecodeError`` from decoding through
        (those are NACKed as "cannot decode").
        """

    @abstractmethod
    def _response_version(self, response: Any) -> str: ...

    @abstractmethod
    def _apply(
        self, state: TypeState, incoming: list[Incoming], removed: list[str]
    ) -> tuple[dict[str, HeldResource], bool]:
        """What the proxy holds after accepting the response, and whether a resource is new
        or changed (a removal shows in the size)."""

    def _accepted(self, state: TypeState, response: Any) -> None:  # noqa: B027 - optional hook
        """Record protocol state of an accepted response (SotW: its version)."""

    @abstractmethod
    def _ack(self, state: TypeState) -> Any: ...

    @abstractmethod
    def _nack(self, state: TypeState, error: str) -> Any: ...

    @abstractmethod
    def _subscribe(self, state: TypeState, subscription: Subscription) -> Any | None:
        """The request changing the type's subscription (None: nothing to send)."""
