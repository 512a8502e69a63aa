"""The harness every fleet benchmark under bench/ stands on.

- ``process``: a server under test in its own process, its CPU and RSS from /proc
  (``child``: the same for benchmarks driven from synchronous code, MCP sync and REST,
  and ``pilothouse serve`` so started);
- ``servers``: starting ``pilothouse serve`` and the transport floor, loading the floor;
- ``floor``: the transport floor itself, a bare grpc.aio ADS server sending given bytes;
- ``mesh``: the push fan-out mesh (ServiceEntries, DestinationRules, WorkloadEntries);
- ``in_process``: a discovery server and its fleet in the benchmark's own process, no gRPC
  (``subscriptions``: what an Envoy watches, read from what it was sent);
- ``fleet``: the fleet of simulated proxies (``pilothouse.loadtest``) and what it counts;
- ``storm`` and ``push``: a connect storm and a timed push on a fleet, and their medians;
- ``rounds``: subject and baseline alternating, and the statistics over rounds;
- ``options``: the command line the fleet scenarios share (mesh shape, fleet sizes);
- ``figures``: the report side: rounding, ratios, the JSON lines run_all.py records.

A benchmark script is the scenario: what it starts, what it changes, what it reports.
"""
