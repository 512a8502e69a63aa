"""Benchmark: encoding Istio config as MCP resources, and the varints responses are framed with.

Two figures, each against a baseline measured in the same process and run:

- ``mcp_encode``: N ServiceEntries (default 2,000, ``bench/harness/config_mesh.py``; none
  has a ``creationTimestamp``)
  encoded as ``istio.mcp.v1alpha1.Resource`` bytes, ``create_time`` set to a first-seen
  time. Baseline: protobuf's own way (``Metadata`` with ``Timestamp.FromDatetime``, the
  body by ``Any.Pack``, then ``SerializeToString``). pilothouse: the MCP Resource codec
  (:func:`pilothouse.config.mcp_resource.encode_resource`). The bytes must be equal.
- ``protowire_varint``: every varint below 2**14 (every tag, and the length of every
  resource under 16 KiB). Baseline: the byte-at-a-time loop pilothouse used before.
  pilothouse: :func:`pilothouse.protowire.varint`. The bytes must be equal.

Prints one JSON line per figure.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from google.protobuf import any_pb2

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.config_mesh import config_objects, config_text
from bench.harness.figures import emit
from bench.harness.rounds import best_of
from pilothouse.api.istio.mcp.v1alpha1 import metadata_pb2, resource_pb2
from pilothouse.config.load import Loader
from pilothouse.config.mcp_resource import encode_resource, resource_name
from pilothouse.config.model import Config
from pilothouse.kinds.table import SCHEMAS
from pilothouse.protowire import varint

FIRST_SEEN = datetime.datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=datetime.UTC)
VARINT_VALUES = range(1 << 14)


def service_entries(count: int) -> list[Config]:
    text = config_text(config_objects(count, ("ServiceEntry",)))
    return list(Loader(SCHEMAS).load_strict(text, "bench.yaml"))


def protobuf_way(config: Config, version: str, first_seen: datetime.datetime) -> bytes:
    """The straightforward encoding with protobuf's own helpers (the baseline)."""
    metadata = metadata_pb2.Metadata(
        name=resource_name(config),
        version=version,
        labels=dict(config.labels),
        annotations=dict(config.annotations),
    )
    metadata.create_time.FromDatetime(config.creation_time or first_seen)
    body = any_pb2.Any()
    body.Pack(config.spec, deterministic=True)
    return resource_pb2.Resource(metadata=metadata, body=body).SerializeToString(deterministic=True)


def loop_varint(value: int) -> bytes:
    """The varint writer pilothouse had before protowire (the baseline)."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_all(
    encode: Callable[[Config, str, datetime.datetime], bytes], configs: Sequence[Config]
) -> list[bytes]:
    return [encode(config, "v1", FIRST_SEEN) for config in configs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--services", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    configs = service_entries(args.services)
    assert encode_all(protobuf_way, configs) == encode_all(encode_resource, configs)
    baseline = best_of(args.runs, lambda: encode_all(protobuf_way, configs))
    ours = best_of(args.runs, lambda: encode_all(encode_resource, configs))
    emit(
        [
            {
                "benchmark": "mcp_encode",
                "objects": len(configs),
                "baseline": "protobuf's own helpers (Timestamp.FromDatetime, Any.Pack)",
                "baseline_seconds": round(baseline, 4),
                "pilothouse_seconds": round(ours, 4),
                "us_per_object": round(ours / len(configs) * 1e6, 1),
                "ratio_to_baseline": round(baseline / ours, 2),
                "ratio_definition": "baseline seconds ÷ pilothouse seconds (the same bytes)",
                "target": "none set by the issues (encode once, send many: paid per change)",
            }
        ]
    )
    assert [loop_varint(v) for v in VARINT_VALUES] == [varint(v) for v in VARINT_VALUES]
    values = list(VARINT_VALUES)
    baseline = best_of(args.runs, lambda: [loop_varint(v) for v in values])
    ours = best_of(args.runs, lambda: [varint(v) for v in values])
    emit(
        [
            {
                "benchmark": "protowire_varint",
                "varints": len(values),
                "baseline": "byte-at-a-time loop (pilothouse's writer before protowire)",
                "baseline_seconds": round(baseline, 4),
                "pilothouse_seconds": round(ours, 4),
                "ns_per_varint": round(ours / len(values) * 1e9),
                "headline": "ns_per_varint",
                "ratio_to_baseline": round(baseline / ours, 2),
                "ratio_definition": "baseline seconds ÷ pilothouse seconds (the same bytes)",
                "target": "none set by the issues (on the push path)",
            }
        ]
    )


if __name__ == "__main__":
    main()
