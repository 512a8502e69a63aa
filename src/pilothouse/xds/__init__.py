"""xDS: the protocol engines (``protocol``), Envoy builders, generators and the server."""
