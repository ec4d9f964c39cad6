"""The plan of a bounds estimate: each row's power-of-two bin, as one histogram statistic.

Owns: the engine expression that puts a value in its bin of ``OctaveBins``
(``dpsql.mechanisms.bounds``) and the statistic that releases the estimate. The histogram
is read as a quantile's is (``dpsql.plan.quantiles.with_histograms``): over the filtered,
truncated rows of the plan, so one person has at most ``l1_rows`` rows in it.

The bin of x > 0 is k = floor(log2 x), computed as floor(ln x / ln 2) and then corrected
by exact comparisons with 2^k and 2^(k+1), so that rounding in the logarithm never puts a
value in a bin whose edges do not hold it. An infinite or NaN double has no logarithm: it
goes to the last bin of its sign, without one being computed (an engine that casts strictly
would fail on it, and a failure that depends on one person's value would tell). NULL has no
bin.
"""
from __future__ import annotations

import math

import numpy as np
from sqlglot import exp

from ..frontend.typecheck import float_literal
from ..mechanisms.bounds import OctaveBins, OctaveBounds
from ..privacy.params import Stat
from .statistic import Statistic


def _num(value: int) -> exp.Expression:
    node = exp.Literal.number(str(abs(value)))
    return exp.Paren(this=exp.Neg(this=node)) if value < 0 else node


def _case(condition, true, default=None) -> exp.Expression:
    return exp.Case(ifs=[exp.If(this=condition, true=true)], default=default)


def _exponent(y: exp.Expression, bins: OctaveBins) -> exp.Expression:
    """floor(log2 y) for y > 0, within [emin, emax - 1] (NULL logarithm: emax - 1)."""
    big = exp.DataType.build("BIGINT")
    log2 = exp.TryCast(this=exp.Floor(this=exp.Div(
        this=exp.Ln(this=y.copy()), expression=float_literal(math.log(2.0)))), to=big)
    # An infinite or NaN y (NaN sorts above every number) has no logarithm to cast to an
    # integer: it goes to the last bin without one, on every engine.
    finite = exp.LTE(this=y.copy(), expression=float_literal(float(np.finfo(np.float64).max)))
    guess = _case(finite, log2, _num(bins.emax - 1))
    k = exp.Anonymous(this="GREATEST", expressions=[exp.Anonymous(
        this="LEAST", expressions=[guess, _num(bins.emax - 1)]), _num(bins.emin)])
    two = float_literal(2.0)
    below = _case(exp.and_(exp.GT(this=k.copy(), expression=_num(bins.emin)),
                           exp.LT(this=y.copy(), expression=exp.Pow(this=two, expression=k.copy()))),
                  exp.Literal.number(1), exp.Literal.number(0))
    above = _case(exp.and_(exp.LT(this=k.copy(), expression=_num(bins.emax - 1)),
                           exp.GTE(this=y.copy(), expression=exp.Pow(
                               this=two.copy(), expression=exp.Add(
                                   this=k.copy(), expression=exp.Literal.number(1))))),
                  exp.Literal.number(1), exp.Literal.number(0))
    return exp.Add(this=exp.Sub(this=k, expression=below), expression=above)


def octave_cell(value: exp.Expression, bins: OctaveBins) -> exp.Expression:
    """The bin of each row's value as BIGINT (NULL for NULL)."""
    double = exp.Cast(this=value, to=exp.DataType.build("DOUBLE"))
    side = bins.side

    def magnitude(y):
        return exp.Paren(this=exp.Sub(this=_exponent(y, bins), expression=_num(bins.emin)))
    return exp.Case(ifs=[
        exp.If(this=exp.EQ(this=double.copy(), expression=exp.Literal.number(0)),
               true=_num(side)),
        exp.If(this=exp.GT(this=double.copy(), expression=exp.Literal.number(0)),
               true=exp.Add(this=_num(side + 1), expression=magnitude(double.copy()))),
        exp.If(this=exp.LT(this=double.copy(), expression=exp.Literal.number(0)),
               true=exp.Sub(this=_num(side - 1),
                            expression=magnitude(exp.Paren(this=exp.Neg(this=double.copy())))))])


def bounds_statistic(stats, col, value: exp.Expression) -> Statistic:
    """The one statistic of a bounds estimate of ``col``: its histogram over the bins."""
    integer = col.type == "int"
    bins = OctaveBins(integer)
    cell = octave_cell(value, bins)
    marker = exp.Anonymous(this="_dpsql_bounds", expressions=[
        cell.copy(), exp.Literal.string(f"octaves|{'int' if integer else 'float'}")])
    rows = int(stats.l1_rows)
    item = Statistic(f"_s{len(stats.items)}", f"BOUNDS({col.name})", marker, Stat.quantile,
                     rows, rows, False, cell=cell,
                     calibrator=lambda eps: OctaveBounds.calibrate(integer, rows, eps))
    stats.items.append(item)
    return item
