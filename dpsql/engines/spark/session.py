"""A Spark session for one command: the ``dpsql`` command's ``--engine spark``.

Owns: starting (or joining) a quiet Spark session with a temporary warehouse, so that
the command layer never imports pyspark itself (engines/registry.py).
"""
from __future__ import annotations

import warnings

from ...errors import OperationalError


class SparkMissing(ImportError):
    """pyspark is not installed."""


def command_session(master: str | None):
    """A Spark session for one command (local[*] unless a master is given), quiet."""
    try:
        with warnings.catch_warnings():    # pyspark's own remarks on the pandas version
            warnings.simplefilter("ignore")
            from pyspark.sql import SparkSession
    except ImportError:
        raise SparkMissing("pyspark") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spark = (SparkSession.builder.master(master or "local[*]").appName("dpsql")
                     .config("spark.ui.showConsoleProgress", "false")
                     .config("spark.sql.warehouse.dir", _temporary_warehouse())
                     .getOrCreate())
    except Exception as err:  # noqa: BLE001 - Java missing, a master unreachable: one line
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise OperationalError(f"cannot start Spark: {first}") from None
    spark.sparkContext.setLogLevel("FATAL")
    return spark


def _temporary_warehouse() -> str:
    """Where Spark may keep tables of its own: a temporary directory removed at exit, never
    ./spark-warehouse in the user's working directory."""
    import atexit
    import shutil
    import tempfile
    path = tempfile.mkdtemp(prefix="dpsql-spark-warehouse-")
    atexit.register(shutil.rmtree, path, True)
    return path
