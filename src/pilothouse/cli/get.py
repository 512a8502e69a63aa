"""`pilothouse get KIND [NAME] [-n NS | -A] [-o yaml|json] --store etcd://…`: read objects
from the shared store, as kubectl does.

KIND is ``VirtualService``, ``virtualservice``, ``virtualservices``, a short name
(``vs``, ``dr``, ``gw``, ``se``, …) or any of them with the group
(``virtualservices.networking.istio.io``). Without ``-o`` a table (``NAME AGE``, with
``NAMESPACE`` first for ``-A``); ``-o yaml|json`` prints the stored object with
``metadata.resourceVersion`` (its etcd mod revision), several as a ``List``; a Gateway
API object with the ``status`` a server would report for it (:mod:`.get_status`). A named
object that does not exist is ``Error from server (NotFound): …`` and exit status 1;
an empty list is ``No resources found …`` on standard error and exit status 0. Stored
values that are not valid objects are listed on standard error and skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import sys
import time
from typing import Any, TextIO

import aetcd
import yaml

from pilothouse.cli.columns import age, table
from pilothouse.cli.get_status import shows_status, store_statuses, with_status
from pilothouse.cli.store_objects import resolve_kind
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


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "get", help="read Istio objects from the config store (etcd)",
        description="List or show Istio objects kept in the config store.",
    )  # fmt: skip
    parser.add_argument("kind", metavar="KIND")
    parser.add_argument("name", nargs="?", metavar="NAME")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", default=Settings.default_namespace)
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default=None)
    add_store_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    schemas = SCHEMAS
    schema = resolve_kind(args.kind, schemas)
    if schema is None:
        print(f'error: the server doesn\'t have a resource type "{args.kind}"', file=err)
        return EXIT_ERROR
    if args.name and args.all_namespaces:
        print("error: a resource cannot be retrieved by name across all namespaces", file=err)
        return EXIT_ERROR
    try:
        store = store_of(args.store, schemas, etcd_settings(args))
        return asyncio.run(_get(store, schema, args, out, err))
    except ValueError as problem:
        print(f"error: {problem}", file=err)
    except (StoreUnreachable, EtcdUnavailable, aetcd.exceptions.ClientError) as problem:
        print(f"error: {reason(problem)}", file=err)
    return EXIT_ERROR


async def _get(
    store: Store, schema: Schema, args: argparse.Namespace, out: TextIO, err: TextIO
) -> int:
    layout = store.layout
    loader = Loader(schemas=layout.schemas, source="get")
    namespace = None if args.all_namespaces else args.namespace
    async with connected(store, args.request_timeout) as client:
        if args.name:
            key = ConfigKey(schema.kind, args.namespace, args.name)
            found = await client.get(layout.key_of(key))
            kvs = [] if found is None else [found]
            if found is None:
                print(not_found(key, layout.schemas), file=err)
                return EXIT_ERROR
        else:
            kvs = list((await list_prefix(client, layout.kind_range(schema.kind, namespace))).kvs)
        statuses = (
            await store_statuses(client, layout, loader)
            if args.output is not None and shows_status(schema.group)
            else {}
        )
    objects: list[dict[str, Any]] = []
    for kv in kvs:
        stored = layout.decode(loader, kv.key, kv.value, kv.mod_revision)
        if stored.config is None:
            problems = "; ".join(p.message for p in stored.problems)
            print(f"warning: skipping the invalid object at {stored.key}: {problems}", file=err)
            continue
        data = json.loads(kv.value)
        data.setdefault("metadata", {})["resourceVersion"] = str(kv.mod_revision)
        objects.append(with_status(data, statuses.get(stored.config.key)))
    if not objects and args.name:
        return EXIT_ERROR  # stored, but not a valid object: said above
    if not objects:
        where = "any namespace" if args.all_namespaces else f"{args.namespace} namespace"
        print(f"No resources found in {where}.", file=err)
        return EXIT_OK
    if args.output is not None:
        shown: Any = objects[0] if args.name else {
            "apiVersion": "v1", "kind": "List", "items": objects, "metadata": {}
        }  # fmt: skip
        if args.output == "json":
            out.write(json.dumps(shown, indent=4) + "\n")
        else:
            out.write(yaml.safe_dump(shown, sort_keys=False, default_flow_style=False))
        return EXIT_OK
    header = ["NAME", "AGE"]
    rows = [[o["metadata"]["name"], _age(o)] for o in objects]
    if args.all_namespaces:
        header = ["NAMESPACE", *header]
        rows = [
            [o["metadata"].get("namespace", ""), *row] for o, row in zip(objects, rows, strict=True)
        ]
    out.write(table(header, rows))
    return EXIT_OK


def _age(data: dict[str, Any]) -> str:
    stamp = data.get("metadata", {}).get("creationTimestamp")
    if not isinstance(stamp, str):
        return "<unknown>"
    try:
        created = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    return age(time.time() - created.timestamp())
