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
