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
  When ``serve`` reads a Kubernetes cluster, the set also holds the Pods whose
  ``status.hostIP`` is the node's, in a minimal shape, and the Services selecting
  them (:mod:`~pilothouse.nodesets.kubernetes`); the policies select those Pods too.
- **The wire** (:mod:`~pilothouse.nodesets.server`): MCP-over-xDS with delta, on the
  xDS ports as gRPC service ``pilothouse.nodeset.v1.NodeSetDiscoveryService``, method
  ``DeltaNodeSets`` (Envoy's ``DeltaDiscoveryRequest``/``DeltaDiscoveryResponse``).
  The agent names its node in the first request's node metadata (``INSTANCE_IPS``,
  comma-separated, as istio-agent sends its pod IPs) and subscribes (wildcard) to the
  GVK type names it wants (``networking.istio.io/v1/WorkloadEntry`` …,
  ``core/v1/Pod``, ``core/v1/Service``); each resource is an ``Any`` of
  ``istio.mcp.v1alpha1.Resource`` named ``ns/name``, exactly as the ``api``
  generator's. The first response of a type is the node's whole set (less
  what ``initial_resource_versions`` says the agent already holds); later ones carry
  only the changed objects and ``removed_resources``.
- **Who may ask** (:mod:`~pilothouse.nodesets.node_access`): anyone on the plaintext
  port (loopback, as its ADS); on the TLS port, an authenticated caller for the node it
  runs on only (its identity placed at each address it names), else
  ``PERMISSION_DENIED``.
- **Who is pushed** (:mod:`~pilothouse.nodesets.membership`): a change to a
  WorkloadEntry or Pod touches the nodes of its old and new address; a change to a
  selecting object or a Service touches the nodes hosting a workload its old or new
  version selects. Only
  the streams of those nodes recompute their set and diff it against what they sent
  (:mod:`~pilothouse.nodesets.session`); every other stream is not woken. Encodings
  are shared by every stream (one per object revision).
"""
