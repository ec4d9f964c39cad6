"""reader.estimate_bounds and `dpsql metadata bounds` (issue 36): useful bounds on the shapes
that OpenDP, Tumult and Google test theirs on (small tables, heavy tails, scales from 1e-6 to
1e12, negative values, int and float columns), a plain refusal when the table is too small
for the epsilon, and metadata files written by one YAML parser.

Every assertion on a noisy estimate holds unless a noise draw lands far in its tail: the
thresholds leave a bin with data undetected, or add an empty one, with probability below
1e-4 per bin next to the data and 1e-9 anywhere else; the sets of accepted answers below
include one such extension on each side, so a test fails on a correct estimate with
probability below about 1e-7. The old estimate (permute-and-flip over log cells) gave
bounds such as 1e+142 on these tables; these tests fail on it.
"""
from __future__ import annotations

import math
import re
import stat

import numpy as np
import pandas as pd
import pytest
import yaml

import dpsql
from dpsql.api.bounds import NoBoundsError
from dpsql.cli import command as cli
from dpsql.mechanisms.bounds import OctaveBins, OctaveBounds
from dpsql.metadata.edit import yaml_number
from tests.paths import DATA

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")
MAX_DOUBLE = float(np.finfo(np.float64).max)


def _meta(kind: str, **table) -> dict:
    return {"": {"s": {"t": {"row_privacy": True, "x": {"type": kind}, **table}}}}


def _estimates(values, kind: str, epsilon: float, runs: int = 3, **table) -> list:
    reader = dpsql.from_df(pd.DataFrame({"x": values}), _meta(kind, **table))
    out = [reader.estimate_bounds("s.t", "x", epsilon) for _ in range(runs)]
    assert reader.spent[0] == pytest.approx(runs * epsilon) and reader.spent[1] == 0
    return out


def _cover(values, bounds) -> float:
    return float(np.mean((values >= bounds[0]) & (values <= bounds[1])))


@pytest.mark.parametrize("kind", ["int", "float"])
@pytest.mark.parametrize("epsilon", [0.5, 1.0])
def test_pums_income_and_age_get_tight_bounds(kind, epsilon):
    # The table: 1,000 rows at epsilon 0.5 to 1 gave income 1e+142 and age 1.4e+17.
    pums = pd.read_csv(DATA / "PUMS.csv")
    income, age = pums.income.to_numpy(), pums.age.to_numpy()
    for lo, hi in _estimates(income.astype(kind), kind, epsilon):
        assert -1 <= lo <= 0                      # 118 zeros: the range [0, 0]
        assert 2 ** 17 - 1 <= hi <= 2 ** 20       # the largest income is 420,500 < 2^19
        assert _cover(income, (lo, hi)) >= 0.96
        assert type(lo) is type(hi) is (int if kind == "int" else float)
    for lo, hi in _estimates(age.astype(kind), kind, epsilon):
        assert lo in (8, 16) and hi in ((127, 255) if kind == "int" else (128, 256))
        assert _cover(age, (lo, hi)) == 1.0       # ages 18 to 93


def test_tiny_huge_and_negative_scales():
    rng = np.random.default_rng(36)
    for lo, hi in _estimates(rng.uniform(0, 1e-6, 20_000), "float", 1.0):
        assert hi in (2.0 ** -19, 2.0 ** -18) and 0 < lo <= 1e-8       # was 1.6e+213
    for lo, hi in _estimates(rng.uniform(0, 1e12, 2_000), "float", 1.0):
        assert hi in (2.0 ** 40, 2.0 ** 41) and 0 <= lo <= 2.0 ** 34
    values = rng.normal(-1e6, 1e5, 2_000)
    for lo, hi in _estimates(values, "float", 1.0):
        assert lo in (-2.0 ** 21, -2.0 ** 22) and hi in (-2.0 ** 19, -2.0 ** 18)
        assert _cover(values, (lo, hi)) == 1.0
    values = np.round(rng.normal(0, 100, 1_000)).astype(np.int64)
    for lo, hi in _estimates(values, "int", 1.0):
        assert -1023 <= lo <= -127 and 127 <= hi <= 1023 and _cover(values, (lo, hi)) >= 0.99


def test_heavy_tails_and_small_tables():
    rng = np.random.default_rng(7)
    pareto = rng.pareto(1.0, 10_000) + 1.0               # P(x > t) = 1/t: no mean
    for lo, hi in _estimates(pareto, "float", 1.0):
        assert lo in (0.5, 1.0) and 2.0 ** 8 <= hi <= 2.0 ** 16 and _cover(pareto, (lo, hi)) >= 0.99
    lognormal = rng.lognormal(0.0, 2.0, 1_000)
    for lo, hi in _estimates(lognormal, "float", 1.0):
        assert 2.0 ** -12 <= lo <= 2.0 ** -3 and 2.0 ** 3 <= hi <= 2.0 ** 12
        assert _cover(lognormal, (lo, hi)) >= 0.95
    small = np.round(rng.normal(50, 10, 100)).astype(np.int64)     # 100 rows
    for lo, hi in _estimates(small, "int", 1.0):
        assert lo in (8, 16, 32) and hi in (63, 127, 255) and _cover(small, (lo, hi)) >= 0.85


def test_values_at_the_edges_of_bins_and_types_are_inside():
    # 200 copies of one value: its power of two is found, and its edges hold the value,
    # however the engine's logarithm rounds near a power of two.
    floats = [0.75, 1.0, 1023.9999999999999, 1024.0, 2.0 ** -1022, 5e-324, 2.0 ** 1023,
              -(2.0 ** 1023), -3.5]
    ints = [0, 1, 3, 2 ** 53 + 1, 2 ** 54 - 1, 2 ** 63 - 1, -(2 ** 63), -5]
    for kind, values in (("float", floats), ("int", ints)):
        for x in values:
            (lo, hi), = _estimates(np.full(200, x, dtype=np.float64 if kind == "float" else
                                           np.int64), kind, 1.0, runs=1)
            assert lo <= x <= hi, (kind, x, lo, hi)
            assert (lo, hi) == _edges(x, kind == "int") or x in (2.0 ** 1023, -(2.0 ** 1023)) \
                or abs(hi - lo) <= 4 * max(abs(lo), abs(hi), 2.0 ** -1021)


def _edges(x, integer: bool) -> tuple:
    bins = OctaveBins(integer)
    if x == 0:
        return bins.edges(bins.side)
    k = max(min(math.floor(math.log2(abs(x))), bins.emax - 1), bins.emin)
    cell = bins.side + (1 if x > 0 else -1) * (1 + k - bins.emin)
    return bins.edges(cell)


def test_a_table_too_small_for_the_epsilon_is_told_so_and_charged():
    reader = dpsql.from_df(pd.DataFrame({"x": np.arange(50.0)}), _meta("float", rows=50))
    with pytest.raises(NoBoundsError) as caught:
        reader.estimate_bounds("s.t", "x", 0.1)
    message = str(caught.value)
    assert isinstance(caught.value, dpsql.OperationalError)
    assert "too small for this epsilon" in message and "rows" in message
    assert "epsilon=0.1) was charged" in message
    # what it would take: from the metadata's rows when no range stands out (about 99% of
    # draws), or, when the noise makes one range stand out by half its threshold (about
    # 1%: the flaky failure of earlier sessions), from that range's noisy count
    assert re.search(r"would take epsilon=\d|, or epsilon=\d[.\d]* on this table", message)
    assert reader.spent == pytest.approx((0.1, 0.0))
    assert caught.value.estimate.lower is None


def test_the_contribution_bound_sets_the_noise():
    # max_ids = 3: one person moves the histogram by 3 rows, so the noise is 3 times as
    # large and so is the count a range needs; the rows beyond 3 per person are dropped.
    one = OctaveBounds.calibrate(True, 1, 1.0)
    three = OctaveBounds.calibrate(True, 3, 1.0)
    assert three.scale == pytest.approx(3 * one.scale) and three.epsilon == pytest.approx(1.0)
    assert 2.9 * one.min_count <= three.min_count <= 3.1 * one.min_count
    frame = pd.DataFrame({"pid": np.repeat(np.arange(300), 5), "x": np.tile([5, 6, 7, 100, 200], 300)})
    meta = {"": {"s": {"t": {"max_ids": 3, "pid": {"type": "int", "private_id": True},
                             "x": {"type": "int"}}}}}
    reader = dpsql.from_df(frame, meta)
    lo, hi = bounds = reader.estimate_bounds("s.t", "x", 1.0)
    # 2 and 511: the empty bin next to those found joins them with probability EXTEND
    # (1e-4) by design (it failed 1 run in thousands of this test, 2026-11-29, on 511); two
    # bins on one side take 1e-8.
    assert bounds.threshold == three.min_count and lo in (2, 4) and hi in (7, 127, 255, 511)


# ----------------------------------------------------------------- the command line

def _run_bounds(meta, csv, column: str, epsilon: str, *extra):
    return cli.main(["metadata", "bounds", "--metadata", str(meta), "--table",
                     f"PUMS.PUMS={csv}", "--column", column, "--epsilon", epsilon, *extra])


def test_bounds_write_keeps_yaml_1_1_values_comments_and_the_file_mode(tmp_path, capsys):
    # One parser (PyYAML, YAML 1.1, as SmartNoise): `yes`, `on`, `no` stay as they were
    # written and still read as booleans; comments, quoting and indentation are kept.
    text = ("# the owner's note\nPUMS:\n  PUMS:\n    PUMS:\n      row_privacy: yes   # rows\n"
            "      censor_dims: on\n      clamp_counts: no\n      sex:\n        type: string\n"
            "        values:\n            - '0'\n            - \"1\"\n"
            "      income:   # yearly, dollars\n        type: int\n        # lower:\n"
            "        # upper:\n      age:\n        type: int\n")
    meta = tmp_path / "M.yaml"
    meta.write_text(text, "utf-8")
    meta.chmod(0o644)
    assert _run_bounds(meta, DATA / "PUMS.csv", "income", "1", "--write") == 0
    out = capsys.readouterr().out
    assert "how: the edges of the lowest and highest power-of-two ranges" in out
    new = meta.read_text("utf-8")
    column = yaml.safe_load(new)["PUMS"]["PUMS"]["PUMS"]["income"]
    lines = [line for line in text.splitlines() if "# lower:" not in line and "# upper:" not in line]
    index = lines.index("        type: int", lines.index("      income:   # yearly, dollars"))
    lines[index + 1:index + 1] = [f"        lower: {column['lower']}", f"        upper: {column['upper']}"]
    assert new == "\n".join(lines) + "\n"          # nothing else changed, byte for byte
    table = dpsql.Metadata.load(str(meta)).find_table("PUMS.PUMS")
    assert table.row_privacy is True and table.censor_dims is True and table.clamp_counts is False
    assert stat.S_IMODE(meta.stat().st_mode) == 0o644


def test_bounds_are_not_written_when_the_estimate_cannot_support_them(tmp_path, capsys):
    meta = tmp_path / "M.yaml"
    meta.write_text("PUMS:\n  PUMS:\n    PUMS:\n      row_privacy: true\n      x:\n"
                    "        type: float\n", "utf-8")
    before = meta.read_text("utf-8")
    small = tmp_path / "small.csv"
    small.write_text("x\n" + "".join(f"{i}.5\n" for i in range(40)))
    assert _run_bounds(meta, small, "x", "0.1", "--write") == 6
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "too small for this epsilon" in err and "was charged" in err
    edge = tmp_path / "edge.csv"
    edge.write_text("x\n" + "inf\n" * 300 + "1.0\n" * 300)
    assert _run_bounds(meta, edge, "x", "1", "--write") == 4
    captured = capsys.readouterr()
    assert f"upper {MAX_DOUBLE!r}" in captured.out and "not written" in captured.err
    assert meta.read_text("utf-8") == before


def test_bounds_are_written_as_numbers_pyyaml_reads_back():
    # PyYAML (YAML 1.1) reads 1e-06 and 1.0e6 as strings: a float needs a dot and a sign.
    for value in (0.0, -0.0, 1e-06, 5.5e-07, 1e16, 524288.0, -(2.0 ** 1022), 2.0 ** -1021, 0.1,
                  -3, 0, 2 ** 63 - 1, -(2 ** 63)):
        text = yaml_number(value)
        assert yaml.safe_load(f"x: {text}")["x"] == value and type(yaml.safe_load(
            f"x: {text}")["x"]) is type(value), text
