"""ServiceEntries: TCP ports need addresses, and one host and port has one protocol."""

from __future__ import annotations

from tests.unit.analysis.mesh import findings

ENTRIES = """
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: shop}
spec:
  hosts: [db.example.com]
  resolution: DNS
  ports: [{number: 5432, name: pg, protocol: TCP}, {number: 8080, name: web, protocol: HTTP}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db-addressed, namespace: shop}
spec:
  hosts: [db2.example.com]
  addresses: [240.0.0.2]
  resolution: DNS
  ports: [{number: 5432, name: pg, protocol: TCP}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: web-again, namespace: other}
spec:
  hosts: [db.example.com]
  resolution: DNS
  ports: [{number: 8080, name: web, protocol: HTTP2}]
"""


def test_addresses_and_protocols() -> None:
    conflict = (
        " Multiple ServiceEntries (other/web-again,shop/db) define the same host"
        ' "db.example.com" and port 8080 with conflicting protocols (HTTP,HTTP2).'
    )
    assert findings(ENTRIES, "serviceentry.ServiceEntryAnalyzer", with_services=False) == [
        "Warning [IST0177] (ServiceEntry other/web-again mesh.yaml:19)" + conflict,
        "Warning [IST0134] (ServiceEntry shop/db mesh.yaml:2) ServiceEntry addresses are"
        " required for this protocol.",
        "Warning [IST0177] (ServiceEntry shop/db mesh.yaml:2)" + conflict,
    ]
