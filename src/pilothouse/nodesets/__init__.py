"""Per-node minimal config sets for node agents (the seed's Citadel Agent sync over MCP).

At Ant Group's scale a node agent that received every Pod and policy of the mesh would
take 100 MB per full sync; instead each agent gets only what its node needs, and a
change reaches only the agents it concerns. Here:

- **The node's set** (:mod:`~pilothouse.nodesets.membership`): the WorkloadEntries
  whose address is one of the node's addresses (the agent's ``nodeIP``), plus the
  objects that select any of them: Sidecars, AuthorizationPolicies,
  PeerAuthentications, RequestAuthentications, EnvoyFilters, Telemetry and
  WasmPlugins of the workload's namespace whose selector matches its labels (no
  selector: the whole namespace), and those of the root namespace (mesh-wide).
  ServiceEntries, routing rules and everything else stay out: the agent does not
  generate xDS, it serves its local view and knows which workloads it manages.
  Kubernetes Pods (by ``status.hostIP``) are not in the set yet: the registry's Pods
  do not reach this package.
- **The wire** (:mod:`~pilothouse.nodesets.server`): MCP-over-xDS with delta, on the
  xDS port as gRPC service ``pilothouse.nodeset.v1.NodeSetDiscoveryService``, method
  ``DeltaNodeSets`` (Envoy's ``DeltaDiscoveryRequest``/``DeltaDiscoveryResponse``).
  The agent names its node in the first request's node metadata (``INSTANCE_IPS``,
  comma-separated, as istio-agent sends its pod IPs) and subscribes (wildcard) to the
  GVK type names it wants (``networking.istio.io/v1/WorkloadEntry`` …); each resource
  is an ``Any`` of ``istio.mcp.v1alpha1.Resource`` named ``ns/name``, exactly as the
  ``api`` generator's. The first response of a type is the node's whole set (less
  what ``initial_resource_versions`` says the agent already holds); later ones carry
  only the changed objects and ``removed_resources``.
- **Who is pushed** (:mod:`~pilothouse.nodesets.membership`): a change to a
  WorkloadEntry touches the nodes of its old and new address; a change to a selecting
  object touches the nodes hosting a workload its old or new version selects. Only
  the streams of those nodes recompute their set and diff it against what they sent
  (:mod:`~pilothouse.nodesets.session`); every other stream is not woken. Encodings
  are shared by every stream (one per object revision).
"""
