"""SmartNoise SQL's reader API, where it has a meaning in dpsql; a clear refusal where not.

Owns: the ``Reader`` methods a SmartNoise script calls beyond ``execute``/``execute_df``/
``get_privacy_cost`` (docs/smartnoise.md): ``execute_with_accuracy`` (rows with their
accuracies at ``Privacy(alphas=...)``), ``get_simple_accuracy`` (per output column, without
running anything), ``odometer`` (a view of what the session has spent), and the options of
``execute`` (``accuracy=True``; ``postprocess=False`` and ``pre_aggregated=`` are refused,
as is ``parse_query_string``).
"""
from __future__ import annotations

import numpy as np
from sqlglot import exp

from ..errors import NotSupportedError, ProgrammingError
from ..privacy.params import Stat
from ..release.intervals import check_alpha, reads
from .present import native

DEFAULT_ALPHAS = (0.05,)


class SmartNoiseMethods:
    """Mixed into ``dpsql.api.reader.Reader``."""

    def execute_with_accuracy(self, sql: str, params=None, privacy=None,
                              replay: bool = True) -> list:
        """SmartNoise's shape: a header ``[names, [names_95, ...]]``, then per row
        ``(values, [accuracies at alpha, ...])`` for each alpha of ``privacy.alphas`` (of
        ``reader.privacy`` by default; 0.05 if none is set). An accuracy is the half-width of
        the output's interval at 1 - alpha (``execute_with_accuracy_df``), None where the
        column has no noise. One release: the other alphas are read from it for free."""
        chosen = self.privacy if privacy is None else privacy
        alphas = [check_alpha(a) for a in (getattr(chosen, "alphas", ()) or DEFAULT_ALPHAS)]
        frames = [self.execute_with_accuracy_df(sql, alpha, params, privacy,
                                                replay if i == 0 else True)
                  for i, alpha in enumerate(alphas)]
        names = list(self._plan(sql, params, privacy).output_names)
        header = [tuple(names), [tuple(f"{n}_{_level(a)}" for n in names) for a in alphas]]
        rows = [header]
        for i in range(len(frames[0])):
            values = tuple(native(frames[0][n].iloc[i]) for n in names)
            rows.append((values, [tuple(_half(f, n, i) for n in names) for f in frames]))
        return rows

    def get_simple_accuracy(self, sql: str, alpha: float, params=None, privacy=None) -> list:
        """Per output column, the half-width of its interval at 1 - ``alpha`` when it does
        not depend on the data (an output linear in noisy statistics: counts, sums, their
        sums and multiples), else None (keys, averages, quantiles). Runs nothing, spends
        nothing (SmartNoise's ``get_simple_accuracy``)."""
        alpha = check_alpha(alpha)
        plan = self._plan(sql, params, privacy)
        parts = getattr(plan, "parts", [plan])
        per_part = [_simple(part, alpha) for part in parts]
        return [None if any(p[i] is None for p in per_part) else max(p[i] for p in per_part)
                for i in range(len(per_part[0]))]

    @property
    def odometer(self) -> "Odometer":
        """SmartNoise's odometer, as a view of this session's spending."""
        return Odometer(self)

    def parse_query_string(self, sql: str):
        raise NotSupportedError("parse_query_string is SmartNoise's own parser and AST; dpsql "
                                "parses with sqlglot: reader.explain(sql) shows how a query is "
                                "read, bounded and noised")

    def _smartnoise_execute(self, sql, params, privacy, replay, accuracy=False,
                            postprocess=True, pre_aggregated=None, **other) -> list:
        if other:
            raise ProgrammingError(f"execute() got unexpected keyword arguments: "
                                   f"{', '.join(sorted(other))}")
        if pre_aggregated is not None:
            raise NotSupportedError(
                "execute(pre_aggregated=...) is not supported: dpsql computes the exact "
                "aggregates itself, after truncating each person's rows and clamping values; "
                "aggregates computed elsewhere would skip both, and the noise would not cover "
                "them")
        if not postprocess:
            raise NotSupportedError(
                "execute(postprocess=False) is not supported: dpsql releases the query's "
                "columns, computed from the noisy statistics at no extra cost; to get the noisy "
                "sums and counts behind an AVG, ask for SUM(x) and COUNT(x) in the query "
                "(reader.explain shows every statistic)")
        if accuracy:
            return self.execute_with_accuracy(sql, params, privacy, replay)
        return self.execute(sql, params, privacy, replay)


class Odometer:
    """What a session has spent, as SmartNoise's ``reader.odometer`` shows it: ``spent``
    (epsilon, delta) and ``k`` (releases paid for; a replay costs nothing and is not
    counted). dpsql charges each release itself, so nothing else may move it."""

    def __init__(self, reader) -> None:
        self._reader = reader

    @property
    def spent(self) -> tuple:
        return self._reader.spent

    @property
    def k(self) -> int:
        ledger = self._reader.accountant.ledger
        if ledger is not None:
            return sum(1 for r in ledger.records() if not r.replay)
        with self._reader._lock:
            return sum(1 for r in self._reader._history if not r.replay)

    def spend(self, *args, **kwargs) -> None:
        raise NotSupportedError("odometer.spend is not supported: dpsql charges every release "
                                "itself, when the data are read")

    def reset(self) -> None:
        raise NotSupportedError("odometer.reset is not supported: a session's spending is what "
                                "its budget limits and cannot be undone; open a new reader (or "
                                "a new ledger) for a new budget")

    def __repr__(self) -> str:
        eps, delta = self.spent
        return f"<dpsql odometer: {self.k} release(s), spent epsilon={eps:.6g}, delta={delta:.3g}>"


def _level(alpha: float) -> str:
    return f"{(1 - alpha) * 100:g}".replace(".", "_")


def _half(frame, name: str, i: int):
    if f"{name}_lo" not in frame.columns:
        return None
    import pandas as pd             # ``frame`` is a DataFrame: loaded
    lo, hi = frame[f"{name}_lo"].iloc[i], frame[f"{name}_hi"].iloc[i]
    if pd.isna(lo) or pd.isna(hi):
        return None
    return (float(hi) - float(lo)) / 2


# ------------------------------------------------------------------ simple accuracy

def _simple(plan, alpha: float) -> list:
    stats = {s.name: s for s in plan.statistics}
    out = []
    for item in plan.post.expressions:
        body = item.this if isinstance(item, exp.Alias) else item
        names = reads(body, set(stats))
        coefficients = _linear(body, set(stats)) if names else None
        if not coefficients:
            out.append(None)
            continue
        beta = alpha / len(names)
        halves = [_statistic_half(stats[n], beta) for n in coefficients]
        out.append(None if None in halves else float(sum(
            abs(c) * h for c, h in zip(coefficients.values(), halves))))
    return out


def _statistic_half(stat, beta: float):
    m = stat.mechanism
    if m.value_bounds() is not None:
        return None
    half = m.accuracy(beta)
    if stat.stat in (Stat.count, Stat.threshold) and not m.integer_output:
        half += 0.5                  # shown rounded to a whole number
    return half


def _linear(node, names: set) -> dict | None:
    """{statistic: coefficient} when ``node`` is a constant plus a linear combination of
    noisy statistics, else None."""
    if isinstance(node, (exp.Paren, exp.Try, exp.Cast, exp.TryCast)):
        return _linear(node.this, names)
    if isinstance(node, exp.Column):
        return {node.name: 1.0} if node.name in names else None
    if isinstance(node, exp.Literal) and not node.is_string:
        return {}
    if isinstance(node, exp.Neg):
        inner = _linear(node.this, names)
        return None if inner is None else {k: -v for k, v in inner.items()}
    if isinstance(node, (exp.Add, exp.Sub)):
        a, b = _linear(node.this, names), _linear(node.expression, names)
        if a is None or b is None:
            return None
        sign = -1.0 if isinstance(node, exp.Sub) else 1.0
        return {k: a.get(k, 0.0) + sign * b.get(k, 0.0) for k in {**a, **b}}
    if isinstance(node, exp.Mul):
        for const, other in ((node.this, node.expression), (node.expression, node.this)):
            c = _constant(const)
            inner = _linear(other, names) if c is not None else None
            if inner is not None:
                return {k: c * v for k, v in inner.items()}
    return None


def _constant(node) -> float | None:
    while isinstance(node, (exp.Paren, exp.Cast, exp.TryCast)):
        node = node.this
    if isinstance(node, exp.Neg):
        inner = _constant(node.this)
        return None if inner is None else -inner
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            value = float(node.this)
        except ValueError:
            return None
        return value if np.isfinite(value) else None
    return None
