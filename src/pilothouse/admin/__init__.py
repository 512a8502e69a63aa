"""The admin/debug HTTP server (istiod's port 15014 role): readiness, health, REST discovery.

Later: ``/metrics``, ``/debug/*`` and the admin API mount on the same application.
"""
