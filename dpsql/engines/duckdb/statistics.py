"""DuckDB's stored statistics, hidden from every plan over a private table.

DuckDB keeps a minimum, a maximum and a has-NULL flag per column and per block of rows
(a Parquet file's row groups and page index, the zonemaps of its own tables, which CSV
files are loaded into). Its optimiser reads them: a filter that the column's range says
is never true is folded into an empty result, a block whose range excludes a filter is
not read, a clamp no stored value needs is dropped, a small key range is grouped in a
perfect hash. Each makes the time of a query depend on the extreme values, which are one
person's: review 44 (F5) read the largest income of 2,000,000 persons within 1.3% by
timing 23 ``WHERE income > x`` statements through ``dpsql serve``, and a unique largest
text a character at a time.

Every column of a private table's typed relation is read through ``TRY(...)``, which
DuckDB propagates no statistics through: its filters are still pushed into the scan (as
expression filters, so a scan still reads only the columns it needs and decodes the
others only for the rows that pass) but no block is skipped and no filter folded, whatever
the data holds. The inner expressions never raise (TRY_CAST, CASE), so TRY never falls
back to its row-by-row path. ``tests/safety/test_duckdb_statistics.py`` checks, from
DuckDB's own profile, that every block is read and that neighbouring files are read alike.

Measured cost (docs/performance.md, "Storage statistics hidden"): the work the statistics saved.
Disabling the two optimisers for the whole connection instead
(``disabled_optimizers = 'filter_pushdown,statistics_propagation'``) also removed the
signal but stopped filters from reaching the scan at all.
"""
from __future__ import annotations

from sqlglot import exp


def hidden_statistics(relation: exp.Select) -> exp.Select:
    """``relation`` (a typed relation: one aliased expression per column) with each column
    read through TRY, which carries no statistics of the stored column."""
    out = relation.copy()
    out.set("expressions", [exp.alias_(exp.Anonymous(this="TRY", expressions=[e.this]),
                                       e.alias, quoted=True)
                            for e in out.expressions])
    return out
