"""`pilothouse proxy-config cluster|listener|route|endpoint PROXY`: a proxy's config as the
control plane would send it.

istioctl's ``proxy-config`` reads the proxy's own Envoy admin API; this reads the
control plane's side instead: ``/debug/config_dump?proxyID=PROXY`` from each replica
given with ``--admin`` (the one holding the proxy's stream answers, the others say 404),
and prints the clusters, listeners, routes or endpoints in istioctl's table
(:mod:`pilothouse.cli.config_tables`) or, with ``-o json``, as a JSON list in Envoy's
own form. ``PROXY`` is ``pod.namespace`` or a full node id. Kinds may be shortened as in
istioctl (``c``, ``l``, ``r``, ``ep``, or plurals).

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

from pilothouse.cli import config_tables
from pilothouse.cli.admin_client import BadAdminAddress, ask_all
from pilothouse.cli.columns import table
from pilothouse.cli.proxy_status import add_admin_arguments, admin_urls, report_failures
from pilothouse.environment import SettingsError

PROG: Final = "pilothouse proxy-config"

Extract = Callable[[Mapping[str, Any]], list[dict[str, Any]]]
Render = Callable[[list[dict[str, Any]]], config_tables.Rows]

KINDS: Final[Mapping[str, tuple[str, str, Extract, Render]]] = MappingProxyType(
    {
        "cluster": ("cds", "false", config_tables.clusters_of, config_tables.cluster_rows),
        "listener": ("lds", "false", config_tables.listeners_of, config_tables.listener_rows),
        "route": ("rds", "false", config_tables.routes_of, config_tables.route_rows),
        "endpoint": ("cds", "true", config_tables.endpoints_of, config_tables.endpoint_rows),
    }
)
"""Per kind: the ``types=`` and ``include_eds=`` asked for, what to take out of the dump,
and how to print it."""
ALIASES: Final[Mapping[str, str]] = MappingProxyType(
    {
        **{alias: "cluster" for alias in ("c", "clusters")},
        **{alias: "listener" for alias in ("l", "listeners")},
        **{alias: "route" for alias in ("r", "routes")},
        **{alias: "endpoint" for alias in ("ep", "endpoints")},
    }
)


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "proxy-config",
        help="a proxy's clusters, listeners, routes or endpoints as the control plane sees them",
        description="What the replica holding PROXY's stream would send it, from "
        "/debug/config_dump, as a table or as Envoy JSON.",
    )
    parser.add_argument(
        "kind",
        choices=sorted([*KINDS, *ALIASES]),
        metavar="cluster|listener|route|endpoint",
        help="what to show",
    )
    parser.add_argument("proxy", metavar="PROXY", help="pod.namespace or the proxy's node id")
    add_admin_arguments(parser)
    parser.add_argument(
        "-o", "--output", choices=("short", "json"), default="short", help="table (short) or JSON"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    kind = ALIASES.get(args.kind, args.kind)
    try:
        urls = admin_urls(args.admin)
    except (BadAdminAddress, SettingsError) as problem:
        print(f"{PROG}: {problem}", file=sys.stderr)
        return 2
    types, include_eds, extract, render = KINDS[kind]
    query = urlencode({"proxyID": args.proxy, "types": types, "include_eds": include_eds})
    answers = asyncio.run(ask_all(urls, f"/debug/config_dump?{query}", timeout=args.timeout))
    found = next((a for a in answers if a.ok and isinstance(a.body, dict)), None)
    unreadable = [a for a in answers if not a.ok and a.status != 404]
    report_failures(PROG, unreadable)
    if found is None:
        if not unreadable:
            print(
                f"{PROG}: proxy {args.proxy} is not connected to any of the given replicas "
                f"({', '.join(urls)})",
                file=sys.stderr,
            )
        else:
            print(f"{PROG}: proxy {args.proxy} was not found", file=sys.stderr)
        return 1
    resources = extract(found.body)
    if args.output == "json":
        print(json.dumps(resources, indent=2))
    else:
        header, rows = render(resources)
        print(table(header, rows), end="")
    return 0
