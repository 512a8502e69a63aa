"""The REST discovery benchmark's parts: its mesh and request, the client, the figures."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import json_format

from bench.rest_load import (
    CLUSTER_TYPE,
    NODE_ID,
    TICKS,
    Expect,
    HttpError,
    KeepAlive,
    LoadRound,
    count_clusters,
    discovery_request,
    group_cpu_seconds,
    load_round,
    outbound_cluster,
    parse_head,
    parse_stat,
    post_request,
    problem,
    write_services,
)
from bench.rest_sovereign import Setup, percentile, report, summarise, verdict
from bench.sovereign_side import installed_version, sovereign_config, write_config
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.proxy import parse_node


def cluster(name: str) -> dict[str, Any]:
    return {
        "@type": CLUSTER_TYPE,
        "name": name,
        "type": "EDS",
        "transport_socket": {
            "name": "tls",
            "typed_config": {"@type": "type.googleapis.com/envoy.extensions.Tls"},
        },
    }


def response(names: list[str], indent: int | None = None) -> bytes:
    body = {"version_info": "1", "resources": [cluster(n) for n in names], "type_url": CLUSTER_TYPE}
    separators = None if indent is not None else (",", ":")
    return json.dumps(body, indent=indent, separators=separators).encode()


# -- the mesh and the request ----------------------------------------------------------


def test_write_services_gives_one_outbound_cluster_per_entry(tmp_path: Path) -> None:
    path = write_services(tmp_path, 25)
    configs = Loader(SCHEMAS).load_strict(path.read_text(encoding="utf-8"), str(path))
    assert len(configs) == 25
    specs: list[Any] = [config.spec for config in configs]
    assert len({spec.hosts[0] for spec in specs}) == 25
    assert all(len(spec.ports) == 1 for spec in specs)
    assert outbound_cluster(3) == "outbound|8080||svc-3.ns-3.example.internal"


def test_the_request_is_a_discovery_request_from_a_parseable_sidecar() -> None:
    body = discovery_request("abc", extensions=3)
    message = json_format.ParseDict(
        body, discovery_pb2.DiscoveryRequest(), ignore_unknown_fields=True
    )
    assert message.version_info == "abc"
    assert message.node.id == NODE_ID
    assert message.node.cluster  # sovereign requires node.cluster
    assert len(message.node.extensions) == 3
    proxy = parse_node(NODE_ID, body["node"]["metadata"])
    assert proxy.namespace == "shop"
    assert "version_info" not in discovery_request()


# -- checking answers ------------------------------------------------------------------


def test_count_clusters_counts_resources_not_nested_types_nor_the_type_url() -> None:
    names = [f"c{i}" for i in range(7)]
    assert count_clusters(response(names)) == 7
    assert count_clusters(response(names, indent=2)) == 7
    assert count_clusters(b'{"resources":[]}') == 0


def test_problem_names_what_is_wrong() -> None:
    names = ["a", "b"]
    good = response(names)
    assert problem(200, good, Expect(200, 2, names), full=True) is None
    assert problem(503, good, Expect(200, 2)) == "status 503"
    assert problem(200, good, Expect(200, 3)) == "2 clusters, not 3"
    assert problem(200, good, Expect(200, 2, ["a", "c"]), full=True) == "other cluster names"
    assert problem(200, good, Expect(200, 2, ["a", "c"])) is None  # names: first answer only
    assert problem(304, b"", Expect(304)) is None
    assert problem(304, b"x", Expect(304)) == "304 with a body"
    assert problem(200, good, Expect(304)) == "status 200"


# -- the lean HTTP client -------------------------------------------------------------


def test_parse_head_reads_status_length_and_closing() -> None:
    assert parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nServer: x") == (200, 12, False)
    assert parse_head(b"HTTP/1.1 304 Not Modified\r\ncontent-length: 0") == (304, 0, False)
    assert parse_head(b"HTTP/1.1 200 OK\r\nConnection: close") == (200, None, True)
    assert parse_head(b"HTTP/1.0 200 OK\r\nContent-Length: 1") == (200, 1, True)
    with pytest.raises(HttpError, match="chunked"):
        parse_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked")
    with pytest.raises(HttpError, match="status line"):
        parse_head(b"SSH-2.0-OpenSSH")
    with pytest.raises(HttpError, match="content-length"):
        parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: many")


def test_post_request_frames_the_body() -> None:
    raw = post_request("127.0.0.1", 8080, "/v3/discovery:clusters", b'{"a":1}')
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v3/discovery:clusters HTTP/1.1\r\n")
    assert b"Content-Length: 7" in head
    assert b"Content-Type: application/json" in head
    assert body == b'{"a":1}'


class Fake:
    """A tiny discovery server: answers by a script of modes, one per request."""

    def __init__(self, modes: list[str]) -> None:
        self.modes = modes
        self.count = 0
        self.bodies: list[bytes] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.bodies.append(await request.read())
        mode = self.modes[self.count % len(self.modes)]
        self.count += 1
        if mode == "304":
            return web.Response(status=304)
        if mode == "500":
            return web.Response(status=500, text="boom")
        if mode == "close":
            answer = web.Response(body=response(["a", "b"]), content_type="application/json")
            answer.force_close()
            return answer
        if mode == "chunked":
            streamed = web.StreamResponse()
            streamed.enable_chunked_encoding()
            await streamed.prepare(request)
            await streamed.write(response(["a", "b"]))
            await streamed.write_eof()
            return streamed
        return web.Response(body=response(["a", "b"]), content_type="application/json")


@pytest.fixture
async def serve() -> AsyncIterator[Any]:
    runners: list[web.AppRunner] = []

    async def start(fake: Fake) -> str:
        app = web.Application()
        app.router.add_post("/v3/discovery:clusters", fake.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = runner.addresses[0][1]
        return f"http://127.0.0.1:{port}/v3/discovery:clusters"

    yield start
    for runner in runners:
        await runner.cleanup()


async def test_keep_alive_reads_answers_and_reopens_closed_connections(serve: Any) -> None:
    fake = Fake(["200", "304", "close", "200", "chunked", "200"])
    url = await serve(fake)
    port = int(url.split(":")[2].split("/")[0])
    client = KeepAlive(
        "127.0.0.1", port, post_request("127.0.0.1", port, "/v3/discovery:clusters", b"{}")
    )
    try:
        status, body = await client.post()
        assert status == 200 and count_clusters(body) == 2
        assert await client.post() == (304, b"")
        status, body = await client.post()  # the server closes after this one
        assert status == 200 and count_clusters(body) == 2
        status, _ = await client.post()  # on a new connection
        assert status == 200
        with pytest.raises(HttpError, match="chunked"):
            await client.post()
        status, _ = await client.post()  # and again after the error
        assert status == 200
    finally:
        await client.close()
    assert fake.bodies == [b"{}"] * 6


@pytest.mark.parametrize("client", ["lean", "aiohttp"])
async def test_load_round_counts_good_answers_and_errors(serve: Any, client: str) -> None:
    fake = Fake(["200", "200", "500"])
    url = await serve(fake)
    result = await load_round(
        "fake",
        url,
        b'{"node":{}}',
        Expect(200, 2, ("a", "b")),
        connections=3,
        seconds=10.0,
        max_requests=30,
        client=client,
    )
    assert result.sent == 30 == fake.count
    assert result.ok == 20
    assert result.errors == Counter({"status 500": 10})
    assert len(result.latencies) == 20
    assert result.body_bytes == 20 * len(response(["a", "b"]))
    assert set(fake.bodies) == {b'{"node":{}}'}


async def test_load_round_stops_when_its_time_is_up(serve: Any) -> None:
    url = await serve(Fake(["304"]))
    began = asyncio.get_running_loop().time()
    result = await load_round(
        "fake", url, b"{}", Expect(304), connections=2, seconds=0.3, max_requests=10**9
    )
    assert asyncio.get_running_loop().time() - began < 5
    assert result.ok > 0 and not result.errors


# -- CPU from /proc --------------------------------------------------------------------


def stat_line(pid: int, name: str, pgrp: int, times: tuple[int, int, int, int]) -> str:
    utime, stime, cutime, cstime = times
    rest = [0] * 30
    fields = ["S", 1, pgrp, pgrp, 0, -1, 0, 0, 0, 0, 0, utime, stime, cutime, cstime, *rest]
    return f"{pid} ({name}) " + " ".join(str(f) for f in fields) + "\n"


def test_parse_stat_survives_odd_command_names() -> None:
    parsed = parse_stat(stat_line(42, "a (b) c", 7, (10, 5, 2, 1)))
    assert (parsed.pid, parsed.pgrp, parsed.ticks) == (42, 7, 18)


def test_group_cpu_sums_the_group_members_only(tmp_path: Path) -> None:
    for pid, pgrp, times in (
        (10, 10, (100, 50, 0, 0)),
        (11, 10, (20, 10, 5, 5)),
        (12, 99, (1000, 0, 0, 0)),
    ):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(stat_line(pid, "python", pgrp, times))
    (tmp_path / "self").mkdir()
    (tmp_path / "13").mkdir()  # vanished: no stat file
    assert group_cpu_seconds(10, tmp_path) == pytest.approx(190 / TICKS)


# -- figures ---------------------------------------------------------------------------


def one_round(ok: int, seconds: float, cpu: float, latency: float) -> LoadRound:
    return LoadRound(
        "x",
        ok=ok,
        body_bytes=ok * 1000,
        latencies=[latency] * ok,
        seconds=seconds,
        client_cpu=seconds / 10,
        server_cpu=cpu,
    )


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50
    assert percentile(values, 0.99) == 99
    assert percentile([3.0], 0.99) == 3
    assert math.isnan(percentile([], 0.5))


def test_summarise_takes_medians_of_rounds_and_sums_errors() -> None:
    rounds = [
        one_round(100, 1.0, 0.1, 0.01),
        one_round(300, 1.0, 0.3, 0.02),
        one_round(200, 1.0, 0.2, 0.03),
    ]
    rounds[0].errors["status 500"] = 2
    rounds[2].errors["status 500"] = 1
    summary = summarise(rounds)
    assert summary.requests_per_second == 200
    assert summary.megabytes_per_second == pytest.approx(0.2)
    assert summary.p50_ms == pytest.approx(20)
    assert summary.cpu_ms_per_request == pytest.approx(1.0)
    assert summary.client_cpu_share == pytest.approx(0.1)
    assert summary.response_bytes == 1000
    assert summary.good == 600
    assert summary.errors == Counter({"status 500": 3})


def test_verdict_says_whether_and_by_how_much_the_target_is_missed() -> None:
    assert verdict(25.0) == {"target": "ratio ≥ 20×", "target_met": "yes"}
    missed = verdict(5.0)
    assert missed["target_met"] == "no"
    assert missed["target_missed_by"].startswith("15.0× short (75% below")
    assert verdict(math.nan)["target_missed_by"] == "not measured"


def test_report_has_the_keys_run_all_needs() -> None:
    ours = summarise([one_round(1000, 1.0, 0.5, 0.002)])
    theirs = summarise([one_round(100, 1.0, 0.4, 0.02)])
    setup = Setup(100, 102, 8, 1, 1.0, 400, "0.32.12", 1)
    out = report(setup, (ours, theirs), (ours, theirs))
    assert out["benchmark"] == "rest_discovery: pilothouse vs sovereign, 100 clusters"
    assert "sovereign 0.32.12" in out["baseline"]
    assert out["ratio_to_baseline"] == 10.0
    assert out["pilothouse_rps"] == 1000 and out["sovereign_rps"] == 100
    assert out["cpu_ratio_sovereign_to_pilothouse"] == 8.0
    assert out["not_modified_ratio"] == 10.0
    assert out["target_met"] == "no"
    assert out["pilothouse_errors"] == 0
    json.dumps(out)  # one JSON line


# -- sovereign's configuration ------------------------------------------------------


def test_sovereign_serves_the_given_clusters_through_its_template(tmp_path: Path) -> None:
    clusters = [cluster("a"), cluster("b")]
    path = write_config(tmp_path, clusters)
    config = json.loads(path.read_text(encoding="utf-8"))
    assert config == sovereign_config(clusters, tmp_path / "clusters_template.py")
    (spec,) = config["templates"]["default"]
    assert spec["type"] == "clusters" and spec["spec"]["protocol"] == "python"
    assert config["sources"][0]["config"]["instances"] == clusters
    assert config["matching"] == {"enabled": False}
    loaded = importlib.util.spec_from_file_location("template", spec["spec"]["path"])
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    assert module.call(instances=clusters, discovery_request=None) == clusters


def test_installed_version_of_a_missing_venv_is_none(tmp_path: Path) -> None:
    assert installed_version(tmp_path / "nothing") is None
