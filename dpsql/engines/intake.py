"""The intake rule every engine shares: a stored column is read as its metadata type.

Owns: which stored types hold a metadata type as they are (``HOLDS``: an integer column
for a float, a date for a datetime), the family of each engine's stored types, and the
warning that names the columns a binding casts. A column stored otherwise (a float for an
int, as pandas stores an integer column with a missing value; an integer for a string;
text for anything) is cast to its metadata type as DuckDB's TRY_CAST casts it
(``dpsql.plan.rewrite.converted``), on every engine: a cell that does not convert is NULL,
never an error, and whether it converts depends on that cell alone. PostgreSQL and Spark
compile those casts with their dialect's total TRY_CAST rules.
"""
from __future__ import annotations

import sys

from ..errors import warn

HOLDS = {"int": {"int"}, "float": {"int", "float", "decimal"}, "string": {"string"},
         "boolean": {"boolean"}, "datetime": {"timestamp", "date"}, "date": {"date"}}
"""Metadata type -> the stored families read as it without a cast that could lose a value."""

NEUTRAL = {"int": "BIGINT", "float": "DOUBLE", "decimal": "DECIMAL", "string": "VARCHAR",
           "boolean": "BOOLEAN", "timestamp": "TIMESTAMP", "date": "DATE"}
"""Stored family -> the engine-neutral type a cast reads it as (and the warning names)."""

_DUCKDB = {"TINYINT": "int", "SMALLINT": "int", "INTEGER": "int", "BIGINT": "int",
           "HUGEINT": "int", "UTINYINT": "int", "USMALLINT": "int", "UINTEGER": "int",
           "UBIGINT": "int", "UHUGEINT": "int", "FLOAT": "float", "DOUBLE": "float",
           "DECIMAL": "decimal", "VARCHAR": "string", "BOOLEAN": "boolean",
           "TIMESTAMP": "timestamp", "TIMESTAMP_S": "timestamp", "TIMESTAMP_MS": "timestamp",
           "TIMESTAMP_NS": "timestamp", "DATE": "date"}


def is_frame(value) -> bool:
    """Whether ``value`` is a pandas DataFrame, without importing pandas: a process that
    never loaded pandas holds none, so a caller that passes files or connections (the
    ``dpsql query`` command) never pays for the import (with pyarrow, half of the command's
    1.2 s; docs/performance.md, "The CLI without pandas")."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, pandas.DataFrame)


def duckdb_family(stored_type: str) -> str | None:
    """The family of a DuckDB type (``DECIMAL(18,3)`` is decimal), None if none."""
    return _DUCKDB.get((stored_type or "").upper().split("(")[0].strip())


def is_cast(metadata_type: str, family: str | None) -> bool:
    """Whether a column of ``family`` is cast to be read as ``metadata_type``."""
    return family not in HOLDS[metadata_type]


LOSSLESS = {("string", f) for f in ("int", "boolean", "date", "timestamp")}
"""(metadata type, stored family) casts that every cell survives unchanged (a number or a
date as its text): made, never warned about (pandas stores a column of codes such as
PUMS's ``sex`` as int64 where SmartNoise's metadata says string)."""


def warn_cast(table, cast: list) -> None:
    """One warning per table binding naming the columns cast where a cell could become
    NULL or change (text to a number, a float to an integer, ...): ``cast`` lists
    (metadata column name, stored family, the engine's name of the stored type) in the
    metadata's order; the warning names the family's neutral type, the same on every
    engine."""
    types = {c.name: c.type for c in table.columns.values()}
    cast = [c for c in cast if (types.get(c[0]), c[1]) not in LOSSLESS]
    if not cast:
        return
    named = ", ".join(f"{name} (stored {NEUTRAL.get(family) or stored.upper()})"
                      for name, family, stored in cast)
    if len(cast) == 1:
        subject = f"column {named} is cast to its metadata type"
    else:
        subject = f"columns {named} are cast to their metadata types"
    warn(f"dpsql: {table.full_name}: {subject}; cells that do not convert are NULL")


TRUE_TEXT = ("true", "t", "yes", "y", "1")
FALSE_TEXT = ("false", "f", "no", "n", "0")
"""The texts DuckDB's TRY_CAST reads as a boolean (any case, no surrounding space)."""


def text_to_boolean(text):
    """TRY_CAST(text AS BOOLEAN) as DuckDB computes it, with no cast that could raise: a
    CASE on the text's lower case (PostgreSQL and Spark read more spellings, and raise on
    others)."""
    from sqlglot import exp
    lowered = exp.Lower(this=text.copy())

    def among(node, texts):
        return exp.In(this=node, expressions=[exp.Literal.string(s) for s in texts])
    return exp.Case(ifs=[exp.If(this=among(lowered.copy(), TRUE_TEXT), true=exp.true()),
                         exp.If(this=among(lowered, FALSE_TEXT), true=exp.false())])
