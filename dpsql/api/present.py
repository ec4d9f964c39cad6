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
    out = pd.DataFrame({f"_o{i}": c for i, c in enumerate(columns)})
    out.columns = list(names)
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
    """One cell as a Python value: a numpy scalar's own, None for NULL (NaN, pandas' NA
    and NaT), a list for an array (``QUANTILE_CONT(x, [0.25, 0.75])``)."""
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return [native(v) for v in value.tolist()]
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    pandas = sys.modules.get("pandas")      # NA and NaT exist only if pandas is loaded
    if pandas is not None and (value is pandas.NA or value is pandas.NaT):
        return None
    return value


def python_values(values) -> list:
    """An output column as Python values, as ``native`` reads them: a numpy array's
    ``tolist`` (times as ``datetime``), a masked cell None, a NaN None; a pandas array
    (a column with a NULL, ``engines/postprocess.plain_column``) cell by cell."""
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
    if isinstance(values, np.ndarray) and values.dtype.kind in "fMm":
        out = [None if v is None or v != v else v for v in values.tolist()]
        if values.dtype.kind != "f":    # a time past datetime's year 9999 stays numpy's
            out = [values[i] if isinstance(v, int) else v for i, v in enumerate(out)]
        return out
    return [native(v) for v in values]
