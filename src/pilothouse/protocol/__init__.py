"""The xDS protocol as both ends speak it, without I/O: type URLs, node messages,
subscriptions, the client engine (``client``, ``client_sotw``, ``client_delta``), and
reading a request's bytes on the serving side (``request_bytes``: the deserializers the
xDS and MCP servicers register).

A leaf: it imports no stage of pilothouse, so the ``xds://`` config source (a client
of an upstream server), the load generator and the xDS server
(:mod:`pilothouse.xds.protocol`, the server engines) and the MCP roles all build on it
without the sources stage, or mcp/, importing the serving stage.
"""
