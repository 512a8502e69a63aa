"""The node-set service's names on the wire, shared by the server and the node agent.

The agent's client (:mod:`pilothouse.agent.node_set`) imports these alone, not the server
(:mod:`pilothouse.nodesets.server`), whose generators and MCP admission a node agent never
runs.
"""

from __future__ import annotations

NODE_SET_SERVICE = "pilothouse.nodeset.v1.NodeSetDiscoveryService"
DELTA_NODE_SETS = "DeltaNodeSets"
NODE_ADDRESSES_KEY = "INSTANCE_IPS"
"""The node metadata key naming the node's addresses (comma-separated)."""
