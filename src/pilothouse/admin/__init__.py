"""The admin/debug HTTP server (istiod's port 15014 role): readiness, health, REST discovery.

The admin API (:mod:`.api`: runtime knobs from :mod:`.knobs`, full push, disconnect)
mounts on the same application; ControlZ (:mod:`.controlz`) is its own server.
Later: ``/metrics`` and ``/debug/*`` mount on the same application.
"""
