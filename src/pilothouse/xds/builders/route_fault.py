"""``HTTPFaultInjection`` → the fault filter's per-route ``HTTPFault``; Istio percentages.

Percentages, as istiod writes them: an Istio ``Percent`` (a double, 0-100)
becomes a FractionalPercent over a MILLION with numerator ``int(value * 10000)``
(truncated, so 0.1 % → 1000); the older integer percent fields become a
FractionalPercent over a HUNDRED.

Faults:

- ``delay``: a ``fixed_delay`` with its percentage (``percentage`` if set, else
  the deprecated integer ``percent``; neither means 0 %).  Exponential delays are
  not supported by istiod and are left out.
- ``abort``: ``http_status`` or ``grpc_status`` (the status *name*, e.g.
  ``UNAVAILABLE``, turned into its code) with ``percentage`` when given
  (unset otherwise, as istiod).  ``http2_error`` and unknown gRPC names are left
  out.
- When neither part survives there is no fault config at all.
"""

from __future__ import annotations

from typing import Final

from envoy.extensions.filters.http.fault.v3 import fault_pb2  # type: ignore[import-untyped]
from envoy.type.v3 import percent_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2

FAULT_FILTER: Final = "envoy.filters.http.fault"

GRPC_STATUS_CODES: Final = {
    "OK": 0,
    "CANCELLED": 1,
    "UNKNOWN": 2,
    "INVALID_ARGUMENT": 3,
    "DEADLINE_EXCEEDED": 4,
    "NOT_FOUND": 5,
    "ALREADY_EXISTS": 6,
    "PERMISSION_DENIED": 7,
    "RESOURCE_EXHAUSTED": 8,
    "FAILED_PRECONDITION": 9,
    "ABORTED": 10,
    "OUT_OF_RANGE": 11,
    "UNIMPLEMENTED": 12,
    "INTERNAL": 13,
    "UNAVAILABLE": 14,
    "DATA_LOSS": 15,
    "UNAUTHENTICATED": 16,
}

FractionalPercent = percent_pb2.FractionalPercent


def million_percent(percent: vs_pb2.Percent) -> percent_pb2.FractionalPercent:
    """An Istio Percent as parts per million (``int(value * 10000)``)."""
    return FractionalPercent(
        numerator=int(percent.value * 10000), denominator=FractionalPercent.MILLION
    )


def hundred_percent(value: int) -> percent_pb2.FractionalPercent:
    """An integer percentage over a HUNDRED."""
    return FractionalPercent(numerator=value, denominator=FractionalPercent.HUNDRED)


def http_fault(fault: vs_pb2.HTTPFaultInjection) -> fault_pb2.HTTPFault | None:
    """The per-route fault config, or ``None`` when nothing in it is supported."""
    out = fault_pb2.HTTPFault()
    has_part = False
    if fault.HasField("delay") and fault.delay.WhichOneof("http_delay_type") == "fixed_delay":
        delay = fault.delay
        out.delay.fixed_delay.CopyFrom(delay.fixed_delay)
        if delay.HasField("percentage"):
            out.delay.percentage.CopyFrom(million_percent(delay.percentage))
        else:
            out.delay.percentage.CopyFrom(hundred_percent(delay.percent))
        has_part = True
    if fault.HasField("abort"):
        abort = fault.abort
        kind = abort.WhichOneof("error_type")
        if kind == "http_status" or (
            kind == "grpc_status" and abort.grpc_status in GRPC_STATUS_CODES
        ):
            if kind == "http_status":
                out.abort.http_status = abort.http_status
            else:
                out.abort.grpc_status = GRPC_STATUS_CODES[abort.grpc_status]
            if abort.HasField("percentage"):
                out.abort.percentage.CopyFrom(million_percent(abort.percentage))
            has_part = True
    return out if has_part else None
