"""CSV intake keeps one record's damage to that record: a quoted field may not span lines.

A quoted CSV field may hold line breaks, so one person's unbalanced quote would swallow
the following lines (other people's records): one person's data would change other
people's rows, outside the neighbouring data sets that differential privacy speaks of.
Such a file is refused as a whole.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import dpsql

from tests.paths import DATA

HEADER = "age,sex,educ,race,income,married"
GOOD = ["59,1,9,1,0,1", "31,0,1,3,17000,0", "36,1,11,1,0,1", "54,1,11,1,9100,1",
        "39,0,5,3,37000,0", "34,0,9,1,0,1", "93,1,8,1,6000,1", "69,0,13,1,350000,1"]
SQL = "SELECT COUNT(*) AS n FROM PUMS.PUMS"


def write(tmp_path: Path, rows: list, name: str = "people.csv", newline: str = "\n",
          final: bool = True) -> Path:
    path = tmp_path / name
    path.write_bytes((newline.join([HEADER] + rows) + (newline if final else "")).encode("utf-8"))
    return path


def reader(path: Path):
    return dpsql.from_df(str(path), DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=50.0),
                         budget=dpsql.Budget(epsilon=1000.0))


def count(path: Path) -> int:
    return int(reader(path).execute_df(SQL)["n"].iloc[0])


def test_an_unbalanced_quote_in_one_record_refuses_the_file(tmp_path):
    rows = list(GOOD)
    rows[2] = '36,1,"11,1,0,1'                   # line 4: the quote is never closed
    path = write(tmp_path, rows)
    with pytest.raises(dpsql.DataError) as info:
        reader(path)
    text = str(info.value)
    assert str(path) in text and "quoted field spans lines" in text
    assert "unbalanced quote" in text and "line 4" in text
    assert "fix the quoting" in text and "refused as a whole" in text


def test_the_same_file_without_the_quote_loads_and_counts(tmp_path):
    assert abs(count(write(tmp_path, GOOD)) - len(GOOD)) <= 2


def test_a_quoted_field_with_a_comma_on_one_line_loads(tmp_path):
    rows = GOOD + ['40,1,"12,5",1,100,0', '"41","0","3","2","200","1"', '42,1,"a ""b"", c",1,5,0']
    r = reader(write(tmp_path, rows))
    assert abs(int(r.execute_df(SQL)["n"].iloc[0]) - len(rows)) <= 2
    n = r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ = '12,5'")["n"].iloc[0]
    assert abs(int(n) - 1) <= 2


@pytest.mark.parametrize("field", ['"9\nx"', '"9\r\nx"', '"9\rx"', '"\n"', '"9\n\nx"'])
def test_a_quoted_field_holding_a_line_break_refuses_the_file(tmp_path, field):
    rows = GOOD[:3] + [f"40,1,{field},1,100,0"] + GOOD[3:]
    with pytest.raises(dpsql.DataError, match="quoted field spans lines"):
        reader(write(tmp_path, rows))


def test_an_unbalanced_quote_closed_on_a_later_line_refuses_the_file(tmp_path):
    # The quote closes two lines later: DuckDB would make one record of three lines,
    # accepted (the income and married of other people) or dropped (too few columns).
    for rows in (GOOD[:2] + ['36,1,"11,1,0,1', "54,1,11,1,9100,1", '39,0,5",3,37000,0'] + GOOD[5:],
                 GOOD[:2] + ['36,1,"11,1,0,1', '54,1,11",1,9100'] + GOOD[5:],
                 GOOD[:7] + ['69,0,13,1,350000,"1', '"']):
        with pytest.raises(dpsql.DataError, match="quoted field spans lines"):
            reader(write(tmp_path, rows))


def test_other_damage_stays_in_its_record_and_the_file_loads(tmp_path):
    # A row with too few cells is dropped, a quote inside a field is text, blank lines are
    # skipped, a line of spaces is a bad row: each changes its own record only.
    rows = (GOOD[:2] + ["59,1,9,1"] + GOOD[2:4] + ["", "   ", '33,1,9"x,1,0,1', ""] + GOOD[4:]
            + ["", ""])
    assert abs(count(write(tmp_path, rows)) - (len(GOOD) + 1)) <= 2


@pytest.mark.parametrize("newline", ["\n", "\r\n"])      # the header row needs \n
@pytest.mark.parametrize("final", [True, False])
def test_line_endings_and_a_last_line_without_one_load(tmp_path, newline, final):
    assert abs(count(write(tmp_path, GOOD, newline=newline, final=final)) - len(GOOD)) <= 2


def test_the_bundled_pums_csv_loads():
    assert abs(count(DATA / "PUMS.csv") - 1000) <= 5


def test_line_counting_across_chunk_boundaries(tmp_path):
    from dpsql.engines.duckdb.engine import _count_lines
    text = b"h,a\r\n1,2\r\n\r\n\n3,4\r5,6\n\r\r\n  \n7,8"
    path = tmp_path / "chunks.csv"
    path.write_bytes(text)
    for chunk in (1, 2, 3, 5, 1 << 20):
        assert _count_lines(path, chunk) == 6      # h,a 1,2 3,4 5,6 (spaces) 7,8


def test_one_persons_cell_of_40_mb_reads_as_null_and_the_file_loads(tmp_path):
    """Review 44, F4: a line longer than DuckDB's default line size (a few MB) was dropped,
    and the line count then refused the whole file as an 'unbalanced quote': one person's
    value decided whether every statement failed. Now the cell reads, and as it is longer
    than max_length it is NULL."""
    long_row = "45,1," + "9" * (40 << 20) + ",1,100,1"
    path = write(tmp_path, GOOD + [long_row])
    large = dpsql.Privacy(epsilon=500.0)       # within the reader's budget: noise of 0.01
    got = reader(path).execute_df("SELECT COUNT(*) AS n, COUNT(educ) AS e FROM PUMS.PUMS",
                                  privacy=large)
    assert round(got["n"].iloc[0]) == len(GOOD) + 1 and round(got["e"].iloc[0]) == len(GOOD)
