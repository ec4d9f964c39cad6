"""The Python API: sessions that run the pipeline in order.

``session`` opens one (data, metadata, ledger, budget) for every entry point;
``reader`` is the session object and ``from_df``/``from_connection``; ``dbapi``
is the PEP 249 connector over a reader.
"""
