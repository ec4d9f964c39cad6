"""Replays through a ledger, and the DP release table (issue 11)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pandas as pd
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
    recs = Ledger(path, create=False).records()
    assert [r.replay for r in recs] == [False, True, False]      # the replay is listed ...
    assert [r.epsilon for r in recs] == pytest.approx([1.0, 0.0, 1.0], rel=1e-6)   # ... free


def test_report_of_a_session_without_a_ledger(pums):
    r = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=1.0, delta=1e-8),
                      budget=dpsql.Budget(epsilon=3.0))
    r.execute_df(SQL)
    r.execute_df(SQL)                                 # a replay: listed, free
    r.execute_df("SELECT VARIANCE(age) AS v FROM PUMS.PUMS", privacy=dpsql.Privacy(epsilon=0.5))
    table = r.report()
    assert list(table.replay) == [False, True, False]
    assert table.epsilon.tolist() == pytest.approx([1.0, 0.0, 0.5], rel=1e-6)
    assert table.privacy_unit[0] == "row (row_privacy)" and list(table.release) == [1, 2, 3]
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
    assert not re.search(r"(?<!\\)<", markdown)                  # every < is escaped: text
    assert "\\<script\\>alert(1)\\</script\\>" in markdown
    page = r.report(format="html")
    assert "<script" not in page.lower() and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<svg" in page and ">budget<" in page and "epsilon 4<" in page
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
    assert [r["release"] for r in doc["releases"]] == [1, 2]


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
_UNESCAPED_MARKUP = re.compile(r"(?<!\\)(?:\\\\)*[`*_~\[\]<>&$]")


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
    start = next(i for i, line in enumerate(lines) if line.startswith("| release | time |"))
    header, delimiter, rows = lines[start], lines[start + 1], lines[start + 2:]
    assert delimiter == "|" + "---|" * (_separators(header) - 1)
    assert len(rows) == len(hostile)
    for row in rows:
        assert row.startswith("| ") and row.endswith(" |")
        assert _separators(row) == _separators(header), row
    # (c) No image, link, code, emphasis, entity or HTML survives unescaped, and no entity
    # is written: the text reads as it was asked.
    for row in rows:
        assert _UNESCAPED_MARKUP.findall(row) == [], row
    assert "&lt;" not in normal and "&#" not in normal and "&quot;" not in normal
    assert "!\\[t\\](http://evil.example/i.png)" in rows[0]
    assert "a\\|b\\\\\\|c ## two" in rows[1]          # '#' inside a row starts nothing
    assert "\\[a\\](javascript:x) \\<script\\>alert(1)\\</script\\>" in rows[2]


def test_markdown_cell_escapes_markup_only_and_writes_no_entity():
    from dpsql.release.report import _md_cell
    assert _md_cell('COUNT("age")') == 'COUNT("age")'                # as written: no &quot;
    assert _md_cell("it's <b> & &quot;") == "it's \\<b\\> \\& \\&quot;"   # no entity
    assert _md_cell("a\\*b") == "a\\\\\\*b"                         # \ then * each escaped once
    assert _md_cell("a\r\nb\rc\nd\u2028e\u2029f\x85g") == "a b c d e f g"
    assert _md_cell("`*_[]()!#~{}|$") == "\\`\\*\\_\\[\\]()!#\\~{}\\|\\$"
    assert _md_cell(1.5) == "1.5" and _md_cell(None) == "None"


# -- the HTML chart, the plain-language cells and replays through a ledger (issue 26) --------
def _svg(page: str):
    """The report's chart, parsed (it is well-formed XML), and its text."""
    import xml.etree.ElementTree as ET
    text = re.search(r"<svg\b.*?</svg>", page, re.S).group(0)
    return ET.fromstring(text), text


def _role(svg, role: str) -> list:
    return [e for e in svg.iter() if e.get("data-role") == role]


def _texts(svg, role: str) -> list:
    return ["".join(e.itertext()) for e in _role(svg, role)]


def test_html_chart_has_axes_ticks_numbered_markers_and_the_budget_line(pums, tmp_path):
    r = reader(pums, tmp_path / "chart.ledger", budget=dpsql.Budget(epsilon=4.0))
    hostile = "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ = '</title><script>x</script>'"
    for sql in (hostile, SQL, hostile):                  # the third is a replay
        r.execute_df(sql)
    table, page = r.report(), r.report(format="html")
    svg, text = _svg(page)
    markers = _role(svg, "marker")
    assert len(markers) == len(table) == 3
    assert [int(m.get("data-release")) for m in markers] == list(table.release) == [1, 2, 3]
    assert [m.get("data-replay") for m in markers] == ["false", "false", "true"]
    assert _texts(svg, "marker-label") == ["1", "2", "3"]
    assert _texts(svg, "xtick-label") == ["1", "2", "3"] and len(_role(svg, "xtick")) == 3
    yticks = [float(t) for t in _texts(svg, "ytick-label")]
    assert yticks[0] == 0 and yticks[-1] >= 4.0 and len(_role(svg, "ytick")) == len(yticks)
    assert len(_role(svg, "x-axis")) == len(_role(svg, "y-axis")) == 1
    assert "epsilon spent" in _texts(svg, "y-title")[0]
    # The markers sit on the axes' scale: x by release number, y by cumulative epsilon.
    cx = [float(m.get("cx")) for m in markers]
    cy = [float(m.get("cy")) for m in markers]
    xt = {t.text: float(t.get("x")) for t in _role(svg, "xtick-label")}
    assert cx == pytest.approx([xt["1"], xt["2"], xt["3"]])
    base, top = (float(t.get("y1")) for t in (_role(svg, "ytick")[0], _role(svg, "ytick")[-1]))
    spent = [1.0, 2.0, 2.0]
    assert cy == pytest.approx([base + (top - base) * v / yticks[-1] for v in spent], abs=0.2)
    (line,) = _role(svg, "budget")
    assert float(line.get("y1")) == pytest.approx(base + (top - base) * 4.0 / yticks[-1], abs=0.2)
    assert " ".join(_texts(svg, "budget-label")) == "budgetepsilon 4"
    # What came from a query is escaped (a tooltip), nothing else in the chart runs or loads.
    assert "<script" not in text and "&lt;/title&gt;&lt;script&gt;" in text
    assert not [e for e in svg.iter() if e.tag.split("}")[-1] in ("script", "image", "a",
                                                                   "foreignObject", "use")]


def test_chart_without_a_budget_has_no_budget_line_and_a_zcdp_one_counts_rho(pums):
    r = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=1.0, delta=1e-8))
    with pytest.warns(UserWarning, match="no budget"):
        r.execute_df(SQL)
    svg, _ = _svg(r.report(format="html"))
    assert _role(svg, "budget") == [] and _role(svg, "budget-label") == []
    assert len(_role(svg, "marker")) == 1
    z = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=0.2, delta=1e-8),
                      budget=dpsql.Budget(rho=0.5))
    z.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS")
    svg, _ = _svg(z.report(format="html"))
    assert "rho" in _texts(svg, "y-title")[0] and " ".join(_texts(svg, "budget-label")) == "budgetrho 0.5"
    assert len(_role(svg, "marker")) == 1 and len(_role(svg, "budget")) == 1
    empty, _ = _svg(dpsql.from_df(pums, DATA / "PUMS.yaml", budget=dpsql.Budget(epsilon=1.0))
                    .report(format="html"))
    assert _role(empty, "marker") == [] and len(_role(empty, "budget")) == 1


def _real_convert():
    import shutil
    exe = shutil.which("convert")
    if exe is None:
        return None
    version = subprocess.run([exe, "-version"], capture_output=True, text=True)
    return exe if version.returncode == 0 and "ImageMagick" in version.stdout else None


def test_the_chart_renders_to_a_png_that_is_not_blank(pums, tmp_path):
    exe = _real_convert()
    if exe is None:
        pytest.skip("ImageMagick's convert is not installed")
    r = reader(pums, tmp_path / "png.ledger", budget=dpsql.Budget(epsilon=4.0))
    r.execute_df(SQL)
    r.execute_df(SQL)
    (tmp_path / "chart.svg").write_text(_svg(r.report(format="html"))[1], encoding="utf-8")
    proc = subprocess.run([exe, str(tmp_path / "chart.svg"), str(tmp_path / "chart.png")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ppm = subprocess.run([exe, str(tmp_path / "chart.png"), "-depth", "8", "ppm:-"],
                         capture_output=True).stdout
    header = re.match(rb"P6\s+(\d+)\s+(\d+)\s+255\s", ppm)
    width, height = int(header.group(1)), int(header.group(2))
    pixels = ppm[header.end():]
    assert (width, height) == (640, 320) and len(pixels) == width * height * 3
    rgb = [tuple(pixels[i:i + 3]) for i in range(0, len(pixels), 3)]
    dark = sum(1 for p in rgb if max(p) < 128)
    blue = sum(1 for red, green, b in rgb if b > 120 and red < 80 and b - red > 60)
    assert dark > 0.01 * len(rgb)          # axes, ticks and labels were drawn
    assert blue > 100                       # the line and its markers were drawn
    assert len(set(rgb)) > 3


def test_threshold_and_quantile_accuracy_read_in_plain_words(pums, tmp_path):
    r = reader(pums, None, budget=dpsql.Budget(epsilon=10.0))
    r.execute_df("SELECT sex, COUNT(*) AS n, MEDIAN(age) AS m FROM PUMS.PUMS GROUP BY sex")
    row = r.report().iloc[0]
    assert re.fullmatch(r"groups with a noisy count \(COUNT\(\*\)\) below \d+ are withheld "
                        r"\(a group held by one person shows with probability <= 1e-08\)",
                        row.threshold), row.threshold
    assert "_s0" not in row.threshold and "_s1" not in row.statistics
    assert re.search(r"accuracy: the released value's rank is within about \d+ rows of the "
                     r"true quantile's rank \(95%\)", row.statistics), row.statistics
    assert "best cell" not in row.statistics and "#below" not in row.statistics
    # A ledger written before the plain wording reads the same way.
    old = tmp_path / "old.ledger"
    stat = {"name": "_s1", "label": "QUANTILE_CONT(age, p=1/2)", "kind": "quantile",
            "epsilon": 0.5, "bounds": {}, "mechanism": "permute_and_flip", "scale": 2.0,
            "accuracy95": "95%: rank within 15.22 rows of the best cell's "
                          "(|(1-p)#below - p#above| <= best + 15.22), plus the cell width 2 in value"}
    rec = {"kind": "release", "time": "t", "query": "q", "epsilon": 1.0, "delta": 0.0,
           "details": {"parts": [{"unit": "u", "max_ids": 1, "statistics": [stat],
                                  "threshold": {"statistic": "_s1", "tau": 9.0, "delta": 1e-9}}]}}
    old.write_text('{"dpsql_ledger": 1, "created": "t", "budget": null}\n' + json.dumps(rec) + "\n")
    text = reader(pums, old).report().statistics[0]
    assert text.endswith("accuracy: the released value's rank is within about 15 rows of the "
                         "true quantile's rank (95%), plus the cell width 2 in value"), text


def test_replays_are_the_same_rows_with_a_ledger_as_without(pums, tmp_path):
    def rows(ledger):
        r = reader(pums, ledger, budget=dpsql.Budget(epsilon=5.0))
        for sql in (SQL, "SELECT COUNT(*) AS n FROM PUMS.PUMS", SQL):
            r.execute_df(sql)
        table = r.report()
        return table[["release", "query", "replay", "epsilon", "delta", "statistics",
                      "threshold"]], r
    without, _ = rows(None)
    path = tmp_path / "replays.ledger"
    with_ledger, r = rows(path)
    pd.testing.assert_frame_equal(without, with_ledger)
    assert list(with_ledger.replay) == [False, False, True] and with_ledger.epsilon[2] == 0.0
    assert r.spent[0] == pytest.approx(2.0, rel=1e-6)            # the replay cost nothing
    # The replay is a release record costing 0: any reader of the file counts it as free.
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    (replay,) = [x for x in lines if x.get("replay")]
    assert replay["kind"] == "release" and replay["epsilon"] == replay["rho"] == 0.0
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "dpsql", "ledger", "report", str(path),
                           "--format", "json"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert [x["replay"] for x in json.loads(proc.stdout)["releases"]] == [False, False, True]


def test_markdown_report_shows_the_query_as_written_without_entities(pums):
    r = reader(pums, None, budget=dpsql.Budget(epsilon=10.0))
    r.execute_df('SELECT COUNT("age") AS n FROM PUMS.PUMS WHERE educ <> \'a&b\'')
    text = r.report(format="markdown")
    assert 'COUNT("age")' in text and "\\<\\> 'a\\&b'" in text
    assert not re.search(r"&(#\d+|#x[0-9a-f]+|[a-z]+);", text, re.I), text


def test_rho_shows_only_in_zcdp_sessions(tmp_path):
    """An epsilon session's report and ledger show no rho (it only confuses there); a zCDP
    session's show it, as their currency."""
    import json as _json
    import subprocess as _subprocess
    import sys as _sys
    frame = pd.read_csv(DATA / "PUMS.csv")
    for budget, shown in ((dpsql.Budget(epsilon=3), False), (dpsql.Budget(rho=0.5), True)):
        ledger = str(tmp_path / f"{shown}.jsonl")
        r = dpsql.from_df(frame, DATA / "PUMS.yaml", budget=budget, ledger=ledger,
                          privacy=dpsql.Privacy(epsilon=0.5))
        r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS")
        assert ("rho" in r.report().columns) == shown
        assert ("rho " in r.report(format="markdown").split("\n")[2]) == shown
        done = _subprocess.run([_sys.executable, "-m", "dpsql", "ledger", "show", ledger,
                                "--format", "json"], capture_output=True, text=True)
        doc = _json.loads(done.stdout)
        assert ("spent_rho" in doc) == shown and ("rho" in doc["releases"][0]) == shown
