"""The typed relations cut to the columns a plan names (dpsql.plan.prune): every accepted
fixture query computes the same exact aggregates with them cut as whole, and a ``*`` whose
width could show leaves them whole."""
from __future__ import annotations

import warnings

import pytest
import sqlglot
from sqlglot import exp

import dpsql
from dpsql.plan.prune import prune
from dpsql.plan.rewrite import with_source

from tests.paths import DATA_SETS
from tests.system.test_sql_fixtures import FILE, LINES

ACCEPTED = [p for p in LINES if p.values[0].startswith("accept")]


def _whole(engine, plan) -> str:
    """The engine SQL of ``plan`` over whole typed relations (pruning skipped)."""
    typed = engine.relations.typed(plan.query.relation.tables)
    return engine.dialect.sql(engine.dialect.lowered(with_source(plan.exact, typed)))


def _exact(con, sql: str) -> list:
    con.execute("SELECT setseed(0.25)")
    return sorted(con.execute(sql).fetchall(), key=repr)


@pytest.fixture(scope="module")
def readers():
    made = {}
    for name in sorted({p.values[0] for p in ACCEPTED}):
        meta, tables = DATA_SETS[FILE.match(name).group(2)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            made[name] = dpsql.from_df(dict(tables), meta, privacy=dpsql.Privacy())
        made[name].engine.con.execute("SET threads = 1")
    return made


def test_every_accepted_fixture_query_computes_the_same_with_its_relations_cut(readers):
    cut = compared = 0
    for param in ACCEPTED:
        file, sql, _ = param.values
        reader = readers[file]
        engine = reader.engine
        plans = reader._plan(sql)
        for plan in getattr(plans, "parts", None) or [plans]:
            pruned, whole = engine.compile(plan), _whole(engine, plan)
            compared += 1
            if len(pruned) < len(whole):
                cut += 1
                assert _exact(engine.con, pruned) == _exact(engine.con, whole), (file, sql)
    assert compared >= 390 and cut >= compared // 2, (compared, cut)


def _cut(sql: str) -> str:
    tree = sqlglot.parse_one(sql, read="duckdb")
    prune(tree, 1)
    return tree.args["with_"].expressions[0].this.sql("duckdb")


TYPED = 'WITH t AS (SELECT a AS a, b AS b, c AS c FROM src) '


def test_columns_no_one_names_are_cut():
    assert _cut(TYPED + "SELECT COUNT(*), SUM(a) FROM (SELECT * FROM t) AS x") == \
        "SELECT a AS a FROM src"
    assert _cut(TYPED + "SELECT COUNT(*) FROM t") == "SELECT a AS a FROM src"
    assert _cut(TYPED + "SELECT SUM(x.B) FROM (SELECT * FROM t) AS x") == \
        "SELECT b AS b FROM src"
    # a star over named columns has a fixed width wherever it is
    assert _cut(TYPED + "SELECT COUNT(*) FROM (SELECT DISTINCT * FROM (SELECT a FROM t))") \
        == "SELECT a AS a FROM src"
    assert _cut(TYPED + "SELECT COUNT(*) FROM (SELECT * FROM (SELECT a FROM t) "
                        "UNION ALL SELECT * FROM (SELECT b AS a FROM t))") == \
        "SELECT a AS a, b AS b FROM src"


@pytest.mark.parametrize("rest", [
    "SELECT COUNT(*) FROM (SELECT DISTINCT * FROM t)",
    "SELECT COUNT(*) FROM (SELECT * FROM t UNION SELECT * FROM t)",
    "SELECT COUNT(*) FROM (SELECT * FROM t GROUP BY ALL)",
    "SELECT COUNT(*) FROM (SELECT * EXCLUDE (c) FROM t)",
    "SELECT COUNT(*) FROM (SELECT * FROM t ORDER BY 2)",
    "SELECT COUNT(*) FROM (SELECT x.* FROM t AS x UNION ALL SELECT * FROM t)",
    "SELECT COUNT(*) FROM t NATURAL JOIN t AS u",
    "SELECT COUNT(*) FROM t POSITIONAL JOIN t AS u",
    "SELECT COUNT(*) FROM (WITH u AS (SELECT * FROM t) SELECT DISTINCT * FROM u)",
    "SELECT COUNT(*) FROM (SELECT DISTINCT * FROM (SELECT * FROM t))",
    "SELECT COUNT(*) FROM (SELECT DISTINCT * FROM t, (SELECT 1 AS one) AS o)",
    "SELECT HASH(*) FROM t",
])
def test_a_star_whose_width_could_show_keeps_every_column(rest):
    assert _cut(TYPED + rest) == "SELECT a AS a, b AS b, c AS c FROM src"
