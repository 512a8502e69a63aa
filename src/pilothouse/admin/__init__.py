"""The admin/debug HTTP server (istiod's port 15014 role): readiness, health, REST discovery.

``/metrics`` (:mod:`pilothouse.admin.metrics`), ``/debug/*``
(:mod:`pilothouse.admin.debug_routes`) and the admin API (:mod:`.api`: runtime knobs
from :mod:`.knobs`, full push, disconnect) mount on the same application; ControlZ
(:mod:`.controlz`) is its own server.
"""
