"""Step 5: exact aggregates -> noisy statistics -> the groups that may be released.

Owns: the only place where exact values meet noise. Each statistic's values,
one per group, go through its calibrated mechanism in one vectorised call;
then groups whose noisy count of persons is below the threshold are dropped.
Nothing here looks at a value except to add noise to it.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .privacy import Stat


def add_noise(plan, exact: pd.DataFrame) -> pd.DataFrame:
    columns = {name: exact[name].to_numpy() for name in plan.key_names}
    clamp_counts = plan.query.table.clamp_counts
    for stat in plan.statistics:
        values = pd.to_numeric(exact[stat.name]).to_numpy(dtype=np.float64, na_value=0.0)
        if stat.unit != 1.0:
            values = values * stat.unit
        if stat.integer:
            values = np.rint(values).astype(np.int64)
        noisy = stat.mechanism.release(values)
        if clamp_counts and stat.stat in (Stat.count, Stat.threshold):
            noisy = np.maximum(noisy, 0)
        columns[stat.name] = noisy
    noisy = pd.DataFrame(columns, index=range(len(exact)))
    if plan.threshold is not None:
        noisy = noisy[noisy[plan.threshold.name].to_numpy() >= plan.tau].reset_index(drop=True)
    return noisy
