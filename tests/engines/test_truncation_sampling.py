"""Per-person truncation as PostgreSQL and Spark render it (``ROW_NUMBER()`` over a random
tag), run on the real engines: each person keeps exactly min(n, k) of their own rows, and
a heavy person's kept rows are a uniform k-subset (the test of DuckDB's sampler,
tests/system/test_truncation_sampling.py, with the same threshold far in the tail,
p < 1e-7)."""
import collections

import pytest
from sqlglot import exp

from dpsql.engines.postgres.dialect import Postgres
from dpsql.engines.spark.dialect import Spark
from dpsql.plan.nodes import truncated
from tests.system.test_truncation_sampling import assert_uniform_pairs

SIZES = "SELECT p AS pid, p * 1000 + i AS v FROM {pairs} WHERE i < 1 + p % 40"
UNIFORM = "SELECT {g} DIV 6 AS pid, {g} % 6 AS v FROM {rows}"


class _Engine:
    def __init__(self, name, dialect, run, table):
        self.name, self.dialect, self.run, self.table = name, dialect, run, table

    def kept(self, source: str, k: int) -> list:
        tree = self.dialect.compile_nodes(truncated(exp.select("*").from_(source), "pid", k,
                                                    ["pid", "v"]))
        return self.run(tree.sql(self.dialect.name))


@pytest.fixture(params=["postgres", "spark"])
def engine(request):
    if request.param == "postgres":
        server = request.getfixturevalue("postgres")
        con = server.connect(autocommit=True)

        def run(sql):
            with con.cursor() as cur:
                cur.execute(sql)
                return cur.fetchall()

        def table(name, select):
            con.execute(f"DROP TABLE IF EXISTS {name}")
            con.execute(f"CREATE TABLE {name} AS {select}")

        yield _Engine("postgres", Postgres(), run, table)
        con.close()
    else:
        spark = request.getfixturevalue("spark")

        def run(sql):
            return [tuple(r) for r in spark.sql(sql).collect()]

        def table(name, select):
            spark.sql(select).createOrReplaceTempView(name)

        yield _Engine("spark", Spark(), run, table)


def _sizes(engine) -> str:
    pairs = ("generate_series(0, 399) p, generate_series(0, 39) i" if engine.name == "postgres"
             else "(SELECT id AS p FROM range(400)) a CROSS JOIN (SELECT id AS i FROM range(40)) b")
    engine.table("trunc_sizes", SIZES.format(pairs=pairs))
    return "trunc_sizes"


def test_each_person_keeps_min_n_k_of_their_own_rows(engine):
    source = _sizes(engine)
    for _ in range(2):
        per = collections.defaultdict(list)
        for pid, v in engine.kept(source, 5):
            per[pid].append(v)
        assert {p: len(vs) for p, vs in per.items()} == {p: min(1 + p % 40, 5) for p in range(400)}
        for pid, vs in per.items():
            assert len(set(vs)) == len(vs) and all(v // 1000 == pid for v in vs)


def test_a_heavy_persons_kept_rows_are_a_uniform_k_subset(engine):
    """20,000 persons with 6 rows each keep 2: each of the 15 pairs about 1,333 times."""
    rows = ("generate_series(0, 119999) g" if engine.name == "postgres"
            else "(SELECT id AS g FROM range(120000))")
    select = UNIFORM.format(g="g", rows=rows)
    if engine.name == "postgres":
        select = select.replace("g DIV 6", "g / 6")
    engine.table("trunc_uniform", select)
    assert_uniform_pairs(engine.kept("trunc_uniform", 2))
