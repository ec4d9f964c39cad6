"""Engines that run bounded plans: the embedded DuckDB (``duckdb``, the default) and
PostgreSQL (``postgres``); ``postprocess`` is the connection that sees noisy values only."""
