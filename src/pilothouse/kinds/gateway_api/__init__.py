"""The Kubernetes Gateway API (``gateway.networking.k8s.io``): its kinds, their CRD rules,
and their meaning as the Istio Gateways and VirtualServices istiod turns them into.

- :mod:`.kinds`: the seven kinds' table rows (GatewayClass, Gateway, HTTPRoute,
  GRPCRoute, TCPRoute, TLSRoute, ReferenceGrant).
- :mod:`.checks`, :mod:`.gateway_rules`, :mod:`.route_rules`, :mod:`.http_rules`: the
  CRDs' OpenAPI and CEL validations, as errors with field paths.
- :mod:`.attachment`, :mod:`.translation`, :mod:`.listener_translation`,
  :mod:`.http_translation`, :mod:`.grpc_translation`, :mod:`.l4_translation`,
  :mod:`.mesh_translation`: which routes attach to which listeners (or, for GAMMA, to
  which Services), and the Istio config that serves them.
- :mod:`.audience`: what each generated object was made from, so that a change is
  pushed to the proxies it concerns only.
- :mod:`.status`: the conditions the spec asks a controller to report.
"""
