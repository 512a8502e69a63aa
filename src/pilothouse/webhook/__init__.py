"""The Kubernetes validating admission webhook (the Galley role's ``/validate``).

:mod:`pilothouse.webhook.review` turns one AdmissionReview body into a verdict with no
HTTP involved; :mod:`pilothouse.webhook.server` serves it over HTTPS on port 15017;
:mod:`pilothouse.webhook.stats` counts outcomes for the ``galley_validation_*`` metrics.
"""
