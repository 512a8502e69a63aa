"""The legacy MCP (``istio.mcp.v1alpha1``) session, without I/O: one engine for all four roles.

MCP has two sides whatever the transport: the *source* holds config, the *sink* consumes
it. Which one dials only decides the gRPC service (``ResourceSource``: the sink dials;
``ResourceSink``: the source dials, opening with ``$triggerCollection``); the exchange on
the stream is the same. So pilothouse's four roles share two engines:

- :class:`SourceSession` (``source_session``): the ``ResourceSource`` server and the
  dial-out source;
- :class:`SinkSession` (``sink_session``): the sink client (``mcp://``) and the
  ``ResourceSink`` server.

Each takes a message and returns a frozen decision; neither imports gRPC, so both are
tested with tables and a Hypothesis state machine that drives one against the other.
"""

from pilothouse.mcp.messages import (
    TRIGGER_COLLECTION,
    Code,
    EncodedResource,
    McpError,
    Push,
    ReceivedResources,
    SinkRequest,
    encode_push,
    received_from_proto,
    request_from_proto,
    request_to_proto,
    trigger_push,
)
from pilothouse.mcp.sink_session import (
    CollectionChange,
    SinkDecision,
    SinkKind,
    SinkOptions,
    SinkSession,
    SinkStats,
)
from pilothouse.mcp.snapshot import CollectionSnapshot, SnapshotCache
from pilothouse.mcp.source_session import (
    SourceDecision,
    SourceKind,
    SourceSession,
    SourceStats,
    Watch,
    accept,
    plan_push,
)

__all__ = [
    "TRIGGER_COLLECTION",
    "Code",
    "CollectionChange",
    "CollectionSnapshot",
    "EncodedResource",
    "McpError",
    "Push",
    "ReceivedResources",
    "SinkDecision",
    "SinkKind",
    "SinkOptions",
    "SinkRequest",
    "SinkSession",
    "SinkStats",
    "SnapshotCache",
    "SourceDecision",
    "SourceKind",
    "SourceSession",
    "SourceStats",
    "Watch",
    "accept",
    "encode_push",
    "plan_push",
    "received_from_proto",
    "request_from_proto",
    "request_to_proto",
    "trigger_push",
]
