"""Replays through a ledger, and the DP release table (issue 11)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

import dpsql
from dpsql.errors import LedgerError
from dpsql.privacy.ledger import Ledger

from tests.paths import DATA, ROOT

SQL = "SELECT sex, COUNT(*) AS n, AVG(income) AS a, MEDIAN(age) AS m FROM PUMS.PUMS GROUP BY sex"


def reader(pums, ledger, metadata=DATA / "PUMS.yaml", **kw):
    return dpsql.from_df(pums, metadata, privacy=dpsql.Privacy(epsilon=1.0, delta=1e-8),
                         ledger=ledger, **kw)


def test_a_second_reader_on_the_ledger_replays_for_free(pums, tmp_path):
    path = tmp_path / "s.ledger"
    first = reader(pums, path, budget=dpsql.Budget(epsilon=10.0))
    released = first.execute_df(SQL)
    spent = first.spent
    second = reader(pums, path)                       # another session, same ledger
    assert second.execute_df(SQL).equals(released) and second.spent == spent
    # With intervals too: the same noisy statistics, post-processed again, free.
    with_ci = second.execute_with_accuracy_df(SQL)
    assert with_ci[["sex", "n", "a", "m"]].equals(released) and second.spent == spent
    # A changed parameter, privacy or metadata is another release, and is paid for.
    second.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > ?", params=[40])
    after = second.spent[0]
    second.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > ?", params=[41])
    assert second.spent[0] == pytest.approx(after + 1.0, rel=1e-6)
    second.execute_df(SQL, privacy=dpsql.Privacy(epsilon=0.5, delta=1e-8))
    assert second.spent[0] == pytest.approx(after + 1.5, rel=1e-6)
    meta = yaml.safe_load((DATA / "PUMS.yaml").read_text())
    meta["PUMS"]["PUMS"]["PUMS"]["income"]["upper"] = 400000
    third = reader(pums, path, metadata=meta)
    third.execute_df(SQL)
    assert third.spent[0] == pytest.approx(after + 2.5, rel=1e-6)
    fresh = reader(pums, path).execute_df(SQL, replay=False)
    assert not fresh.equals(released)
    assert Ledger(path, create=False).spent()[0] == pytest.approx(after + 3.5, rel=1e-6)


def test_cli_invocations_replay_through_the_ledger_and_fresh_pays(tmp_path):
    path = tmp_path / "c.ledger"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    base = [sys.executable, "-m", "dpsql", "query", "--metadata", str(DATA / "PUMS.yaml"),
            "--table", f"PUMS.PUMS={DATA / 'PUMS.csv'}", "--ledger", str(path), "--epsilon", "1",
            "--format", "json"]
    sql = "SELECT COUNT(*) AS n, AVG(age) AS a FROM PUMS.PUMS WHERE sex = '1'"
    runs = [subprocess.run(base + extra + [sql], capture_output=True, text=True, env=env)
            for extra in (["--budget", "3"], [], ["--fresh"])]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    assert runs[0].stdout == runs[1].stdout
    assert len(Ledger(path, create=False).records()) == 2        # the replay was free


def test_report_of_a_session_without_a_ledger(pums):
    r = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=1.0, delta=1e-8),
                      budget=dpsql.Budget(epsilon=3.0))
    r.execute_df(SQL)
    r.execute_df(SQL)                                 # a replay: listed, free
    r.execute_df("SELECT VARIANCE(age) AS v FROM PUMS.PUMS", privacy=dpsql.Privacy(epsilon=0.5))
    table = r.report()
    assert list(table.replay) == [False, True, False]
    assert table.epsilon.tolist() == pytest.approx([1.0, 0.0, 0.5], rel=1e-6)
    assert table.privacy_unit[0] == "row (row_privacy)" and "_s0 >= " in table.threshold[0]
    assert "permute_and_flip" in table.statistics[0] and "income in [0, 500000]" in table.statistics[0]
    doc = json.loads(r.report(format="json"))
    assert doc["budget"] == {"epsilon": 3.0, "delta": 1e-06}
    assert doc["remaining"]["epsilon"] == pytest.approx(1.5, rel=1e-6)
    text = r.report(format="markdown")
    assert text.startswith("# DP release table") and "Left: epsilon 1.5" in text
    with pytest.raises(dpsql.ProgrammingError, match="format"):
        r.report(format="pdf")


def test_html_report_stands_alone_and_escapes_what_the_analyst_wrote(pums, tmp_path):
    path = tmp_path / "h.ledger"
    r = reader(pums, path, budget=dpsql.Budget(epsilon=4.0))
    hostile = "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ = '<script>alert(1)</script>'"
    r.execute_df(hostile)
    r.execute_df(SQL)
    markdown = r.report(format="markdown")
    assert "<script" not in markdown.lower() and "&lt;script&gt;" in markdown
    page = r.report(format="html")
    assert "<script" not in page.lower() and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<svg" in page and "budget epsilon 4" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page and " src=" not in page
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for fmt in ("markdown", "html", "json"):
        proc = subprocess.run([sys.executable, "-m", "dpsql", "ledger", "report", "--ledger",
                               str(path), "--format", fmt], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        assert ("<script" not in proc.stdout.lower()) if fmt == "html" else True
    doc = json.loads(proc.stdout)
    assert len(doc["releases"]) == 2 and doc["details"][1]["parts"][0]["unit"] == "row (row_privacy)"


def test_old_ledgers_still_load_and_damaged_stored_releases_are_refused(pums, tmp_path):
    old = tmp_path / "old.ledger"
    old.write_text('{"dpsql_ledger": 1, "created": "2026-11-22T00:00:00+00:00", "budget": '
                   '{"epsilon": 2.0, "delta": 1e-06}}\n{"kind": "release", "time": '
                   '"2026-11-22T00:00:01+00:00", "query": "SELECT COUNT(*) FROM PUMS.PUMS", '
                   '"epsilon": 1.0, "delta": 0.0}\n')
    r = reader(pums, old)
    assert r.spent[0] == pytest.approx(1.0) and len(r.report()) == 1
    bad = tmp_path / "bad.ledger"
    bad.write_text(old.read_text() + '{"kind": "stored", "time": "t", "key": "k", "noisy": 5}\n')
    with pytest.raises(LedgerError, match="line 3"):
        Ledger(bad, create=False).spent()


_UNESCAPED_PIPE = re.compile(r"(?<!\\)(?:\\\\)*\|")


def _separators(line: str) -> int:
    """The cell separators GFM sees in a table line: pipes after an even run of backslashes."""
    return len(_UNESCAPED_PIPE.findall(line))


def test_markdown_report_cells_cannot_break_the_table_or_inject_markup(pums):
    r = reader(pums, None, budget=dpsql.Budget(epsilon=10.0))
    hostile = ["x\r# forged heading\r![t](http://evil.example/i.png)",
               "a|b\\|c\r\n## two\n### three\u2028#### four\u2029##### five\x85###### six",
               "[a](javascript:x) <script>alert(1)</script> `code` *em* _u_ ~~s~~ {x} \\",
               "\\![i](http://evil.example/j.png)"]
    sql = "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ = ?"
    for value in hostile:
        r.execute_df(sql, params=[value])
    normal = r.report(format="markdown")
    # Lines as CommonMark sees them (\r, \n, \r\n) and as anything else may (U+2028, ...).
    lines = normal.splitlines()
    assert re.split(r"\r\n|\r|\n", normal.rstrip("\n")) == lines
    # (b) The only heading is the report's own title.
    assert [line for line in lines if line.lstrip(" ").startswith("#")] == ["# DP release table"]
    # (a) A header, a delimiter row, then one row per release, each with the header's cells.
    start = next(i for i, line in enumerate(lines) if line.startswith("| time |"))
    header, delimiter, rows = lines[start], lines[start + 1], lines[start + 2:]
    assert delimiter == "|" + "---|" * (_separators(header) - 1)
    assert len(rows) == len(hostile)
    for row in rows:
        assert row.startswith("| ") and row.endswith(" |")
        assert _separators(row) == _separators(header), row
    # (c) No image, link or HTML survives unescaped.
    for text in ("![", "](", "<script", "<"):
        assert text not in normal.lower()
    assert "\\!\\[t\\]\\(http://evil.example/i.png\\)" in rows[0]
    assert "a\\|b\\\\\\|c ## two" not in rows[1] and "a\\|b\\\\\\|c \\#\\# two" in rows[1]
    assert "\\[a\\]\\(javascript:x\\) &lt;script&gt;alert\\(1\\)&lt;/script&gt;" in rows[2]


def test_markdown_cell_escaping_keeps_entities_and_escapes_backslash_first():
    from dpsql.release.report import _md_cell
    assert _md_cell("it's <b>") == "it&#x27;s &lt;b&gt;"          # entities intact, no "\#"
    assert _md_cell("a\\*b") == "a\\\\\\*b"                         # \ then * each escaped once
    assert _md_cell("a\r\nb\rc\nd\u2028e\u2029f\x85g") == "a b c d e f g"
    assert _md_cell("`*_[]()!#~{}|") == "\\`\\*\\_\\[\\]\\(\\)\\!\\#\\~\\{\\}\\|"
    assert _md_cell(1.5) == "1.5" and _md_cell(None) == "None"
