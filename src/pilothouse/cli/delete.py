"""`pilothouse delete (-f FILE|DIR | KIND NAME [-n NS]) --store etcd://…`: remove objects
from the shared store, as kubectl does.

With ``-f`` the objects the files name are deleted (their specs need not be valid, only
their kind, namespace and name). Each deletion prints
``virtualservice.networking.istio.io "reviews" deleted``; one that does not exist prints
``Error from server (NotFound): …`` and the others still go; exit status 1 when anything
was not found or could not be read.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TextIO

import aetcd

from pilothouse.cli.store_objects import read_manifests, resolve_kind, resource
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
from pilothouse.kinds.table import SCHEMAS
from pilothouse.settings import Settings
from pilothouse.sources.etcd_client import EtcdUnavailable, reason


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "delete", help="delete Istio objects from the config store (etcd)",
        description="Delete the objects named by files, or one object by kind and name.",
    )  # fmt: skip
    parser.add_argument("kind", nargs="?", metavar="KIND")
    parser.add_argument("name", nargs="?", metavar="NAME")
    parser.add_argument("-f", "--filename", action="append", metavar="FILE|DIR")
    parser.add_argument("-n", "--namespace", default=Settings.default_namespace)
    add_store_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    schemas = SCHEMAS
    failed = False
    if args.filename:
        if args.kind:
            print("error: give either -f or KIND NAME, not both", file=err)
            return EXIT_ERROR
        loader = Loader(schemas=schemas, default_namespace=args.namespace, source="delete")
        manifests = read_manifests(args.filename, loader)
        keys = list(manifests.keys)
        unnamed = [p for p in manifests.errors if p.key is None]
        for problem in unnamed:
            print(f"error: {problem}", file=err)
        failed = bool(unnamed)
    else:
        if not (args.kind and args.name):
            print("error: give -f FILE, or KIND and NAME", file=err)
            return EXIT_ERROR
        schema = resolve_kind(args.kind, schemas)
        if schema is None:
            print(f'error: the server doesn\'t have a resource type "{args.kind}"', file=err)
            return EXIT_ERROR
        keys = [ConfigKey(schema.kind, args.namespace, args.name)]
    try:
        store = store_of(args.store, schemas, etcd_settings(args))
        missing = asyncio.run(_delete(store, keys, args.request_timeout, out, err))
    except ValueError as problem:
        print(f"error: {problem}", file=err)
        return EXIT_ERROR
    except (StoreUnreachable, EtcdUnavailable, aetcd.exceptions.ClientError) as problem:
        print(f"error: {reason(problem)}", file=err)
        return EXIT_ERROR
    return EXIT_ERROR if failed or missing else EXIT_OK


async def _delete(
    store: Store, keys: list[ConfigKey], timeout: float, out: TextIO, err: TextIO
) -> int:
    """Delete each key; returns how many were not found."""
    missing = 0
    async with connected(store, timeout) as client:
        for key in keys:
            deleted = await client.delete(store.layout.key_of(key))
            if deleted is None or not deleted.deleted:
                print(not_found(key, store.layout.schemas), file=err)
                missing += 1
                continue
            schema = store.layout.schemas.by_kind(key.kind)
            assert schema is not None
            print(f'{resource(schema)} "{key.name}" deleted', file=out)
    return missing
