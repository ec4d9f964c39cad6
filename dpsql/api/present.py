"""A release's output columns as the caller asks for them: a pandas DataFrame
(``execute_df``) or rows of Python values (``execute``), read the same way.

pandas is imported only to build a DataFrame: ``Reader.execute``, the PEP 249 cursor and
the ``dpsql query`` command read the columns (numpy arrays) without it, which saves its
import (half of the command's 1.2 s; docs/performance.md, "The CLI without pandas").
"""
from __future__ import annotations

import sys

import numpy as np


def frame(columns: list, names: list):
    """A DataFrame of ``columns`` (arrays), named ``names`` (which may repeat)."""
    import pandas as pd
    names = list(names)
    if len(set(names)) == len(names):
        # One step: naming the columns afterwards builds a second index of text (pandas'
        # Arrow strings), 0.33 against 0.19 ms for three columns (2026-11-30).
        return pd.DataFrame(dict(zip(names, columns)))
    out = pd.DataFrame({f"_o{i}": c for i, c in enumerate(columns)})
    out.columns = names
    return out


def frame_rows(df) -> list:
    """A DataFrame's rows as tuples of Python values (``native``)."""
    return [tuple(native(v) for v in row) for row in df.itertuples(index=False, name=None)]


def whole(values, rounding):
    """Interval ends of an integer output as integers, rounded outward. An end that is
    infinite (nothing bounds it) or beyond 64 bits keeps the float column; NULL stays NULL."""
    array = np.asarray(values, dtype=float)
    finite = array[~np.isnan(array)]
    if not (np.isfinite(finite).all() and (np.abs(finite) < 2.0 ** 62).all()):
        return values
    if np.isnan(array).any():
        import pandas as pd
        return pd.array([None if np.isnan(v) else int(rounding(v)) for v in array], dtype="Int64")
    return rounding(array).astype(np.int64)


def native(value):
    """One cell as a Python value, the one rule of ``execute``, the PEP 249 cursor and the
    CLI: a numpy scalar's own; None for NULL (NaN, NaT, pandas' NA); a list for an array
    (``QUANTILE_CONT(x, [0.25, 0.75])``); a time as ``datetime`` where one holds it exactly,
    else kept as it is (past year 9999, or with nanoseconds)."""
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return [native(v) for v in value.tolist()]
    if isinstance(value, (np.datetime64, np.timedelta64)):
        item = value.item()                     # None for NaT; an int where no datetime holds it
        return value if isinstance(item, int) else item
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    pandas = sys.modules.get("pandas")          # NA, NaT and Timestamp exist only if loaded
    if pandas is not None:
        if value is pandas.NA or value is pandas.NaT:
            return None
        if isinstance(value, pandas.Timestamp) and value.nanosecond == 0:
            try:
                return value.to_pydatetime()
            except (ValueError, OverflowError):   # past year 9999: numpy's value
                return value.to_datetime64()
    return value


def python_values(values) -> list:
    """An output column as Python values, each as ``native`` reads it (numbers and booleans
    through numpy's ``tolist``, a masked cell None); a pandas array (a column with a NULL,
    ``engines/postprocess.plain_column``) cell by cell."""
    if isinstance(values, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(values).tolist()
        present = python_values(values.data)
        return [None if m else v for v, m in zip(present, mask)]
    if isinstance(values, np.ndarray) and values.dtype.kind in "iub":
        return values.tolist()
    if isinstance(values, np.ndarray) and values.dtype.kind in "Mm" and \
            np.datetime_data(values.dtype)[0] in ("ns", "ps", "fs", "as"):
        import pandas as pd         # finer than datetime holds: pandas' Timestamp does
        return [native(v) for v in pd.Series(values).tolist()]
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":
        return [None if v != v else v for v in values.tolist()]
    return [native(v) for v in values]
