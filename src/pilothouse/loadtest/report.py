"""The final report of a load run: every share's figures added up, as JSON and as a table.

``build_report`` turns a ``RunRecord`` (and what was seen of the server) into
one JSON-ready object; ``render_text`` prints the same figures as a small
table.  Times are in seconds in JSON and in milliseconds in the table.

- ``connect``: proxies converged and not, per-proxy seconds from its start to
  its first convergence (count, min, p50, p90, p99, max, mean), and the wall
  time from the start until the last proxy converged; for the proxies still
  unsettled at the end, what they wait for (``stalls``, per type: no response,
  NACKed, names missing; failed streams by gRPC status) and the same in words
  (``stallReasons``);
- ``changes`` (push, churn): changes made and failed, the rate achieved (churn),
  (proxy, change) pairs reached and missed, their times, the trigger's own
  time, and per change (the first 100) its own times and, when the server was
  sampled, its CPU seconds from the trigger until every proxy reached it
  (``serverCpuSeconds``);
- ``traffic`` per phase: responses received (each one a push), bytes, and
  both per second;
- ``errors``: NACKs, failed streams, reconnects, failed triggers, examples;
- ``serverProcess``: the server's memory (start, once connected, end, peak) and
  CPU per phase, when a probe could read them.

The run is ``ok`` when every proxy converged, reached every change, sent no
NACK, every trigger worked and nobody interrupted it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pilothouse.loadtest.histogram import LatencyHistogram, summary_json
from pilothouse.loadtest.outcome import ShareResult, Traffic
from pilothouse.loadtest.scenarios import (
    CHANGES_BEGIN,
    CHANGES_MADE,
    CONNECTED,
    END,
    START,
    RunRecord,
    change_marks,
)
from pilothouse.loadtest.server_process import ServerRecord
from pilothouse.loadtest.spec import Scenario
from pilothouse.loadtest.stalls import Stalls
from pilothouse.protocol.type_urls import short_name

ERROR_EXAMPLES: Final = 5
PER_CHANGE_LIMIT: Final = 100


def _traffic_json(traffic: Traffic, seconds: float) -> dict[str, Any]:
    data: dict[str, Any] = {"seconds": seconds, **traffic.to_json()}
    data["pushesPerSecond"] = traffic.responses / seconds if seconds > 0 else None
    data["bytesPerSecond"] = traffic.received_bytes / seconds if seconds > 0 else None
    return data


def _traffic_at(results: list[ShareResult], mark: str) -> Traffic:
    total = Traffic()
    for result in results:
        total = total + result.marks.get(mark, Traffic())
    return total


def _connect(record: RunRecord) -> dict[str, Any]:
    results = record.results
    histogram = LatencyHistogram()
    for result in results:
        histogram.merge(result.connect)
    converged = sum(result.converged for result in results)
    proxies = sum(result.proxies for result in results)
    last = [r.last_converged_at for r in results if r.last_converged_at is not None]
    start = record.marks.get(START)
    wall = max(last) - start if last and start is not None else None
    seconds = record.seconds(START, CONNECTED)
    stalls = Stalls()
    for result in results:
        stalls.merge(result.stalls)
    return {
        "converged": converged,
        "unconverged": proxies - converged,
        "stalls": stalls.to_json(),
        "stallReasons": stalls.describe(),
        "seconds": summary_json(histogram.summary()),
        "wallSeconds": wall if converged == proxies else None,
        "traffic": _traffic_json(_traffic_at(results, CONNECTED), seconds),
    }


def _changes(record: RunRecord) -> dict[str, Any]:
    results = record.results
    made = [fired for fired in record.fired if fired.ok]
    overall = LatencyHistogram()
    for result in results:
        overall.merge(result.change_times)
    per_change: list[dict[str, Any]] = []
    reached = missed = 0
    for index, fired in enumerate(made):
        outcomes = [
            change for result in results for change in result.changes if change.index == index
        ]
        change_reached = sum(change.reached for change in outcomes)
        change_missed = sum(change.missed for change in outcomes)
        reached += change_reached
        missed += change_missed
        if index < PER_CHANGE_LIMIT:
            histograms = [change.histogram for change in outcomes]
            merged: LatencyHistogram | None = LatencyHistogram()
            for histogram in histograms:
                if histogram is None or merged is None:
                    merged = None
                else:
                    merged.merge(histogram)
            per_change.append(
                {
                    "number": fired.number,
                    "reached": change_reached,
                    "missed": change_missed,
                    "seconds": None if merged is None else summary_json(merged.summary()),
                }
            )
    trigger_times = LatencyHistogram()
    trigger_times.extend(fired.seconds for fired in record.fired)
    seconds = record.seconds(CONNECTED, END)
    window = record.seconds(CHANGES_BEGIN, CHANGES_MADE)
    changes_traffic = _traffic_at(results, END) - _traffic_at(results, CONNECTED)
    return {
        "made": len(made),
        "failed": len(record.fired) - len(made),
        "ratePerSecond": len(record.fired) / window if window > 0 else None,
        "reached": reached,
        "missed": missed,
        "seconds": summary_json(overall.summary()),
        "triggerSeconds": summary_json(trigger_times.summary()),
        "perChange": per_change,
        "traffic": _traffic_json(changes_traffic, seconds),
    }


def _errors(record: RunRecord) -> dict[str, Any]:
    results = record.results
    examples: dict[str, None] = {}
    for fired in record.fired:
        if fired.error is not None:
            examples.setdefault(f"change {fired.number}: {fired.error}", None)
    for result in results:
        for example in result.error_examples:
            examples.setdefault(example, None)
    return {
        "nacks": _traffic_at(results, END).nacks,
        "streamFailures": sum(result.stream_failures for result in results),
        "reconnects": sum(result.reconnects for result in results),
        "triggerFailures": sum(1 for fired in record.fired if not fired.ok),
        "examples": list(examples)[:ERROR_EXAMPLES],
    }


def build_report(
    record: RunRecord,
    *,
    server: ServerRecord | None = None,
    server_pid: int | None = None,
    admin: str | None = None,
) -> dict[str, Any]:
    """One JSON-ready object with every figure of the run."""
    spec = record.spec
    connect = _connect(record)
    changes = None if spec.scenario is Scenario.CONNECT else _changes(record)
    errors = _errors(record)
    total_seconds = record.seconds(START, END)
    total = _traffic_at(record.results, END)
    server_json: dict[str, Any] | None = None
    if server is not None and server.samples:
        phases = {
            "connect": (START, CONNECTED, record.seconds(START, CONNECTED)),
            "changes": (CONNECTED, END, record.seconds(CONNECTED, END)),
            "total": (START, END, total_seconds),
        }
        if changes is None:
            del phases["changes"]
        server_json = {"pid": server_pid, **server.to_json(phases)}
        connected = server.marks.get(CONNECTED)
        server_json["rssBytes"]["connected"] = None if connected is None else connected.rss_bytes
        for change in changes["perChange"] if changes is not None else ():
            used = server.cpu_between(*change_marks(change["number"]))
            if used is not None:
                change["serverCpuSeconds"] = used
    ok = (
        connect["unconverged"] == 0
        and (changes is None or (changes["missed"] == 0 and changes["failed"] == 0))
        and errors["nacks"] == 0
        and not record.interrupted
    )
    return {
        "scenario": spec.scenario.value,
        "server": spec.server,
        "admin": admin,
        "proxies": spec.proxies,
        "processes": spec.processes,
        "transport": spec.transport,
        "flavour": spec.flavour.value,
        "namespaces": list(spec.namespaces),
        "types": [short_name(type_url) for type_url in spec.types],
        "trigger": spec.trigger.describe() if spec.trigger.given else None,
        "elapsedSeconds": total_seconds,
        "interrupted": record.interrupted,
        "ok": ok,
        "connect": connect,
        "changes": changes,
        "traffic": _traffic_json(total, total_seconds),
        "errors": errors,
        "serverProcess": server_json,
    }


# -- text ---------------------------------------------------------------------


def milliseconds(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.1f}ms"


def size(count: float | None) -> str:
    if count is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(count) < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GiB"


def _row(label: str, summary: Mapping[str, Any] | None, missed: int) -> str:
    if summary is None:
        return f"{label:<16}{0:>7}{'-':>10}{'-':>10}{'-':>10}{'-':>10}{missed:>8}"
    cells = [milliseconds(summary[key]) for key in ("p50", "p90", "p99", "max")]
    return (
        f"{label:<16}{summary['count']:>7}" + "".join(f"{c:>10}" for c in cells) + (f"{missed:>8}")
    )


def _traffic_row(label: str, traffic: Mapping[str, Any]) -> str:
    rate = traffic["pushesPerSecond"]
    byte_rate = traffic["bytesPerSecond"]
    return (
        f"{label:<16}{traffic['seconds']:>8.1f}{traffic['responses']:>10}"
        f"{'-' if rate is None else f'{rate:.1f}':>11}{size(traffic['receivedBytes']):>12}"
        f"{'-' if byte_rate is None else size(byte_rate) + '/s':>14}"
    )


def _server_lines(server: Mapping[str, Any]) -> list[str]:
    rss = server["rssBytes"]
    who = f"pid {server['pid']}" if server.get("pid") is not None else "server"
    parts = [
        f"server ({who}, {server['source']}): RSS {size(rss['start'])} at start, "
        f"{size(rss['end'])} at end, {size(rss['peak'])} peak"
    ]
    cpu = [
        f"{percent:.0f}% {phase}"
        for phase, percent in server["cpuPercent"].items()
        if percent is not None and phase != "total"
    ]
    if cpu:
        parts.append("CPU " + ", ".join(cpu))
    return ["; ".join(parts)]


def _types_note(report: Mapping[str, Any]) -> str:
    types = report.get("types") or []
    return "" if len(types) == 4 else f", {'+'.join(types)} only"


def render_text(report: Mapping[str, Any]) -> str:
    """The report as a few lines and two small tables."""
    lines = [
        f"pilothouse loadtest: {report['scenario']}, {report['proxies']} {report['flavour']} "
        f"proxies ({report['transport']}, {report['processes']} process"
        f"{'es' if report['processes'] != 1 else ''}{_types_note(report)}) against "
        f"{report['server']}, "
        f"{report['elapsedSeconds']:.1f}s",
        "",
        f"{'convergence':<16}{'n':>7}{'p50':>10}{'p90':>10}{'p99':>10}{'max':>10}{'missed':>8}",
    ]
    connect = report["connect"]
    lines.append(_row("connect", connect["seconds"], connect["unconverged"]))
    reasons = connect.get("stallReasons") or []
    if reasons:
        lines.append(f"  still waiting at the end ({connect['stalls']['unconverged']} proxies):")
        lines.extend(f"    {reason}" for reason in reasons)
    changes = report["changes"]
    if changes is not None:
        lines.append(_row(f"changes ({changes['made']})", changes["seconds"], changes["missed"]))
        if len(changes["perChange"]) <= 10:
            for change in changes["perChange"]:
                lines.append(
                    _row(f"  change {change['number']}", change["seconds"], change["missed"])
                )
    lines += [
        "",
        f"{'traffic':<16}{'seconds':>8}{'pushes':>10}{'pushes/s':>11}{'bytes':>12}{'bytes/s':>14}",
        _traffic_row("connect", connect["traffic"]),
    ]
    if changes is not None:
        lines.append(_traffic_row("changes", changes["traffic"]))
    lines.append("")
    errors = report["errors"]
    summary = (
        f"errors: {errors['nacks']} NACKs, {errors['streamFailures']} failed streams, "
        f"{errors['reconnects']} reconnects"
    )
    if changes is not None:
        summary += f", {errors['triggerFailures']} failed triggers"
        if changes["ratePerSecond"] is not None and report["scenario"] == "churn":
            lines.append(f"changes made: {changes['made']} ({changes['ratePerSecond']:.2f}/s)")
    lines.append(summary)
    lines.extend(f"  {example}" for example in errors["examples"])
    if report["serverProcess"] is not None:
        lines.extend(_server_lines(report["serverProcess"]))
    lines.append(f"result: {verdict(report)}")
    return "\n".join(lines) + "\n"


def verdict(report: Mapping[str, Any]) -> str:
    if report["interrupted"]:
        return "interrupted"
    if report["ok"]:
        if report["changes"] is None:
            return "ok, every proxy converged"
        return "ok, every proxy converged and reached every change"
    problems = []
    if report["connect"]["unconverged"]:
        reasons = report["connect"].get("stallReasons") or []
        why = f" ({reasons[0]})" if reasons else ""
        problems.append(f"{report['connect']['unconverged']} proxies never converged{why}")
    changes = report["changes"]
    if changes is not None and changes["missed"]:
        problems.append(f"{changes['missed']} (proxy, change) pairs missed")
    if changes is not None and changes["failed"]:
        problems.append(f"{changes['failed']} triggers failed")
    if report["errors"]["nacks"]:
        problems.append(f"{report['errors']['nacks']} NACKs")
    return "FAILED: " + ", ".join(problems)
