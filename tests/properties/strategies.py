"""Hypothesis strategies for tests/properties/test_properties.py: random metadata, random data
stored in every storage type, bound in every way dpsql binds data, and queries drawn
from the whole grammar dpsql accepts (plus constructs it must refuse).

A ``Scenario`` is one table: its metadata (a SmartNoise-shaped dict), the columns'
storage types, a pandas DataFrame holding the data as stored, and how the data is
bound (``from_df`` on the DataFrame, a CSV file, a Parquet file, or a table in a
DuckDB connection given to ``from_connection``). ``queries(scenario)`` draws SQL
text (and ``?`` parameters) over that table.

Everything is drawn with ``draw`` calls whose simplest choice comes first, so that
Hypothesis shrinks a failure towards a short query over a few rows.
"""
from __future__ import annotations

import datetime as dt
import decimal
import os
import string
from dataclasses import dataclass, field

import duckdb
import numpy as np
import pandas as pd
from hypothesis import reject
from hypothesis import strategies as st

import dpsql

try:  # pandas writes Parquet only through pyarrow; without it DuckDB writes the file
    import pyarrow  # noqa: F401
    HAVE_PYARROW = True
except ImportError:
    HAVE_PYARROW = False

TYPES = ("int", "float", "string", "boolean", "datetime")

# Column names: plain ones, mixed case, and two that must be quoted in SQL.
COLUMN_NAMES = ("x", "age", "Income", "sex", "score", "flag", "ts", "name", "city", "amount",
                "Weight", "code", "zip", "v1", "my col", "order")
NEEDS_QUOTES = {"my col", "order"}

INT_EXTREMES = (0, 1, -1, 2, 7, 100, -100, 2 ** 31 - 1, -2 ** 31, 2 ** 31, 2 ** 53, 2 ** 53 + 1,
                2 ** 62, -2 ** 62, 2 ** 63 - 1, -2 ** 63)
FLOAT_EXTREMES = (0.0, -0.0, 1.0, -1.0, 0.5, 2.0 ** 53, 1e300, -1e300, 1e-300, 5e-324,
                  1.7976931348623157e308, -1.7976931348623157e308, float("nan"), float("inf"),
                  float("-inf"), 3.0, 1e15, 123.456)
STRINGS = ("a", "b", "", "A", "abc", " a", "a ", "é", "日本語", "🙂", "'", "''", '"', "%", "_",
           "a%b", "a_b", "50%", "\\", "\\%", "1", "01", "1.0", "-3", "1e3", "NaN", "inf", "true",
           "FALSE", "t", "yes", "2020-01-01", "2020-01-01 12:00:00", "2020-13-45", "NULL",
           "null", " ", "\t", "line\nbreak", "x" * 40, "O'Brien", "a;b", "--", "/*")
DATETIMES = ("2020-01-01 00:00:00", "2020-02-29 12:34:56.789", "1970-01-01 00:00:00",
             "1999-12-31 23:59:59.999999", "1900-01-01 00:00:00", "2100-06-15 08:00:00",
             "1677-09-22 00:00:00", "2262-04-11 00:00:00")
BAD_DATETIME_TEXT = ("not a date", "", "2020-02-30", "2020-13-01", "0001-01-01",
                     "9999-12-31 23:59:59", "infinity", "-infinity", "2020-01-01T05:06:07",
                     "2020-01-01 00:00:00+02", "1e3", "epoch", "20200101", "  2020-01-01 ")
JUNK = ("abc", "", " 7 ", "3.0", "1e3", "0x10", "１２", "NaN", "inf", "-0", "9" * 25, "true",
        "2020-01-01", None)

INT_STORAGES = ("int64", "int8", "int16", "int32", "uint8", "uint64", "float64", "object",
                "Int64", "str", "objmix")
FLOAT_STORAGES = ("float64", "float32", "int64", "object", "str", "objmix")
STRING_STORAGES = ("object", "str", "int64", "float64", "objmix")
BOOLEAN_STORAGES = ("bool", "object", "int64", "boolean", "objmix")
DATETIME_STORAGES = ("datetime64[ns]", "object-str", "object-date", "datetime64[us]", "str")
STORAGES = {"int": INT_STORAGES, "float": FLOAT_STORAGES, "string": STRING_STORAGES,
            "boolean": BOOLEAN_STORAGES, "datetime": DATETIME_STORAGES}
BINDINGS = ("df", "csv", "parquet", "connection")

# Storage types or bindings left out (comma-separated), to hunt for further findings
# once one is known, e.g. DPSQL_HYPOTHESIS_EXCLUDE=objmix,parquet.
EXCLUDE = {s for s in os.environ.get("DPSQL_HYPOTHESIS_EXCLUDE", "").split(",") if s}


def flag(draw, p: float) -> bool:
    """True with probability p (to 1%); shrinks to False. (A bounded st.integers is
    not uniform: Hypothesis favours small values; sampled_from is uniform.)"""
    return draw(st.sampled_from(range(100))) >= 100 - round(p * 100)


def pick(draw, options):
    """One of ``options``; shrinks to the first."""
    return draw(st.sampled_from(list(options)))


# ------------------------------------------------------------------ scenario

@dataclass
class Col:
    name: str
    type: str
    storage: str
    private_id: bool = False
    lower: object = None
    upper: object = None
    values: list | None = None
    nullable: bool | None = None
    missing_value: object = None
    cardinality: int | None = None
    sensitivity: float | None = None

    def to_meta(self) -> dict:
        out = {"type": self.type}
        for key in ("private_id", "lower", "upper", "values", "nullable", "missing_value",
                    "cardinality", "sensitivity"):
            value = getattr(self, key)
            if value is not None and value is not False:
                out[key] = list(value) if key == "values" else value
        if self.nullable is False:
            out["nullable"] = False
        return out


@dataclass
class Scenario:
    schema: str
    table: str
    columns: list
    row_privacy: bool
    max_ids: int
    censor_dims: bool
    binding: str
    frame: pd.DataFrame
    extra_table_keys: dict = field(default_factory=dict)
    repeat: int = 1           # the frame is its first len/repeat rows, repeated
    twin: bool = False        # a second table, TABLE_twin: the same rows and columns, the
                              # other censor_dims (keys mixing both must be thresholded)
    gaussian: bool = False    # counts and thresholds with Gaussian noise (a person count
                              # then decides a user-level threshold)
    refs: dict | None = None  # two tables reaching the person through references:
                              # TABLE_orders (okey, owner -> TABLE.pid) and TABLE_items
                              # (okey -> TABLE_orders.okey, w): {"orders": frame, "items": frame}

    @property
    def twin_name(self) -> str:
        return f"{self.table}_twin"

    def full_name(self, table: str) -> str:
        return f"{self.schema}.{table}" if self.schema else table

    @property
    def pid(self) -> Col | None:
        return next((c for c in self.columns if c.private_id), None)

    @property
    def metadata(self) -> dict:
        table = dict(self.extra_table_keys)
        if self.row_privacy:
            table["row_privacy"] = True
        else:
            table["max_ids"] = self.max_ids
        table["censor_dims"] = self.censor_dims
        for col in self.columns:
            table[col.name] = col.to_meta()
        tables = {self.table: table}
        if self.twin:
            tables[self.twin_name] = dict(table, censor_dims=not self.censor_dims)
        if self.refs is not None:
            tables.update(self.refs_metadata())
        return {"": {self.schema: tables}}

    def refs_metadata(self) -> dict:
        """TABLE_orders: an order's person through owner -> TABLE's private_id;
        TABLE_items: an item's order through okey -> TABLE_orders.okey."""
        orders, items = self.refs_names()
        return {
            orders: {"max_ids": 2, "okey": {"type": "int"}, "owner": {
                "type": self.pid.type, "references": f"{self.full_name(self.table)}.{self.pid.name}"}},
            items: {"max_ids": 3, "okey": {"type": "int",
                                           "references": f"{self.full_name(orders)}.okey"},
                    "w": {"type": "float", "lower": 0.0, "upper": 10.0}}}

    def refs_names(self) -> tuple:
        return f"{self.table}_orders", f"{self.table}_items"

    def sources(self, source) -> dict | object:
        """What ``from_df`` binds: the main table's ``source`` alone, or every table's."""
        if not self.twin and self.refs is None:
            return source
        out = {self.full_name(self.table): source}
        if self.twin:
            out[self.full_name(self.twin_name)] = source
        return out

    def __repr__(self) -> str:
        return "Scenario(\n" + self.describe() + ")"

    def describe(self) -> str:
        """A reproduction: metadata, storage and binding, and the rows."""
        frame = self.frame
        return "\n".join([
            f"metadata = {self.metadata!r}",
            f"binding = {self.binding!r}" + (", Gaussian counts and thresholds"
                                              if self.gaussian else ""),
            "storage = " + repr({c.name: c.storage for c in self.columns}),
            f"dtypes = {dict(frame.dtypes.astype(str))!r}",
            (f"rows ({len(frame)}) = {frame.iloc[:30].to_dict('records')!r}"
             + (" ..." if len(frame) > 30 else "") if self.repeat == 1 else
             f"rows ({len(frame)}: these {len(frame) // self.repeat}, repeated {self.repeat} "
             f"times) = {frame.iloc[:len(frame) // self.repeat].to_dict('records')!r}")])


def _int_bounds(draw):
    kind = pick(draw, ("small", "none", "extreme", "equal", "tiny", "one"))
    if kind == "none":
        return None, None
    if kind == "one":
        v = draw(st.integers(-100, 100))
        return (v, None) if flag(draw, 0.5) else (None, v)
    if kind == "small":
        lo = draw(st.integers(-100, 100))
        return lo, lo + draw(st.integers(0, 1000))
    if kind == "equal":
        v = pick(draw, INT_EXTREMES)
        return v, v
    if kind == "tiny":
        big = (2 ** 50, 2 ** 52 - 3, 10 ** 15, -10 ** 15, 2 ** 40)   # exact, yet large
        lo = pick(draw, big) if flag(draw, 0.5) else pick(draw, INT_EXTREMES[:-1])
        return lo, lo + pick(draw, (1, 2, 3))
    wide = INT_EXTREMES + (-2 ** 70, 2 ** 70, 2 ** 52, -10 ** 200, 10 ** 200)
    lo, hi = sorted([pick(draw, wide), pick(draw, wide)])
    return lo, hi


def _float_bounds(draw):
    kind = pick(draw, ("small", "none", "extreme", "equal", "int-valued"))
    if kind == "none":
        return None, None
    finite = st.floats(allow_nan=False, allow_infinity=False)
    if kind == "small":
        lo = draw(st.floats(-1000, 1000))
        return lo, lo + draw(st.floats(0, 1000))
    if kind == "equal":
        v = draw(st.sampled_from([0.0, -0.0, 1e-300, -1e300, 1e300, 2.5]) | finite)
        return v, v
    if kind == "int-valued":
        lo = float(draw(st.integers(-100, 100)))
        return lo, lo + float(draw(st.integers(0, 100)))
    mags = st.sampled_from([1e-300, 1e-30, 1e-5, 1.0, 1e5, 1e30, 1e300, 1.7976931348623157e308])
    a = draw(mags) * pick(draw, (1, -1))
    b = draw(finite) if flag(draw, 0.3) else draw(mags) * pick(draw, (1, -1))
    return min(a, b), max(a, b)


def _int_value(draw, col: Col):
    kind = pick(draw, ("range", "extreme", "null"))
    if kind == "null":
        return None
    if kind == "extreme":
        return pick(draw, INT_EXTREMES)
    lo = col.lower if col.lower is not None else -50
    hi = col.upper if col.upper is not None else 50
    lo, hi = sorted([min(max(lo, -2 ** 63), 2 ** 63 - 1), min(max(hi, -2 ** 63), 2 ** 63 - 1)])
    return draw(st.integers(lo, hi))


def _float_value(draw, col: Col):
    kind = pick(draw, ("range", "extreme", "null", "any", "integral"))
    if kind == "null":
        return None
    if kind == "extreme":
        return pick(draw, FLOAT_EXTREMES)
    if kind == "any":
        return draw(st.floats())
    if kind == "integral":
        return float(draw(st.integers(-10, 10)))
    lo = col.lower if col.lower is not None else -100.0
    hi = col.upper if col.upper is not None else 100.0
    return draw(st.floats(min_value=float(lo), max_value=float(hi), allow_nan=False))


def _datetime_value(draw):
    kind = pick(draw, ("pool", "null", "range"))
    if kind == "null":
        return None
    if kind == "pool":
        return dt.datetime.fromisoformat(pick(draw, DATETIMES))
    return draw(st.datetimes(min_value=dt.datetime(1700, 1, 1), max_value=dt.datetime(2250, 1, 1)))


def _text(v) -> str:
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ")
    return str(v)


def _store(draw, col: Col, values: list) -> pd.Series:
    """The logical values of ``col`` as stored in ``col.storage``."""
    s, kind = col.storage, col.type
    if s in ("int8", "int16", "int32", "int64", "uint8", "uint64"):
        info, out = np.iinfo(s), []
        for v in values:
            if v is None or isinstance(v, (str, dt.date)):
                v = 0
            elif isinstance(v, float):
                v = int(v) if np.isfinite(v) and abs(v) < 2 ** 63 else 0
            out.append(min(max(int(v), int(info.min)), int(info.max)))
        return pd.Series(out, dtype=s)
    if s == "Int64":
        return pd.Series(values, dtype="Int64")
    if s in ("float64", "float32"):
        return pd.Series([np.nan if v is None else float(v) for v in values], dtype=s)
    if s == "bool":
        return pd.Series([bool(v) for v in values], dtype=bool)
    if s == "boolean":
        return pd.Series(values, dtype="boolean")
    if s == "str":
        return pd.Series([None if v is None else _text(v) for v in values], dtype="str")
    if s in ("object", "object-str"):
        out = []
        for v in values:
            if v is not None and kind in ("int", "float") and flag(draw, 0.08):
                out.append(pick(draw, JUNK))
            elif v is None or kind == "boolean":
                out.append(v)
            else:
                out.append(_text(v))
        return pd.Series(out, dtype=object)
    if s == "object-date":
        return pd.Series([None if v is None else v.date() for v in values], dtype=object)
    if s in ("datetime64[ns]", "datetime64[us]"):
        return pd.Series([pd.NaT if v is None else pd.Timestamp(v) for v in values],
                         dtype="datetime64[ns]").astype(s)
    if s == "objmix":
        # Python objects of several types in one column, as pandas holds them after
        # concatenating frames: the native values plus numbers, strings and booleans.
        out = []
        for v in values:
            alt = pick(draw, ("same", "text", "int", "float", "bool", "junk"))
            if v is None or alt == "same":
                out.append(v)
            elif alt == "text":
                out.append(_text(v))
            elif alt == "int":
                out.append(draw(st.integers(-3, 3)))
            elif alt == "float":
                out.append(pick(draw, (1.5, -0.0, 2.0, float("nan"))))
            elif alt == "bool":
                out.append(pick(draw, (True, False)))
            else:
                out.append(pick(draw, JUNK))
        return pd.Series(out, dtype=object)
    raise AssertionError(s)


def _cell(draw, col: Col):
    """One logical value of ``col``, fitting its storage."""
    if col.private_id:
        if flag(draw, 0.05):
            return None
        return draw(st.integers(1, 4)) if col.type == "int" else pick(draw, ("p1", "p2", "P1", "p3", "", " p1"))
    if col.type == "int":
        return _int_value(draw, col)
    if col.type == "float":
        return _float_value(draw, col)
    if col.type == "string":
        if col.storage == "int64":
            return pick(draw, (1, 2, 0, -1, 10, 2 ** 53 + 1))
        if col.storage == "float64":
            return None if flag(draw, 0.1) else pick(draw, (1.0, 2.0, 0.0, -0.0, 1.5, 1e20,
                                                             2.0 ** 53 + 2, 1e300))
        return None if flag(draw, 0.1) else pick(draw, STRINGS)
    if col.type == "boolean":
        if col.storage == "int64":
            return pick(draw, (0, 1, 2, -1))
        if col.storage == "object":
            return pick(draw, (True, False, None, "true", "false", "T", "0", "yes", ""))
        return pick(draw, (True, False, None))
    v = _datetime_value(draw)
    if col.storage in ("object-str", "str") and v is not None and flag(draw, 0.2):
        return pick(draw, BAD_DATETIME_TEXT)
    return v


@st.composite
def scenarios(draw, max_rows: int = 12) -> Scenario:
    ncols = draw(st.integers(2, 6))
    names = draw(st.lists(st.sampled_from(COLUMN_NAMES), min_size=ncols, max_size=ncols,
                          unique_by=str.lower))
    row_privacy = not flag(draw, 0.5)
    columns = []
    for name in names:
        kind = pick(draw, TYPES)
        storage = pick(draw, [s for s in STORAGES[kind] if s not in EXCLUDE] or STORAGES[kind][:1])
        col = Col(name, kind, storage)
        if kind == "int":
            col.lower, col.upper = _int_bounds(draw)
        elif kind == "float":
            col.lower, col.upper = _float_bounds(draw)
        if kind in ("int", "string") and flag(draw, 0.25):
            pool = st.sampled_from(STRINGS) if kind == "string" else (
                st.sampled_from(INT_EXTREMES + (2 ** 70, -2 ** 64)) | st.integers(-5, 20))
            col.values = draw(st.lists(pool, min_size=1, max_size=5, unique=True))
        elif kind in ("boolean", "float", "datetime") and flag(draw, 0.05):
            pool = {"boolean": st.booleans(), "float": st.sampled_from([0.0, 1.5, -2.0, 1e300]),
                    "datetime": st.sampled_from(DATETIMES[:4])}[kind]
            col.values = draw(st.lists(pool, min_size=1, max_size=3, unique=True))
        if flag(draw, 0.05):
            col.cardinality = draw(st.integers(0, 10))
            if col.values and 0 < col.cardinality < len(col.values):
                col.cardinality = len(col.values)
        if col.lower is not None and col.upper is not None and flag(draw, 0.05):
            col.sensitivity = pick(draw, (1.0, 0.5, 1e6))
        if flag(draw, 0.3):
            col.nullable = flag(draw, 0.5)
        if kind in ("int", "string") and flag(draw, 0.05):
            col.missing_value = draw(st.integers(-5, 5)) if kind == "int" else pick(draw, STRINGS)
        columns.append(col)
    max_ids = 1
    if not row_privacy:
        kind = pick(draw, ("int", "string"))
        taken = {c.name.lower() for c in columns}
        name = pick(draw, [n for n in ("pid", "PersonID", "user") if n.lower() not in taken])
        options = INT_STORAGES if kind == "int" else ("object", "str", "objmix")
        storage = pick(draw, [s for s in options if s not in EXCLUDE] or options[:1])
        pid = Col(name, kind, storage, private_id=True)
        if flag(draw, 0.2):
            pid.nullable = flag(draw, 0.5)
        columns.insert(pick(draw, range(len(columns) + 1)), pid)
        max_ids = draw(st.integers(1, 5))
    censor_dims = not flag(draw, 0.4)
    schema = pick(draw, ("S", "", "PUMS", "My_Schema"))
    table = pick(draw, ("T", "pums", "Data"))
    binding = pick(draw, [b for b in BINDINGS if b not in EXCLUDE] or ["df"])
    extra = {}
    if flag(draw, 0.2):
        extra["clamp_counts"] = flag(draw, 0.5)
    for key in ("sample_max_ids", "clamp_columns", "use_dpsu"):
        if flag(draw, 0.05):
            extra[key] = flag(draw, 0.5)
    if flag(draw, 0.2):
        extra["rows"] = draw(st.integers(0, 10 ** 6))
    if not row_privacy and flag(draw, 0.15):
        # Group bounds: grouped queries on keys not public then threshold on a count of
        # distinct persons (dpsql/plan/threshold.py).
        extra["max_groups"] = draw(st.integers(1, 3))
        extra["max_rows_per_group"] = draw(st.integers(1, 4))
    nrows = draw(st.integers(0, max_rows))
    frame = pd.DataFrame({col.name: _store(draw, col, [_cell(draw, col) for _ in range(nrows)])
                          for col in columns})
    repeat = 1
    if nrows and flag(draw, 0.05):
        # Now and then a large table (the rows repeated): counts and sums in the thousands.
        repeat = draw(st.integers(100, 1500))
        frame = pd.concat([frame] * repeat, ignore_index=True)
    refs = None
    if not row_privacy and flag(draw, 0.25):
        refs = _refs_frames(draw, pid)
    return Scenario(schema, table, columns, row_privacy, max_ids, censor_dims, binding, frame,
                    extra, repeat, twin=flag(draw, 0.15), gaussian=flag(draw, 0.1), refs=refs)


def _refs_frames(draw, pid: Col) -> dict:
    """Orders of the persons (owners drawn like the person ids: some orders share an okey
    across persons, a broken foreign key; some have no owner) and items of those orders
    (some of an okey no order has, some weights outside [0, 10] or NULL)."""
    n_orders, n_items = draw(st.integers(0, 6)), draw(st.integers(0, 8))
    owners = [None if flag(draw, 0.1) else
              (draw(st.integers(1, 4)) if pid.type == "int" else pick(draw, ("p1", "p2", "P1", "p3")))
              for _ in range(n_orders)]
    orders = pd.DataFrame({"okey": pd.Series([draw(st.integers(1, 5)) for _ in range(n_orders)],
                                             dtype="int64"),
                           "owner": pd.Series(owners, dtype="Int64" if pid.type == "int" else object)})
    weights = [None if flag(draw, 0.1) else pick(draw, (0.5, 3.0, 9.5, 10.0, -1.0, 12.0))
               for _ in range(n_items)]
    items = pd.DataFrame({"okey": pd.Series([draw(st.integers(1, 6)) for _ in range(n_items)],
                                            dtype="int64"),
                          "w": pd.Series(weights, dtype="float64")})
    return {"orders": orders, "items": items}


# ------------------------------------------------------------------ neighbours and binding

def neighbour(draw, scn: Scenario) -> tuple:
    """(positions of the rows kept: all but one random row, or all but one random
    person's rows when the table has a private_id; what was removed)."""
    frame = scn.frame
    if len(frame) == 0:
        return [], "nothing (the table is empty)"
    i = draw(st.integers(0, len(frame) - 1))
    pid = scn.pid
    if pid is None:
        return [j for j in range(len(frame)) if j != i], f"row {i}"
    col = frame[pid.name]
    target = col.iloc[i]
    same = np.asarray(col.isna() if pd.isna(target) else (col.astype(object) == target), dtype=bool)
    return [j for j in range(len(frame)) if not same[j]], f"the rows of person {target!r}"


def bind(scn: Scenario, keep: list | None, tmpdir: str, tag: str):
    """A reader over the rows ``keep`` (positions; None: all) of the data, bound as
    ``scn.binding``, with Privacy(epsilon=1) and no budget.

    The rows kept never change the storage schema: a DataFrame keeps its dtypes, and
    a DuckDB table or Parquet file of some rows has the schema DuckDB gives the whole
    frame (DuckDB infers the type of an object column from its values). If the
    harness itself cannot materialise the data, the example is rejected."""
    privacy = dpsql.Privacy(epsilon=1.0)
    if scn.gaussian:
        privacy.mechanisms.map[dpsql.Stat.count] = dpsql.Mechanism.gaussian
        privacy.mechanisms.map[dpsql.Stat.threshold] = dpsql.Mechanism.gaussian
    meta = scn.metadata
    frame = scn.frame if keep is None else scn.frame.iloc[keep]
    def both(source):
        out = scn.sources(source)
        if scn.refs is not None:        # bound as DataFrames, whatever the main binding
            for key, name in zip(("orders", "items"), scn.refs_names()):
                out[scn.full_name(name)] = scn.refs[key]
        return out
    if scn.binding == "df":
        return dpsql.from_df(both(frame), meta, privacy=privacy)
    if scn.binding == "csv":
        if any(isinstance(v, str) and ("\n" in v or "\r" in v)
               for c in frame.columns for v in frame[c].astype(object)):
            # A CSV whose quoted field spans lines is refused as a whole at intake (one
            # record must not swallow the next: tests/safety/test_csv_intake.py); a data owner's
            # load error, not something the analyst's queries can cause.
            reject()
        path = os.path.join(tmpdir, f"{tag}.csv")
        frame.to_csv(path, index=False)
        return dpsql.from_df(both(path), meta, privacy=privacy)
    rows = "TRUE" if keep is None else f"_rn IN ({', '.join(map(str, keep)) or 'NULL'})"
    subset = f"SELECT * EXCLUDE (_rn) FROM _src WHERE {rows}"
    con = duckdb.connect()
    try:
        con.register("_src", scn.frame.assign(_rn=np.arange(len(scn.frame))))
        if scn.binding == "parquet":
            path = os.path.join(tmpdir, f"{tag}.parquet")
            if HAVE_PYARROW:
                import pyarrow as pa
                import pyarrow.parquet as pq
                schema = pa.Schema.from_pandas(scn.frame, preserve_index=False)
                pq.write_table(pa.Table.from_pandas(frame, schema=schema, preserve_index=False), path)
            else:
                con.execute(f"COPY ({subset}) TO '{path}' (FORMAT parquet)")
            con.close()
        else:
            target = f'"{scn.table}"'
            if scn.schema:
                con.execute(f'CREATE SCHEMA "{scn.schema}"')
                target = f'"{scn.schema}".{target}'
            con.execute(f"CREATE TABLE {target} AS {subset}")
            if scn.twin:
                twin = f'"{scn.twin_name}"' if not scn.schema else f'"{scn.schema}"."{scn.twin_name}"'
                con.execute(f"CREATE TABLE {twin} AS SELECT * FROM {target}")
            for key, name in zip(("orders", "items"), scn.refs_names() if scn.refs else ()):
                con.register("_ref", scn.refs[key])
                table = f'"{name}"' if not scn.schema else f'"{scn.schema}"."{name}"'
                con.execute(f"CREATE TABLE {table} AS SELECT * FROM _ref")
                con.unregister("_ref")
            con.unregister("_src")
    except Exception:  # noqa: BLE001 - the harness cannot materialise this frame
        reject()
    if scn.binding == "parquet":
        return dpsql.from_df(both(path), meta, privacy=privacy)
    return dpsql.from_connection(con, meta, privacy=privacy)


# ------------------------------------------------------------------ queries

@dataclass
class Query:
    sql: str
    params: list | None

    def __repr__(self) -> str:
        return f"Query(sql={self.sql!r}, params={self.params!r})"


CAST_SPELLINGS = {
    "int": ("BIGINT", "INTEGER", "INT", "SMALLINT", "TINYINT", "INT8", "LONG"),
    "float": ("DOUBLE", "FLOAT", "REAL", "DECIMAL", "DECIMAL(10, 2)", "NUMERIC", "DECIMAL(38, 0)"),
    "string": ("VARCHAR", "TEXT", "CHAR", "STRING", "VARCHAR(3)"),
    "boolean": ("BOOLEAN", "BOOL"),
    "datetime": ("TIMESTAMP", "DATETIME"),
    "date": ("DATE",),
}
REFUSED_CASTS = ("HUGEINT", "UBIGINT", "UINTEGER", "UHUGEINT", "INTERVAL", "TIME", "TIMESTAMPTZ",
                 "TIMESTAMP WITH TIME ZONE", "BLOB", "JSON", "UUID", "BIT", "VARINT", "INT[]",
                 "STRUCT(a INT)", "TIMESTAMP_NS", "TIMESTAMP_S", "MAP(INT, INT)", "ENUM('a')")
DATE_PARTS = ("year", "month", "day", "quarter", "week", "dayofweek", "dow", "dayofyear", "doy",
              "hour", "minute", "second", "isodow", "isoyear")
BAD_DATE_PARTS = ("epoch", "millennium", "microseconds", "timezone", "decade", "era", "'year'")
TRUNC_PARTS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second")
LIKE_PATTERNS = ("%", "_", "a%", "%a%", "", "%\\%%", "a\\_b", "%é%", "%''%", "[a]%", "%%", "A%",
                 "%1", "2020%", "___", "a\\", "%!", "!", "a!%")
LIKE_ESCAPES = ("\\", "!", "%")
INT_LITERALS = ("1", "0", "2", "-1", "7", "42", "100", "-100", "2147483647", "-2147483648",
                "9223372036854775807", "-9223372036854775808", "9223372036854775808",
                "1" + "0" * 39, "-" + "9" * 40, "00012", "1_000")
FLOAT_LITERALS = ("0.5", "1.5", "-2.25", "0.0", "-0.0", "1e308", "1e309", "-1e309", "1e-320",
                  "3.14159", ".5", "5.", "1E3", "0.1", "123456789012345678901234567890.5",
                  "1e400", "2.5e-3", "-1e-300")
DATETIME_LITERALS = ("'2020-01-01 12:34:56'", "'2020-01-01'", "'1970-01-01 00:00:00'",
                     "'2262-04-11 23:47:16.854775'", "'0001-01-01'", "'9999-12-31 23:59:59'",
                     "'2020-02-30'", "'not a date'", "'2020-01-01T00:00:00'",
                     "'2020-01-01 00:00:00+01:00'")
DATE_LITERALS = ("'2020-02-29'", "'2021-12-31'", "'1970-01-01'", "'0001-01-01'",
                 "'2021-02-29'", "'yesterday'")
INTERVAL_LITERALS = ("INTERVAL 30 DAY", "INTERVAL '90' DAY", "INTERVAL '1' YEAR", "INTERVAL 1 MONTH",
                     "INTERVAL '3 months'", "INTERVAL '1 month 2 days 3 hours'", "INTERVAL '-1' MONTH",
                     "INTERVAL 2 WEEK", "INTERVAL '1' QUARTER", "INTERVAL '-90' MINUTE",
                     "INTERVAL '500' MILLISECOND", "INTERVAL '7 microseconds'", "INTERVAL (5) SECOND",
                     "INTERVAL '9999' YEAR", "INTERVAL '-9999' YEAR", "INTERVAL '99999999999999999999' DAY",
                     "INTERVAL '9223372036854775807' MICROSECOND", "INTERVAL '1000000 months -30000000 days'",
                     "INTERVAL '1.5' DAY", "INTERVAL '1 fortnight'", "INTERVAL 1 DECADE")
DIFF_PARTS = ("day", "month", "year", "quarter", "week", "hour", "minute", "second")
BAD_DIFF_PARTS = ("millisecond", "epoch", "isoyear", "decade")
DECIMAL_LITERALS = ("0.06", "0.01", "0.1", "0.2", "0.3", "0.07", "1.5", "2", "-0.05", "100.25",
                    "0.1234567890123456789012345678901234567890", "9999999999999999999999999999999999999.9",
                    "0.00000000000000000000000000000000000001", "1e308", "1.7976931348623157e308",
                    "9223372036854775807", "3", "0", "0.0", "1e-320")
EXPR_KINDS = ("int", "float", "string", "boolean", "datetime", "date")

# Constructs dpsql must refuse (or that are ill-formed), with operands of any type;
# each stands where an expression of some type is expected.
REFUSED = (
    "levenshtein({s}, {s})", "repeat({s}, 3)", "regexp_matches({s}, 'a')", "random()",
    "md5({s})", "hash({x})", "lpad({s}, 5, 'x')", "now()", "current_date", "read_csv('x.csv')",
    "getenv('HOME')", "(SELECT 1)", "EXISTS (SELECT 1)", "{x} IN (SELECT 1)", "nope_col",
    "other_table.{c}", "INTERVAL 1 DAY", "{s} SIMILAR TO 'a'", "{s} GLOB 'a*'", "{s} ~ 'a'",
    "list_value(1, 2)", "[1, 2][1]", "{{'a': 1}}", "{s} LIKE {s}", "ROUND({n}, 99)",
    "EXTRACT(epoch FROM {t})", "DATE_TRUNC('millennium', {t})", "TRIM({s}, 'x')",
    "TRIM(BOTH 'x' FROM {s})", "error('x')", "SUM({n})", "COUNT(*) OVER ()",
    "{s} COLLATE nocase", "COLUMNS(*)", "ROW_NUMBER() OVER ()", "range(10)",
    "string_split({s}, ',')", "strftime({t}, '%Y')", "{s} LIKE 'a' ESCAPE 'ab'",
    "{s} LIKE 'a' ESCAPE {s}", "DATE_PART({s}, {t})", "{n} BETWEEN SYMMETRIC 1 AND 2",
    "CAST({x} AS {bad})", "TRY_CAST({x} AS {bad})", "{x}::{bad}", "current_setting('threads')",
    "query('SELECT 1')", "parquet_scan('x')", "{x} IS NOT DISTINCT FROM (SELECT 1)",
    "*", "GROUPING(1)", "typeof({x})", "nextval('s')", "{n} @ 2", "{s} ^@ {s}",
    "coalesce()", "greatest({n})", "substring({s})", "POWER({n})", "{n} << 70",
    "{t} + INTERVAL ({n}) DAY", "{t} - {t}", "INTERVAL 1 DAY - {t}", "{n} + INTERVAL 1 DAY",
    "DATE_SUB('day', {t}, {t})", "DATE_ADD({t}, {s})",
)


class _Lazy(dict):
    """Fields of a template, each drawn when the template uses it."""

    def __init__(self, fill):
        super().__init__()
        self.fill = fill

    def __missing__(self, key):
        return self.fill[key]()


class QueryGen:
    """Draws one query over a scenario's table."""

    def __init__(self, draw, scn: Scenario):
        self.draw, self.scn = draw, scn
        self.params: list = []
        self.bad = 0.02       # probability of a refused construct at each node
        self.qualifier = None
        self.post = False     # drawing over aggregates (SELECT list, HAVING, ORDER BY)
        self.keys: list = []  # (sql, type) of the GROUP BY keys: leaves in post mode
        self.aggs: list = []  # (sql, type) of the aggregates drawn so far
        self.agg_cols: list = []  # columns aggregated so far
        self.prefix, self.prefix_params = "", []   # a WITH clause, and its parameters
        self.late_params: list = []  # parameters of a subquery in FROM (after the SELECT list)

    # -- helpers -----------------------------------------------------------
    def flag(self, p):
        return flag(self.draw, p)

    def pick(self, options):
        return pick(self.draw, options)

    def ints(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    def colref(self, col: Col) -> str:
        name = col.name
        if name in NEEDS_QUOTES or self.flag(0.1):
            text = f'"{name}"'
        else:
            text = self.pick((name, name.upper(), name.lower()))
        if self.qualifier and self.flag(0.3):
            text = f"{self.qualifier}.{text}"
        return text

    # -- literals and parameters ----------------------------------------------
    def param(self, kind) -> str:
        typed = {
            "int": st.integers(-10, 10) | st.sampled_from(INT_EXTREMES) | st.integers()
            | st.sampled_from([np.int8(-3), np.uint64(2 ** 64 - 1), np.int64(5), np.int32(7),
                               np.uint8(200), decimal.Decimal("3"), True]),
            "float": st.floats() | st.sampled_from([np.float32(1.5), np.float64(-2.5),
                                                    np.float16(0.5), decimal.Decimal("1.25"),
                                                    decimal.Decimal("1e-30"),
                                                    decimal.Decimal("NaN"), 1e300]),
            "string": st.text(max_size=6) | st.sampled_from(STRINGS + (np.str_("a"),)),
            "boolean": st.sampled_from([True, False, np.bool_(True), "true", 1]),
            "datetime": st.datetimes(min_value=dt.datetime(1, 1, 1))
            | st.sampled_from([np.datetime64("2020-01-01T10:00:00"), np.datetime64("NaT"),
                               np.datetime64("2020-01-01T00:00:00.000000001"),
                               dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc),
                               "2020-01-01 00:00:00"]),
            "date": st.dates() | st.sampled_from([np.datetime64("2020-01-01"), "2020-01-01"]),
        }.get(kind, st.none())
        anything = st.sampled_from([None, 1, 1.5, "x", True, decimal.Decimal("2.5"),
                                    dt.date(2020, 1, 1), dt.datetime(2020, 1, 1, 1, 2, 3),
                                    np.int16(4), np.bool_(False), b"bytes", [1], float("nan")])
        self.params.append(self.draw(anything) if self.flag(0.15) else self.draw(typed))
        return "?"

    def literal(self, kind) -> str:
        if self.flag(0.06):
            return "NULL"
        if self.flag(0.08):
            return self.param(kind)
        if kind == "int":
            return self.pick(INT_LITERALS)
        if kind == "float":
            return self.pick(FLOAT_LITERALS)
        if kind == "string":
            return "'" + self.pick(STRINGS).replace("'", "''") + "'"
        if kind == "boolean":
            return self.pick(("TRUE", "FALSE", "'true'"))
        if kind == "datetime":
            text = self.pick(DATETIME_LITERALS)
            return self.pick((f"CAST({text} AS TIMESTAMP)", text, f"TIMESTAMP {text}"))
        if kind == "date":
            text = self.pick(DATE_LITERALS)
            return self.pick((f"CAST({text} AS DATE)", f"DATE {text}", text))
        return "NULL"

    # -- row-level expressions -------------------------------------------------
    def leaf(self, kind) -> str:
        if self.post:
            options = [s for s, k in self.aggs + self.keys
                       if k == kind or (kind == "float" and k == "int")]
            if options and not self.flag(0.25):
                return self.pick(options)
            if kind in ("int", "float") and not self.flag(0.3):
                return self.aggregate(kind)
            return self.literal(kind)
        cols = [c for c in self.scn.columns if c.type == (kind if kind != "date" else "datetime")]
        if cols and not self.flag(0.3):
            ref = self.colref(self.pick(cols))
            return ref if kind != "date" else f"CAST({ref} AS DATE)"
        return self.literal(kind)

    def refused(self) -> str:
        template = self.pick(REFUSED)
        fill = {
            "s": lambda: self.expr("string", 0), "n": lambda: self.expr("int", 0),
            "t": lambda: self.expr("datetime", 0),
            "x": lambda: self.expr(self.pick(("int", "string", "datetime")), 0),
            "c": lambda: self.colref(self.pick(self.scn.columns)),
            "bad": lambda: self.pick(REFUSED_CASTS)}
        # Only the fields the template uses are drawn (a drawn '?' adds a parameter).
        return string.Formatter().vformat(template, (), _Lazy(fill))

    def expr(self, kind: str, depth: int) -> str:
        if self.flag(self.bad):
            return self.refused()
        if self.flag(0.02):          # an operand of another type than the one expected
            kind = self.pick(EXPR_KINDS)
        if depth <= 0 or self.flag(0.3):
            return self.leaf(kind)
        return getattr(self, "_" + kind)(depth - 1)

    def _generic(self, kind, depth) -> str:
        """CASE, IF, COALESCE, ..., CAST: constructs of any result type."""
        e = lambda k=kind: self.expr(k, depth)  # noqa: E731
        form = self.pick(("paren", "case", "case-simple", "if", "coalesce", "ifnull", "nullif",
                          "greatest", "least", "cast", "try", "try_cast", "colon"))
        if form == "paren":
            return f"({e()})"
        if form == "case":
            whens = " ".join(f"WHEN {self.expr('boolean', depth)} THEN {e()}"
                             for _ in range(self.ints(1, 2)))
            return f"CASE {whens}{f' ELSE {e()}' if self.flag(0.6) else ''} END"
        if form == "case-simple":
            k = self.pick(("int", "string", "float", "boolean"))
            whens = " ".join(f"WHEN {self.expr(k, depth)} THEN {e()}" for _ in range(self.ints(1, 2)))
            return f"CASE {self.expr(k, depth)} {whens} ELSE {e()} END"
        if form == "if":
            return f"IF({self.expr('boolean', depth)}, {e()}, {e()})"
        if form in ("coalesce", "greatest", "least"):
            return f"{form.upper()}({', '.join(e() for _ in range(self.ints(1, 3)))})"
        if form in ("ifnull", "nullif"):
            return f"{form.upper()}({e()}, {e()})"
        if form == "try":
            return f"TRY({e()})"
        source = self.expr(self.pick(EXPR_KINDS), depth)
        target = self.pick(CAST_SPELLINGS[kind])
        return {"cast": f"CAST({source} AS {target})", "try_cast": f"TRY_CAST({source} AS {target})",
                "colon": f"({source})::{target}"}[form]

    def _int(self, depth) -> str:
        e = lambda k="int": self.expr(k, depth)  # noqa: E731
        temporal = lambda: e(self.pick(("datetime", "date")))  # noqa: E731
        form = self.pick(("arith", "generic", "neg", "abs", "sign", "round", "floor", "length",
                          "strpos", "position", "extract", "date_part", "date_fn", "mod",
                          "date_diff"))
        if form == "arith":
            return f"{e()} {self.pick(('+', '-', '*', '//', '%'))} {e()}"
        if form == "generic":
            return self._generic("int", depth)
        if form == "neg":
            return f"-{e()}" if self.flag(0.5) else f"-({e()})"
        if form == "abs":
            return f"ABS({e()})"
        if form == "sign":
            return f"SIGN({e(self.pick(('int', 'float')))})"
        if form == "round":
            return f"ROUND({e()})"
        if form == "floor":
            return f"{self.pick(('FLOOR', 'CEIL', 'CEILING', 'TRUNC'))}({e()})"
        if form == "length":
            return f"{self.pick(('LENGTH', 'LEN', 'CHAR_LENGTH'))}({e('string')})"
        if form == "strpos":
            return f"{self.pick(('STRPOS', 'INSTR'))}({e('string')}, {e('string')})"
        if form == "position":
            return f"POSITION({e('string')} IN {e('string')})"
        if form in ("extract", "date_part"):
            part = self.pick(BAD_DATE_PARTS) if self.flag(0.1) else self.pick(DATE_PARTS)
            if form == "extract":
                return f"EXTRACT({part} FROM {temporal()})"
            return f"{self.pick(('DATE_PART', 'DATEPART'))}('{part}', {temporal()})"
        if form == "date_fn":
            fn = self.pick(("YEAR", "QUARTER", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND",
                            "DAYOFWEEK", "DAYOFYEAR"))
            return f"{fn}({temporal()})"
        if form == "date_diff":
            part = self.pick(BAD_DIFF_PARTS) if self.flag(0.1) else self.pick(DIFF_PARTS)
            return f"{self.pick(('DATE_DIFF', 'DATEDIFF'))}('{part}', {temporal()}, {temporal()})"
        return f"MOD({e()}, {e()})"

    def _float(self, depth) -> str:
        e = lambda: self.expr("float", depth)  # noqa: E731
        num = lambda: self.expr(self.pick(("int", "float")), depth)  # noqa: E731
        form = self.pick(("arith", "div", "generic", "fn", "power", "round", "neg", "abs",
                          "decimal"))
        if form == "arith":
            return f"{num()} {self.pick(('+', '-', '*', '//', '%'))} {e()}"
        if form == "decimal":
            return self.decimal_constant(depth)
        if form == "div":
            return f"{num()} / {num()}"
        if form == "generic":
            return self._generic("float", depth)
        if form == "fn":
            fn = self.pick(("SQRT", "CBRT", "LN", "LOG", "LOG10", "LOG2", "EXP", "FLOOR", "CEIL"))
            return f"{fn}({num()})"
        if form == "power":
            return self.pick((f"POWER({num()}, {num()})", f"POW({num()}, {num()})",
                              f"{num()} ** {num()}", f"LOG({num()}, {num()})"))
        if form == "round":
            return f"ROUND({num()}, {self.ints(-31, 31)})"
        if form == "neg":
            return f"-({e()})"
        return f"ABS({e()})"

    def decimal_constant(self, depth) -> str:
        """Arithmetic on number literals alone (folded exactly when the query is planned)."""
        if depth <= 0 or self.flag(0.4):
            literal = self.pick(DECIMAL_LITERALS)
            return f"-{literal}" if self.flag(0.15) else literal
        a, b = self.decimal_constant(depth - 1), self.decimal_constant(depth - 1)
        return f"({a} {self.pick(('+', '-', '*', '/'))} {b})"

    def _string(self, depth) -> str:
        e = lambda k="string": self.expr(k, depth)  # noqa: E731
        form = self.pick(("fn", "generic", "substring", "left", "concat", "pipe"))
        if form == "fn":
            fn = self.pick(("LOWER", "UPPER", "TRIM", "LTRIM", "RTRIM", "REVERSE", "LCASE", "UCASE"))
            return f"{fn}({e()})"
        if form == "generic":
            return self._generic("string", depth)
        if form == "substring":
            return self.pick((f"SUBSTRING({e()}, {e('int')})",
                              f"SUBSTRING({e()}, {e('int')}, {e('int')})",
                              f"SUBSTR({e()}, {e('int')}, {e('int')})",
                              f"SUBSTRING({e()} FROM {e('int')} FOR {e('int')})"))
        if form == "left":
            return f"{self.pick(('LEFT', 'RIGHT'))}({e()}, {e('int')})"
        if form == "concat":
            kinds = ("string", "int", "float", "boolean", "datetime")
            return f"CONCAT({', '.join(e(self.pick(kinds)) for _ in range(self.ints(1, 3)))})"
        return f"{e()} || {e()}"

    def _boolean(self, depth) -> str:
        e = lambda k="boolean": self.expr(k, depth)  # noqa: E731
        form = self.pick(("compare", "and", "or", "not", "is_null", "is_bool", "like", "in",
                          "between", "distinct", "generic", "isnan", "starts"))
        k = self.pick(("int", "string", "float", "datetime", "boolean", "date"))
        if form == "compare":
            op = self.pick(("=", "<>", "<", "<=", ">", ">=", "!=", "=="))
            return f"{e(k)} {op} {e(k)}"
        if form == "and":
            return f"{e()} AND {e()}"
        if form == "or":
            return f"({e()} OR {e()})"
        if form == "not":
            return f"NOT {e()}" if self.flag(0.5) else f"NOT ({e()})"
        if form == "is_null":
            return f"{e(k)} IS {self.pick(('', 'NOT '))}NULL"
        if form == "is_bool":
            return f"{e()} IS {self.pick(('', 'NOT '))}{self.pick(('TRUE', 'FALSE'))}"
        if form == "like":
            op = self.pick(("LIKE", "ILIKE", "NOT LIKE", "NOT ILIKE"))
            pattern, escape = self.pick(LIKE_PATTERNS), ""
            if self.flag(0.3):
                char = self.pick(LIKE_ESCAPES)
                escape = f" ESCAPE '{char}'"
                if self.flag(0.3):    # a pattern ending in its escape character
                    pattern = self.pick(("", "a", "%")) + char
            return f"{e('string')} {op} '{pattern.replace(chr(39), chr(39) * 2)}'{escape}"
        if form == "in":
            items = ", ".join(e(k) for _ in range(self.ints(1, 3)))
            return f"{e(k)} {self.pick(('IN', 'NOT IN'))} ({items})"
        if form == "between":
            return f"{e(k)} {self.pick(('BETWEEN', 'NOT BETWEEN'))} {e(k)} AND {e(k)}"
        if form == "distinct":
            return f"{e(k)} IS {self.pick(('', 'NOT '))}DISTINCT FROM {e(k)}"
        if form == "generic":
            return self._generic("boolean", depth)
        if form == "isnan":
            return f"{self.pick(('ISNAN', 'ISINF', 'ISFINITE'))}({e(self.pick(('float', 'int')))})"
        return f"{self.pick(('STARTS_WITH', 'CONTAINS', 'PREFIX', 'SUFFIX'))}({e('string')}, {e('string')})"

    def _datetime(self, depth) -> str:
        if self.flag(0.5):
            return self._generic("datetime", depth)
        if self.flag(0.5):
            t, interval = self.expr(self.pick(("datetime", "date")), depth), self.pick(INTERVAL_LITERALS)
            return self.pick((f"{t} + {interval}", f"{t} - {interval}", f"{interval} + {t}",
                              f"DATE_ADD({t}, {interval})"))
        part = self.pick(BAD_DATE_PARTS) if self.flag(0.1) else self.pick(TRUNC_PARTS)
        return f"DATE_TRUNC('{part}', {self.expr(self.pick(('datetime', 'date')), depth)})"

    def _date(self, depth) -> str:
        if self.flag(0.5):
            return self._generic("date", depth)
        return f"CAST({self.expr(self.pick(('datetime', 'string', 'date')), depth)} AS DATE)"

    # -- aggregates -----------------------------------------------------------
    def aggregate(self, kind="int") -> str:
        saved, self.post = self.post, False
        try:
            text, k = self._aggregate(kind)
        finally:
            self.post = saved
        self.aggs.append((text, k))
        return text

    def _aggregate(self, kind) -> tuple:
        cols = self.scn.columns
        if self.flag(self.bad):
            arg = self.colref(self.pick(cols))
            return self.pick((f"MIN({arg}, {arg})", f"MEDIAN({arg}, 0.5)",
                              f"quantile_cont({arg}, {arg})", f"string_agg({arg}, ',')",
                              f"SUM(SUM({arg}))", f"COUNT(COUNT(*))", f"list({arg})",
                              f"approx_count_distinct({arg})", f"COUNT(DISTINCT {arg}, {arg})",
                              f"SUM({arg}) FILTER (WHERE TRUE)", f"AVG(DISTINCT {arg})")), "int"
        numeric = [c for c in cols if c.type in ("int", "float", "boolean")]
        # Aggregates of one column meet in one query (SUM(x) with COUNT(x) or AVG(x) is
        # planned differently from SUM(x) alone): often reuse a column already aggregated.
        again = [c for c in self.agg_cols if c in numeric]
        if kind == "float" and numeric and not self.flag(0.2):
            fn = self.pick(("AVG", "SUM", "VAR", "VARIANCE", "VAR_POP", "VAR_SAMP", "STDDEV",
                            "STD", "STDDEV_POP", "STDDEV_SAMP"))
            if self.flag(0.15):      # an expression: bounds derived (or refused if unbounded)
                arg = self.expr(self.pick(("int", "float")), 1)
                if self.flag(0.5):
                    arg = f"LEAST(GREATEST({arg}, -5), 5)"
                where = f" FILTER (WHERE {self.expr('boolean', 1)})" if self.flag(0.2) else ""
                return f"{fn}({arg}){where}", "float"
            col = (self.pick(again) if again and self.flag(0.4) else
                   self.pick(numeric) if not self.flag(0.05) else self.pick(cols))
            self.agg_cols.append(col)
            return f"{fn}({self.colref(col)})", "float"
        form = self.pick(("star", "col", "distinct", "one", "sum", "pid"))
        if form == "star":
            return "COUNT(*)", "int"
        if form == "one":
            return self.pick(("COUNT(1)", "COUNT(TRUE)", "COUNT('x')", "COUNT(NULL)")), "int"
        if form == "sum" and numeric:
            col = self.pick(again) if again and self.flag(0.4) else self.pick(numeric)
            self.agg_cols.append(col)
            return f"SUM({self.colref(col)})", "float"
        if form == "pid" and self.scn.pid is not None:
            return f"COUNT(DISTINCT {self.colref(self.scn.pid)})", "int"
        if again and self.flag(0.4):
            arg = self.colref(self.pick(again))
        elif self.flag(0.5):
            col = self.pick(cols)
            self.agg_cols.append(col)
            arg = self.colref(col)
        else:
            arg = self.expr(self.pick(("int", "string", "float", "boolean", "datetime")), 1)
        return (f"COUNT(DISTINCT {arg})" if form == "distinct" else f"COUNT({arg})"), "int"

    # -- BigQuery's differential-privacy syntax (docs/sql.md) --------------------
    def bigquery_options(self) -> str:
        """``WITH DIFFERENTIAL_PRIVACY OPTIONS (...)``: mostly valid, sometimes not."""
        options = []
        if self.flag(0.5):
            options.append("epsilon = " + self.pick(("1e5", "0.5", ".25", "'x'", "0", "1e7")))
        if self.flag(0.3):
            options.append("delta = " + self.pick(("1e-6", ".01", "0", "1")))
        if self.flag(0.3):
            options.append("max_groups_contributed = " + self.pick(("1", "2", "1000000000",
                                                                     "0", "1.5")))
        if self.flag(0.3):
            col = self.scn.pid if self.scn.pid is not None and self.flag(0.8) else \
                self.pick(self.scn.columns)
            options.append(f"privacy_unit_column = {self.colref(col)}")
        return f"WITH DIFFERENTIAL_PRIVACY OPTIONS ({', '.join(options)}) "

    def contribution_bounds(self, text: str) -> str:
        """An aggregate call with BigQuery's contribution bounds as its last argument."""
        name = text.split("(", 1)[0].upper()
        if not text.endswith(")") or "FILTER" in text or name not in (
                "COUNT", "SUM", "AVG", "VAR_POP", "STDDEV_POP", "MIN"):
            return text
        kind = "row" if name in ("VAR_POP", "STDDEV_POP") or self.flag(0.05) else "group"
        lo, hi = self.pick((("0", "1"), ("-5", "100"), ("-1e300", "1e300"), ("0.5", "2"),
                            ("1", "0"), ("0", "'a'")))
        return f"{text[:-1]}, contribution_bounds_per_{kind} => ({lo}, {hi}))"

    # -- the query ------------------------------------------------------------
    def group_key(self) -> tuple:
        if not self.flag(0.4):
            col = self.pick(self.scn.columns)
            return self.colref(col), col.type
        kind = self.pick(("int", "string", "boolean", "float", "datetime", "date"))
        return self.expr(kind, self.ints(1, 2)), kind

    def table_ref(self) -> str:
        scn = self.scn
        tname = f'"{scn.table}"' if self.flag(0.1) else scn.table
        table = tname
        if scn.schema and not self.flag(0.3):
            table = (f'"{scn.schema}"' if self.flag(0.1) else scn.schema) + "." + tname
        if self.flag(0.02):
            table = self.pick(("S.Nope", "(SELECT 1) q", "read_csv('x.csv')",
                               f"{table} USING SAMPLE 10", f"{table} TABLESAMPLE 10",
                               f"{table}, {table} b", f"{table} JOIN {table} b ON TRUE"))
        wrapped = self.flag(0.25)
        if wrapped:
            # Row-level SQL before aggregation: the same columns through a subquery or CTE
            # (dpsql/plan/); the properties must hold through them as on the table.
            inner = ""
            if self.flag(0.5):
                saved, self.params = self.params, []
                inner = f" WHERE {self.expr('boolean', 1)}"
                inner_params, self.params = self.params, saved
            else:
                inner_params = []
            form = self.pick(("subquery", "cte", "nested", "derived", "union", "semi", "values",
                              "cross", "internal", "id_join", "twin", "listed", "listed_cte",
                              "comma"))
            if form == "semi" and scn.refs is not None and self.flag(0.6):
                form = "correlated"
            if form in ("semi", "id_join", "comma") and scn.pid is None:
                form = "union"
            if form == "twin" and not scn.twin:
                form = "cross"
            if form == "comma":
                return self.comma_join(table, inner, inner_params)
            if form in ("cross", "internal", "id_join", "twin"):
                # Issue 20's families: a CROSS JOIN that repeats every row, the plan's own
                # names (always refused), a private join with a per-person aggregate of the
                # id, and a UNION ALL of tables with different censor_dims.
                self.late_params = inner_params
                rows = ", ".join(f"({i})" for i in range(self.ints(1, 3)))
                if form == "cross":
                    table = f"(SELECT * FROM {table}{inner} CROSS JOIN (VALUES {rows}) AS _v(_vk))"
                elif form == "internal":
                    table = self.pick((
                        f"(SELECT *, 1 AS _dpsql_pid FROM {table}{inner})",
                        f"(SELECT * FROM {table} CROSS JOIN (VALUES {rows}) AS _v(_vk) "
                        f"WHERE _dpsql_pid IS NOT NULL)",
                        f'(SELECT * FROM {table}{inner}) AS "_DPSQL_t" CROSS JOIN (VALUES (1)) AS _w(_wk)'))
                    if table.endswith("_w(_wk)"):
                        return table
                elif form == "id_join":
                    pid = self.colref(scn.pid)
                    agg = self.pick((f"MIN({pid})", f"MAX(CAST({pid} AS VARCHAR))", "COUNT(*)"))
                    table = (f"(SELECT * FROM {table}{inner} JOIN (SELECT {pid} AS _idp, {agg} "
                             f"AS _idm FROM {table} GROUP BY {pid}) AS _ia ON {pid} = _ia._idp)")
                else:
                    twin = (scn.schema + "." if scn.schema else "") + scn.twin_name
                    table = self.pick((
                        f"(SELECT * FROM {table}{inner} UNION ALL SELECT * FROM {twin})",
                        f"(SELECT * FROM {twin} UNION ALL SELECT * FROM {table}{inner})"))
                self.qualifier = self.pick(("t", "q", "Alias1"))
                return f"{table} AS {self.qualifier}"
            if form == "values":
                # A public inline table joined to every row (not a unique key): each row
                # repeats, and truncation must bring a person back to their bound.
                rows = ", ".join(f"({i})" for i in range(self.ints(1, 3)))
                self.late_params = inner_params
                if inner:
                    return f"(SELECT * FROM {table}{inner}) AS w JOIN (VALUES {rows}) AS _v(_vk) ON TRUE"
                return f"{table} JOIN (VALUES {rows}) AS _v(_vk) ON TRUE"
            if form == "correlated":
                self.late_params = inner_params
                table = f"(SELECT * FROM {table}{inner})"
                table = (f"(SELECT * FROM {table} AS _r WHERE {self.colref(scn.pid)} IN "
                         f"(SELECT o.owner FROM {self.scn.full_name(scn.refs_names()[0])} o "
                         f"WHERE {self.correlated()}))")
            elif form in ("union", "semi"):
                self.late_params = inner_params
                if form == "union":
                    table = f"(SELECT * FROM {table}{inner} UNION ALL SELECT * FROM {table})"
                else:
                    pid = self.colref(scn.pid)
                    table = f"(SELECT * FROM {table} WHERE {pid} IN (SELECT {pid} FROM {table}{inner}))"
            elif form in ("cte", "listed_cte"):
                names = self.column_list() if form == "listed_cte" else ""
                self.prefix = f"WITH c1{names} AS (SELECT * FROM {table}{inner}) "
                self.prefix_params = inner_params
                table = "c1"
            elif form == "listed":
                self.late_params = inner_params
                self.qualifier = self.pick(("t", "q", "Alias1"))
                return f"(SELECT * FROM {table}{inner}) AS {self.qualifier}{self.column_list()}"
            else:
                self.late_params = inner_params
                extra = ""
                if form == "derived":
                    num = [c for c in self.scn.columns if c.type in ("int", "float")]
                    if num:
                        extra = f", {self.colref(self.pick(num))} * 2 AS _twice"
                table = (f"(SELECT *{extra} FROM {table}{inner})" if form != "nested" else
                         f"(SELECT * FROM (SELECT * FROM {table}) AS i{inner})")
        if self.flag(0.2) or (wrapped and table.startswith("(")):
            self.qualifier = self.pick(("t", "q", "Alias1"))
            return f"{table} AS {self.qualifier}"
        if self.flag(0.1) and not wrapped:
            self.qualifier = tname
        return table

    def column_list(self) -> str:
        """A column list after an alias (``AS t(a, b)``), restating the columns' own names in
        another case, all or the first few, so that the query's names still bind; rarely a
        hostile one: a name too many, two names swapped, the plan's reserved name."""
        names = [f'"{c.name}"' if c.name in NEEDS_QUOTES else self.pick((c.name, c.name.upper()))
                 for c in self.scn.columns]
        names = names[:self.ints(1, len(names))]
        if self.flag(0.1):
            bad = self.pick(("more", "swap", "reserved"))
            if bad == "more":
                names.append("extra")
            elif bad == "swap" and len(names) > 1:
                names[0], names[1] = names[1], names[0]
            else:
                names[-1] = "_dpsql_pid"
        return f" ({', '.join(names)})"

    def correlated(self) -> str:
        """A filter of TABLE_orders o by its own items through the key okey (docs/sql.md,
        correlated filters through references), now and then one that must be refused."""
        items = self.scn.full_name(self.scn.refs_names()[1])
        c = self.pick(("0", "3", "9.5", "-1"))
        if self.flag(0.15):
            return self.pick((f"EXISTS (SELECT * FROM {items} i WHERE i.okey = o.owner)",
                              f"EXISTS (SELECT * FROM {items} i WHERE i.w = o.okey)",
                              f"EXISTS (SELECT * FROM {items} i WHERE i.w > {c})",
                              f"o.okey IN (SELECT okey FROM {items} GROUP BY w)",
                              f"o.okey IN (SELECT SUM(w) AS s FROM {items} GROUP BY okey)",
                              f"o.okey > (SELECT AVG(w) FROM {items})"))
        return self.pick((
            f"EXISTS (SELECT * FROM {items} i WHERE i.okey = o.okey AND i.w > {c})",
            f"NOT EXISTS (SELECT 1 FROM {items} i WHERE i.okey = o.okey)",
            f"o.okey IN (SELECT okey FROM {items} GROUP BY okey HAVING SUM(w) > {c})",
            f"o.okey NOT IN (SELECT okey FROM {items} GROUP BY okey HAVING COUNT(*) > 1)",
            f"o.okey NOT IN (SELECT okey FROM {items} WHERE w < {c})",
            f"o.okey IN (SELECT okey FROM {self.scn.full_name(self.scn.refs_names()[0])} "
            f"WHERE okey > {c})"))

    def comma_join(self, table: str, inner: str, inner_params: list) -> str:
        """FROM t, (a per-person aggregate) WHERE equalities: planned as the INNER JOIN on
        the person the equality states, or (an OR, an equality not on the id, no
        equality) a CROSS JOIN of private rows, refused; or t, a public VALUES list."""
        self.late_params = inner_params
        pid = self.colref(self.scn.pid)
        cond = inner[len(" WHERE "):] if inner else ""
        if self.flag(0.3):
            rows = ", ".join(f"({i})" for i in range(self.ints(1, 3)))
            where = f" WHERE {cond}" if cond else ""
            table = f"(SELECT * FROM {table}, (VALUES {rows}) AS _v(_vk){where})"
        else:
            agg = self.pick((f"MIN({pid})", "COUNT(*)"))
            link = self.pick((f"{pid} = _ca._cp", f"_ca._cp = {pid}", f"({pid} = _ca._cp)",
                              f"({pid} = _ca._cp OR _ca._cm IS NULL)", f"{pid} = _ca._cm",
                              f"{pid} < _ca._cp"))
            parts = [p for p in (link, cond) if p]
            if self.flag(0.5):
                parts.reverse()
            table = (f"(SELECT * FROM {table}, (SELECT {pid} AS _cp, {agg} AS _cm FROM {table} "
                     f"GROUP BY {pid}) AS _ca WHERE {' AND '.join(parts)})")
        self.qualifier = self.pick(("t", "q", "Alias1"))
        return f"{table} AS {self.qualifier}"

    def query(self) -> Query:
        table = self.table_ref()
        distinct_keys = self.flag(0.05)       # SELECT DISTINCT a, b: keys only
        nkeys = self.ints(1, 2) if distinct_keys else self.pick((0, 1, 1, 2))
        self.keys = [self.group_key() for _ in range(nkeys)]

        items, names, key_refs = [], [], []   # SELECT items; output names; GROUP BY entries
        for i, (ksql, kkind) in enumerate(self.keys):
            if distinct_keys or self.flag(0.7):
                alias = self.pick(("k0", "k1", "n", "AGE", "x")) if self.flag(0.4) else None
                items.append(ksql + (f" AS {alias}" if alias else ""))
                names.append(alias or ksql)
                ref = self.pick(("expr", "position", "alias"))
                key_refs.append(str(len(items)) if ref == "position" else
                                alias if ref == "alias" and alias else ksql)
            else:
                key_refs.append(ksql)
        bigquery = self.flag(0.06)          # BigQuery's DIFFERENTIAL_PRIVACY clause
        if not distinct_keys:
            for _ in range(self.ints(1, 3)):
                self.post = True
                text = (self.expr(self.pick(("int", "float", "boolean", "string")), 2)
                        if self.flag(0.3) else self.aggregate(self.pick(("int", "float"))))
                self.post = False
                if bigquery and self.flag(0.6):
                    text = self.contribution_bounds(text)
                alias = self.pick((f"a{len(items)}", "n", "s", "x", '"my out"', "k0")) \
                    if self.flag(0.5) else None
                if (alias or text).strip('"').lower() in {n.strip('"').lower() for n in names} \
                        and not self.flag(0.05):
                    alias = f"a{len(items)}"        # two outputs of one name are refused
                items.append(text + (f" AS {alias}" if alias else ""))
                names.append(alias or text)
            if self.flag(0.03):
                items.append(self.pick(("*", self.colref(self.pick(self.scn.columns)))))

        head = "SELECT " + (self.bigquery_options() if bigquery else "")
        if distinct_keys or self.flag(0.04):
            head += "DISTINCT "
        if self.flag(0.03):
            head += f"TOP {self.ints(0, 5)} "
        sql = self.prefix + head + ", ".join(items) + f" FROM {table}"
        # Parameters in text order: the WITH clause's, the SELECT list's, the subquery's.
        self.params = self.prefix_params + self.params + self.late_params
        if self.flag(0.7):
            sql += f" WHERE {self.expr('boolean', self.pick((1, 2, 3, 0)))}"
        if key_refs and not distinct_keys:
            sql += " GROUP BY " + ", ".join(key_refs)
        elif self.flag(0.02):
            sql += " GROUP BY " + self.pick(("ALL", "ROLLUP (1)", "0", "99", "1.5", "?"))
            if sql.endswith("?"):
                self.params.append(1)
        if self.flag(0.25):
            self.post = True
            plain = [n for n in names if n.replace("_", "").isalnum()]
            if plain and self.flag(0.3):
                lhs = self.pick(plain)
            else:
                lhs = self.expr(self.pick(("int", "float")), 1)
            op = self.pick((">", "<", ">=", "=", "<>"))
            cond = f"{lhs} {op} {self.literal(self.pick(('int', 'float', 'string')))}"
            if self.flag(0.3):
                cond = f"{cond} {self.pick(('AND', 'OR'))} {self.expr('boolean', 1)}"
            sql += f" HAVING {cond}"
            self.post = False
        if self.flag(0.4):
            orders = []
            for _ in range(self.ints(1, 2)):
                form = self.pick(("position", "name", "expr"))
                if form == "position":
                    o = str(self.ints(1, len(items)) if not self.flag(0.05) else
                            self.pick((0, len(items) + 1)))
                elif form == "name" and names:
                    o = self.pick(names)
                else:
                    self.post = True
                    o = self.expr(self.pick(("int", "float", "string")), 1)
                    self.post = False
                orders.append(o + self.pick(("", " ASC", " DESC"))
                              + self.pick(("", " NULLS FIRST", " NULLS LAST")))
            sql += " ORDER BY " + ", ".join(orders)
        if self.flag(0.3):
            sql += " LIMIT " + self.pick(("1", "0", "3", "100", "-1", "'2'", "1.5", "?"))
            if sql.endswith("?"):
                self.params.append(self.ints(0, 3))
            if self.flag(0.3):
                sql += " OFFSET " + self.pick(("1", "0", "2"))
        params = list(self.params) if self.params else None
        if params is None and self.flag(0.01):
            params = [1]               # a parameter too many
        elif params is not None and self.flag(0.01):
            params = params[:-1]       # one too few
        if self.flag(0.02):
            sql = self.pick((sql + "; SELECT 1", sql.replace("SELECT", "SELEC", 1),
                             "DELETE FROM " + table, sql + " UNION ALL " + sql,
                             "WITH w AS (SELECT 1) " + sql, sql[: len(sql) // 2]))
        return Query(sql, params)


@st.composite
def queries(draw, scn: Scenario) -> Query:
    return QueryGen(draw, scn).query()
