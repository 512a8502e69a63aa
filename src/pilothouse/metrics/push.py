"""The distributions the push path records, with istiod's names, help texts and buckets.

istiod registers them in ``pilot/pkg/xds/monitoring.go`` and ``pkg/xds/monitoring.go``;
the specs below repeat those names, help texts and bucket bounds exactly, so that
dashboards and alerts written for istiod read pilothouse unchanged.

:class:`PushMetrics` is one server's set of them. The discovery server owns one and
hands its histograms to the debouncer, the push workers, the connections and the
stream writers, which record into them; ``/metrics`` reads them when scraped.
``PushMetrics(recording=False)`` drops every observation and reads no clock: the
"without metrics" side of ``bench/metrics_overhead.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from types import MappingProxyType
from typing import Final

from pilothouse.metrics.histogram import (
    Histogram,
    HistogramSpec,
    HistogramVec,
    Unrecorded,
    UnrecordedVec,
    spec,
)
from pilothouse.protocol.type_urls import SHORT_NAMES

_SECONDS: Final = (0.01, 0.1, 1, 3, 5, 10, 20, 30)
_PROXY_SECONDS: Final = (0.1, 0.5, 1, 3, 5, 10, 20, 30)

PUSH_TIME: Final = spec(
    "pilot_xds_push_time",
    "Total time in seconds Pilot takes to push lds, rds, cds and eds.",
    _SECONDS,
    "type",
)
SEND_TIME: Final = spec(
    "pilot_xds_send_time",
    "Total time in seconds Pilot takes to send generated configuration.",
    _SECONDS,
)
PROXY_CONVERGENCE_TIME: Final = spec(
    "pilot_proxy_convergence_time",
    "Delay in seconds between config change and a proxy receiving all required configuration.",
    _PROXY_SECONDS,
)
PROXY_QUEUE_TIME: Final = spec(
    "pilot_proxy_queue_time",
    "Time in seconds, a proxy is in the push queue before being dequeued.",
    _PROXY_SECONDS,
)
DEBOUNCE_TIME: Final = spec(
    "pilot_debounce_time",
    "Delay in seconds between the first config enters debouncing and the merged push "
    "request is pushed into the push queue.",
    _SECONDS,
)
PUSH_CONTEXT_INIT: Final = spec(
    "pilot_pushcontext_init_seconds",
    "Total time in seconds Pilot takes to init pushContext.",
    (0.01, 0.1, 0.5, 1, 3, 5),
)
CONFIG_SIZE: Final = spec(
    "pilot_xds_config_size_bytes",
    "Distribution of configuration sizes pushed to clients",
    # istiod: 4M is gRPC's default limit, 10M strains the system, 40M is about the most
    # a proxy takes.
    (1, 10_000, 1_000_000, 4_000_000, 10_000_000, 40_000_000),
    "type",
)

_METRIC_TYPES: Final = MappingProxyType({url: short.lower() for url, short in SHORT_NAMES.items()})

Clock = Callable[[], float]


def metric_type(type_url: str) -> str:
    """istiod's ``type`` label for a type URL (``GetMetricType``): ``cds``, ``eds``, ``lds``,
    ``rds``, ``sds``, ``ecds``, ``nds``, ``pcds``, ``wds``, ``wads``; any other type URL as is."""
    return _METRIC_TYPES.get(type_url, type_url)


def _no_clock() -> float:
    return 0.0


class PushMetrics:
    """One server's push distributions: every histogram its push path records into.

    ``clock`` is what the recorders time with (``time.perf_counter``; a constant when
    not recording, so that nothing is measured either).
    """

    def __init__(self, *, recording: bool = True) -> None:
        one = Histogram if recording else Unrecorded
        per = HistogramVec if recording else UnrecordedVec
        self.recording = recording
        self.clock: Clock = time.perf_counter if recording else _no_clock
        self.push_time: HistogramVec = per(PUSH_TIME)
        """By :func:`metric_type`: generating one response plus writing it to the stream."""
        self.send_time: Histogram = one(SEND_TIME)
        """Writing one response to the stream."""
        self.convergence: Histogram = one(PROXY_CONVERGENCE_TIME)
        """First config event → a proxy's full push written (EDS-only pushes excluded)."""
        self.queue_time: Histogram = one(PROXY_QUEUE_TIME)
        """A connection's wait in the push queue."""
        self.debounce_time: Histogram = one(DEBOUNCE_TIME)
        """First event of a debounced batch → its release."""
        self.context_init: Histogram = one(PUSH_CONTEXT_INIT)
        """Building one PushContext."""
        self.config_size: HistogramVec = per(CONFIG_SIZE)
        """By full type URL: bytes of one response."""

    def histograms(self) -> Iterator[Histogram | HistogramVec]:
        """Every histogram, in exposition order."""
        yield self.push_time
        yield self.send_time
        yield self.convergence
        yield self.queue_time
        yield self.debounce_time
        yield self.context_init
        yield self.config_size


def specs() -> tuple[HistogramSpec, ...]:
    """The spec of every push histogram (for the metrics reference and its test)."""
    return tuple(h.spec for h in PushMetrics(recording=False).histograms())
