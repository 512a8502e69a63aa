"""Config kinds: one module per kind, each declaring everything pilothouse knows about it,
and the table that registers them (:mod:`pilothouse.kinds.table`).

The package sits just after config's model in the pipeline (config → kinds → sources →
registry → push → xds): a kind's module reads config's schema row and validators and
declares rules that later stages interpret; it imports nothing from them.
"""
