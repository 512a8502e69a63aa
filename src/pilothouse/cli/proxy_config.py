"""`pilothouse proxy-config cluster|listener|route|endpoint|secret|all PROXY` (``pc``): a
proxy's config as the control plane would send it.

istioctl's ``proxy-config`` reads the proxy's own Envoy admin API; this reads the
control plane's side instead: ``/debug/config_dump?proxyID=PROXY`` from each replica
given with ``--admin`` (repeated, or ``A,B``; the one holding the proxy's stream answers,
the others say 404; a ``serve --workers N`` replica answers for all its workers), and
prints the clusters, listeners, routes or endpoints in istioctl's table
(:mod:`pilothouse.cli.config_tables`) or, with ``-o json|yaml``, as a list in Envoy's
own form. ``all`` prints the four tables one after the other (``-o json|yaml``: the whole
dump). ``secret`` is the exception: no control plane shows a workload's key, so it reads
the proxy's Envoy (``--envoy-admin``, else the address its node metadata names) as
istioctl does (:mod:`pilothouse.cli.secret_table`).

``PROXY`` is ``pod.namespace``, a full node id, or a pod name with ``-n NS``. Kinds may
be shortened as in istioctl (``c``, ``l``, ``r``, ``ep``, ``s``, or plurals). istioctl's
filters narrow the table and the JSON alike: ``--fqdn``, ``--port``, ``--subset`` and
``--direction`` for clusters and endpoints, ``--port`` for listeners
(:mod:`pilothouse.cli.config_filters`).

Exit status: 0 when the proxy was found (a replica that could not be read is then
reported on stderr only), 1 when no replica holds it or none could be read, 2 for bad
arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final
from urllib.parse import urlencode

import yaml

from pilothouse.cli import config_tables
from pilothouse.cli.admin_client import BadAdminAddress, ReplicaAnswer, admin_url, ask_all
from pilothouse.cli.columns import table
from pilothouse.cli.config_filters import ConfigFilter
from pilothouse.cli.proxy_status import (
    add_admin_arguments,
    admin_urls,
    proxy_name,
    report_failures,
)
from pilothouse.cli.secret_table import secret_rows, secrets_of
from pilothouse.environment import SettingsError

PROG: Final = "pilothouse proxy-config"

Extract = Callable[[Mapping[str, Any]], list[dict[str, Any]]]
Render = Callable[[list[dict[str, Any]]], config_tables.Rows]
Keep = Callable[[ConfigFilter, list[dict[str, Any]]], list[dict[str, Any]]]

KINDS: Final[Mapping[str, tuple[str, str, Extract, Render, Keep]]] = MappingProxyType(
    {
        "cluster": ("cds", "false", config_tables.clusters_of, config_tables.cluster_rows,
                    ConfigFilter.clusters),
        "listener": ("lds", "false", config_tables.listeners_of, config_tables.listener_rows,
                     ConfigFilter.listeners),
        "route": ("rds", "false", config_tables.routes_of, config_tables.route_rows,
                  lambda _filter, routes: routes),
        "endpoint": ("cds", "true", config_tables.endpoints_of, config_tables.endpoint_rows,
                     ConfigFilter.endpoints),
    }
)  # fmt: skip
"""Per kind: the ``types=`` and ``include_eds=`` asked for, what to take out of the dump,
how to print it, and what the filters keep of it."""
ALIASES: Final[Mapping[str, str]] = MappingProxyType(
    {
        **{alias: "cluster" for alias in ("c", "clusters")},
        **{alias: "listener" for alias in ("l", "listeners")},
        **{alias: "route" for alias in ("r", "routes")},
        **{alias: "endpoint" for alias in ("ep", "endpoints")},
        **{alias: "secret" for alias in ("s", "secrets")},
    }
)
OTHER_KINDS: Final = ("secret", "all")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "proxy-config",
        aliases=["pc"],
        help="a proxy's clusters, listeners, routes, endpoints or secrets",
        description="What the replica holding PROXY's stream would send it, from "
        "/debug/config_dump, as a table or as Envoy JSON or YAML (secrets: from the "
        "proxy's Envoy).",
    )
    parser.add_argument(
        "kind",
        choices=sorted([*KINDS, *OTHER_KINDS, *ALIASES]),
        metavar="cluster|listener|route|endpoint|secret|all",
        help="what to show",
    )
    parser.add_argument(
        "proxy", metavar="PROXY", help="pod.namespace, the proxy's node id, or pod with -n"
    )
    add_admin_arguments(parser)
    parser.add_argument(
        "-o", "--output", choices=("short", "json", "yaml"), default="short",
        help="table (short), JSON or YAML",
    )  # fmt: skip
    parser.add_argument("--fqdn", default="", help="clusters of this service FQDN (or part)")
    parser.add_argument("--port", type=int, default=0, help="clusters, listeners or endpoints")
    parser.add_argument("--subset", default="", help="clusters of this subset")
    parser.add_argument(
        "--direction", choices=("inbound", "outbound"), default="", help="clusters' direction"
    )
    parser.add_argument(
        "--envoy-admin",
        metavar="URL",
        help="secret: the proxy's Envoy admin address (default: its ENVOY_ADMIN_ADDRESS)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    kind = ALIASES.get(args.kind, args.kind)
    try:
        urls = admin_urls(args.admin)
    except (BadAdminAddress, SettingsError) as problem:
        print(f"{PROG}: {problem}", file=sys.stderr)
        return 2
    proxy = proxy_name(args.proxy, args.namespace)
    if kind == "secret":
        return asyncio.run(_secrets(urls, proxy, args))
    keep = ConfigFilter(args.fqdn, args.port, args.subset, args.direction)
    types, include_eds = ("cds,lds,rds", "true") if kind == "all" else KINDS[kind][:2]
    query = urlencode({"proxyID": proxy, "types": types, "include_eds": include_eds})
    answers = asyncio.run(ask_all(urls, f"/debug/config_dump?{query}", timeout=args.timeout))
    found = _holder(proxy, urls, answers)
    if found is None:
        return 1
    dump: Mapping[str, Any] = found.body
    if kind == "all" and args.output != "short":
        _emit(dump, args.output)
        return 0
    shown = list(KINDS) if kind == "all" else [kind]
    tables = []
    for each in shown:
        _, _, extract, render, narrow = KINDS[each]
        resources = narrow(keep, extract(dump))
        if args.output != "short":
            _emit(resources, args.output)
            return 0
        header, rows = render(resources)
        tables.append(table(header, rows))
    print("\n".join(tables), end="")
    return 0


def _holder(proxy: str, urls: list[str], answers: list[ReplicaAnswer]) -> ReplicaAnswer | None:
    """The answer of the replica holding ``proxy``; None (having said why) when none."""
    found = next((a for a in answers if a.ok and isinstance(a.body, dict)), None)
    unreadable = [a for a in answers if not a.ok and a.status != 404]
    report_failures(PROG, unreadable)
    if found is None:
        if not unreadable:
            print(
                f"{PROG}: proxy {proxy} is not connected to any of the given replicas "
                f"({', '.join(urls)})",
                file=sys.stderr,
            )
        else:
            print(f"{PROG}: proxy {proxy} was not found", file=sys.stderr)
    return found


def _emit(data: Any, output: str) -> None:
    if output == "yaml":
        print(yaml.safe_dump(data, sort_keys=False), end="")
    else:
        print(json.dumps(data, indent=2))


async def _secrets(urls: list[str], proxy: str, args: argparse.Namespace) -> int:
    address = args.envoy_admin
    if not address:
        answers = await ask_all(urls, "/debug/acked", timeout=args.timeout)
        report_failures(PROG, answers)
        listed = [
            entry
            for answer in answers
            if answer.ok and isinstance(answer.body, dict)
            for entry in answer.body.get("proxies") or ()
            if proxy in (entry.get("proxyID"), entry.get("nodeID"))
        ]
        if not listed:
            print(
                f"{PROG}: proxy {proxy} is not connected to any of the given replicas "
                f"({', '.join(urls)})",
                file=sys.stderr,
            )
            return 1
        address = listed[0].get("envoyAdmin")
        if not address:
            print(
                f"{PROG}: proxy {proxy}'s node metadata names no ENVOY_ADMIN_ADDRESS: "
                "give its Envoy's admin address with --envoy-admin",
                file=sys.stderr,
            )
            return 1
    try:
        envoy = admin_url(address)
    except BadAdminAddress as problem:
        print(f"{PROG}: {str(problem).replace('--admin', '--envoy-admin')}", file=sys.stderr)
        return 2
    (answer,) = await ask_all([envoy], "/config_dump", timeout=args.timeout)
    if not answer.ok or not isinstance(answer.body, dict):
        print(f"{PROG}: the proxy's Envoy: {answer.problem or 'no config dump'}", file=sys.stderr)
        return 1
    secrets = secrets_of(answer.body)
    if args.output != "short":
        _emit(secrets, args.output)
        return 0
    header, rows = secret_rows(secrets)
    print(table(header, rows), end="")
    return 0
