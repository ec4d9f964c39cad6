"""Each table's typed and dry-run relations are built once per engine (dpsql.engines.relations),
and what a plan compiles to is the same as when they were built for every query."""
import dataclasses

import dpsql
from dpsql.plan.aggregate import check_rows_independent
from dpsql.plan.rewrite import null_relation, typed_name

from tests.paths import DATA

QUERIES = ["SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > 30",
           "SELECT sex, AVG(income) AS a FROM PUMS.PUMS GROUP BY sex",
           "SELECT COUNT(*) AS n FROM PUMS.PUMS a JOIN PUMS.PUMS b ON a.pid = b.pid"]


def _reader():
    return dpsql.from_df({"PUMS.PUMS": DATA / "PUMS_pid.csv"}, DATA / "PUMS_pid.yaml",
                         privacy=dpsql.Privacy(epsilon=1.0))


def _built_each_time(engine, plan) -> tuple:
    """(engine SQL, dry run) with the relations built for this plan alone, as before."""
    tables = plan.query.relation.tables
    typed = {typed_name(t): engine._typed(t)
             for t in tables}
    nulls = {typed_name(t): null_relation(t) for t in tables}
    return engine.dialect.sql_over(plan.exact, typed, nulls, check_rows_independent)


def test_kept_relations_compile_as_relations_built_per_query():
    reader = _reader()
    engine = reader.engine
    for sql in QUERIES:
        plan = reader._plan(sql)
        for _ in range(3):          # the kept relations are not changed by compiling
            typed, nulls, heads = engine.relations.of(plan.query.relation.tables)
            kept = engine.dialect.sql_over(plan.exact, typed, nulls, check_rows_independent,
                                           heads)
            assert kept == _built_each_time(engine, plan)
            assert engine.compile(plan) == kept[0]
        for table in plan.query.relation.tables:    # never part of a plan: copies are
            typed, dry = engine.relations._built[id(table)]
            assert typed.parent is None and dry.parent is None


def test_a_table_not_of_the_engines_metadata_is_built_for_its_query_alone():
    reader = _reader()
    engine = reader.engine
    own = next(iter(reader.metadata.tables.values()))
    other = dataclasses.replace(own)            # equal, but not the engine's own object
    typed, nulls, heads = engine.relations.of([other])
    assert heads is None
    assert id(other) not in engine.relations._built
    again = engine.relations.of([own])
    assert again[2] is not None and id(own) in engine.relations._built
    assert typed[typed_name(own)].sql() == again[0][typed_name(own)].sql()


def test_each_engine_keeps_its_own():
    first, second = _reader(), _reader()
    first.execute_df(QUERIES[0])
    assert first.engine.relations._built and not second.engine.relations._built
