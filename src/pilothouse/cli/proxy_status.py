"""`pilothouse proxy-status [PROXY]` (``ps``): is every proxy up to date, and on which replica?

Reads ``/debug/syncz`` from each replica given with ``--admin`` (repeated, or ``A,B``;
default: the local admin address) and merges the answers, since each replica knows only
the proxies connected to it (a ``serve --workers N`` replica answers for all its
workers). ``-n NS`` keeps the proxies of one namespace and completes a bare pod name to
``pod.NS``, as istioctl does. Per proxy, CDS, LDS, EDS and RDS are each:

- ``SYNCED``: the proxy ACKed the latest response of the type;
- ``NOT SENT``: nothing of the type was ever sent (e.g. RDS on a gateway without routes);
- ``STALE``: sent, not (yet) ACKed;
- ``ERROR``: the proxy NACKed it (the message is shown for a single proxy),

with the time since the latest response in parentheses, as istioctl shows them. The
REPLICA column is the replica holding the proxy's stream (``PILOTHOUSE_REPLICA_ID``, by
default ``<hostname>:<xDS port>``). With ``PROXY`` (``pod.namespace`` or a full node id),
that proxy's types in detail, and its last NACK per type. ``-o json|yaml`` prints the
syncz entries themselves (each with ``replica`` and ``admin``, the URL it came from).

With no proxy connected to any replica it says so (``no proxies connected``) and, to
tell why, shows the xDS connections the replicas refused lately, by reason, from their
``/debug/refusals`` (:mod:`pilothouse.cli.refusal_report`); with proxies connected, the
refusals are one footer line under the table.

The same rules work against istiod's HTTP ``/debug/syncz`` (statuses are then worked
out from the sent and ACKed nonces). Exit status: 0 when every replica answered (and
``PROXY`` was found; no proxy connected is not an error), 1 when a replica could not be
read or ``PROXY`` is connected to none of them, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

import yaml

from pilothouse.cli.admin_client import (
    BadAdminAddress,
    ReplicaAnswer,
    admin_url,
    ask_all,
    default_admin_url,
)
from pilothouse.cli.columns import age, table, timestamp
from pilothouse.cli.refusal_report import PATH as REFUSALS_PATH
from pilothouse.cli.refusal_report import ReasonRow, footer, reason_rows, reasons_table
from pilothouse.environment import SettingsError
from pilothouse.protocol.messages import NackError
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS, short_name
from pilothouse.xds.protocol.sync_status import SyncStatus, sync_status

PROG: Final = "pilothouse proxy-status"
COLUMNS: Final = (
    ("CDS", CDS, "cluster"),
    ("LDS", LDS, "listener"),
    ("EDS", EDS, "endpoint"),
    ("RDS", RDS, "route"),
)
"""The per-type columns: header, type URL, and istiod's syncz field prefix."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "proxy-status",
        aliases=["ps"],
        help="sync status of the proxies connected to one or more replicas",
        description="Per proxy, whether its CDS, LDS, EDS and RDS are SYNCED, NOT SENT, "
        "STALE or ERROR, and the replica it is connected to, read from each replica's "
        "/debug/syncz.",
    )
    add_admin_arguments(parser)
    parser.add_argument(
        "proxy", nargs="?", metavar="PROXY", help="one proxy: pod.namespace or its node id"
    )
    parser.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    parser.set_defaults(run=run)


def add_admin_arguments(parser: argparse.ArgumentParser) -> None:
    """``--admin URL`` (repeatable), ``-n NS`` and ``--timeout``, shared with
    ``proxy-config``."""
    parser.add_argument(
        "--admin",
        action="append",
        metavar="URL",
        help="admin address of a replica, http://host:port or host:port; repeat it (or "
        "give A,B) for several (default: PILOTHOUSE_ADMIN_ADDRESS, else 127.0.0.1:15014)",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        metavar="NS",
        help="the proxies of this namespace; a PROXY given as a pod name is pod.NS",
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, metavar="S", help="seconds per replica (10)"
    )


def admin_urls(values: Sequence[str] | None) -> list[str]:
    """The replicas to ask (``--admin`` values, each maybe ``A,B``), without repeats;
    raises BadAdminAddress or SettingsError."""
    given = [part for value in values or () for part in value.split(",") if part.strip()]
    urls = [admin_url(v) for v in given] if given else [default_admin_url()]
    return list(dict.fromkeys(urls))


def proxy_name(proxy: str, namespace: str | None) -> str:
    """``pod`` as ``pod.NS`` when a namespace is given and the name has none (istioctl's
    ``-n``); a ``pod.namespace`` or a node id as it is."""
    if namespace and "." not in proxy and "~" not in proxy:
        return f"{proxy}.{namespace}"
    return proxy


def in_namespace(entry: Mapping[str, Any], namespace: str) -> bool:
    """Whether a syncz entry is a proxy of ``namespace`` (its ``namespace``, else the
    namespace of its ``pod.namespace`` name, as istiod's entries carry none)."""
    found = entry.get("namespace")
    if isinstance(found, str) and found:
        return found == namespace
    return str(entry.get("proxy", "")).rpartition(".")[2] == namespace


def run(args: argparse.Namespace) -> int:
    try:
        urls = admin_urls(args.admin)
    except (BadAdminAddress, SettingsError) as problem:
        print(f"{PROG}: {problem}", file=sys.stderr)
        return 2
    answers, refused = asyncio.run(_ask(urls, args.timeout))
    failed = report_failures(PROG, answers)
    if len(failed) == len(answers):
        return 1
    entries = merged(answers)
    if args.namespace and not args.proxy:
        entries = [e for e in entries if in_namespace(e, args.namespace)]
    if args.proxy:
        wanted = proxy_name(args.proxy, args.namespace)
        entries = [e for e in entries if wanted in (e.get("proxy"), e.get("node_id"))]
        if not entries:
            print(
                f"{PROG}: proxy {wanted} is not connected to any of the given replicas "
                f"({', '.join(urls)})",
                file=sys.stderr,
            )
            return 1
    if args.output == "json":
        print(json.dumps(entries, indent=2))
    elif args.output == "yaml":
        print(yaml.safe_dump(entries, sort_keys=False), end="")
    elif args.proxy:
        print("\n".join(proxy_detail(e, time.time()) for e in entries), end="")
    elif not entries:
        where = f" in namespace {args.namespace}" if args.namespace else ""
        print(nothing_connected(urls, reason_rows(refused), time.time(), where), end="")
    else:
        print(status_table(entries, time.time()), end="")
        rows = reason_rows(refused)
        if rows:
            print(footer(rows, time.time()), end="")
    return 1 if failed else 0


async def _ask(
    urls: Sequence[str], timeout: float
) -> tuple[list[ReplicaAnswer], list[ReplicaAnswer]]:
    """``/debug/syncz`` and ``/debug/refusals`` from every replica, at once."""
    syncz, refusals = await asyncio.gather(
        ask_all(urls, "/debug/syncz", timeout=timeout),
        ask_all(urls, REFUSALS_PATH, timeout=timeout),
    )
    return syncz, refusals


def nothing_connected(
    urls: Sequence[str], refused: Sequence[ReasonRow], now: float, where: str = ""
) -> str:
    """What to say when no replica has a proxy (``where``: of the namespace asked for):
    that, and the refusals by reason."""
    text = f"no proxies{where} connected to {', '.join(urls)}\n"
    if refused:
        text += "\nrefused xDS connections and streams, by reason:\n"
        text += reasons_table(refused, now)
    return text


def report_failures(prog: str, answers: Sequence[ReplicaAnswer]) -> list[ReplicaAnswer]:
    """Print why each replica that did not answer 200 could not be read; return them."""
    failed = [a for a in answers if not a.ok]
    for answer in failed:
        print(f"{prog}: {answer.problem}", file=sys.stderr)
    for answer in answers:
        if answer.missing_workers:
            print(
                f"{prog}: warning: {answer.url} answered without its workers "
                f"{answer.missing_workers}",
                file=sys.stderr,
            )
    return failed


def merged(answers: Sequence[ReplicaAnswer]) -> list[dict[str, Any]]:
    """Every replica's syncz entries, each marked with its replica and admin URL."""
    entries: list[dict[str, Any]] = []
    for answer in answers:
        if not answer.ok or not isinstance(answer.body, list):
            continue
        for entry in answer.body:
            if not isinstance(entry, dict):
                continue
            entry.setdefault("replica", urlsplit(answer.url).netloc)
            entry["admin"] = answer.url
            entries.append(entry)
    entries.sort(key=lambda e: (str(e.get("proxy", "")), str(e.get("replica", ""))))
    return entries


def type_state(
    entry: Mapping[str, Any], type_url: str, prefix: str = ""
) -> tuple[SyncStatus, float | None, str]:
    """(status, when its latest response was sent, its last NACK) of one type."""
    resources = entry.get("resources")
    found = resources.get(type_url) if isinstance(resources, dict) else None
    if isinstance(found, dict):
        error = str(found.get("lastError") or "")
        patched_by = found.get("envoyFilters")
        if error and isinstance(patched_by, list) and patched_by:
            error += f" (patched by EnvoyFilter {', '.join(map(str, patched_by))})"
        try:
            status = SyncStatus(found["status"])
        except (KeyError, ValueError):
            nack = NackError(0, error) if error else None
            status = sync_status(str(found.get("sent", "")), str(found.get("acked", "")), nack)
        return status, timestamp(found.get("sentTime")), error
    if prefix:
        sent, acked = str(entry.get(f"{prefix}_sent", "")), str(entry.get(f"{prefix}_acked", ""))
        return sync_status(sent, acked, None), None, ""
    return SyncStatus.NOT_SENT, None, ""



def cell(status: SyncStatus, sent_at: float | None, now: float) -> str:
    if sent_at is None or status is SyncStatus.NOT_SENT:
        return status.value
    return f"{status.value} ({age(now - sent_at)})"


def _version(entry: Mapping[str, Any]) -> str:
    return str(entry.get("istio_version") or entry.get("proxy_version") or "-")


def status_table(entries: Sequence[Mapping[str, Any]], now: float) -> str:
    """``NAME CLUSTER CDS LDS EDS RDS REPLICA VERSION``, one row per proxy."""
    rows = []
    for entry in entries:
        cells = [str(entry.get("proxy", "")), str(entry.get("cluster_id") or "-")]
        for _, type_url, prefix in COLUMNS:
            status, sent_at, _ = type_state(entry, type_url, prefix)
            cells.append(cell(status, sent_at, now))
        cells += [str(entry.get("replica", "")), _version(entry)]
        rows.append(cells)
    header = ["NAME", "CLUSTER", *(c[0] for c in COLUMNS), "REPLICA", "VERSION"]
    return table(header, rows)


def proxy_detail(entry: Mapping[str, Any], now: float) -> str:
    """One proxy: who and where, then each type with its nonces and last NACK."""
    lines = [
        f"NAME:     {entry.get('proxy', '')}",
        f"NODE:     {entry.get('node_id') or '-'}",
        f"REPLICA:  {entry.get('replica', '')} ({entry.get('admin', '')})",
        f"CLUSTER:  {entry.get('cluster_id') or '-'}",
        f"VERSION:  {_version(entry)}",
        "",
    ]
    resources = entry.get("resources")
    watched = list(resources) if isinstance(resources, dict) else []
    types = list(COLUMNS)
    types += [(short_name(url), url, "") for url in watched if url not in (CDS, LDS, EDS, RDS)]
    rows, errors = [], []
    for name, type_url, prefix in types:
        status, sent_at, error = type_state(entry, type_url, prefix)
        found = resources.get(type_url, {}) if isinstance(resources, dict) else {}
        rows.append(
            [
                name,
                cell(status, sent_at, now),
                str(found.get("version") or "-"),
                str(found.get("sent") or entry.get(f"{prefix}_sent") or "-"),
                str(found.get("acked") or entry.get(f"{prefix}_acked") or "-"),
            ]
        )
        if error:
            errors.append(f"{name} rejected: {error}")
    text = "\n".join(lines) + "\n" + table(["TYPE", "STATUS", "VERSION", "SENT", "ACKED"], rows)
    if errors:
        text += "\n" + "\n".join(errors) + "\n"
    return text
