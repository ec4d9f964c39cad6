"""DuckDB's stored statistics never shape the work of a query over a private table (issue 33,
review 44, F5).

DuckDB keeps a minimum and a maximum per column and per block of rows (Parquet row groups, the
zonemaps of its own tables, which CSV files are loaded into). Before the fence
(``dpsql/engines/duckdb/statistics.py``), ``WHERE income > x`` read no block at all when x was
above every stored income, and one block when a single person was above it: the review read
the largest income of 2,000,000 persons within 1.3% through ``dpsql serve`` by timing 23
statements, and a unique largest text a character at a time.

The checks read DuckDB's own profile of the release query (the last one the engine's connection
runs): on neighbouring data sets (D1 = D0 plus one person whose income is far above the others'
and whose text is above every other text), each of the review's filters reads every block and
the same number of rows, whatever side of the person's values it falls on."""
from __future__ import annotations

import json

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlglot import exp

import dpsql
from dpsql.plan.rewrite import with_source

pytestmark = pytest.mark.filterwarnings("ignore:dpsql")

META = {"": {"d": {"t": {
    "max_ids": 1, "rows": 60001,
    "pid": {"type": "int", "private_id": True},
    "age": {"type": "int", "lower": 0, "upper": 100},
    "income": {"type": "int", "lower": 0, "upper": 500000},
    "educ": {"type": "string", "max_length": 32}}}}}
BLOCK = 5000
# (filter, which side of the person's values): the review's binary-search steps.
FILTERS = ["income > 9000000", "income > 20000000", "educ > 'zz'", "educ > 'zzz'",
           "educ = 'zz-unique'", "income IS NULL", "age > 1000", "income BETWEEN 9999990 AND 9999999"]
LARGE = dpsql.Privacy(epsilon=1e4)


def _frame(with_person: bool) -> pd.DataFrame:
    n = 60000
    frame = pd.DataFrame({"pid": range(n), "age": [(i * 7919) % 80 + 10 for i in range(n)],
                          "income": [(i * 104729) % 420500 for i in range(n)],
                          "educ": [f"e{i % 16}" for i in range(n)]})
    person = {"pid": n, "age": 27, "income": 9999999 if with_person else 1000,
              "educ": "zz-unique" if with_person else "e1"}
    return pd.concat([frame, pd.DataFrame([person])], ignore_index=True)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """name -> (D0, D1): readers over Parquet files, CSV files (loaded into DuckDB tables),
    a DuckDB connection's own tables and DataFrames (NumPy- and Arrow-backed: read without
    the fence, as DuckDB keeps no statistics of them; this checks that it still does not)."""
    tmp = tmp_path_factory.mktemp("stats")
    out = {"parquet": [], "paged parquet": [], "csv": [], "connection": [], "dataframe": [],
           "arrow dataframe": []}
    for with_person in (False, True):
        frame, tag = _frame(with_person), "d1" if with_person else "d0"
        con = duckdb.connect()
        con.register("f", frame)
        con.execute(f"COPY f TO '{tmp}/{tag}.parquet' (FORMAT parquet, ROW_GROUP_SIZE {BLOCK})")
        con.execute("CREATE SCHEMA d")
        con.execute("CREATE TABLE d.t AS SELECT * FROM f")
        frame.to_csv(tmp / f"{tag}.csv", index=False)
        # Written by pyarrow with a page index over small pages (DuckDB reads it to skip
        # pages as well as row groups, Spark's writer makes such files).
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp / f"{tag}p.parquet",
                       row_group_size=BLOCK, data_page_size=4096, write_page_index=True)
        out["paged parquet"].append(dpsql.from_df(str(tmp / f"{tag}p.parquet"), META, privacy=LARGE))
        out["parquet"].append(dpsql.from_df(str(tmp / f"{tag}.parquet"), META, privacy=LARGE))
        out["csv"].append(dpsql.from_df(str(tmp / f"{tag}.csv"), META, privacy=LARGE))
        out["connection"].append(dpsql.from_connection(con, META, privacy=LARGE))
        out["dataframe"].append(dpsql.from_df(frame, META, privacy=LARGE))
        arrow = frame.convert_dtypes(dtype_backend="pyarrow")
        out["arrow dataframe"].append(dpsql.from_df(arrow, META, privacy=LARGE))
    return out


def _scans(reader, where: str, tmp) -> list:
    """The table scans of the release of ``COUNT(*) ... WHERE where``, from DuckDB's profile:
    (blocks read, blocks in the table, rows scanned); an empty result folded from the
    statistics shows as ('EMPTY_RESULT',)."""
    con = reader.engine.con
    out = tmp / "profile.json"
    con.execute("PRAGMA enable_profiling = 'json'")
    con.execute(f"SET profiling_output = '{out}'")
    try:
        reader.execute_df(f"SELECT COUNT(*) AS n FROM d.t WHERE {where}")
    finally:
        con.execute("PRAGMA disable_profiling")
    found = []

    def walk(node):
        if node.get("type") == "EMPTY_RESULT":
            found.append(("EMPTY_RESULT",))
        elif node.get("type") == "TABLE_SCAN":
            found.append((node.get("row_groups_scanned"), node.get("total_row_groups_to_scan"),
                          node.get("rows_scanned")))
        for child in node.get("children", []):
            walk(child)
    for node in json.loads(out.read_text())["operator"]:
        walk(node)
    return found


@pytest.mark.parametrize("source", ["parquet", "paged parquet", "csv", "connection",
                                    "dataframe", "arrow dataframe"])
def test_every_filter_reads_every_block_on_neighbouring_data(sources, source, tmp_path):
    """On D0 and D1, every filter's release scans the private table once, reads all of its
    blocks, and nothing is folded into an empty result; the rows scanned do not depend on
    the filter or on the person. Before the fence, on Parquet: ``income > 20000000`` was an
    EMPTY_RESULT on both, ``income > 9000000`` an EMPTY_RESULT on D0 and one row group of 13
    on D1."""
    seen = {}
    for name, reader in zip(("D0", "D1"), sources[source]):
        for where in FILTERS:
            scans = _scans(reader, where, tmp_path)
            assert len(scans) == 1 and scans[0] != ("EMPTY_RESULT",), (source, name, where, scans)
            read, total, _ = scans[0]
            assert read == total, (source, name, where, scans)
            seen[name, where] = scans[0]
    assert len({seen[key] for key in seen}) == 1, seen


def test_the_fence_does_not_change_answers(sources):
    """Reading through the fence gives the exact answers the data holds."""
    sql = ("SELECT COUNT(*) AS n, SUM(income) AS s FROM d.t WHERE educ = 'e3' AND age > 30")
    frame = _frame(True)
    chosen = frame[(frame.educ == "e3") & (frame.age > 30)]
    huge = dpsql.Privacy(epsilon=1e6)
    for source, (_, reader) in sources.items():
        got = reader.execute_df(sql, privacy=huge)
        assert round(got.n[0]) == len(chosen), source
        assert got.s[0] == pytest.approx(chosen.income.clip(0, 500000).sum(), rel=1e-6), source


@pytest.mark.parametrize("source", ["parquet", "paged parquet", "csv", "connection"])
def test_no_condition_is_folded_from_the_stored_range(sources, source):
    """DuckDB's plan of a condition over the private table is the same on D0 and D1 and keeps
    the condition: before the fence, the stored maximum folded ``income > 20000000`` (above
    every stored income) to a constant, and ``age > 1000`` too, so the work per row depended
    on the extreme values, and a CASE's condition could be searched like a filter."""
    plans = []
    for reader in sources[source]:
        table = reader.metadata.find_table("d.t")
        relations = reader.engine.relations.typed([table])
        name = next(iter(relations))
        select = exp.select("SUM(CASE WHEN income > 20000000 OR age > 1000 THEN 1 ELSE 0 END)"
                            ).from_(exp.to_identifier(name, quoted=True))
        sql = with_source(select, relations).sql("duckdb")
        plan = reader.engine.con.execute("EXPLAIN " + sql).fetchall()[0][1]
        assert "20000000" in plan and "1000" in plan, plan
        plans.append(plan)
    assert plans[0] == plans[1]
