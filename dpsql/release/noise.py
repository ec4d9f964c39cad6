"""Step 5: exact aggregates -> noisy statistics -> the groups that may be released.

Owns: the only place where exact values meet noise. Each statistic's values,
one per group, go through its calibrated mechanism in one vectorised call;
then groups whose noisy count of persons is below the threshold are dropped.
Nothing here looks at a value except to add noise to it.
"""
from __future__ import annotations

import numpy as np

from ..privacy.params import Stat


NULL_SUFFIX = "_null"
_FILL = {"int": (np.int64, 0), "float": (np.float64, 0.0), "boolean": (np.bool_, False),
         "string": (object, "")}


def _keys(values, kind: str) -> tuple:
    """(values, is-NULL flags) of one key column, in a dtype fixed by the key's type.

    NULL is a key like any other, but it must not change the column's type: an
    int column holding a NULL would become an object column, which DuckDB types
    from its values, so a group withheld by the threshold could still change the
    output's dtype. The flags travel in their own column and post-processing puts
    the NULLs back (``dpsql.plan.aggregate``)."""
    mask = np.ma.getmaskarray(values)
    if kind in ("datetime", "date"):
        return _times(values), mask
    dtype, fill = _FILL.get(kind, (object, ""))
    data = np.ma.getdata(values)
    if data.dtype != np.dtype(dtype) or mask.any():
        data = data.astype(dtype)
        data[mask] = fill
    return data, mask


def _times(values) -> np.ndarray:
    """Microseconds since 1970 (how time keys leave the engine) as datetime64; NULL is NaT."""
    data = np.ma.getdata(values).astype(np.int64, copy=False).view("datetime64[us]").copy()
    mask = np.ma.getmaskarray(values)
    data[mask] = np.datetime64("NaT")
    return data


def add_noise(plan, exact: dict) -> dict:
    """``exact``: column name -> numpy array (masked where NULL), as the engine returns."""
    columns = {}
    for name, kind in zip(plan.key_names, plan.key_kinds):
        columns[name], columns[name + NULL_SUFFIX] = _keys(exact[name], kind)
    clamp_counts = plan.query.table.clamp_counts
    rows = len(next(iter(exact.values()))) if exact else 0
    for stat in plan.statistics:
        if stat.mechanism.reads_histograms:
            continue                   # released below, for the groups that are kept
        values = np.ma.filled(np.ma.asarray(exact[stat.name], dtype=np.float64), 0.0)
        if stat.centre is not None:    # sum - offset * count, exactly (see statistics.sum_of)
            offset, count = stat.centre
            values = values - offset * np.ma.filled(np.ma.asarray(exact[count], dtype=np.float64), 0.0)
        if stat.step != 1.0:
            values = values * stat.step
        if stat.integer:
            # Clamped before the integer conversion, which would wrap around silently;
            # the mechanism clamps to its own range again (1-Lipschitz, sensitivity holds).
            values = np.rint(np.clip(values, -2.0 ** 62, 2.0 ** 62)).astype(np.int64)
        noisy = stat.mechanism.release(values)
        if clamp_counts and stat.stat in (Stat.count, Stat.threshold):
            noisy = np.maximum(noisy, 0)
        columns[stat.name] = noisy
    keep = None
    if plan.threshold is not None and rows:
        keep = columns[plan.threshold.name] >= plan.tau
        columns = {name: values[keep] for name, values in columns.items()}
    for stat in plan.statistics:
        if stat.mechanism.reads_histograms:
            columns[stat.name] = stat.mechanism.release(_histograms(exact[stat.histogram], keep))
    for stat in plan.statistics:
        # A count on a fine grid (Gaussian, Laplace) is shown as a whole number: rounding
        # noisy values is post-processing, and analysts expect integer counts.
        if _shown_whole(stat) and columns[stat.name].dtype.kind == "f":
            columns[stat.name] = np.rint(columns[stat.name]).astype(np.int64)
    return columns


def _histograms(column, keep) -> list:
    """The engine's histogram lists per group (None for a group with no rows)."""
    data = np.ma.getdata(column)
    mask = np.ma.getmaskarray(column)
    out = [None if m else d for d, m in zip(data, mask)]
    if keep is not None:
        out = [h for h, k in zip(out, keep) if k]
    return out


_NUMPY_TYPES = {"int": np.int64, "float": np.float64, "string": object, "boolean": np.bool_,
                "datetime": "datetime64[us]", "date": "datetime64[us]"}


def empty_noisy(plan) -> dict:
    """A zero-row stand-in for the noisy table ``add_noise`` returns, typed as it will be
    (for a dry run of post-processing before any data is read)."""
    cols = {}
    for name, kind in zip(plan.key_names, plan.key_kinds):
        cols[name] = np.array([], dtype=_NUMPY_TYPES[kind])
        cols[name + NULL_SUFFIX] = np.array([], dtype=np.bool_)
    for stat in plan.statistics:
        integer = stat.mechanism.integer_output or _shown_whole(stat)
        cols[stat.name] = np.array([], dtype=np.int64 if integer else np.float64)
    if not cols:
        cols["_none"] = np.array([], dtype=np.int64)
    return cols


def _shown_whole(stat) -> bool:
    """Counts are shown as whole numbers whatever their grid (post-processing)."""
    return stat.stat in (Stat.count, Stat.threshold)


def drowned_counts(plan) -> list:
    """(label, 95% error, rows) of each count whose noise is wider than the whole table
    (the metadata's ``rows``): such a release tells almost nothing, and says so."""
    relation = getattr(plan.query, "relation", None)
    base = getattr(relation, "base", None) or getattr(plan.query, "table", None)
    rows = getattr(base, "rows_exact", None) or getattr(base, "rows", None)
    if not rows:
        return []
    out = []
    for stat in plan.statistics:
        if stat.stat in (Stat.count, Stat.threshold) and stat.mechanism is not None:
            error = stat.mechanism.accuracy(0.05)
            if error > rows:
                out.append((stat.label, error, rows))
    return out
