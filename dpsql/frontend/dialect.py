"""The dialect of the analyst's SQL: how the text is read, and how it is quoted back.

Owns: one setting, separate from the engine's dialect (``dpsql.plan.dialect``): the
analyst writes DuckDB-flavoured SQL (as sqlglot reads it) whatever engine runs the
plan. Messages, replay keys and the ledger quote queries in this dialect.
"""
from __future__ import annotations

import functools

ANALYST_DIALECT = "duckdb"


def analyst_parser():
    """A parser of the analyst's dialect that reads any expression as a key of ROLLUP, CUBE
    and GROUPING SETS, as PostgreSQL does (sqlglot's reads operands of bitwise operators
    only there: ``ROLLUP(age > 99)`` did not parse; fifteenth review of issue 33)."""
    return _parser_class()(dialect=ANALYST_DIALECT)


@functools.cache
def _parser_class():
    import sqlglot
    from sqlglot import exp
    from sqlglot.tokens import TokenType

    base = sqlglot.Dialect.get_or_raise(ANALYST_DIALECT).parser_class
    kinds = {TokenType.CUBE: exp.Cube, TokenType.ROLLUP: exp.Rollup}

    class AnalystParser(base):
        def _parse_cube_or_rollup(self, with_prefix: bool = False):
            kind = kinds.get(self._curr.token_type) if self._curr is not None else None
            if with_prefix or kind is None:
                return super()._parse_cube_or_rollup(with_prefix)
            self._advance()
            return self.expression(kind(expressions=self._parse_wrapped_csv(self._parse_disjunction)))

        def _parse_grouping_set(self):
            return self._parse_grouping_sets() or self._parse_cube_or_rollup() or \
                self._parse_disjunction()

    return AnalystParser
