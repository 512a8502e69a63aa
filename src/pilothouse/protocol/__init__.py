"""The xDS protocol as both ends speak it, without I/O: type URLs, node messages,
subscriptions, and the client engine (``client``, ``client_sotw``, ``client_delta``).

A leaf: it imports no stage of pilothouse, so the ``xds://`` config source (a client
of an upstream server), the load generator and the xDS server
(:mod:`pilothouse.xds.protocol`, the server engines) all build on it without the
sources stage importing the serving stage.
"""
