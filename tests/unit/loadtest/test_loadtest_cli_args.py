"""`pilothouse loadtest` flags: what a valid command line becomes, and the clear error every
invalid one gets (exit status 2, nothing started)."""

from __future__ import annotations

import argparse
import os

import pytest

from pilothouse.cli.loadtest_args import UsageError, parse_address, spec_from_args
from pilothouse.cli.main import build_parser, main
from pilothouse.loadtest.identity import ProxyFlavour
from pilothouse.loadtest.spec import (
    FleetSlice,
    LoadSpec,
    Scenario,
    Trigger,
    fleet_slices,
    slice_identities,
)

SERVER = ["--server", "127.0.0.1:15010"]


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["loadtest", *argv])


def spec(*argv: str) -> LoadSpec:
    return spec_from_args(parse(*argv))


def usage_error(*argv: str) -> str:
    with pytest.raises(UsageError) as caught:
        spec(*argv)
    return str(caught.value)


def test_defaults_are_a_connect_storm_of_100_sidecars() -> None:
    made = spec(*SERVER)
    assert made == LoadSpec(server="127.0.0.1:15010")
    assert made.proxies == 100
    assert made.processes == 1
    assert made.scenario is Scenario.CONNECT
    assert made.flavour is ProxyFlavour.SIDECAR
    assert not made.delta
    assert made.timeout == 30.0
    assert not made.trigger.given


def test_replicas_are_given_by_repeating_server_or_with_commas() -> None:
    made = spec("--server", "127.0.0.1:1", "--server", "127.0.0.1:2, 127.0.0.1:3,127.0.0.1:1")
    assert made.server == "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"  # each once, in order
    assert made.servers == ("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3")
    assert LoadSpec.from_json(made.to_json()) == made
    assert "--server: expected HOST:PORT or [IPv6]:PORT, got 'nope'" in usage_error(
        "--server", "127.0.0.1:1,nope"
    )


def test_every_flag_lands_in_the_spec() -> None:
    made = spec(
        *SERVER,
        "--proxies", "40", "--processes", "4", "--delta", "--flavour", "grpc",
        "--target", "reviews.default.svc.cluster.local:9080", "--target", "[::1]:80",
        "--namespaces", "a, b,c", "--scenario", "churn", "--ramp", "2", "--timeout", "5",
        "--duration", "12", "--rate", "2.5", "--trigger", "touch x",
        "--streams-per-connection", "7",
    )  # fmt: skip
    assert made.proxies == 40
    assert made.processes == 4
    assert made.delta
    assert made.flavour is ProxyFlavour.GRPC
    assert made.targets == ("reviews.default.svc.cluster.local:9080", "[::1]:80")
    assert made.namespaces == ("a", "b", "c")
    assert made.scenario is Scenario.CHURN
    assert (made.ramp, made.timeout, made.duration, made.rate) == (2.0, 5.0, 12.0, 2.5)
    assert made.trigger == Trigger(command="touch x")
    assert made.streams_per_connection == 7
    assert made.transport == "delta"


def test_push_with_a_trigger_file() -> None:
    made = spec(
        *SERVER, "--scenario", "push", "--repeat", "3", "--quiet-for", "0.1",
        "--trigger-file", "/tmp/x.yaml", "--trigger-content", "a: {n}",
    )  # fmt: skip
    assert made.repeat == 3
    assert made.quiet == 0.1 and spec(*SERVER).quiet == 0.5
    assert made.trigger == Trigger(file="/tmp/x.yaml", content="a: {n}")
    assert made.trigger.describe() == "write /tmp/x.yaml"


def test_the_spec_survives_json_as_workers_receive_it() -> None:
    made = spec(
        *SERVER, "--proxies", "9", "--processes", "2", "--flavour", "router",
        "--namespaces", "x,y", "--scenario", "push", "--trigger", "true",
    )  # fmt: skip
    assert LoadSpec.from_json(made.to_json()) == made


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "--server HOST:PORT is required"),
        (["--server", "localhost"], "expected HOST:PORT or [IPv6]:PORT, got 'localhost'"),
        (["--server", "host:"], "expected HOST:PORT or [IPv6]:PORT, got 'host:'"),
        (["--server", "host:99999"], "port must be 1-65535, got 'host:99999'"),
        (["--server", "host:http"], "expected HOST:PORT or [IPv6]:PORT, got 'host:http'"),
        (["--server", "::1:80"], "write an IPv6 address in brackets: [::1]:80"),
        ([*SERVER, "--proxies", "0"], "--proxies must be at least 1"),
        ([*SERVER, "--proxies", "-5"], "--proxies must be at least 1"),
        ([*SERVER, "--proxies", "100001"], "at most 100000"),
        ([*SERVER, "--processes", "0"], "--processes must be at least 1"),
        ([*SERVER, "--proxies", "3", "--processes", "4"], "--processes 4 is more than --proxies 3"),
        ([*SERVER, "--flavour", "grpc"], "--flavour grpc needs at least one --target"),
        ([*SERVER, "--target", "a:1"], "--target applies to --flavour grpc only"),
        ([*SERVER, "--namespaces", "ok,Not_Valid"], "'Not_Valid' is not a namespace name"),
        ([*SERVER, "--namespaces", "a,,b"], "'' is not a namespace name"),
        ([*SERVER, "--timeout", "0"], "--timeout must be more than 0"),
        ([*SERVER, "--timeout", "601"], "at most 600"),
        ([*SERVER, "--quiet-for", "-1"], "--quiet-for must be at least 0"),
        ([*SERVER, "--ramp", "-1"], "--ramp must be at least 0"),
        ([*SERVER, "--duration", "5"], "--duration applies to --scenario churn only"),
        ([*SERVER, "--rate", "5"], "--rate applies to --scenario churn only"),
        ([*SERVER, "--repeat", "2"], "--repeat applies to --scenario push only"),
        ([*SERVER, "--trigger", "true"], "--scenario connect makes no changes"),
        ([*SERVER, "--scenario", "push"], "--scenario push needs --trigger CMD"),
        ([*SERVER, "--scenario", "churn"], "--scenario churn needs --trigger CMD"),
        (
            [
                *SERVER,
                "--scenario",
                "push",
                "--trigger",
                "a",
                "--trigger-file",
                "f",
                "--trigger-content",
                "x",
            ],
            "not both",
        ),
        ([*SERVER, "--scenario", "push", "--trigger-file", "f"], "needs --trigger-content"),
        ([*SERVER, "--scenario", "push", "--trigger-content", "x"], "needs --trigger-file"),
        ([*SERVER, "--scenario", "push", "--trigger", "  "], "the command is empty"),
        (
            [*SERVER, "--scenario", "churn", "--trigger", "t", "--rate", "0"],
            "--rate must be more than 0",
        ),
        (
            [*SERVER, "--scenario", "churn", "--trigger", "t", "--duration", "700"],
            "--duration must be more than 0 and at most 600",
        ),
        ([*SERVER, "--scenario", "push", "--trigger", "t", "--repeat", "0"], "--repeat must"),
        ([*SERVER, "--streams-per-connection", "0"], "--streams-per-connection must"),
        ([*SERVER, "--admin", "nope"], "--admin: expected HOST:PORT or [IPv6]:PORT, got 'nope'"),
        ([*SERVER, "--server-pid", "0"], "--server-pid must be positive"),
    ],
)
def test_invalid_flags_are_explained(argv: list[str], message: str) -> None:
    assert message in usage_error(*argv)


def test_a_missing_server_process_is_named() -> None:
    pid = 4_000_000  # above the kernel's pid_max limit: never a process
    assert not os.path.exists(f"/proc/{pid}")
    assert f"no process {pid}" in usage_error(*SERVER, "--server-pid", str(pid))


def test_own_pid_is_accepted_as_the_server() -> None:
    assert spec(*SERVER, "--server-pid", str(os.getpid())).server == "127.0.0.1:15010"


def test_unknown_scenario_and_flavour_are_rejected_by_the_parser(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as caught:
        parse(*SERVER, "--scenario", "storm")
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "argument --scenario: invalid choice: 'storm'" in err
    assert all(name in err for name in ("connect", "push", "churn"))
    with pytest.raises(SystemExit):
        parse(*SERVER, "--flavour", "ztunnel")
    err = capsys.readouterr().err
    assert "argument --flavour: invalid choice: 'ztunnel'" in err
    assert all(name in err for name in ("sidecar", "router", "grpc"))


def test_the_command_reports_usage_errors_with_status_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["loadtest", "--server", "127.0.0.1:1", "--proxies", "0"]) == 2
    assert capsys.readouterr().err == (
        "pilothouse loadtest: --proxies must be at least 1 and at most 100000, got 0\n"
    )


def test_addresses() -> None:
    assert parse_address("istiod.istio-system.svc:15010", "--server") == (
        "istiod.istio-system.svc:15010"
    )
    assert parse_address("[fe80::1]:15010", "--server") == "[fe80::1]:15010"
    for bad in ("a b:1", "http://x:1", "[::1:80", ":80"):
        with pytest.raises(UsageError):
            parse_address(bad, "--server")


def test_fleet_is_split_evenly_over_processes() -> None:
    assert fleet_slices(10, 3) == [FleetSlice(0, 0, 4), FleetSlice(1, 4, 3), FleetSlice(2, 7, 3)]
    assert fleet_slices(5, 1) == [FleetSlice(0, 0, 5)]
    with pytest.raises(ValueError):
        fleet_slices(2, 3)


def test_slices_make_one_fleet_of_distinct_proxies() -> None:
    made = spec(*SERVER, "--proxies", "7", "--processes", "3", "--namespaces", "a,b")
    identities = [
        identity
        for part in fleet_slices(made.proxies, made.processes)
        for identity in slice_identities(made, part)
    ]
    assert len({identity.node_id for identity in identities}) == 7
    assert [identity.namespace for identity in identities] == ["a", "b"] * 3 + ["a"]
    assert identities[0].node_id == "sidecar~10.0.0.1~loadtest-0.a~a.svc.cluster.local"
    assert identities[6].node_id == "sidecar~10.0.0.7~loadtest-6.a~a.svc.cluster.local"


def test_worker_flag_is_hidden_from_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["loadtest", "--help"])
    text = capsys.readouterr().out
    assert "--server HOST:PORT" in text
    assert "--worker" not in text
