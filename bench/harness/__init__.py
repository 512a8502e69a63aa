"""The harness every fleet benchmark under bench/ stands on.

- ``process``: a server under test in its own process, its CPU and RSS from /proc;
- ``servers``: starting ``pilothouse serve`` and the transport floor, loading the floor;
- ``floor``: the transport floor itself, a bare grpc.aio ADS server sending given bytes;
- ``mesh``: the push fan-out mesh (ServiceEntries, DestinationRules, WorkloadEntries);
- ``fleet``: the fleet of simulated proxies (``pilothouse.loadtest``) and what it counts;
- ``storm`` and ``push``: a connect storm and a timed push on a fleet, and their medians;
- ``rounds``: subject and baseline alternating, and the statistics over rounds;
- ``figures``: the report side: rounding, ratios, the JSON lines run_all.py records.

A benchmark script is the scenario: what it starts, what it changes, what it reports.
"""
