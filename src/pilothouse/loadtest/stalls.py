"""Why proxies have not converged: what each is still waiting for, counted over a fleet.

``find_stalls`` looks at the proxies that are not settled and, for every type
each one wants now, puts it in one of these, in this order:

- **no response**: it asked and never got a response of the type;
- **NACKed**: its last response of the type was rejected (the first message is kept);
- **waiting**: it holds the type but not every name it asked for (the missing
  names are kept, at most ``NAME_LIMIT`` of them);
- **unanswered**: it got responses, but none accepted for what it asks now.

A type the proxy would ask for only after another (Envoy's LDS waits for its
clusters to warm) is *not asked yet*.  Proxies whose latest stream failed (and
that are not connected again) are counted by gRPC status, with one message each.

A ``Stalls`` is JSON (workers send it to the parent) and adds up (``merge``);
``describe`` says it in a few lines, the first of which is the verdict's reason
(types not asked yet only when nothing else explains them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS, short_name

NAME_LIMIT: Final = 100
"""Missing names kept per type (distinct ones); beyond it the count is a lower bound."""
SHOWN_NAMES: Final = 3
_RESOURCE_WORDS: Final = {
    CDS: ("cluster", "clusters"),
    EDS: ("cluster", "clusters"),
    LDS: ("listener", "listeners"),
    RDS: ("route configuration", "route configurations"),
}
_ORDER: Final = (CDS, EDS, LDS, RDS)


@dataclass
class TypeStall:
    """One type's reasons, counted in proxies."""

    no_response: int = 0
    nacked: int = 0
    first_nack: str | None = None
    waiting: int = 0
    missing: set[str] = field(default_factory=set)
    missing_truncated: bool = False
    unanswered: int = 0
    not_asked: int = 0

    def add_missing(self, names: Iterable[str]) -> None:
        for name in names:
            if name in self.missing:
                continue
            if len(self.missing) >= NAME_LIMIT:
                self.missing_truncated = True
                return
            self.missing.add(name)

    def merge(self, other: TypeStall) -> None:
        self.no_response += other.no_response
        self.nacked += other.nacked
        if self.first_nack is None:
            self.first_nack = other.first_nack
        self.waiting += other.waiting
        self.missing_truncated |= other.missing_truncated
        self.add_missing(sorted(other.missing))
        self.unanswered += other.unanswered
        self.not_asked += other.not_asked

    def to_json(self) -> dict[str, Any]:
        return {
            "noResponse": self.no_response,
            "nacked": self.nacked,
            "firstNack": self.first_nack,
            "waiting": self.waiting,
            "missingNames": sorted(self.missing),
            "missingTruncated": self.missing_truncated,
            "unanswered": self.unanswered,
            "notAskedYet": self.not_asked,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TypeStall:
        return cls(
            no_response=int(data["noResponse"]),
            nacked=int(data["nacked"]),
            first_nack=data["firstNack"],
            waiting=int(data["waiting"]),
            missing=set(data["missingNames"]),
            missing_truncated=bool(data["missingTruncated"]),
            unanswered=int(data["unanswered"]),
            not_asked=int(data["notAskedYet"]),
        )


@dataclass
class StreamStall:
    """Proxies whose latest stream failed with one gRPC status."""

    proxies: int = 0
    failures: int = 0
    example: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"proxies": self.proxies, "failures": self.failures, "example": self.example}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StreamStall:
        return cls(int(data["proxies"]), int(data["failures"]), str(data["example"]))


@dataclass
class Stalls:
    """What the unconverged proxies of a fleet are waiting for."""

    unconverged: int = 0
    types: dict[str, TypeStall] = field(default_factory=dict)
    """By type URL."""
    streams: dict[str, StreamStall] = field(default_factory=dict)
    """By gRPC status name (``UNAVAILABLE``), or ``other`` for a stream that broke."""

    def type(self, type_url: str) -> TypeStall:
        found = self.types.get(type_url)
        if found is None:
            found = self.types[type_url] = TypeStall()
        return found

    def merge(self, other: Stalls) -> Stalls:
        """Add ``other`` into this one; returns self."""
        self.unconverged += other.unconverged
        for type_url, stall in other.types.items():
            self.type(type_url).merge(stall)
        for status, stream in other.streams.items():
            mine = self.streams.setdefault(status, StreamStall(example=stream.example))
            mine.proxies += stream.proxies
            mine.failures += stream.failures
        return self

    def to_json(self) -> dict[str, Any]:
        return {
            "unconverged": self.unconverged,
            "types": {short_name(url): stall.to_json() for url, stall in self._sorted_types()},
            "streams": {status: stream.to_json() for status, stream in self.streams.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Stalls:
        by_short = {short_name(url): url for url in _ORDER}
        return cls(
            unconverged=int(data["unconverged"]),
            types={
                by_short.get(name, name): TypeStall.from_json(item)
                for name, item in data["types"].items()
            },
            streams={
                status: StreamStall.from_json(item) for status, item in data["streams"].items()
            },
        )

    def _sorted_types(self) -> list[tuple[str, TypeStall]]:
        rank = {url: index for index, url in enumerate(_ORDER)}
        return sorted(self.types.items(), key=lambda item: (rank.get(item[0], 99), item[0]))

    def describe(self) -> list[str]:
        """One line per reason, the most telling first (none when nothing is stalled)."""
        lines: list[str] = []
        for type_url, stall in self._sorted_types():
            kind = short_name(type_url)
            if stall.no_response:
                lines.append(f"{stall.no_response} proxies have no {kind} response")
            if stall.nacked:
                lines.append(
                    f"{stall.nacked} proxies NACKed {kind}, first error: {stall.first_nack}"
                )
            if stall.waiting:
                lines.append(
                    f"{stall.waiting} proxies still wait for {kind} of {_names(type_url, stall)}"
                )
            if stall.unanswered:
                lines.append(
                    f"{stall.unanswered} proxies got {kind} responses but none for what "
                    "they ask now"
                )
        for status, stream in sorted(self.streams.items(), key=lambda item: -item[1].proxies):
            lines.append(
                f"{stream.proxies} proxies' last stream failed with {status} "
                f"({stream.failures} failures in all): {stream.example}"
            )
        if lines:  # a type not asked yet waits for one of these: the JSON still counts it
            return lines
        for type_url, stall in self._sorted_types():
            if stall.not_asked:
                lines.append(
                    f"{stall.not_asked} proxies have not asked for {short_name(type_url)} "
                    "yet (it waits for an earlier type)"
                )
        if self.unconverged and not lines:
            lines.append(f"{self.unconverged} proxies are not settled for no reason found")
        return lines


def _names(type_url: str, stall: TypeStall) -> str:
    count = len(stall.missing)
    one, many = _RESOURCE_WORDS.get(type_url, ("resource", "resources"))
    words = one if count == 1 and not stall.missing_truncated else many
    shown = sorted(stall.missing)[:SHOWN_NAMES]
    more = "…" if count > len(shown) else ""
    bound = "at least " if stall.missing_truncated else ""
    return f"{bound}{count} {words}: {', '.join(shown)}{more}"


def _status(message: str) -> str:
    status, colon, _ = message.partition(":")
    if colon and status.isupper() and " " not in status:
        return status
    return "other"


def find_stalls(proxies: Iterable[SimulatedProxy]) -> Stalls:
    """What the proxies that are not settled wait for."""
    stalls = Stalls()
    for proxy in proxies:
        if proxy.settled():
            continue
        stalls.unconverged += 1
        wants = proxy.wants()
        for type_url in proxy.types:
            stall = stalls.type(type_url)
            subscription = wants.get(type_url)
            if subscription is None:
                stall.not_asked += 1
                continue
            counters = proxy.counters(type_url)
            error = proxy.last_error(type_url)
            missing = subscription.names - proxy.holds(type_url).keys()
            if counters.responses == 0:
                stall.no_response += 1
            elif error is not None:
                stall.nacked += 1
                if stall.first_nack is None:
                    stall.first_nack = error
            elif missing:
                stall.waiting += 1
                stall.add_missing(sorted(missing))
            elif counters.acks == 0 or proxy.subscription(type_url) != subscription:
                stall.unanswered += 1
        if proxy.stream_errors and not proxy.connected:
            latest = proxy.stream_errors[-1]
            stream = stalls.streams.setdefault(_status(latest), StreamStall(example=latest))
            stream.proxies += 1
            stream.failures += proxy.stream_failures
    stalls.types = {url: stall for url, stall in stalls.types.items() if _any(stall)}
    return stalls


def _any(stall: TypeStall) -> bool:
    return bool(
        stall.no_response or stall.nacked or stall.waiting or stall.unanswered or stall.not_asked
    )
