"""The documentation site's tooling (``mkdocs.yml`` runs it as a hook).

The reference pages are generated from the code while the site is built, so that no
generated page is checked in that could drift: the CLI from the argparse parsers
(:mod:`docsite.cli_reference`), the settings from the ``Settings`` tree
(:mod:`docsite.settings_reference`) and the metrics from a server's Prometheus registry
(:mod:`docsite.metrics_reference`). :mod:`docsite.hooks` puts each into the page that
asks for it.
"""
