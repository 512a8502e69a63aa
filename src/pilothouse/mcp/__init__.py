"""Legacy MCP (``istio.mcp.v1alpha1``): the protocol engine and the four gRPC roles.

``protocol`` holds the sans-I/O session; ``source_server`` (``ResourceSource``),
``sink_server`` (``ResourceSink``), ``sink_client`` (the ``mcp://`` config source) and
``dialout`` (``--mcp-sink-address``) are the thin grpc.aio roles around it.
"""
