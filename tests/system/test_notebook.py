"""How sessions and their texts show in a terminal and a notebook (dpsql.api.display).

explain() and report(format="html") stay ``str`` (equal to the same text) and gain the
``_repr_*_`` methods a notebook calls; readers and connections show their tables, privacy,
budget, spending and ledger, and never a data value.
"""
import html
import warnings

import pandas as pd
import pytest

import dpsql

from tests.paths import DATA

PUMS_CSV, PUMS_META = str(DATA / "PUMS.csv"), str(DATA / "PUMS.yaml")
COUNT = "SELECT COUNT(*) AS n FROM PUMS.PUMS"


def test_explain_is_text_a_notebook_shows_preformatted():
    reader = dpsql.from_df(pd.read_csv(PUMS_CSV), PUMS_META, budget=dpsql.Budget(1.0))
    sql = "SELECT sex, COUNT(*) AS n FROM PUMS.PUMS WHERE educ <> '<b>' GROUP BY sex"
    text = reader.explain(sql)
    assert isinstance(text, str) and text == str.__str__(text) and "cost: epsilon=1" in text
    page = text._repr_html_()
    assert page == f"<pre>{html.escape(str.__str__(text))}</pre>" and "<b>" not in page
    markdown = text._repr_markdown_()
    assert markdown.startswith("```text\n") and markdown.endswith("\n```\n")
    assert str.__str__(text) in markdown
    union = reader.explain(f"{COUNT} UNION ALL {COUNT}")
    assert union.startswith("UNION ALL of 2 queries") and hasattr(union, "_repr_markdown_")


def test_markdown_fence_is_longer_than_any_backtick_run_in_the_text():
    from dpsql.api.display import Text
    shown = Text("a ```` b")._repr_markdown_()
    assert shown.startswith("`````text\n") and shown.endswith("\n`````\n")


def test_html_report_renders_in_a_sandboxed_frame():
    reader = dpsql.from_df(pd.read_csv(PUMS_CSV), PUMS_META, budget=dpsql.Budget(2.0))
    reader.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ <> '<i>'")
    page = reader.report(format="html")
    assert isinstance(page, str) and page.startswith("<!DOCTYPE html>")
    shown = page._repr_html_()
    assert shown.startswith('<iframe sandbox="" srcdoc="') and "<style>" not in shown
    assert html.unescape(shown.split('srcdoc="', 1)[1].split('" style=', 1)[0]) == page
    markdown = reader.report(format="markdown")
    assert type(markdown) is str                      # unchanged for the other formats


def test_reader_and_connection_reprs_show_the_session_not_the_data(tmp_path):
    ledger = tmp_path / "s.ledger"
    con = dpsql.connect(metadata=PUMS_META, tables={"PUMS.PUMS": PUMS_CSV},
                        privacy=dpsql.Privacy(epsilon=0.5), budget=dpsql.Budget(epsilon=2.0),
                        ledger=str(ledger))
    session = ("tables: PUMS.PUMS; privacy per query: epsilon=0.5, delta=1e-10; budget: "
               "epsilon=2, delta=1e-06; spent: epsilon={spent}, delta=0; ledger: " + str(ledger))
    assert repr(con) == f"<dpsql.Connection {session.format(spent=0)}>"
    n = con.cursor().execute("SELECT SUM(income) AS s FROM PUMS.PUMS").fetchone()[0]
    assert repr(con) == f"<dpsql.Connection {session.format(spent=0.5)}>"
    assert repr(con.reader) == f"<dpsql.Reader {session.format(spent=0.5)}>"
    assert str(n) not in repr(con) and str(int(n)) not in con._repr_html_()
    shown = con.reader._repr_html_()
    assert "<th" in shown and "epsilon=0.5, delta=1e-10" in shown and str(ledger) in shown
    con.close()
    assert repr(con) == "<dpsql.Connection closed>"


def test_repr_of_a_session_without_budget_and_with_rho():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader = dpsql.from_df(pd.read_csv(PUMS_CSV), PUMS_META,
                               privacy=dpsql.Privacy(rho=0.125))
    assert repr(reader) == ("<dpsql.Reader tables: PUMS.PUMS; privacy per query: rho=0.125, "
                            "delta=1e-10; budget: none (spending tracked, not limited); "
                            "spent: epsilon=0, delta=0>")


@pytest.mark.parametrize("make", ["reader", "connection"])
def test_a_repr_does_not_raise_when_the_ledger_cannot_be_read(tmp_path, make):
    ledger = tmp_path / "s.ledger"
    con = dpsql.connect(metadata=PUMS_META, tables={"PUMS.PUMS": PUMS_CSV},
                        budget=dpsql.Budget(epsilon=2.0), ledger=str(ledger))
    ledger.unlink()
    shown = repr(con.reader if make == "reader" else con)
    assert "spent: unavailable (" in shown and str(ledger) in shown
    con.close()
