"""Benchmark: loading and validating Istio YAML, against parsing the same YAML alone.

Generates N ServiceEntries and N VirtualServices (default 2,000 each;
``bench/harness/config_mesh.py``) in one multi-document text, then times, in the same
process and run:

- baseline: ``yaml.load_all`` with libyaml's C loader (the floor for reading the text);
- pilothouse: ``Loader.load_text`` (parse with line tracking, strict proto3 JSON decode,
  semantic validation).

Prints a JSON line with both times, objects per second and the ratio.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.config_mesh import config_objects, config_text
from bench.harness.figures import emit
from bench.harness.rounds import best_of
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS

_YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--services", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    text = config_text(config_objects(args.services, ("ServiceEntry", "VirtualService")))
    objects = args.services * 2
    loader = Loader(SCHEMAS)
    result = loader.load_text(text, "bench.yaml")
    assert result.ok and len(result.configs) == objects, result.errors[:3]
    baseline = best_of(args.runs, lambda: list(yaml.load_all(text, Loader=_YAML_LOADER)))
    ours = best_of(args.runs, lambda: loader.load_text(text, "bench.yaml"))
    emit(
        [
            {
                "benchmark": "config_load",
                "objects": objects,
                "baseline": "yaml.load_all (libyaml C loader)",
                "baseline_seconds": round(baseline, 4),
                "pilothouse_seconds": round(ours, 4),
                "pilothouse_objects_per_second": round(objects / ours),
                "us_per_object": round(ours / objects * 1e6, 1),
                "ratio_to_baseline": round(baseline / ours, 2),
                "ratio_definition": "baseline seconds ÷ pilothouse seconds (1 = as fast as only "
                "parsing the YAML; pilothouse also keeps lines, decodes strictly and validates)",
                "target": "none set by the issues (context for the others)",
            }
        ]
    )


if __name__ == "__main__":
    main()
