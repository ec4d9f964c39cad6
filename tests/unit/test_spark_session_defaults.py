"""The settings of the Spark sessions dpsql starts itself (a command's, a server's): what a
long-lived driver keeps of past statements is bounded unless the owner set it."""
from dpsql.engines.spark.session import RETAINED, _defaults


def test_a_server_and_a_command_keep_few_past_statements():
    for short in (False, True):
        conf = _defaults("local[2]", {}, short=short)
        assert {k: conf[k] for k in RETAINED} == RETAINED
        assert int(conf["spark.sql.ui.retainedExecutions"]) <= 20
    assert _defaults("spark://h:7077", {}, short=False)["spark.ui.retainedJobs"] == "100"


def test_the_owners_own_setting_wins():
    conf = _defaults("local[2]", {"spark.sql.ui.retainedExecutions": "500"}, short=False)
    assert "spark.sql.ui.retainedExecutions" not in conf    # the owner's is applied after
    assert conf["spark.ui.retainedStages"] == "100"


def test_a_local_driver_is_fenced():
    """Review 43, F2: the driver's RPC and block manager served the private rows' blocks to
    anyone who reached the machine's address. On a local master: loopback only, a secret
    drawn per session, encryption, and scratch files in a directory of this user's only."""
    import os
    import stat
    from dpsql.engines.spark.session import _fence
    one, two = _fence("local[2]", {}), _fence("local", {})
    for conf in (one, two):
        assert conf["spark.driver.bindAddress"] == conf["spark.driver.host"] == "127.0.0.1"
        assert conf["spark.authenticate"] == conf["spark.network.crypto.enabled"] == "true"
        assert stat.S_IMODE(os.stat(conf["spark.local.dir"]).st_mode) == 0o700
    assert one["spark.authenticate.secret"] != two["spark.authenticate.secret"]
    assert len(one["spark.authenticate.secret"]) >= 64
    assert _fence("spark://h:7077", {}) == {} and _fence("local-cluster[2,1,1024]", {}) == {}
    owners = _fence("local[2]", {"spark.authenticate": "true", "spark.local.dir": "/data/x"})
    assert "spark.authenticate.secret" not in owners and "spark.local.dir" not in owners


def test_a_server_on_a_cluster_without_authentication_is_refused():
    import pytest
    from dpsql.errors import OperationalError
    from dpsql.engines.spark.session import check_fenced
    for master, conf in [("spark://h:7077", {}), ("yarn", {"spark.authenticate": "false"}),
                         ("local[2]", {"spark.authenticate": "false"})]:
        with pytest.raises(OperationalError, match="spark.authenticate"):
            check_fenced(master, conf)
    check_fenced("spark://h:7077", {"spark.authenticate": "true"})
