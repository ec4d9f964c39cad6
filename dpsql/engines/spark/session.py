"""Spark sessions dpsql starts itself: one command's (``dpsql query --engine spark``) and a
server's (``dpsql serve`` with ``spark:``).

Owns: starting (or joining) a quiet Spark session with a temporary warehouse, the settings
a local driver starts faster with, and a server's one binding shared by every analyst, so
that the command and server layers never import pyspark themselves (engines/registry.py).
"""
from __future__ import annotations

import warnings

from ...errors import OperationalError


class SparkMissing(ImportError):
    """pyspark is not installed."""


LOCAL = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"}
"""On this machine (``local``), unless the user set them: no web UI (a server's would show
every analyst's SQL and the data's paths on port 4040), and few shuffle partitions (200
empty tasks per shuffle took longer than the rows of a small table)."""
SHORT_DRIVER = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
"""A command's driver lives for one query: the JIT's first tier and the serial collector
start faster (a server's driver is long-lived and keeps the JVM's defaults)."""


def command_session(master: str | None):
    """A Spark session for one command (local[*] unless a master is given), quiet."""
    master = master or "local[*]"
    return _start(master, _defaults(master, {}, short=True))


def server_session(master: str, conf: dict) -> tuple:
    """(the session, whether it was started here) for a server: ``conf`` (the deployment's
    Spark properties) over dpsql's defaults. A process that already runs a SparkContext
    (a notebook, a test) joins it, and keeps it when the server stops."""
    try:
        from pyspark import SparkContext
    except ImportError:
        raise SparkMissing("pyspark") from None
    running = SparkContext._active_spark_context is not None
    return _start(master, {**_defaults(master, conf, short=False), **conf}), not running


RETAINED = {"spark.sql.ui.retainedExecutions": "20", "spark.ui.retainedJobs": "100",
            "spark.ui.retainedStages": "100", "spark.sql.maxPlanStringLength": "65536"}
"""What a long-lived driver keeps of past statements, unless the user set it: Spark's status
store keeps every one of the last 1,000 statements' plan descriptions and metrics even
without a web UI (0.6-0.7 MB each for a 250-pair OR of dpsql's size limit; an analyst's
distinct statements filled the server's heap: docs/deployment.md), and one plan's text is cut
at 64 kB (Spark's default is 2 GB)."""


def _defaults(master: str, given: dict, short: bool) -> dict:
    out = {"spark.ui.showConsoleProgress": "false",
           "spark.sql.warehouse.dir": _temporary_warehouse(),
           **{k: v for k, v in RETAINED.items() if k not in {**_user_defaults(), **given}}}
    if master.startswith("local"):
        mine = {**LOCAL, **(SHORT_DRIVER if short else {})}
        user = {**_user_defaults(), **given}
        out.update({k: v for k, v in mine.items() if k not in user})
    return out


def _user_defaults() -> dict:
    """The properties the user set for every Spark application: spark-defaults.conf (in
    SPARK_CONF_DIR, or SPARK_HOME/conf) and ``--conf k=v`` in PYSPARK_SUBMIT_ARGS."""
    import os
    import shlex
    found = {}
    conf_dir = os.environ.get("SPARK_CONF_DIR") or os.path.join(
        os.environ.get("SPARK_HOME", ""), "conf")
    try:
        with open(os.path.join(conf_dir, "spark-defaults.conf"), encoding="utf-8") as f:
            for line in f:
                parts = line.strip().split(None, 1)
                if parts and not parts[0].startswith("#"):
                    found[parts[0]] = parts[1] if len(parts) > 1 else ""
    except OSError:
        pass
    words = shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))
    for flag, value in zip(words, words[1:]):
        if flag == "--conf" and "=" in value:
            found[value.split("=", 1)[0]] = value.split("=", 1)[1]
    return found


def _start(master: str, conf: dict):
    try:
        with warnings.catch_warnings():    # pyspark's own remarks on the pandas version
            warnings.simplefilter("ignore")
            from pyspark.sql import SparkSession
    except ImportError:
        raise SparkMissing("pyspark") from None
    builder = SparkSession.builder.master(master).appName("dpsql")
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spark = builder.getOrCreate()
    except Exception as err:  # noqa: BLE001 - Java missing, a master unreachable: one line
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise OperationalError(f"cannot start Spark: {first}") from None
    spark.sparkContext.setLogLevel("FATAL")
    return spark


class SharedSpark:
    """A server's data on Spark: one session, started with the server, its tables bound
    (views registered) once; ``engine()`` is one analyst's engine over them, and ``close()``
    stops the session if the server started it."""

    def __init__(self, master: str, conf: dict, metadata, tables: dict | None) -> None:
        from .engine import SparkEngine
        self.spark, self._started = server_session(master, conf)
        try:
            self._bound = SparkEngine.from_session(self.spark, metadata, tables)
        except BaseException:
            self.close()
            raise

    def engine(self):
        return self._bound.sibling()

    def close(self) -> None:
        if self._started and self.spark is not None:
            self.spark.stop()
        self.spark = None


def _temporary_warehouse() -> str:
    """Where Spark may keep tables of its own: a temporary directory removed at exit, never
    ./spark-warehouse in the user's working directory."""
    import atexit
    import shutil
    import tempfile
    path = tempfile.mkdtemp(prefix="dpsql-spark-warehouse-")
    atexit.register(shutil.rmtree, path, True)
    return path
