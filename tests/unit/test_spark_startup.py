"""The settings dpsql gives a Spark driver it starts itself (dpsql/engines/spark/session.py):
a command's local driver starts lean, unless the user set the same properties."""
from dpsql.engines.spark import session


def test_a_local_command_gets_the_lean_settings(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    conf = session._defaults("local[*]", {}, short=True)
    assert conf["spark.ui.enabled"] == "false" and conf["spark.sql.shuffle.partitions"] == "4"
    assert "TieredStopAtLevel=1" in conf["spark.driver.extraJavaOptions"]
    server = session._defaults("local[2]", {}, short=False)       # a long-lived driver
    assert "spark.driver.extraJavaOptions" not in server and server["spark.ui.enabled"] == "false"
    cluster = session._defaults("spark://head:7077", {}, short=True)
    assert not set(cluster) & {"spark.ui.enabled", "spark.sql.shuffle.partitions",
                               "spark.driver.extraJavaOptions"}


def test_what_the_user_set_is_kept(monkeypatch, tmp_path):
    (tmp_path / "spark-defaults.conf").write_text(
        "# mine\nspark.sql.shuffle.partitions   16\nspark.ui.enabled true\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS",
                       "--conf spark.driver.extraJavaOptions=-Xss4m pyspark-shell")
    conf = session._defaults("local[2]", {}, short=True)
    assert not set(conf) & {"spark.ui.enabled", "spark.sql.shuffle.partitions",
                            "spark.driver.extraJavaOptions"}
    given = session._defaults("local[2]", {"spark.sql.shuffle.partitions": "8"}, short=False)
    assert "spark.sql.shuffle.partitions" not in given       # the deployment's conf: wins
