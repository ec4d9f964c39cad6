"""The dialect of the analyst's SQL: how the text is read, and how it is quoted back.

Owns: one setting, separate from the engine's dialect (``dpsql.plan.dialect``): the
analyst writes DuckDB-flavoured SQL (as sqlglot reads it) whatever engine runs the
plan. Messages, replay keys and the ledger quote queries in this dialect.
"""
from __future__ import annotations

ANALYST_DIALECT = "duckdb"
