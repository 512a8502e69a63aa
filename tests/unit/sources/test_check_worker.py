"""The validation worker: a real second process checks part of a response, same outcome.

The worker is a real ``spawn``ed process; only the failure case uses a stand-in future
(a crashed worker cannot be ordered on cue).
"""

from __future__ import annotations

import time
from concurrent.futures import Future

from google.protobuf import any_pb2

from pilothouse.config.schema import SchemaSet
from pilothouse.sources.check_worker import CheckWorker, Verdict
from pilothouse.sources.upstream_resources import DecodedKind, KindDecoder
from tests.unit.mcp_xds.mesh_objects import dns_service_entry, packed_resource


def response() -> list[any_pb2.Any]:
    entries = [
        packed_resource(f"ns-{i % 3}/svc-{i}", dns_service_entry(f"svc-{i}.example.com"))
        for i in range(40)
    ]
    entries[5] = packed_resource("ns-0/bad", dns_service_entry("*"))  # invalid host
    entries[17] = packed_resource("no-namespace", dns_service_entry("x.example.com"))
    entries[30] = any_pb2.Any(type_url="type.googleapis.com/wrong", value=b"")
    entries[31] = entries[32]  # a duplicate name
    return entries


def decoder() -> KindDecoder:
    schema = SchemaSet().by_kind("ServiceEntry")
    assert schema is not None
    return KindDecoder(schema, "xds://upstream:1")


def summary(decoded: DecodedKind) -> tuple[list[tuple[str, str, bytes]], list[str]]:
    configs = [
        (c.namespace, c.name, c.spec.SerializeToString(deterministic=True))
        for c in decoded.configs
    ]
    return configs, [str(r) for r in decoded.rejections]


def test_worker_share_gives_the_same_outcome_as_checking_alone() -> None:
    alone = decoder().decode(response())
    assert len(alone.rejections) == 4 and len(alone.configs) == 36
    worker = CheckWorker(min_entries=10, share=0.5)
    worker.start()
    try:
        deadline = time.monotonic() + 60
        while not worker.usable(40):
            assert time.monotonic() < deadline, "the worker did not start"
            time.sleep(0.05)
        shared = decoder().decode(response(), worker)
    finally:
        worker.close()
    assert summary(shared) == summary(alone)


def test_small_responses_stay_in_process() -> None:
    worker = CheckWorker(min_entries=1000)
    assert not worker.usable(999)


class _Crashed(CheckWorker):
    def usable(self, count: int) -> bool:
        return True

    def submit(self, kind: str, source: str, entries: object) -> Future[list[Verdict]]:
        crashed: Future[list[Verdict]] = Future()
        crashed.set_exception(RuntimeError("worker died"))
        return crashed


def test_a_failed_worker_falls_back_to_checking_in_process() -> None:
    alone = decoder().decode(response())
    worker = _Crashed(min_entries=1)
    assert summary(decoder().decode(response(), worker)) == summary(alone)
    assert worker._broken

