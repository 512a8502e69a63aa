"""ControlZ: pilothouse's introspection pages, as istio's ``pkg/ctrlz`` (port 9876).

:mod:`.app` mounts the topics and runs the server, :mod:`.page` renders the HTML shell,
:mod:`.process` reads the process's figures and :mod:`.scopes` serves the logging scopes.
The stylesheet and the script are in ``assets/``.
"""
