"""xDS protocol engines without I/O: SotW and delta sessions, subscriptions, records.

Each server engine takes a request (and the caller's ``now``) and returns a
frozen decision; the caller reports what it sent.  ``stream_engine`` wraps one of them per server
stream, with its nonces and make-before-break ordering (``ordering``), behind one
interface: a request or a push in, the encoded responses (``wire``) out.  What both ends
of a stream share (type URLs, subscriptions, node messages) and the client engine live
in the leaf package :mod:`pilothouse.protocol`.  Nothing here imports grpc or opens a
socket, and the one wall clock (push versions' time) is handed in.
"""

from pilothouse.protocol.messages import NackError
from pilothouse.protocol.subscriptions import WILDCARD, Subscription
from pilothouse.xds.protocol.delta import DeltaDecision, DeltaKind, DeltaSession
from pilothouse.xds.protocol.delta_plan import DeltaPlan, plan_delta
from pilothouse.xds.protocol.delta_watch import DeltaWatch
from pilothouse.xds.protocol.records import ResourceRecord
from pilothouse.xds.protocol.sotw import SotwDecision, SotwKind, SotwSession
from pilothouse.xds.protocol.sotw_watch import SotwPlan, SotwWatch, plan_sotw
from pilothouse.xds.protocol.sync_status import SyncStatus, sync_status
from pilothouse.xds.protocol.versions import NonceSource, PushVersions, VersionRegression

__all__ = [
    "WILDCARD",
    "DeltaDecision",
    "DeltaKind",
    "DeltaPlan",
    "DeltaSession",
    "DeltaWatch",
    "NackError",
    "NonceSource",
    "PushVersions",
    "ResourceRecord",
    "SotwDecision",
    "SotwKind",
    "SotwPlan",
    "SotwSession",
    "SotwWatch",
    "Subscription",
    "SyncStatus",
    "VersionRegression",
    "plan_delta",
    "plan_sotw",
    "sync_status",
]
