"""`pilothouse delete (-f FILE|DIR | KIND[,KIND...] (NAME... | --all | -l SELECTOR))
[-n NS | -A] --store etcd://…`: remove objects from the shared store, as kubectl does.

With ``-f`` the objects the files name are deleted (their specs need not be valid, only
their kind, namespace and name). Otherwise KIND is a kind or a comma-separated list of
them, with short names (``vs,dr``); then the NAMEs given, every object of those kinds in
the namespace (``--all``; in every namespace with ``-A``), or those whose labels match
``-l`` (:mod:`pilothouse.cli.label_selector`). Each deletion prints
``virtualservice.networking.istio.io "reviews" deleted``; one that does not exist prints
``Error from server (NotFound): …`` and the others still go; ``--all`` or ``-l``
matching nothing prints ``No resources found``. Exit status 1 when anything named was
not found or could not be read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TextIO

import aetcd

from pilothouse.cli.label_selector import BadSelector, LabelSelector, parse_selector
from pilothouse.cli.store_objects import read_manifests, resource
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
from pilothouse.kinds.names import UnknownKind, resolve_kinds
from pilothouse.kinds.table import SCHEMAS
from pilothouse.settings import Settings
from pilothouse.sources.etcd_client import EtcdUnavailable, list_prefix, reason


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "delete", help="delete Istio objects from the config store (etcd)",
        description="Delete the objects named by files, by kind and name, every object of "
        "a kind (--all), or those a label selector matches (-l).",
    )  # fmt: skip
    parser.add_argument("kind", nargs="?", metavar="KIND[,KIND...]")
    parser.add_argument("names", nargs="*", metavar="NAME")
    parser.add_argument("-f", "--filename", action="append", metavar="FILE|DIR")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", default=Settings.default_namespace)
    scope.add_argument(
        "-A", "--all-namespaces", action="store_true", help="with --all or -l: every namespace"
    )
    parser.add_argument("--all", action="store_true", help="every object of the kinds given")
    parser.add_argument("-l", "--selector", metavar="SELECTOR", help="label selector (a=b,c!=d)")
    add_store_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    schemas = SCHEMAS
    failed = False
    kinds: list[Schema] = []
    keys: list[ConfigKey] = []
    try:
        selector = parse_selector(args.selector)
    except BadSelector as problem:
        print(f"error: {problem}", file=err)
        return EXIT_ERROR
    chosen = args.all or args.selector
    if args.filename:
        if args.kind or chosen:
            print("error: give either -f or KIND with NAMEs, --all or -l, not both", file=err)
            return EXIT_ERROR
        loader = Loader(schemas=schemas, default_namespace=args.namespace, source="delete")
        manifests = read_manifests(args.filename, loader)
        keys = list(manifests.keys)
        unnamed = [p for p in manifests.errors if p.key is None]
        for unread in unnamed:
            print(f"error: {unread}", file=err)
        failed = bool(unnamed)
    else:
        if not args.kind or bool(args.names) == bool(chosen):
            print("error: give -f FILE, or KIND with NAMEs, --all or -l SELECTOR", file=err)
            return EXIT_ERROR
        if args.all_namespaces and not chosen:
            print("error: -A goes with --all or -l, not with NAMEs", file=err)
            return EXIT_ERROR
        try:
            kinds = resolve_kinds(args.kind, schemas)
        except UnknownKind as problem:
            print(f"error: {problem}", file=err)
            return EXIT_ERROR
        keys = [ConfigKey(s.kind, args.namespace, name) for s in kinds for name in args.names]
    try:
        store = store_of(args.store, schemas, etcd_settings(args))
        if chosen:
            namespace = None if args.all_namespaces else args.namespace
            keys = asyncio.run(_select(store, kinds, namespace, selector, args.request_timeout))
            if not keys:
                where = "any namespace" if namespace is None else f"{namespace} namespace"
                print(f"No resources found in {where}.", file=err)
                return EXIT_OK
        missing = asyncio.run(_delete(store, keys, args.request_timeout, out, err))
    except ValueError as problem:
        print(f"error: {problem}", file=err)
        return EXIT_ERROR
    except (StoreUnreachable, EtcdUnavailable, aetcd.exceptions.ClientError) as problem:
        print(f"error: {reason(problem)}", file=err)
        return EXIT_ERROR
    return EXIT_ERROR if failed or missing else EXIT_OK


async def _select(
    store: Store,
    kinds: list[Schema],
    namespace: str | None,
    selector: LabelSelector,
    timeout: float,
) -> list[ConfigKey]:
    """The stored objects of ``kinds`` in ``namespace`` (None: all) ``selector`` matches
    (stored values that are not objects are left alone)."""
    layout = store.layout
    keys = []
    async with connected(store, timeout) as client:
        for schema in kinds:
            for kv in (await list_prefix(client, layout.kind_range(schema.kind, namespace))).kvs:
                named = layout.config_key(kv.key)
                try:
                    metadata = json.loads(kv.value).get("metadata") or {}
                    labels = metadata.get("labels") or {}
                except (ValueError, AttributeError):
                    continue
                if named is not None and isinstance(labels, dict) and selector.matches(labels):
                    keys.append(named)
    return keys


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
