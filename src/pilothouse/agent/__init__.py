"""The node agent (``pilothouse agent``): the part of a proxy that lives on its node.

It makes the workload's private key locally and only sends a CSR to pilothouse's
certificate service (:mod:`.remote_authority`), keeps the certificate and rotates it
(:mod:`.workload_identity`), serves SDS to Envoy over a Unix domain socket
(:mod:`.secret_stream`, :mod:`.delta_secret_stream`, :mod:`.sds_socket`), proxies
Envoy's ADS stream, SotW or delta, to pilothouse's TLS xDS port (:mod:`.xds_proxy`,
:mod:`.relay_flavour`, :mod:`.upstream`), and writes Envoy's bootstrap, starts Envoy
and supervises it (:mod:`.envoy_bootstrap`, :mod:`.envoy_process`, :mod:`.status`).
:mod:`.sidecar_agent` wires these for one workload; :mod:`.node_agent` serves several
workloads of a node, each behind a :mod:`.peer_gate`. No workload private key leaves
the node.
"""
