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


LOOPBACK = "127.0.0.1"


def command_session(master: str | None):
    """A Spark session for one command (local[*] unless a master is given), quiet."""
    master = master or "local[*]"
    return _start(master, {**_defaults(master, {}, short=True), **_fence(master, {})})


def server_session(master: str, conf: dict) -> tuple:
    """(the session, whether it was started here) for a server: ``conf`` (the deployment's
    Spark properties) over dpsql's defaults. A process that already runs a SparkContext
    (a notebook, a test) joins it, and keeps it when the server stops."""
    try:
        from pyspark import SparkContext
    except ImportError:
        raise SparkMissing("pyspark") from None
    running = SparkContext._active_spark_context is not None
    fenced = {**_defaults(master, conf, short=False), **_fence(master, conf), **conf}
    if not running:
        check_fenced(master, {**_user_defaults(), **fenced})
    return _start(master, fenced), not running


def _local(master: str) -> bool:
    """All of Spark in this process (not ``local-cluster``, whose executors are JVMs of
    their own)."""
    return master == "local" or master.startswith("local[")


def _fence(master: str, given: dict) -> dict:
    """On a local master, unless the user set them: the driver's ports on loopback only,
    every connection to them authenticated with a secret drawn now and encrypted, and
    Spark's scratch files (shuffles, spilled blocks) in a directory of this user's only.
    Review 43, F2: the driver's RPC and block manager listened on the machine's external
    address without authentication and served the blocks of broadcast joins and shuffles
    (the private rows' ids and values, exact) to anyone who reached the port; the shuffle
    files sat in a /tmp directory every local user could read."""
    if not _local(master):
        return {}
    import secrets
    user = {**_user_defaults(), **given}
    mine = {"spark.driver.bindAddress": LOOPBACK, "spark.driver.host": LOOPBACK,
            "spark.authenticate": "true", "spark.authenticate.secret": secrets.token_hex,
            "spark.network.crypto.enabled": "true", "spark.local.dir": _private_directory}
    if "spark.authenticate" in user:
        mine.pop("spark.authenticate.secret")
    return {k: v() if callable(v) else v for k, v in mine.items() if k not in user}


def check_fenced(master: str, conf: dict) -> None:
    """A server's Spark must authenticate whoever connects to its driver and executors:
    they serve the data's blocks (broadcast joins, shuffles) to anyone who reaches their
    ports otherwise. A local master is fenced by ``_fence``; a cluster needs the owner's
    ``spark.authenticate`` with the cluster's secret."""
    if str(conf.get("spark.authenticate", "")).strip().lower() == "true":
        return
    where = "turns spark.authenticate off" if _local(master) else \
        "runs on a cluster without spark.authenticate"
    raise OperationalError(
        f"spark: this deployment {where}, so Spark's driver and "
        "block managers would serve the data's rows (broadcast and shuffle blocks) to anyone "
        "who can reach their ports; set spark.authenticate: true and the cluster's secret "
        "(spark.authenticate.secret), spark.network.crypto.enabled: true, and keep the "
        "cluster's ports out of analysts' reach (docs/deployment.md)")


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


def _private_directory() -> str:
    """A directory only this user may read (mode 0700), removed at exit."""
    import atexit
    import shutil
    import tempfile
    path = tempfile.mkdtemp(prefix="dpsql-spark-local-")
    atexit.register(shutil.rmtree, path, True)
    return path


def _temporary_warehouse() -> str:
    """Where Spark may keep tables of its own: a temporary directory removed at exit, never
    ./spark-warehouse in the user's working directory."""
    import atexit
    import shutil
    import tempfile
    path = tempfile.mkdtemp(prefix="dpsql-spark-warehouse-")
    atexit.register(shutil.rmtree, path, True)
    return path
