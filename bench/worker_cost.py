"""Benchmark: what one more ``serve`` worker costs while idle, in memory (issue #17, item 4).

``pilothouse serve`` is started on the push fan-out mesh (``harness/mesh.py``: 100
ServiceEntries with DestinationRules and WorkloadEntries in 10 namespaces) with
``--workers 1`` (one process, the baseline), then with each count of ``--workers``
(default 2 and 3: a supervisor and that many forked workers), alternating, ``--runs``
times each. Once every worker has built its first context and ``--settle`` seconds have
passed, the memory of the whole process tree is read from /proc: RSS (which counts a
page shared copy-on-write between the supervisor and its workers once per process) and
PSS (which shares each such page among the processes mapping it: what the tree really
holds). The overhead of an extra worker is (tree with N workers − the one process) ÷
(N − 1), medians of the runs. Issue #17's target (``harness/targets.py``): at most 60 MB
(PSS) per extra worker.

Read seconds after start, this is the cost before a worker's first heap compaction
(after 5 minutes, :mod:`pilothouse.heap`), which writes to the objects it walks and so
copies part of the heap the fork shared into each worker (about 22 MiB on this mesh, by
the README's measurement): an idle group that has run a while holds that much more per
worker.

CPU per push per worker is ``fanout_curve``'s (``serve --workers 1`` and ``2`` against
the floor in the same run), not measured here.

Run: ``.venv/bin/python bench/worker_cost.py`` (``--workers 2,3 --runs 2``); one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import servers
from bench.harness.figures import emit
from bench.harness.mesh import FanoutMesh
from bench.harness.targets import judged


def tree_memory_kib(pids: list[int]) -> tuple[int, int]:
    """RSS and PSS of ``pids`` together (KiB), from /proc/<pid>/smaps_rollup."""
    rss = pss = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
    return rss, pss


async def measure(mesh: FanoutMesh, work: Path, workers: int, settle: float) -> dict[str, Any]:
    async with contextlib.AsyncExitStack() as stack:
        server, _ = await servers.serving_pilothouse(
            stack, mesh.root, work / f"serve-{workers}.log", workers=workers
        )
        await asyncio.sleep(settle)
        pids = server.tree()
        rss, pss = tree_memory_kib(pids)
        return {"processes": len(pids), "rss_kib": rss, "pss_kib": pss}


async def run(args: argparse.Namespace) -> None:
    counts = [1, *sorted({int(n) for n in args.workers.split(",") if int(n) > 1})]
    taken: dict[int, list[dict[str, Any]]] = {n: [] for n in counts}
    with tempfile.TemporaryDirectory(prefix="worker-cost-") as folder:
        work = Path(folder)
        mesh = FanoutMesh(work / "mesh", args.services, args.namespaces, 2)
        mesh.write()
        for round_ in range(args.runs):
            for n in counts if round_ % 2 == 0 else reversed(counts):
                taken[n].append(await measure(mesh, work, n, args.settle))
                print(f"workers {n}: {taken[n][-1]}", file=sys.stderr)
    one_rss = statistics.median(r["rss_kib"] for r in taken[1])
    one_pss = statistics.median(r["pss_kib"] for r in taken[1])
    result: dict[str, Any] = {
        "benchmark": "worker_cost: idle memory of one more serve worker (push fan-out mesh)",
        "headline": "pss_mib_per_extra_worker",
        "baseline": "serve --workers 1 (one process), started alternately in the same run",
        "services": args.services,
        "runs": f"{args.runs} per worker count (medians)",
        "workers_1_rss_mib": round(one_rss / 1024, 1),
        "workers_1_pss_mib": round(one_pss / 1024, 1),
    }
    worst = 0.0
    for n in counts[1:]:
        rss = statistics.median(r["rss_kib"] for r in taken[n])
        pss = statistics.median(r["pss_kib"] for r in taken[n])
        result[f"workers_{n}_processes"] = taken[n][0]["processes"]
        result[f"workers_{n}_rss_mib"] = round(rss / 1024, 1)
        result[f"workers_{n}_pss_mib"] = round(pss / 1024, 1)
        result[f"workers_{n}_rss_mib_per_extra_worker"] = round((rss - one_rss) / 1024 / (n - 1), 1)
        per_extra = (pss - one_pss) / 1024 / (n - 1)
        result[f"workers_{n}_pss_mib_per_extra_worker"] = round(per_extra, 1)
        worst = max(worst, per_extra)
    result["pss_mib_per_extra_worker"] = round(worst, 1)
    result["ratio_to_baseline"] = round((one_pss / 1024 + worst) / (one_pss / 1024), 2)
    result["ratio_definition"] = "(one process's PSS + one extra worker's) ÷ one process's PSS"
    emit([result | judged("worker_cost", result, "none (no extra worker measured)")])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="2,3", help="worker counts above 1, comma-separated")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--services", type=int, default=100)
    parser.add_argument("--namespaces", type=int, default=10)
    parser.add_argument("--settle", type=float, default=3.0, help="idle seconds before reading")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
