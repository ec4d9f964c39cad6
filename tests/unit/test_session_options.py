"""A session's options as a user gives them: numbers for privacy and budget, checked when
the reader is made; ``reader.remaining``; short reprs of the privacy parameters; parse errors
in SQL terms; the progress bar of ``reader.progress = True`` (tqdm.auto)."""
import pytest

import dpsql
from dpsql.frontend.parse import parse_query

from tests.paths import DATA

TABLES, META = {"PUMS.PUMS": DATA / "PUMS.csv"}, DATA / "PUMS.yaml"
COUNT = "SELECT COUNT(*) AS n FROM PUMS.PUMS"


def test_a_number_is_accepted_as_budget_and_privacy_epsilon():
    reader = dpsql.from_df(TABLES, META, privacy=0.5, budget=2.0)
    assert reader.privacy == dpsql.Privacy(epsilon=0.5)
    assert reader.accountant.budget == dpsql.Budget(epsilon=2.0)
    assert reader.remaining == (2.0, 1e-6)
    reader.execute_df(COUNT)
    assert reader.remaining == pytest.approx((1.5, 1e-6))


@pytest.mark.parametrize("option, value, words", [
    ("privacy", "1", "privacy= takes a dpsql.Privacy"), ("privacy", -1, "epsilon must be"),
    ("privacy", True, "privacy= takes"), ("budget", "2", "budget= takes a dpsql.Budget"),
    ("budget", 0, "epsilon must be"), ("budget", [2.0], "budget= takes")])
def test_a_wrong_privacy_or_budget_is_refused_when_the_reader_is_made(option, value, words):
    with pytest.raises(dpsql.ProgrammingError, match=words.replace("(", r"\(")):
        dpsql.from_df(TABLES, META, **{option: value})


def test_remaining_is_none_without_a_budget_and_in_rho_for_a_zcdp_one(tmp_path):
    assert dpsql.from_df(TABLES, META).remaining is None
    zcdp = dpsql.from_df(TABLES, META, budget=dpsql.Budget(rho=0.5, delta=1e-6))
    assert zcdp.remaining == (0.5, 5e-7)          # rho, and delta left for thresholds
    zcdp.execute_df(COUNT, privacy=dpsql.Privacy(rho=0.125))
    assert zcdp.remaining == pytest.approx((0.375, 5e-7))


def test_remaining_is_the_tighter_of_a_budget_object_and_a_ledger(tmp_path):
    from dpsql.privacy.ledger import Ledger
    ledger = Ledger(str(tmp_path / "l.ledger"), dpsql.Budget(epsilon=2.0))
    first = dpsql.from_df(TABLES, META, ledger=ledger)
    first.execute_df(COUNT, privacy=dpsql.Privacy(epsilon=1.0))
    other = dpsql.from_df(TABLES, META, budget=dpsql.Budget(epsilon=5.0), ledger=ledger)
    assert other.remaining == pytest.approx((1.0, 1e-6))   # the ledger's budget of 2
    small = dpsql.Budget(epsilon=1.5)
    assert dpsql.from_df(TABLES, META, budget=small, ledger=ledger).remaining == \
        pytest.approx((1.0, 1e-6))


def test_privacy_reprs_are_short_and_evaluate_back():
    assert repr(dpsql.Privacy(epsilon=1)) == "Privacy(epsilon=1, delta=1e-10)"
    assert repr(dpsql.Budget(epsilon=2.0)) == "Budget(epsilon=2.0, delta=1e-06)"
    assert repr(dpsql.Budget(rho=0.5)) == "Budget(rho=0.5, delta=1e-06)"
    mechanisms = dpsql.Mechanisms(large=50)
    mechanisms.map["count"] = "gaussian"
    custom = dpsql.Privacy(rho=0.5, mechanisms=mechanisms, split="equal")
    assert repr(custom) == ("Privacy(rho=0.5, delta=1e-10, mechanisms=Mechanisms(map={'count': "
                            "'gaussian'}, large=50), split='equal')")
    names = {name: getattr(dpsql, name) for name in ("Privacy", "Budget", "Mechanisms")}
    for value in (custom, dpsql.Privacy(epsilon=1), dpsql.Budget(rho=0.5)):
        assert eval(repr(value), names) == value


@pytest.mark.parametrize("sql, said", [
    ("SELECT COUNT(*) FROM t WHERE x > 1 AND", "column 36, near 'SELECT COUNT(*) FROM t "
                                               "WHERE x > 1 AND': AND needs a condition after it"),
    ("SELECT x FROM t WHERE", "WHERE has no condition after it"),
    ("SELECT x FROM t WHERE x =", "= needs a value after it"),
    ("SELECT COUNT(* FROM t", "column 16, near 'SELECT COUNT(* FROM': a '(' is not closed: "
                              "')' expected before 'FROM'"),
    ("SELECT x FROM", "expected a table name, found the end of the query"),
    ("SELECT x) FROM t", "')' is not expected here"),
    ("SELECT x FROM t LIMIT", "LIMIT has no number after it"),
    ("SELECT CASE WHEN x THEN 1 FROM t", "CASE has no END"),
    # eighteenth review of issue 33: sqlglot's class and argument names were shown
    ("SELECT COUNT(*) FROM t WHERE DATE_TRUNC(x) = 1", "a function call has too few arguments"),
    ("SELECT COUNT(*) FROM t WHERE STRPOS(s) = 1", "a function call has too few arguments"),
    ("SELECT COUNT(*) FROM t WHERE s LIKE 'a' ESCAPE", "ESCAPE needs a value after it")])
def test_parse_errors_are_told_in_sql_terms(sql, said):
    with pytest.raises(dpsql.QueryError) as err:
        parse_query(sql)
    text = str(err.value)
    assert said in text, text
    assert "sqlglot" not in text and "<class" not in text and "Token" not in text


def test_progress_true_draws_tqdm_autos_notebook_aware_bar(monkeypatch):
    import tqdm.auto

    from dpsql.api.display import progress_callback
    drawn = []

    class Bar:
        def __init__(self, **options):
            self.options, self.n, self.closed = options, 0, False
            drawn.append(self)

        def refresh(self):
            self.shown = self.n

        def close(self):
            self.closed = True

    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)
    show = progress_callback(True)
    show(12.5)
    show(40)
    show(None)
    [bar] = drawn
    assert bar.options["total"] == 100 and bar.options["leave"] is False
    assert bar.shown == 40 and bar.closed
    assert progress_callback(None) is None and progress_callback(False) is None
    assert progress_callback(print) is print
    with pytest.raises(dpsql.ProgrammingError, match="reader.progress takes True"):
        progress_callback("bar")
