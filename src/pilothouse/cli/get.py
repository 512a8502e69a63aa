"""`pilothouse get KIND[,KIND...] [NAME...] [-n NS | -A] [-l SELECTOR] [-o yaml|json|name|wide]
--store etcd://…`: read objects from the shared store, as kubectl does.

KIND is ``VirtualService``, ``virtualservice``, ``virtualservices``, a short name
(``vs``, ``dr``, ``gw``, ``se``, ``ef``, …, as each kind declares them) or any of them
with the group (``virtualservices.networking.istio.io``); several kinds are a
comma-separated list (``vs,dr``). A misspelt kind is refused with the nearest name.
Without ``-o`` a table (``NAME AGE``, with ``NAMESPACE`` first for ``-A``), one per kind,
its names written ``kind.group/name`` when several kinds are listed; ``-o wide`` adds
what the spec says of hosts, gateways and addresses where a kind has them, and the
labels; ``-o name`` prints ``kind.group/name`` lines; ``-o yaml|json`` prints the stored
object with ``metadata.resourceVersion`` (its etcd mod revision), several as a ``List``.
``-l`` keeps the objects whose labels match a kubectl selector
(:mod:`pilothouse.cli.label_selector`). With ``-o yaml|json`` a Gateway API object
carries the ``status`` a server would report for it (:mod:`.get_status`).

A named object that does not exist is ``Error from server (NotFound): …`` and exit
status 1; an empty list is ``No resources found …`` on standard error and exit status
0. Stored values that are not valid objects are listed on standard error and skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

import aetcd
import yaml

from pilothouse.cli.columns import age, table
from pilothouse.cli.get_status import shows_status, store_statuses, with_status
from pilothouse.cli.label_selector import BadSelector, LabelSelector, parse_selector
from pilothouse.cli.store_objects import UnknownKind, resolve_kinds, resource
from pilothouse.cli.store_session import (
    EXIT_ERROR,
    EXIT_OK,
    Store,
    StoreUnreachable,
    add_store_argument,
    connected,
    etcd_settings,
    not_found,
    store_of,
)
from pilothouse.config.load import Loader
from pilothouse.config.model import ConfigKey
from pilothouse.config.schema import Schema
from pilothouse.kinds.table import SCHEMAS
from pilothouse.settings import Settings
from pilothouse.sources.etcd_client import EtcdUnavailable, list_prefix, reason

WIDE_FIELDS = (("HOSTS", ("hosts", "host")), ("GATEWAYS", ("gateways",)), ("ADDRESS", ("address",)))
"""``-o wide``'s columns from the spec: a header and the spec fields it shows, first found
(shown only when some object listed has one of them)."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "get", help="read Istio objects from the config store (etcd)",
        description="List or show Istio objects kept in the config store.",
    )  # fmt: skip
    parser.add_argument("kind", metavar="KIND[,KIND...]")
    parser.add_argument("names", nargs="*", metavar="NAME")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", default=Settings.default_namespace)
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    parser.add_argument("-l", "--selector", metavar="SELECTOR", help="label selector (a=b,c!=d)")
    parser.add_argument("-o", "--output", choices=("yaml", "json", "name", "wide"), default=None)
    add_store_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    schemas = SCHEMAS
    try:
        kinds = resolve_kinds(args.kind, schemas)
        selector = parse_selector(args.selector)
    except (UnknownKind, BadSelector) as problem:
        print(f"error: {problem}", file=err)
        return EXIT_ERROR
    if args.names and args.all_namespaces:
        print("error: a resource cannot be retrieved by name across all namespaces", file=err)
        return EXIT_ERROR
    try:
        store = store_of(args.store, schemas, etcd_settings(args))
        return asyncio.run(_get(store, kinds, selector, args, out, err))
    except ValueError as problem:
        print(f"error: {problem}", file=err)
    except (StoreUnreachable, EtcdUnavailable, aetcd.exceptions.ClientError) as problem:
        print(f"error: {reason(problem)}", file=err)
    return EXIT_ERROR


async def _get(
    store: Store,
    kinds: Sequence[Schema],
    selector: LabelSelector,
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
) -> int:
    layout = store.layout
    loader = Loader(schemas=layout.schemas, source="get")
    namespace = None if args.all_namespaces else args.namespace
    missing = False
    found: list[tuple[Schema, list[dict[str, Any]]]] = []
    statuses: dict[ConfigKey, dict[str, Any]] | None = None  # Gateway API, computed once
    async with connected(store, args.request_timeout) as client:
        for schema in kinds:
            if args.names:
                kvs = []
                for name in args.names:
                    key = ConfigKey(schema.kind, args.namespace, name)
                    got = await client.get(layout.key_of(key))
                    if got is None:
                        print(not_found(key, layout.schemas), file=err)
                        missing = True
                    else:
                        kvs.append(got)
            else:
                prefix = layout.kind_range(schema.kind, namespace)
                kvs = list((await list_prefix(client, prefix)).kvs)
            if statuses is None and args.output in ("yaml", "json") and shows_status(schema.group):
                statuses = await store_statuses(client, layout, loader)
            objects = []
            for kv in kvs:
                stored = layout.decode(loader, kv.key, kv.value, kv.mod_revision)
                if stored.config is None:
                    problems = "; ".join(p.message for p in stored.problems)
                    print(f"warning: skipping the invalid object at {stored.key}: {problems}",
                          file=err)  # fmt: skip
                    missing = missing or bool(args.names)
                    continue
                data = json.loads(kv.value)
                data.setdefault("metadata", {})["resourceVersion"] = str(kv.mod_revision)
                if selector.matches(data["metadata"].get("labels") or {}):
                    objects.append(with_status(data, (statuses or {}).get(stored.config.key)))
            found.append((schema, objects))
    shown = sum(len(objects) for _, objects in found)
    if not shown:
        if not args.names:
            where = "any namespace" if args.all_namespaces else f"{args.namespace} namespace"
            print(f"No resources found in {where}.", file=err)
        return EXIT_ERROR if missing else EXIT_OK
    _print(found, args, out)
    return EXIT_ERROR if missing else EXIT_OK


def _print(found: list[tuple[Schema, list[dict[str, Any]]]], args: argparse.Namespace,
           out: TextIO) -> None:  # fmt: skip
    everything = [o for _, objects in found for o in objects]
    if args.output in ("yaml", "json"):
        single = len(everything) == 1 and len(args.names) == 1 and len(found) == 1
        shown: Any = everything[0] if single else {
            "apiVersion": "v1", "kind": "List", "items": everything, "metadata": {}
        }  # fmt: skip
        if args.output == "json":
            out.write(json.dumps(shown, indent=4) + "\n")
        else:
            out.write(yaml.safe_dump(shown, sort_keys=False, default_flow_style=False))
        return
    if args.output == "name":
        for schema, objects in found:
            out.writelines(f"{resource(schema)}/{o['metadata']['name']}\n" for o in objects)
        return
    tables = []
    for schema, objects in found:
        if objects:
            prefix = f"{resource(schema)}/" if len(found) > 1 else ""
            tables.append(_table(objects, prefix, args))
    out.write("\n".join(tables))


def _table(objects: list[dict[str, Any]], prefix: str, args: argparse.Namespace) -> str:
    header = ["NAME"]
    rows = [[prefix + o["metadata"]["name"]] for o in objects]
    if args.output == "wide":
        for title, fields in WIDE_FIELDS:
            cells = [_spec_cell(o, fields) for o in objects]
            if any(cell != "-" for cell in cells):
                header.append(title)
                for row, cell in zip(rows, cells, strict=True):
                    row.append(cell)
    header.append("AGE")
    for row, o in zip(rows, objects, strict=True):
        row.append(_age(o))
    if args.output == "wide":
        header.append("LABELS")
        for row, o in zip(rows, objects, strict=True):
            labels = o["metadata"].get("labels") or {}
            row.append(",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>")
    if args.all_namespaces:
        header = ["NAMESPACE", *header]
        rows = [[o["metadata"].get("namespace", ""), *row]
                for o, row in zip(objects, rows, strict=True)]  # fmt: skip
    return table(header, rows)


def _spec_cell(data: dict[str, Any], fields: Sequence[str]) -> str:
    spec = data.get("spec")
    if not isinstance(spec, dict):
        return "-"
    for field in fields:
        value = spec.get(field)
        if isinstance(value, list) and value:
            return ",".join(map(str, value))
        if isinstance(value, str) and value:
            return value
    return "-"


def _age(data: dict[str, Any]) -> str:
    stamp = data.get("metadata", {}).get("creationTimestamp")
    if not isinstance(stamp, str):
        return "<unknown>"
    try:
        created = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    return age(time.time() - created.timestamp())
