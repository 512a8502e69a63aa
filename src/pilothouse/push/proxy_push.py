"""What one proxy's push sends: the rules that turn a merged request into a planned push.

The push queue hands a push worker one connection and its merged :class:`PushRequest`;
:class:`ProxyPushRules` decides what that connection is sent, and the connection (the
target, :mod:`pilothouse.push.target`) only carries it out:

- An endpoint push (the EDS fast path, no new PushContext) sends the assignments of
  the watched clusters whose host changed and the SDS secrets the change replaced for
  this proxy (:class:`EndpointPush`), nothing else.
- A full push (:class:`FullPush`) regenerates only the types the changed kinds can
  alter (:func:`~pilothouse.push.affected_types.unaffected_types`), and EDS only if
  the change can move endpoints (:func:`~pilothouse.push.affected_types.moves_endpoints`);
  a forced push resends everything. The connection's first full push, and the first
  after the endpoints moved since its last one, leaves no type out and trusts no
  inert mark: listeners and clusters also read endpoints (inbound ports, DNS
  clusters), which an endpoint push does not regenerate.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from pilothouse.push.affected_types import moves_endpoints, unaffected_types
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.request import PushRequest
from pilothouse.push.secrets import secret_names
from pilothouse.registry.model import service_hosts


@dataclass(frozen=True, slots=True)
class EndpointPush:
    """An endpoint push: no new PushContext, EDS and SDS only."""

    request: PushRequest
    clusters: frozenset[str]
    """The watched EDS cluster names whose host changed: their assignments are sent."""
    secrets: frozenset[str]
    """The SDS secrets the change replaced for this proxy."""


@dataclass(frozen=True, slots=True)
class FullPush:
    """A full push: every watched type, but those the change cannot alter."""

    request: PushRequest
    endpoints: bool
    """Whether EDS is generated (the change can move endpoints)."""
    unchanged: frozenset[str]
    """The type URLs the change cannot alter: not generated at all."""

    @property
    def resend(self) -> bool:
        """A forced push: every watched resource is sent again, changed or not."""
        return self.request.forced


ProxyPush = EndpointPush | FullPush
"""What one connection is handed for one push."""


class Watching(Hashable, Protocol):
    """A connection as the rules read it: who its proxy is and which clusters it watches."""

    @property
    def proxy(self) -> ProxyIdentity: ...

    def watches_hosts(self, hostnames: frozenset[str]) -> frozenset[str]: ...


W = TypeVar("W", bound=Watching)


PLANS_KEPT = 64
"""Full requests whose plans :class:`ProxyPushRules` keeps (the scopes of a push each
queue one; a merge makes another)."""


class ProxyPushRules(Generic[W]):
    """Plans each connection's push; remembers, per connection, the endpoints' revision
    (``revision``, the endpoint index's) at its last full push.

    A full push's plan depends on the request and on whether the connection is settled,
    nothing else of it: the two plans of a request are made once and handed to every
    connection it is queued for (the queue hands each the very same request unless it
    merged it with another). A push queues one request per scope (each leaving out what
    the change cannot alter for that scope), and the scopes' connections come off the
    queue interleaved, so the plans of the last few requests are kept, not only the
    latest's."""

    def __init__(self, revision: Callable[[], int]) -> None:
        self._revision = revision
        self._pushed_at: dict[W, int] = {}
        self._plans: dict[int, tuple[PushRequest, FullPush, FullPush]] = {}
        """id(request) → the request (kept, so the id stays its own), its plan for a
        settled connection and for another; at most ``PLANS_KEPT``."""

    def plan(self, connection: W, request: PushRequest) -> ProxyPush:
        """What ``connection`` is sent for ``request``."""
        keys = request.configs_updated
        if not request.full:
            clusters = connection.watches_hosts(service_hosts(keys))
            return EndpointPush(request, clusters, secret_names(keys, connection.proxy))
        revision = self._revision()
        settled = self._pushed_at.get(connection) == revision
        self._pushed_at[connection] = revision
        plans = self._plans.get(id(request))
        if plans is None or plans[0] is not request:
            if len(self._plans) >= PLANS_KEPT:
                self._plans.clear()  # the requests of pushes long gone
            plans = (request, full_push(request, True), full_push(request, False))
            self._plans[id(request)] = plans
        return plans[1] if settled else plans[2]

    def forget(self, connection: W) -> None:
        """``connection`` is gone: its next full push, if it came back, would be a first."""
        self._pushed_at.pop(connection, None)


def full_push(request: PushRequest, settled: bool) -> FullPush:
    """The full push of ``request`` for a connection ``settled`` or not (see the module
    doc: a first push, or the first after endpoints moved, trusts no inert mark)."""
    return FullPush(
        request,
        endpoints=moves_endpoints(request, trust_inert=settled),
        unchanged=unaffected_types(request) if settled else frozenset(),
    )
