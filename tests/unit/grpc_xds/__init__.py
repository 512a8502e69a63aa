"""Unit tests of the proxyless gRPC flavour: generators, flavour selection, validation."""
