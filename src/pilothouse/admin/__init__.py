"""The admin/debug HTTP server (istiod's port 15014 role): readiness, health, REST discovery.

``/metrics`` (:mod:`pilothouse.admin.metrics`) mounts on the same application; later
``/debug/*`` and the admin API.
"""
