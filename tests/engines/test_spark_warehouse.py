"""Spark keeps its own tables (``spark.sql.warehouse.dir``: Tumult's temporary tables, a
``saveAsTable``) in a temporary directory, never as ``spark-warehouse/`` in the repository or
the user's working directory."""
import os
import re
from pathlib import Path

from tests.paths import ROOT


def _local(uri: str) -> Path:
    """A local path from Spark's spelling of it (``file:/x``, ``file:///x`` or ``/x``)."""
    return Path(re.sub(r"^file:(//)?", "", uri))


def test_the_test_sessions_warehouse_is_a_temporary_directory(spark):
    where = _local(spark.conf.get("spark.sql.warehouse.dir")).resolve()
    assert ROOT.resolve() not in where.parents and where != ROOT.resolve(), where
    assert Path(os.getcwd()).resolve() not in where.parents, where
    spark.range(3).write.mode("overwrite").saveAsTable("dpsql_warehouse_probe")
    try:
        assert (where / "dpsql_warehouse_probe").is_dir()
        assert not (ROOT / "spark-warehouse" / "dpsql_warehouse_probe").exists()
    finally:
        spark.sql("DROP TABLE IF EXISTS dpsql_warehouse_probe")


def test_the_commands_spark_session_uses_a_temporary_warehouse():
    from dpsql.engines.spark.session import _temporary_warehouse
    where = Path(_temporary_warehouse()).resolve()
    assert where.is_dir() and ROOT.resolve() not in where.parents
