"""Benchmark: what ``serve``'s analysis of the whole config costs after a change, against
validating the same objects.

Generates N services of ``bench/harness/config_mesh.py`` (a ServiceEntry with an inline
endpoint, a VirtualService routing to two subsets, a DestinationRule defining them: 3N
objects; its one endpoint carries subset v1's labels only, so each service's v2 is an
IST0173 finding: N findings per run, as serve would log and count them), then times, in
the same process and run, with the rounds interleaved:

- baseline: ``Loader.load_text`` of the same objects (what a source pays to read and
  validate them; an analysis reads every object already validated);
- pilothouse: ``mesh_view`` and every analyzer over the loaded objects (what the
  follower runs in its thread after each burst of changes).

At several sizes, so that the per-object cost shows whether it stays linear. Prints a
JSON line with both times, the ratio and the curve.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.config_mesh import config_objects, config_text
from bench.harness.figures import emit
from pilothouse.analysis.analyzers import analyze
from pilothouse.analysis.mesh_view import mesh_view
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="500,2000,8000", help="services, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    loader = Loader(SCHEMAS)
    curve = []
    for services in (int(n) for n in args.sizes.split(",")):
        text = config_text(config_objects(services))
        result = loader.load_text(text, "bench.yaml")
        assert result.ok, result.errors[:3]
        configs = result.configs
        found = analyze(mesh_view(configs))
        assert {m.type.code for m in found} == {"IST0173"}, [str(m) for m in found[:3]]
        assert len(found) == services
        validate = functools.partial(loader.load_text, text, "bench.yaml")
        analysis = functools.partial(lambda c: analyze(mesh_view(c)), configs)
        baseline, ours = float("inf"), float("inf")
        for _ in range(args.runs):  # interleaved: the machine's noise falls on both
            baseline = min(baseline, timed(validate))
            ours = min(ours, timed(analysis))
        curve.append(
            {
                "objects": len(configs),
                "baseline_seconds": round(baseline, 4),
                "pilothouse_seconds": round(ours, 4),
                "us_per_object": round(ours / len(configs) * 1e6, 1),
                "ratio_to_baseline": round(baseline / ours, 1),
            }
        )
    last = curve[-1]
    emit(
        [
            {
                "benchmark": "analysis_cost",
                "objects": last["objects"],
                "baseline": "Loader.load_text of the same objects (read and validate)",
                "baseline_seconds": last["baseline_seconds"],
                "pilothouse_seconds": last["pilothouse_seconds"],
                "us_per_object": last["us_per_object"],
                "ratio_to_baseline": last["ratio_to_baseline"],
                "ratio_definition": "baseline seconds ÷ analysis seconds (how many analyses "
                "of the whole config cost as much as validating it once)",
                "headline": "pilothouse_seconds",
                "target": "none set by the issues (serve runs it in a thread after each "
                "burst of changes, at most a tenth of the time)",
                "curve": curve,
            }
        ]
    )


if __name__ == "__main__":
    main()
