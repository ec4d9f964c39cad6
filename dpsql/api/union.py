"""The plan of a UNION ALL of whole queries, or of a query's grouping sets
(``dpsql.plan.grouping_sets``): each part a release of its own, presented as one table."""
from __future__ import annotations

from ..errors import QueryError
from ..privacy.spend import ZERO


class UnionPlan:
    """The plan of a UNION ALL of whole queries: each part its own release; the cost is
    their sum."""

    def __init__(self, parts: list, sql: str):
        widths = {len(p.output_names) for p in parts}
        if len(widths) != 1:
            raise QueryError("every part of a UNION ALL must select the same number of "
                             f"columns (here {', '.join(str(len(p.output_names)) for p in parts)})")
        self.parts = parts
        self.spend = sum((p.spend for p in parts), ZERO)
        self.events = tuple(e for p in parts for e in p.events)
        self.cost = self.spend.pair
        self.bound_sql = sql
        self.key_sql = " UNION ALL ".join(p.key_sql for p in parts)
        self.output_names = parts[0].output_names


def concat(frames: list):
    """The parts' tables as one, named as the first. A column NULL in a whole part (a key a
    grouping set leaves out) takes the other parts' type, as a nullable one (Int64,
    Float64, boolean), not ``object``: a server sends it as that type."""
    if len(frames) == 1:
        return frames[0]
    import pandas as pd             # DataFrames were given: loaded
    for frame in frames[1:]:
        frame.columns = frames[0].columns
    for i in range(frames[0].shape[1]):
        # the parts' own types: of their values, or of an empty part's column (no group
        # released: its type still comes from the plan; fifteenth review)
        typed = [f.iloc[:, i] for f in frames if f.iloc[:, i].notna().any()
                 or (len(f) == 0 and f.iloc[:, i].dtype.kind != "O")]
        kinds = {c.dtype.kind for c in typed}
        if len(typed) < len(frames) and len(kinds) == 1 and kinds <= set("iufb"):
            nullable = {"i": "Int64", "u": "Int64", "f": "Float64", "b": "boolean"}[kinds.pop()]
            for f in frames:
                f[f.columns[i]] = f.iloc[:, i].astype(nullable) if f.iloc[:, i].notna().any() \
                    else pd.array([None] * len(f), dtype=nullable)
        elif len(typed) < len(frames) and kinds == {"M"}:      # times: NaT (review 39, F2)
            for f in frames:
                if not f.iloc[:, i].notna().any():
                    f[f.columns[i]] = pd.Series([pd.NaT] * len(f), index=f.index,
                                                dtype=typed[0].dtype)
    return pd.concat(frames, ignore_index=True)
