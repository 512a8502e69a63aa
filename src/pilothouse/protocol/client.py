"""The client side of one xDS stream, without I/O: response in, decision and requests out.

``ClientEngine`` is what a proxy (or a config consumer) does on an ADS stream,
written once for the load generator's simulated proxies and for the ``xds://``
config source.  ``SotwClientEngine`` and ``DeltaClientEngine`` (``client_sotw``,
``client_delta``) supply the message shapes; everything else is here:

- **subscribe**: ``open_stream`` returns the requests that start a stream, one
  per type the ``FollowUpPolicy`` wants (wildcard or by name), the node on the
  first; a type that wants nothing is not asked for.
- **ACK / NACK**: ``receive`` takes a response and returns a ``Delivery``; the
  caller reads and judges the content and answers it exactly once, with
  ``ack`` (giving what it accepts) or ``nack`` (giving the ``error_detail``
  message and code).  A NACK changes nothing held; the SotW NACK carries the
  last accepted version.
- **follow-ups**: after an ACK the policy says what is wanted now; every type
  whose wanted subscription differs from what was last asked on this stream
  gets a request, in the policy's order, before or after the ACK as the
  policy says.  Subscriptions are asked on an open stream only: before the
  first ``open_stream`` an answer is all there is to send.
- **resume**: held resources and accepted versions survive a reconnect, and
  ``open_stream`` reports them (SotW ``version_info``, delta
  ``initial_resource_versions``); nonces do not.

The engine reads no clock (the caller passes ``now``) and imports nothing from
grpc.  Requests are frozen values (``client_requests``); ``client_wire``
encodes them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

from pilothouse.protocol.client_policy import FollowUpPolicy
from pilothouse.protocol.client_requests import (
    INTERNAL,
    ClientRequest,
    RequestStatus,
)
from pilothouse.protocol.client_watch import ClientWatch, HeldResource
from pilothouse.protocol.messages import NodeLike
from pilothouse.protocol.subscriptions import Subscription


class RejectedResponse(ValueError):
    """A response the client must NACK; the message becomes ``error_detail.message``."""


class AlreadyAnswered(RuntimeError):
    """A response was ACKed or NACKed twice, or after a newer one of its type arrived."""


class ResourceLike(Protocol):
    """One resource of a response as the caller read it: name, bytes, references."""

    @property
    def name(self) -> str: ...

    @property
    def body(self) -> bytes: ...

    @property
    def refs(self) -> tuple[str, ...]: ...


Incoming = tuple[ResourceLike, str]
"""One resource of a response as the engine applies it: what was read, and its version."""

BodyReader = Callable[[str, bytes, "str | None"], ResourceLike]
"""``read(type_url, body, name)``: the caller's reading of one resource (name None: unknown)."""

HeldFactory = Callable[[ResourceLike, str], HeldResource]


def held_resource(resource: ResourceLike, version: str) -> HeldResource:
    """A fresh ``HeldResource`` (callers that share them across clients pass their own)."""
    return HeldResource(resource.name, version, resource.body, resource.refs)


class Delivery(NamedTuple):
    """One response received, waiting for its ACK or NACK."""

    type_url: str
    version: str
    """SotW ``version_info`` or delta ``system_version_info``."""
    nonce: str
    removed: tuple[str, ...]
    """Delta: names the response removes."""
    watch: ClientWatch


class ClientEngine(ABC):
    """One client's protocol state across its streams (one ``ClientWatch`` per type)."""

    keeps_version_of_unchanged = False
    """SotW: a resource whose content did not change keeps the version that last changed it."""

    def __init__(
        self,
        policy: FollowUpPolicy,
        node: NodeLike | None = None,
        make_held: HeldFactory = held_resource,
    ) -> None:
        self.policy = policy
        self._node = node
        self._make_held = make_held
        self._node_due = False
        self._streaming = False
        self._watches: dict[str, ClientWatch] = {url: ClientWatch(url) for url in policy.order}
        self._ranks = {url: rank for rank, url in enumerate(policy.order)}

    # -- what callers read -----------------------------------------------------

    @property
    def watches(self) -> Mapping[str, ClientWatch]:
        return MappingProxyType(self._watches)

    def watch(self, type_url: str) -> ClientWatch:
        """The type's watch (a new, empty one for a type never seen)."""
        known = self._watches.get(type_url)
        if known is None:
            known = self._watches[type_url] = ClientWatch(type_url)
        return known

    def settled(self) -> bool:
        """Every wanted type was asked as wanted and accepted, and every name asked is held.

        A type wanted empty (no name, no wildcard) has nothing to accept: a server
        answers no request that asks for nothing (SotW: an empty list on a type that
        is not wildcard; delta: a pure unsubscribe), and a new stream does not ask
        for it at all, so it needs no ACK (it may have had none, if the names it
        once wanted went before they were answered).
        """
        watches = self._watches
        for type_url, subscription in self.policy.desired(watches).items():
            watch = watches[type_url]
            if watch.subscription != subscription:
                return False
            if not watch.acks and not subscription.empty:
                return False
            if not subscription.names <= watch.held.keys():
                return False
        return True

    # -- transitions -----------------------------------------------------------

    def open_stream(self) -> list[ClientRequest]:
        """The requests that start a (new) stream: every wanted subscription, the node first."""
        self._streaming = True
        self._node_due = self._node is not None
        for watch in self._watches.values():
            watch.stream_restarted()
        requests = self._follow_ups(exclude=None)
        self._put_node(requests)
        return requests

    def receive(self, response: Any, size: int = 0, now: float = 0.0) -> Delivery:
        """Take one response (counted, its nonce kept); answer it with ``ack`` or ``nack``."""
        watch = self._watches.get(response.type_url) or self.watch(response.type_url)
        watch.count_response(size, now)
        watch.nonce = response.nonce
        delivery = self._delivery(response, watch)
        watch.pending = delivery
        return delivery

    def ack(
        self, delivery: Delivery, incoming: Sequence[Incoming] = (), now: float = 0.0
    ) -> list[ClientRequest]:
        """Accept the response holding ``incoming``; the ACK and the follow-ups it causes.

        A caller that keeps resources elsewhere (the ``xds://`` source keeps them
        in its store) accepts with nothing: the engine then holds only versions.
        """
        watch = self._answering(delivery)
        before = watch.held
        held, created = self._apply(watch, incoming, delivery.removed)
        changed = created or len(held) != len(before)
        if changed:
            watch.hold(held)
        self._accepted(watch, delivery)
        watch.count_ack(changed, now)
        ack = self._ack(watch)
        follow_ups = self._follow_ups(exclude=watch.type_url) if self._streaming else None
        if not follow_ups:
            requests = [ack]
        elif self.policy.ack_first:
            requests = [ack, *follow_ups]
        else:
            requests = [*follow_ups, ack]
        if self._node_due:
            self._put_node(requests)
        return requests

    def nack(self, delivery: Delivery, message: str, code: int = INTERNAL) -> list[ClientRequest]:
        """Reject the response whole: the NACK, carrying ``message`` and ``code``."""
        watch = self._answering(delivery)
        watch.count_nack(message)
        requests = [self._nack(watch, RequestStatus(code, message))]
        if self._node_due:
            self._put_node(requests)
        return requests

    # -- shared pieces ---------------------------------------------------------

    def _answering(self, delivery: Delivery) -> ClientWatch:
        watch = delivery.watch
        if watch.pending is not delivery:
            raise AlreadyAnswered(
                f"{delivery.type_url} response {delivery.nonce!r} was answered or superseded"
            )
        watch.pending = None
        return watch

    def _merge(
        self, watch: ClientWatch, incoming: Iterable[Incoming], held: dict[str, HeldResource]
    ) -> bool:
        """Put the subscribed incoming resources into ``held``; True if any is new or changed.

        A resource equal to the one held (same bytes, and same version unless
        ``keeps_version_of_unchanged``) keeps its held value.
        """
        subscription = watch.subscription
        wildcard = subscription.wildcard
        names = subscription.names
        current = watch.held
        keep_version = self.keeps_version_of_unchanged
        make = self._make_held
        created = False
        for resource, version in incoming:
            name = resource.name
            if not wildcard and name not in names:
                continue
            known = current.get(name)
            if (
                known is not None
                and known.body == resource.body
                and (keep_version or known.version == version)
            ):
                held[name] = known
            else:
                held[name] = make(resource, version)
                created = True
        return created

    def _follow_ups(self, exclude: str | None) -> list[ClientRequest]:
        """Requests for every type whose wanted subscription differs from what was asked."""
        wanted = self.policy.desired(self._watches)
        requests: list[ClientRequest] = []
        for type_url, subscription in wanted.items():
            if type_url == exclude:
                continue
            watch = self.watch(type_url)
            if watch.requested_on_stream and watch.subscription == subscription:
                continue
            request = self._subscribe(watch, subscription)
            watch.subscribe(subscription)
            if request is not None:
                watch.count_request()
                requests.append(request)
        if len(requests) > 1:
            ranks = self._ranks
            last = len(ranks)
            requests.sort(key=lambda request: ranks.get(request.type_url, last))
        return requests

    def _put_node(self, requests: list[ClientRequest]) -> None:
        """Put the node on the stream's first request only."""
        if self._node_due and requests:
            assert self._node is not None
            requests[0] = requests[0].with_node(self._node)
            self._node_due = False

    # -- message shapes --------------------------------------------------------

    @abstractmethod
    def read(self, response: Any, read_body: BodyReader) -> list[Incoming]:
        """The resources of a response, each read by ``read_body``, with its version.

        Raises ``RejectedResponse`` for a response that must be rejected whole
        (a resource of another type); lets what ``read_body`` raises through.
        """

    @abstractmethod
    def _delivery(self, response: Any, watch: ClientWatch) -> Delivery: ...

    @abstractmethod
    def _apply(
        self, watch: ClientWatch, incoming: Sequence[Incoming], removed: tuple[str, ...]
    ) -> tuple[dict[str, HeldResource], bool]:
        """What the client holds after accepting the response, and whether a resource is
        new or changed (a removal shows in the size)."""

    def _accepted(self, watch: ClientWatch, delivery: Delivery) -> None:  # noqa: B027
        """Record protocol state of an accepted response (SotW: its version)."""

    @abstractmethod
    def _ack(self, watch: ClientWatch) -> ClientRequest: ...

    @abstractmethod
    def _nack(self, watch: ClientWatch, status: RequestStatus) -> ClientRequest: ...

    @abstractmethod
    def _subscribe(self, watch: ClientWatch, subscription: Subscription) -> ClientRequest | None:
        """The request changing the type's subscription (None: nothing to send)."""


def skips_empty(watch: ClientWatch, subscription: Subscription) -> bool:
    """A new stream does not ask for a type it wants nothing of.

    (An empty list there would mean the legacy wildcard for CDS and LDS.)
    """
    return not watch.requested_on_stream and subscription.empty
