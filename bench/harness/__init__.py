"""The harness every fleet benchmark under bench/ stands on.

- ``process``: a server under test in its own process, its CPU and RSS from /proc
  (``child``: the same for benchmarks driven from synchronous code, MCP sync and REST,
  and ``pilothouse serve`` so started);
- ``servers``: starting ``pilothouse serve`` and the transport floor on an exit stack that
  stops them (``serving_pilothouse``, ``serving_floor``), loading the floor;
- ``floor``: the transport floor itself, a bare grpc.aio ADS server sending given bytes;
- ``mesh``: the push fan-out mesh (ServiceEntries, DestinationRules, WorkloadEntries);
- ``in_process``: a discovery server and its fleet in the benchmark's own process, no gRPC
  (``subscriptions``: what an Envoy watches, read from what it was sent);
- ``fleet``: the fleet driver: simulated proxies (``pilothouse.loadtest``) started and
  converged (``converged_fleet``), and what the fleet counts;
- ``storm`` and ``push``: a connect storm and a timed push on a fleet;
- ``churn``: endpoint churn events, which proxy has which since when, and when the
  server's file watcher saw each;
- ``rounds``: subject and baseline alternating, and the statistics over rounds;
- ``options``: the command line the fleet scenarios share (mesh shape, fleet sizes);
- ``targets``: issue #17's targets, each owned by one script's row, and their verdicts;
- ``figures``: the one report writer: rounding, ratios, declarative per-side figure tables
  (``per_side``, ``medians``: a side's runs' medians) and the JSON lines run_all.py
  records.

A benchmark script is the scenario: what it starts, what it changes, and the table of
what it reports.
"""
