"""The xDS server: thin gRPC (and REST) I/O around the protocol engines and generators."""
