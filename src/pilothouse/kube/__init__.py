"""Reading a Kubernetes API server: the client, informers, and what is built from them."""
