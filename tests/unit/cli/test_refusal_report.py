"""How ``proxy-status`` shows refusals: rows from each replica's ``/debug/refusals``
(a replica without it left out), the table when nothing is connected, the footer
otherwise."""

from __future__ import annotations

from pilothouse.cli.admin_client import ReplicaAnswer
from pilothouse.cli.proxy_status import nothing_connected
from pilothouse.cli.refusal_report import footer, reason_rows

NOW = 1_790_000_100.0  # the refusals below are 40 s and 100 s older


def refusals(count: int, peer: str, at: str) -> dict[str, object]:
    return {
        "reasons": {
            "unauthenticated": {
                "count": count,
                "lastTime": at,
                "lastPeer": peer,
                "lastNodeId": "sidecar~10.0.0.7~app.ns~ns.svc.cluster.local",
                "lastMessage": "authentication failed: no token",
            }
        },
        "recent": [],
    }


A_AT, B_AT = "2026-09-21T14:14:20+00:00", "2026-09-21T14:13:20+00:00"
ANSWERS = [
    ReplicaAnswer("http://a:15014", 200, refusals(3, "ipv4:10.0.0.7:4000", A_AT)),
    ReplicaAnswer("http://b:15014", 200, refusals(2, "ipv4:10.0.0.8:4000", B_AT)),
    ReplicaAnswer("http://istiod:15014", 404, {"error": "not found"}, problem="not found"),
]


def test_rows_come_from_every_replica_that_has_refusals() -> None:
    rows = reason_rows(ANSWERS)
    assert [(r.replica, r.reason, r.count) for r in rows] == [
        ("a:15014", "unauthenticated", 3),
        ("b:15014", "unauthenticated", 2),
    ]


def test_nothing_connected_says_so_and_shows_the_refusals() -> None:
    text = nothing_connected(["http://a:15014"], reason_rows(ANSWERS), NOW)
    lines = text.splitlines()
    assert lines[0] == "no proxies connected to http://a:15014"
    assert lines[3].split()[:4] == ["REASON", "COUNT", "LAST", "PEER"]
    assert lines[4].split()[:6] == ["unauthenticated", "3", "40s", "ago", "ipv4:10.0.0.7:4000",
                                    "sidecar~10.0.0.7~app.ns~ns.svc.cluster.local"]  # fmt: skip
    assert lines[4].endswith("authentication failed: no token")
    assert nothing_connected(["http://a:15014"], [], NOW) == "no proxies connected to http://a:15014\n"


def test_the_footer_sums_replicas_and_names_the_latest() -> None:
    assert footer(reason_rows(ANSWERS), NOW) == (
        "refused: unauthenticated 5 (last 40s ago, ipv4:10.0.0.7:4000)\n"
    )
