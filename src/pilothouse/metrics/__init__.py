"""Prometheus metrics: the recorders the push path writes into, and the families
``/metrics`` reads them out as.

- :mod:`~pilothouse.metrics.histogram`: cheap histograms (a bisect per observation);
- :mod:`~pilothouse.metrics.push`: the push distributions with istiod's names and buckets;
- :mod:`~pilothouse.metrics.families`: Prometheus families named exactly as istiod names
  them (no ``_total`` appended to istiod's counters).

Counters that already exist as plain numbers (the discovery server's ``stats``, the
resource cache's, the sources') are not copied here: the collectors under
:mod:`pilothouse.admin` read them when ``/metrics`` is scraped, so they cost the push
path nothing. Nothing here is global: every server has its own recorders and its own
``CollectorRegistry``.
"""
