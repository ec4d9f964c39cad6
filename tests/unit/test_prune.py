"""The typed relations cut to the columns a plan names (dpsql.plan.prune): every accepted
fixture query computes the same exact aggregates with them cut as whole, and a ``*`` whose
width could show leaves them whole."""
from __future__ import annotations

import warnings

import duckdb
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


# Reads that reach a row's columns without their names, or a * whose width shows (found by
# a review calling prune directly; the planner emits none of them today): each must compute
# the same with the relations cut as whole, or raise the same way.
SHAPES = [
    'SELECT * FROM t',
    "SELECT COUNT(*) FROM t WHERE (1, 10, 'x') IN (SELECT * FROM t)",
    "SELECT COUNT(*) FROM t WHERE ROW(1, 10, 'x') IN (SELECT * FROM t)",
    'SELECT COUNT(*) FROM t AS z WHERE (SELECT * FROM t LIMIT 1) IS NOT NULL',
    'SELECT (SELECT * FROM t ORDER BY 1 LIMIT 1) AS v',
    'SELECT LEN(ARRAY(SELECT * FROM t)) AS n',
    'SELECT COUNT(DISTINCT t) FROM t',
    'SELECT COUNT(DISTINCT x) FROM (SELECT * FROM t) AS x',
    'SELECT COUNT(*) FROM (SELECT DISTINCT x FROM (SELECT * FROM t) AS x)',
    'SELECT COUNT(*) FROM (SELECT x FROM (SELECT * FROM t) AS x GROUP BY x)',
    'SELECT COUNT(*) FROM t GROUP BY t',
    "SELECT SUM(COLUMNS('b')) FROM t",
    "SELECT COUNT(*) FROM t WHERE COLUMNS('.*') IS NOT NULL",
    'SELECT COUNT(*) FROM (SELECT COLUMNS(*) FROM t)',
    'SELECT COUNT(*) FROM (SELECT * FROM t PIVOT (COUNT(*) FOR b IN (10, 20)))',
    'SELECT COUNT(*) FROM (PIVOT t ON b USING COUNT(*))',
    'SELECT COUNT(*) FROM (SELECT * FROM t UNPIVOT (v FOR k IN (a, b)))',
    'SELECT COUNT(*) FROM (UNPIVOT t ON COLUMNS(*) INTO NAME k VALUE v)',
    'SELECT COUNT(*) FROM (SELECT * FROM (SELECT * FROM t) AS x UNION BY NAME SELECT 1 AS a)',
    'SELECT COUNT(*) FROM (SELECT a FROM t UNION ALL BY NAME SELECT * FROM t)',
    'SELECT COUNT(*) FROM (FROM t EXCEPT FROM t WHERE a = 1)',
    'SELECT COUNT(*) FROM (SELECT * FROM t EXCEPT SELECT * FROM t WHERE a = 1)',
    'SELECT COUNT(*) FROM (SELECT * FROM t) AS x NATURAL JOIN (SELECT * FROM t WHERE a = 1) AS y',
    'SELECT COUNT(*) FROM t AS x JOIN t AS y USING (a)',
    'SELECT COUNT(*) FROM (SELECT * FROM t AS x JOIN t AS y USING (a))',
    'SELECT COUNT(*) FROM (SELECT DISTINCT * FROM t AS x JOIN t AS y USING (a))',
    'SELECT COUNT(*) FROM (SELECT * FROM t, LATERAL (SELECT * FROM t AS u WHERE u.a = t.a) AS l)',
    'SELECT COUNT(*) FROM (SELECT * FROM t) AS x, UNNEST([1,2]) AS u(v)',
    'SELECT COUNT(*) FROM (SELECT * FROM t QUALIFY ROW_NUMBER() OVER (PARTITION BY a) = 1)',
    'SELECT COUNT(*) FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY a) AS r FROM t) WHERE r = 1',
    'SELECT COUNT(*) FROM (SELECT DISTINCT ON (a) * FROM t)',
    'SELECT COUNT(*) FROM (SELECT * FROM t ORDER BY ALL)',
    'SELECT COUNT(*) FROM (SELECT * FROM t LIMIT 2)',
    'SELECT COUNT(*) FROM (SELECT * FROM t USING SAMPLE 50 PERCENT (bernoulli, 42))',
    'SELECT COUNT(*) FROM (SELECT * REPLACE (1 AS a) FROM t)',
    'SELECT COUNT(*) FROM (SELECT * RENAME (a AS z) FROM t)',
    'SELECT COUNT(*) FROM (SELECT t.* FROM t)',
    'SELECT COUNT(STRUCT_PACK(t.*)) FROM t',
    'SELECT COUNT(DISTINCT (SELECT x FROM (SELECT * FROM t) AS x LIMIT 1)) FROM t',
    'SELECT COUNT(*) FROM (SELECT * FROM t) x WHERE x IS NOT NULL',
    'SELECT MAX(x)::VARCHAR FROM (SELECT * FROM t) AS x',
    'SELECT MAX(LEN(JSON_KEYS(TO_JSON(x)))) FROM (SELECT * FROM t) AS x',
    'SELECT MIN(x.b) FROM (SELECT * FROM t) AS x',
    "SELECT COUNT(*) FROM (SELECT * FROM t) AS x WHERE x['b'] = 20",
    "SELECT SUM(STRUCT_EXTRACT(x, 'b')) FROM (SELECT * FROM t) AS x",
    'SELECT COUNT(*) FROM (SELECT * FROM t) AS x WHERE #2 = 20',
    'SELECT SUM(#2) FROM (SELECT * FROM t)',
    'SELECT COUNT(*) FROM (SELECT * FROM t GROUP BY ALL)',
    'SELECT COUNT(*) FROM (SELECT * FROM t) GROUP BY ALL',
    'SELECT COUNT(*) FROM (SELECT COUNT(*) FROM t GROUP BY COLUMNS(*))',
    'SELECT COUNT(*) FROM (SELECT HASH(x) AS h FROM (SELECT * FROM t) x GROUP BY h)',
    'SELECT COUNT(*) FROM (SELECT * FROM t) AS x JOIN (SELECT * FROM t) AS y ON x = y',
    'SELECT COUNT(*) FROM (SELECT * FROM t POSITIONAL JOIN (SELECT 1 AS z))',
    'SELECT COUNT(*) FROM (SELECT * FROM t ASOF JOIN t AS u ON t.a >= u.a)',
    'SELECT COUNT(*) FROM (WITH t AS (SELECT 1 AS q) SELECT DISTINCT * FROM t)',
    'SELECT COUNT(*) FROM (SELECT * FROM (SELECT * FROM t) AS "T" WHERE "T".b > 1)',
    'SELECT MAX(LENGTH(CAST(x AS VARCHAR))) FROM (SELECT * FROM t) AS x',
    'SELECT COUNT(DISTINCT ROW(x.*)) FROM t AS x',
    'SELECT COUNT(*) FROM (SELECT DISTINCT * FROM (SELECT * FROM t) x)',
    'SELECT COUNT(*) FROM (SELECT * FROM t INTERSECT SELECT * FROM t)',
    'SELECT COUNT(*) FROM (SELECT * FROM (VALUES (1)) AS v(a) UNION SELECT * FROM (SELECT a FROM t))',
    'SELECT LIST(x ORDER BY x.b)::VARCHAR FROM (SELECT * FROM t) x',
    'SELECT COUNT(*) FROM (SELECT UNNEST(x) FROM (SELECT * FROM t) x)',
    'SELECT COUNT(*) FROM (SELECT * FROM t WHERE t IS NOT NULL)',
    'SELECT COUNT(*) FROM t WHERE NOT t IS NULL',
]


@pytest.fixture(scope="module")
def src():
    con = duckdb.connect()
    con.execute("CREATE TABLE src AS SELECT * FROM (VALUES (1, 10, 'x'), (1, 20, 'y'), "
                "(2, 20, 'y'), (NULL, NULL, NULL)) AS v(a, b, c)")
    return con


def _outcome(con, sql: str):
    try:
        return sorted(con.execute(sql).fetchall(), key=repr)
    except duckdb.Error as err:
        return type(err).__name__


@pytest.mark.parametrize("rest", SHAPES)
def test_a_cut_never_changes_what_a_statement_computes(src, rest):
    whole = TYPED + rest
    tree = sqlglot.parse_one(whole, read="duckdb")
    prune(tree, 1)
    assert _outcome(src, tree.sql("duckdb")) == _outcome(src, whole)
