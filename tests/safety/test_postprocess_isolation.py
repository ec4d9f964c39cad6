"""Sessions share one post-processing database (dpsql.engines.postprocess), each with its
own connection: one session's noisy table is never visible to another's SQL, and the
database still refuses files and setting changes."""
import duckdb
import numpy as np
import pytest

from dpsql.engines.postprocess import PostProcessor


def test_a_sessions_noisy_table_is_not_visible_to_another_session():
    first, second, third = PostProcessor(), PostProcessor(), PostProcessor()
    first._con.register("_noisy", {"x": np.arange(3)})
    try:
        with pytest.raises(duckdb.CatalogException):
            second._con.execute("SELECT * FROM _noisy").fetchall()
        assert third.run("SELECT SUM(x) AS s FROM _noisy", {"x": np.array([5, 6])})["s"][0] == 11
        assert first._con.execute("SELECT SUM(x) FROM _noisy").fetchall() == [(3,)]
    finally:
        first._con.unregister("_noisy")


def test_the_shared_database_refuses_files_and_setting_changes(tmp_path):
    con = PostProcessor()._con
    with pytest.raises(duckdb.Error):
        con.execute(f"COPY (SELECT 1) TO '{tmp_path / 'x.csv'}'")
    with pytest.raises(duckdb.Error):
        con.execute("SET enable_external_access = true")
