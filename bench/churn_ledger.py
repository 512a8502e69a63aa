"""Which proxy has which churn event, and since when.

``ChurnLedger`` is the bookkeeping, without I/O: events are added in the order
they are made; ``reach(proxy, service, generation, at)`` says that a proxy
ACKed, at ``at``, a load assignment of ``service`` whose generation (see
``churn_events``) is ``generation``. Every event of that service up to that
generation that the proxy did not have yet is then reached, and its latency
is ``at`` minus the instant the event was made: per event, the time from its
own file write (or, for the floor, its own instant) to the proxy's ACK of a
version that contains it, however many other events were merged into the
same push. An event is *complete* once every proxy reached it; its
completion time is its slowest proxy's latency.

``LedgerTap`` feeds a ledger from a fleet: a listener on every proxy looks at
each accepted EDS response and reports the generation of every load
assignment it carried.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence

from bench.churn_events import ChurnEvent
from pilothouse.loadtest.holdings import XdsEvent
from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.protocol.type_urls import EDS


class ChurnLedger:
    """Per event and proxy: reached or not, and how long it took."""

    def __init__(self, proxies: int, services: int) -> None:
        if proxies < 1 or services < 1:
            raise ValueError("a ledger needs proxies and services")
        self.proxies = proxies
        self.services = services
        self.events: list[ChurnEvent] = []
        self.latencies = array("d")
        """Every (event, proxy) latency, in the order they were reached."""
        self._by_service: list[list[int]] = [[] for _ in range(services)]
        """Per service: positions in ``events`` of its events, oldest first."""
        self._cursor = [[0] * services for _ in range(proxies)]
        """Per proxy and service: how many of the service's events it has reached."""
        self._reached: list[int] = []
        self._completion: list[float | None] = []
        self.complete = 0
        self._complete_prefix = 0
        self.last_reached_at: float | None = None

    def add(self, event: ChurnEvent) -> None:
        """A new event, made after every event added so far."""
        if self.events and event.number <= self.events[-1].number:
            raise ValueError("events must be added in the order they were made")
        if not 0 <= event.service < self.services:
            raise ValueError(f"service {event.service} is outside the ledger")
        self._by_service[event.service].append(len(self.events))
        self.events.append(event)
        self._reached.append(0)
        self._completion.append(None)

    def reach(self, proxy: int, service: int, generation: int, at: float) -> int:
        """``proxy`` ACKed, at ``at``, ``service``'s load assignment of ``generation``;
        returns how many events it reached with it."""
        positions = self._by_service[service]
        cursors = self._cursor[proxy]
        cursor = start = cursors[service]
        events = self.events
        while cursor < len(positions):
            position = positions[cursor]
            event = events[position]
            if event.number > generation:
                break
            latency = at - event.at
            self.latencies.append(latency)
            reached = self._reached[position] = self._reached[position] + 1
            if reached == self.proxies:
                self._completion[position] = latency
                self.complete += 1
            cursor += 1
        cursors[service] = cursor
        if cursor != start:
            self.last_reached_at = at
        return cursor - start

    @property
    def pending(self) -> int:
        """Events some proxy has not reached yet."""
        return len(self.events) - self.complete

    def delivered(self, through: int) -> bool:
        """Whether the first ``through`` events have all reached every proxy."""
        completion = self._completion
        while (
            self._complete_prefix < len(completion)
            and completion[self._complete_prefix] is not None
        ):
            self._complete_prefix += 1
        return self._complete_prefix >= through

    def completions(self) -> tuple[float | None, ...]:
        """Per event, in order: seconds until every proxy had it (None: some never did)."""
        return tuple(self._completion)

    def reached(self, position: int) -> int:
        """How many proxies reached the event at ``position``."""
        return self._reached[position]


GenerationOf = Callable[[bytes], int]


class LedgerTap:
    """Reports a fleet's accepted EDS responses to a ledger, by proxy index."""

    def __init__(
        self,
        proxies: Sequence[SimulatedProxy],
        ledger: ChurnLedger,
        service_of: Mapping[str, int],
        generation_of: GenerationOf,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if len(proxies) != ledger.proxies:
            raise ValueError("the ledger counts a different number of proxies")
        self.proxies = tuple(proxies)
        self.ledger = ledger
        self.service_of = service_of
        self.generation_of = generation_of
        self.clock = clock
        self._index = {proxy: index for index, proxy in enumerate(self.proxies)}
        self._seen: list[XdsEvent | None] = [None] * len(self.proxies)

    def attach(self) -> None:
        """Start listening; what the proxies hold already counts at once."""
        now = self.clock()
        for index, proxy in enumerate(self.proxies):
            self._report(index, proxy, proxy.holds(EDS).keys(), now)
            proxy.add_listener(self.observe)

    def detach(self) -> None:
        for proxy in self.proxies:
            proxy.remove_listener(self.observe)

    def observe(self, proxy: SimulatedProxy) -> None:
        """Runs after each response (and connection change) of ``proxy``."""
        events = proxy.events
        if not events:
            return
        last = events[-1]
        index = self._index[proxy]
        if last is self._seen[index] or last.type_url != EDS or not last.accepted:
            return
        self._seen[index] = last
        self._report(index, proxy, last.names, self.clock())

    def _report(self, index: int, proxy: SimulatedProxy, names: Iterable[str], now: float) -> None:
        held = proxy.holds(EDS)
        for name in names:
            service = self.service_of.get(name)
            resource = held.get(name)
            if service is None or resource is None:
                continue
            self.ledger.reach(index, service, self.generation_of(resource.body), now)
