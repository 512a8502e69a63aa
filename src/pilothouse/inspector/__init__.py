"""The inspector: does a proxy hold what pilothouse sent it and it acknowledged?

Pieces, one idea each: :mod:`~pilothouse.inspector.message_types` finds Envoy message
types by name; :mod:`~pilothouse.inspector.digest` gives a resource one digest whether
it comes as pilothouse's bytes or as Envoy's JSON; :mod:`~pilothouse.inspector.endpoints`
is the part of a ClusterLoadAssignment Envoy's dump can be compared on;
:mod:`~pilothouse.inspector.config_dump` reads what an Envoy holds from its
``/config_dump``; :mod:`~pilothouse.inspector.compare` and
:mod:`~pilothouse.inspector.report` make and print the verdict;
:mod:`~pilothouse.inspector.admin_clients` and :mod:`~pilothouse.inspector.inspection`
fetch both sides and inspect one proxy or a sample. What a proxy acknowledged is
recorded by the stream engine (:mod:`pilothouse.xds.protocol.acked`) and served by
``/debug/acked`` (:mod:`pilothouse.admin.acked`).
"""
