"""`pilothouse apply -f FILE|DIR --store etcd://…`: write Istio objects to the shared store.

Everything is validated first, exactly as a server loads it; if any object is invalid,
every problem is printed (``file:line: …``) and nothing is written. Then the objects
that changed are written in **one etcd transaction**, guarded by the revision the store
was read at: if anything under the prefix changed since, nothing is written, and the
apply is planned again (three tries). etcd bounds the operations of one transaction
(``--max-txn-ops``, 128 by default): an apply that changes more objects than that is
refused with an error saying so, and nothing is written. An object
that carries ``metadata.resourceVersion`` must match the stored one (its mod revision):
a stale version is refused with a conflict naming the object, and nothing is written.

``--dry-run`` (``=client``, as bare) plans against the store as read and writes nothing;
``--dry-run=server`` also hands the planned transaction to etcd behind a guard that cannot
hold, so that etcd itself judges it (its size against ``--max-txn-ops``, the user's
permissions) and changes nothing. Either says, under each object that would be
configured, which parts of it would change (``spec.http``, ``metadata.labels``). ``-l``
applies only the objects whose labels match a kubectl selector. With ``--dry-run`` and
``--admin URL`` (repeatable), the running servers also say which of their proxies the
change would push and what would change for each (:mod:`pilothouse.cli.impact`);
``-o json|yaml`` prints that alone.

Output and exit codes follow kubectl: ``virtualservice.networking.istio.io/reviews
created|configured|unchanged`` (``(dry run)`` or ``(server dry run)`` with
``--dry-run``), errors as ``Error from server (Conflict): …``, exit status 1 on any
error.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import io
import json
import sys
from dataclasses import dataclass
from typing import Any, TextIO

import aetcd
import yaml
from aetcd.utils import prefix_range_end

from pilothouse.cli.impact import print_impact
from pilothouse.cli.label_selector import BadSelector, parse_selector
from pilothouse.cli.store_objects import Manifest, read_manifests, resource
from pilothouse.cli.store_session import (
    EXIT_ERROR,
    EXIT_OK,
    Store,
    StoreUnreachable,
    add_store_argument,
    connected,
    etcd_settings,
    store_of,
)
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.settings import Settings
from pilothouse.sources.etcd_client import EtcdUnavailable, current_revision, get_at, reason
from pilothouse.sources.etcd_layout import stored_value


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "apply",
        help="write Istio objects to the config store (etcd)",
        description="Validate every object, then write them all in one transaction.",
    )
    parser.add_argument(
        "-f", "--filename", action="append", required=True, metavar="FILE|DIR",
        help="a file, a directory (read recursively) or - for stdin; repeatable",
    )  # fmt: skip
    parser.add_argument(
        "-n", "--namespace", default=Settings.default_namespace,
        help="namespace for objects that name none",
    )  # fmt: skip
    parser.add_argument(
        "--dry-run", nargs="?", const="client", default="none",
        choices=("none", "client", "server"),
        help="validate and compare with the store, write nothing (server: etcd also judges "
        "the transaction)",
    )  # fmt: skip
    parser.add_argument(
        "-l", "--selector", metavar="SELECTOR", help="apply only the objects whose labels match"
    )
    parser.add_argument(
        "--admin", action="append", default=[], metavar="URL",
        help="with --dry-run: also ask this running server (repeatable) which proxies the"
        " change would push and what would change for each",
    )  # fmt: skip
    parser.add_argument(
        "-o", "--output", choices=("table", "json", "yaml"), default="table",
        help="with --admin: print the impact as a table (after the usual lines) or, alone,"
        " as JSON or YAML",
    )  # fmt: skip
    add_store_argument(parser)
    parser.set_defaults(run=run)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What applying one manifest does: ``created``, ``configured`` or ``unchanged``."""

    manifest: Manifest
    key: bytes
    verb: str
    mod_revision: int
    value: bytes
    changes: tuple[str, ...] = ()
    """For ``configured``: the parts that change (``spec.http``, ``metadata.labels``)."""


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    schemas = SCHEMAS
    try:
        store = store_of(args.store, schemas, etcd_settings(args))
    except ValueError as unusable:
        print(f"error: {unusable}", file=err)
        return EXIT_ERROR
    try:
        selector = parse_selector(args.selector)
    except BadSelector as problem:
        print(f"error: {problem}", file=err)
        return EXIT_ERROR
    loader = Loader(schemas=schemas, default_namespace=args.namespace, source="apply")
    manifests = read_manifests(args.filename, loader)
    if manifests.errors:
        for found in manifests.problems:
            print(f"error: {found}", file=err)
        print(f"error: {len(manifests.errors)} error(s): nothing was applied", file=err)
        return EXIT_ERROR
    for found in manifests.problems:
        print(f"Warning: {found}", file=err)
    chosen = tuple(m for m in manifests.manifests if selector.matches(m.config.labels))
    if not chosen:
        print("error: no objects passed to apply", file=err)
        return EXIT_ERROR
    if args.admin and args.dry_run == "none":
        print("error: --admin shows the impact of a dry run: add --dry-run", file=err)
        return EXIT_ERROR
    lines = io.StringIO() if args.admin and args.output != "table" else out
    try:
        status = asyncio.run(_apply(store, chosen, args, lines, err))
    except (StoreUnreachable, EtcdUnavailable, aetcd.exceptions.ClientError) as problem:
        print(f"error: {reason(problem)}", file=err)
        return EXIT_ERROR
    if status != EXIT_OK or not args.admin:
        return status
    text = yaml.safe_dump_all([dict(m.data) for m in chosen], sort_keys=False)
    return print_impact(
        text, args.admin, namespace=args.namespace, output=args.output,
        timeout=args.request_timeout, out=out, err=err,
    )  # fmt: skip


async def _apply(
    store: Store,
    manifests: tuple[Manifest, ...],
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
) -> int:
    root = store.layout.root
    async with connected(store, args.request_timeout) as client:
        for _attempt in range(ATTEMPTS):
            revision = await current_revision(client, root)
            outcomes, conflicts = await _plan(client, store, manifests, revision)
            if conflicts:
                for line in conflicts:
                    print(line, file=err)
                return EXIT_ERROR
            writes = [
                client.transactions.put(o.key, o.value) for o in outcomes if o.verb != "unchanged"
            ]
            if not writes or args.dry_run == "client":
                break
            unchanged_since = client.transactions.mod(root, prefix_range_end(root)) < revision + 1
            if args.dry_run == "server":  # no revision is below 0: etcd judges, writes nothing
                unchanged_since = client.transactions.mod(root, prefix_range_end(root)) < 0
            try:
                done, _ = await client.transaction(
                    compare=[unchanged_since], success=writes, failure=[]
                )
            except aetcd.exceptions.InvalidArgumentError as problem:
                if "too many operations" not in str(problem):
                    raise
                print(_TOO_MANY.format(len(writes)), file=err)
                return EXIT_ERROR
            if done or args.dry_run == "server":
                break
        else:
            print(_CHANGED, file=err)
            return EXIT_ERROR
    suffix = {"none": "", "client": " (dry run)", "server": " (server dry run)"}[args.dry_run]
    for outcome in outcomes:
        schema = store.layout.schemas.by_kind(outcome.manifest.config.kind)
        assert schema is not None
        name = outcome.manifest.config.name
        print(f"{resource(schema)}/{name} {outcome.verb}{suffix}", file=out)
        if suffix and outcome.changes:
            print(f"  changes: {', '.join(outcome.changes)}", file=out)
    return EXIT_OK


ATTEMPTS = 3
_TOO_MANY = (
    "error: {} objects changed, more than the store takes in one transaction (etcd's"
    " --max-txn-ops, 128 by default); nothing was written: apply fewer files at a time,"
    " or raise --max-txn-ops on the etcd servers"
)
_CHANGED = (
    "Error from server (Conflict): the store kept changing while applying; nothing was"
    " written, apply again"
)


async def _plan(
    client: aetcd.Client, store: Store, manifests: tuple[Manifest, ...], revision: int
) -> tuple[list[Outcome], list[str]]:
    """What each manifest would do against the store as of ``revision``, and the
    conflicts."""
    layout = store.layout
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    outcomes: list[Outcome] = []
    conflicts: list[str] = []
    for manifest in manifests:
        config = manifest.config
        key = layout.key_of(config.key)
        current = await get_at(client, key, revision)
        wanted_version = config.resource_version
        if wanted_version and (current is None or str(current.mod_revision) != wanted_version):
            conflicts.append(_conflict(store, manifest, current is None))
            continue
        if current is None:
            value = stored_value(manifest.data, config.namespace, now)
            outcomes.append(Outcome(manifest, key, "created", 0, value))
            continue
        created = _created(current.value) or now
        value = stored_value(manifest.data, config.namespace, created)
        held = layout.decode(Loader(schemas=layout.schemas), key, current.value, 0)
        same = held.config is not None and held.config.same_content(config)
        verb = "unchanged" if same else "configured"
        changes = () if same else changed_parts(current.value, value)
        outcomes.append(Outcome(manifest, key, verb, current.mod_revision, value, changes))
    return outcomes, conflicts


def changed_parts(stored: bytes, wanted: bytes) -> tuple[str, ...]:
    """The labels, annotations and top-level spec fields that differ between two stored
    values (``metadata.labels``, ``spec.http``)."""
    try:
        old, new = json.loads(stored), json.loads(wanted)
    except ValueError:
        return ()
    if not isinstance(old, dict) or not isinstance(new, dict):
        return ()
    parts = []
    for field in ("labels", "annotations"):
        if (old.get("metadata") or {}).get(field) != (new.get("metadata") or {}).get(field):
            parts.append(f"metadata.{field}")
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if isinstance(old_spec, dict) and isinstance(new_spec, dict):
        parts += [
            f"spec.{field}"
            for field in sorted({*old_spec, *new_spec})
            if old_spec.get(field) != new_spec.get(field)
        ]
    return tuple(parts)


def _created(value: bytes) -> str | None:
    try:
        data: Any = json.loads(value)
        stamp = data["metadata"]["creationTimestamp"]
    except (ValueError, KeyError, TypeError):
        return None
    return stamp if isinstance(stamp, str) else None


def _conflict(store: Store, manifest: Manifest, missing: bool) -> str:
    schema = store.layout.schemas.by_kind(manifest.config.kind)
    assert schema is not None
    name = f'{resource(schema, plural=True)} "{manifest.config.name}"'
    where = f" ({manifest.file}:{manifest.line})"
    if missing:
        return (
            f"Error from server (Conflict): {name}: metadata.resourceVersion"
            f" {manifest.config.resource_version} is set but the object does not exist{where}"
        )
    return (
        f"Error from server (Conflict): Operation cannot be fulfilled on {name}: the object"
        f" has been modified; please apply your changes to the latest version and try"
        f" again{where}"
    )
