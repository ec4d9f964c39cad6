"""Engines that run bounded plans: DuckDB today (``duckdb``), others later."""
