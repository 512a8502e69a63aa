"""DestinationRules: unknown hosts, subsets selecting nothing, two rules for one host,
and TLS that contradicts the workloads' PeerAuthentication."""

from __future__ import annotations

from tests.unit.analysis.mesh import findings

RULES = """
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: shop}
spec:
  host: reviews
  trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN}}
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews-extra, namespace: shop}
spec:
  host: reviews.shop.svc.cluster.local
  trafficPolicy: {loadBalancer: {simple: LEAST_REQUEST}}
  subsets: [{name: v1, labels: {version: v1}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: detials, namespace: shop}
spec: {host: detials}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: external, namespace: shop}
spec:
  host: api.example.com
  subsets: [{name: any, labels: {version: v5}}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: external, namespace: shop}
spec:
  hosts: [api.example.com]
  resolution: DNS
  ports: [{number: 443, name: tls, protocol: TLS}]
"""


def test_hosts_subsets_and_conflicting_rules() -> None:
    merged = (
        ' The DestinationRules [reviews reviews-extra] in namespace "shop" define the same host'
        " reviews.shop.svc.cluster.local"
    )
    assert findings(RULES, "destinationrule.HostAnalyzer") == [
        "Warning [IST0174] (DestinationRule shop/detials mesh.yaml:53) The host"
        " detials.shop.svc.cluster.local defined in the DestinationRule does not match any"
        ' services in the mesh. (did you mean "details.shop.svc.cluster.local"?)',
        "Error [IST0173] (DestinationRule shop/reviews mesh.yaml:35) The Subset v2 defined in"
        " the DestinationRule does not select any pods. Which may lead to 503 UH"
        " (NoHealthyUpstream).",
        "Warning [PH0101] (DestinationRule shop/reviews-extra mesh.yaml:45)"
        + merged
        + " and subset v1: they are merged in creation order, and the later one's subset v1"
        " is ignored.",
        "Warning [PH0101] (DestinationRule shop/reviews-extra mesh.yaml:45)"
        + merged
        + ": they are merged in creation order, and the later one's trafficPolicy is ignored.",
    ]


TLS = """
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: reviews, namespace: shop}
spec:
  selector: {matchLabels: {app: reviews}}
  mtls: {mode: STRICT}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: istio-system}
spec: {mtls: {mode: DISABLE}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews-plain, namespace: shop}
spec:
  host: reviews
  trafficPolicy: {tls: {mode: DISABLE}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: details-mutual, namespace: shop}
spec:
  host: details
  trafficPolicy:
    portLevelSettings: [{port: {number: 9080}, tls: {mode: ISTIO_MUTUAL}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews-mutual, namespace: shop}
spec:
  host: reviews
  trafficPolicy: {tls: {mode: ISTIO_MUTUAL}}
"""


def test_destination_rule_tls_against_peer_authentication() -> None:
    """reviews is STRICT by its own policy, details DISABLE by the mesh's: plain text to
    reviews and mutual TLS to details conflict; mutual TLS to reviews does not."""
    assert findings(TLS, "destinationrule.MTLSConflictAnalyzer") == [
        "Error [IST0113] (DestinationRule shop/details-mutual mesh.yaml:54) A DestinationRule"
        " and Policy are in conflict with regards to mTLS for host"
        ' details.shop.svc.cluster.local. The DestinationRule "shop/details-mutual" specifies'
        ' that mTLS must be true but the Policy object "istio-system/default" specifies'
        " DISABLE.",
        "Error [IST0113] (DestinationRule shop/reviews-plain mesh.yaml:47) A DestinationRule"
        " and Policy are in conflict with regards to mTLS for host"
        ' reviews.shop.svc.cluster.local. The DestinationRule "shop/reviews-plain" specifies'
        ' that mTLS must be false but the Policy object "shop/reviews" specifies STRICT.',
    ]
