"""How inspections are shown: text for people, JSON (``-o json``) for scripts.

One proxy, as text: the verdict line (``NAME: SYNCED`` or ``NAME: DIVERGED (n resources
differ)``), the node and Envoy admin address, a table of resources per type (held,
ACKed, the same in both), then one line per differing resource: its type, name, how it
differs and the two digests. A sample: one line per proxy inspected (with its
differences under it) or failed, then a count.

JSON keys, one proxy: ``proxyID``, ``nodeID``, ``envoyAdmin``, ``verdict``,
``types.{CDS,EDS,LDS,RDS}.{held,acked,same}``, ``differences[].{type,typeUrl,name,kind,
held,acked}`` (``kind``: ``held-not-acked``, ``acked-not-held``, ``different``; a digest
is null on the side that lacks the resource), ``static`` (bootstrap resources per type,
not compared) and ``unreadable``. A sample: ``verdict`` (``DIVERGED`` if any proxy is,
else ``SYNCED`` when every one chosen could be inspected, else ``UNKNOWN``, as when
there was none to choose), ``connected``, ``eligible``, ``sampled``, ``proxies`` (as
above) and ``failures[].{proxyID,nodeID,envoyAdmin,error}``.
"""

from __future__ import annotations

from typing import Any, Final

from pilothouse.inspector.compare import Difference, Kind, Verdict
from pilothouse.inspector.inspection import Failure, Inspection, Sample
from pilothouse.protocol.type_urls import short_name

UNKNOWN: Final = "UNKNOWN"
"""A sample's verdict when no proxy diverged but some could not be inspected."""

_KIND_TEXT: Final = {
    Kind.NOT_ACKED: "held, not acked",
    Kind.NOT_HELD: "acked, not held",
    Kind.DIFFERENT: "different",
}


def sample_verdict(sample: Sample) -> str:
    if any(i.verdict is Verdict.DIVERGED for i in sample.inspections):
        return Verdict.DIVERGED.value
    return UNKNOWN if sample.failures or not sample.inspections else Verdict.SYNCED.value


# -- text -------------------------------------------------------------------------------


def inspection_text(inspection: Inspection) -> str:
    proxy = inspection.proxy
    lines = [
        _headline(inspection),
        f"  node   {proxy.node_id}",
        f"  envoy  {inspection.envoy_admin}",
    ]
    lines.append(f"  {'TYPE':<5}{'HELD':>6}{'ACKED':>7}{'SAME':>6}")
    for type_url, counts in inspection.comparison.counts.items():
        lines.append(
            f"  {short_name(type_url):<5}{counts.held:>6}{counts.acked:>7}{counts.same:>6}"
        )
    lines += _differences_text(inspection.comparison.differences, "  ")
    if inspection.static:
        counted = ", ".join(f"{n} {short_name(t)}" for t, n in inspection.static.items())
        lines.append(f"  not compared (from the bootstrap): {counted}")
    lines += [f"  unreadable: {problem}" for problem in inspection.unreadable]
    return "\n".join(lines) + "\n"


def sample_text(sample: Sample) -> str:
    chosen = len(sample.inspections) + len(sample.failures)
    lines = [
        f"sampled {chosen} of {sample.eligible} proxies with a known Envoy admin address "
        f"({sample.connected} connected)"
    ]
    width = max((len(i.proxy.proxy_id) for i in sample.inspections), default=0)
    width = max([width, *(len(f.proxy) for f in sample.failures)])
    for inspection in sorted(sample.inspections, key=lambda i: i.proxy.proxy_id):
        lines.append(
            f"{inspection.proxy.proxy_id:<{width}}  {inspection.verdict.value:<8}  "
            f"{inspection.envoy_admin}"
        )
        lines += _differences_text(inspection.comparison.differences, "  ")
    for failure in sorted(sample.failures, key=lambda f: f.proxy):
        lines.append(f"{failure.proxy:<{width}}  {'FAILED':<8}  {failure.reason}")
    synced = sum(1 for i in sample.inspections if i.verdict is Verdict.SYNCED)
    diverged = len(sample.inspections) - synced
    lines.append(
        f"{sample_verdict(sample)}: {len(sample.inspections)} inspected, {synced} SYNCED, "
        f"{diverged} DIVERGED; {len(sample.failures)} could not be inspected"
    )
    return "\n".join(lines) + "\n"


def _headline(inspection: Inspection) -> str:
    name = inspection.proxy.proxy_id
    differences = len(inspection.comparison.differences)
    if not differences:
        return f"{name}: {Verdict.SYNCED.value}"
    noun = "resource differs" if differences == 1 else "resources differ"
    return f"{name}: {Verdict.DIVERGED.value} ({differences} {noun})"


def _differences_text(differences: tuple[Difference, ...], indent: str) -> list[str]:
    if not differences:
        return []
    width = max(len(d.name) for d in differences)
    lines = []
    for difference in differences:
        digests = []
        if difference.held is not None:
            digests.append(f"held {difference.held}")
        if difference.acked is not None:
            digests.append(f"acked {difference.acked}")
        lines.append(
            f"{indent}{short_name(difference.type_url):<4} {difference.name:<{width}}  "
            f"{_KIND_TEXT[difference.kind]:<16} {', '.join(digests)}"
        )
    return lines


# -- JSON -------------------------------------------------------------------------------


def inspection_json(inspection: Inspection) -> dict[str, Any]:
    proxy = inspection.proxy
    comparison = inspection.comparison
    return {
        "proxyID": proxy.proxy_id,
        "nodeID": proxy.node_id,
        "envoyAdmin": inspection.envoy_admin,
        "verdict": inspection.verdict.value,
        "types": {
            short_name(t): {"held": c.held, "acked": c.acked, "same": c.same}
            for t, c in comparison.counts.items()
        },
        "differences": [
            {
                "type": short_name(d.type_url),
                "typeUrl": d.type_url,
                "name": d.name,
                "kind": d.kind.value,
                "held": d.held,
                "acked": d.acked,
            }
            for d in comparison.differences
        ],
        "static": {short_name(t): n for t, n in inspection.static.items()},
        "unreadable": list(inspection.unreadable),
    }


def failure_json(failure: Failure) -> dict[str, Any]:
    return {
        "proxyID": failure.proxy,
        "nodeID": failure.node_id,
        "envoyAdmin": failure.envoy_admin,
        "error": failure.reason,
    }


def sample_json(sample: Sample) -> dict[str, Any]:
    return {
        "verdict": sample_verdict(sample),
        "connected": sample.connected,
        "eligible": sample.eligible,
        "sampled": len(sample.inspections) + len(sample.failures),
        "proxies": [inspection_json(i) for i in sample.inspections],
        "failures": [failure_json(f) for f in sample.failures],
    }
