"""Step 3c: share a query's privacy over its statistics, and cost the query.

Owns: each statistic's share of the query's epsilon (or rho), the calibration of
its mechanism, and the query's cost, all before anything runs. The rule
(docs/privacy.md, "How a query's privacy is split"):

* Each aggregate of the query (COUNT, SUM, AVG, VAR, ...) gets a part of the
  query's privacy in proportion to the number of statistics it reads (a COUNT one,
  an AVG two, a VAR three); a count kept only for the threshold is a part of its
  own. Across aggregates no data-free weighting is fair (their errors are in
  different units); these parts are what an equal share per statistic gave each
  aggregate, so the rule never moves privacy from one output to another.
* Within an aggregate, its part is spent on the statistics it reads so that its
  own error is smallest: statistic i moves the aggregate's variance by a_i Var_i
  (``StatisticSet.weigh``, kept as log a_i; at data-free typical values: for AVG the mean anywhere
  within the bounds). Laplace noise has variance 2 (Delta_i / eps_i)^2, smallest
  under sum eps_i fixed at eps_i ~ (a_i Delta_i^2)^(1/3); Gaussian noise
  Delta_i^2 / (2 rho_i), smallest at rho_i ~ (a_i Delta_i^2)^(1/2). A statistic
  read by several aggregates gets the sum of its parts.
* ``Privacy(split="equal")`` gives every statistic the same share instead.
* Composition inside the query: Laplace statistics add up in epsilon; Gaussian
  statistics share one rho (the rho that the Gaussian part's (epsilon, delta)
  converts to), so several Gaussian statistics cost one conversion, not one
  each. A query given ``Privacy(rho=...)`` splits rho; a Laplace statistic with
  rho_i gets epsilon_i = sqrt(2 rho_i).
* The threshold for unknown group keys takes its own delta. Its count (of rows or
  of distinct persons: ``dpsql.plan.threshold``, which runs this split once per
  candidate) is a released statistic's, or a part of its own as above.

A query's cost is a ``Spend`` (``dpsql.privacy.spend``): (epsilon, delta) by
basic composition, and (rho, delta outside zCDP); sessions enforce one pair.
"""
from __future__ import annotations

import math

from ..privacy import zcdp
from ..errors import QueryError
from ..mechanisms.additive import calibrate, calibrate_rho
from ..privacy.params import Privacy
from ..privacy.composition import dp_event
from ..privacy.spend import ZERO, Spend


def _check_delta(privacy: Privacy, gaussian: bool, needs_threshold: bool) -> None:
    if privacy.delta > 0:
        return
    if needs_threshold:
        raise QueryError("GROUP BY keys that are not public are released only above a "
                         "threshold, which needs delta > 0: give the query a delta "
                         "(Privacy(delta=...), --delta; default 1e-10), or list the keys' "
                         "public values in the metadata (values: [...])")
    if gaussian:
        raise QueryError("a Gaussian mechanism needs delta > 0: give the query a delta "
                         "(Privacy(delta=...), --delta; default 1e-10), or map the statistic "
                         "to a Laplace mechanism in privacy.mechanisms.map")


def _weights(stats, items, chosen, rho_mode: bool, equal: bool) -> dict:
    """Statistic name -> its share of the query's privacy (the shares add up to 1)."""
    if equal:
        return {s.name: 1 / len(items) for s in items}
    # A quantile is never weighed (it is an aggregate of one statistic): any sensitivity.
    sens = {s.name: (1.0 if s.name not in chosen else s.l2 if chosen[s.name].is_gaussian
                     else s.l1) for s in items}
    read = {name for part in stats.outputs for name in part}
    # Each aggregate is one part; a statistic no aggregate reads (a count kept for the
    # threshold alone) is a part of its own.
    parts = [part for part in stats.outputs if part]
    parts += [{s.name: 0.0} for s in items if s.name not in read]     # log weights
    # An aggregate's part is in proportion to the statistics it reads: what an equal share
    # per statistic gave it, so no aggregate has less than before; within it, the least error.
    total = sum(len(part) for part in parts)
    shares = dict.fromkeys(sens, 0.0)
    for part in parts:
        for name, share in _part_shares(part, sens, chosen, rho_mode).items():
            shares[name] += share * len(part) / total
    return shares


def _part_shares(part: dict, sens: dict, chosen: dict, rho_mode: bool) -> dict:
    """One aggregate's part over its statistics, in log space (bounds may be huge)."""
    logs = {}
    for name, log_a in part.items():
        gaussian = name in chosen and chosen[name].is_gaussian
        # Variance per unit of privacy: Laplace 2 Delta^2 / eps^2, Gaussian
        # Delta^2 / (2 rho); in rho, a Laplace statistic's is Delta^2 / rho.
        root = 2 if (rho_mode or gaussian) else 3
        d = sens[name]
        if not (math.isfinite(log_a) and d > 0 and math.isfinite(d)):
            logs[name] = None
            continue
        logs[name] = (log_a + (math.log(0.5) if gaussian else 0.0) + 2 * math.log(d)) / root
    known = [v for v in logs.values() if v is not None]
    if not known:
        return {name: 1 / len(part) for name in part}
    top = max(known)
    terms = {n: (math.exp(v - top) if v is not None else 0.0) for n, v in logs.items()}
    # Every statistic is noised, so none gets nothing: a floor of 1% of an equal share.
    floor = 0.01 * sum(terms.values()) / len(terms)
    terms = {n: max(t, floor) for n, t in terms.items()}
    total = sum(terms.values())
    return {n: t / total for n, t in terms.items()}


def split(stats, privacy: Privacy, needs_threshold: bool) -> tuple:
    """Calibrate every statistic of ``stats``; returns (threshold delta, cost 4-vector)."""
    items = stats.items
    if not items:
        return 0.0, ZERO     # public keys only: nothing noisy, nothing spent
    groups = stats.groups if stats.grouped else 1     # entries of a statistic one person moves
    # A statistic with a calibrator has its own mechanism (a quantile: epsilon -> permute-
    # and-flip, pure epsilon-DP); it counts with the Laplace statistics.
    chosen = {s.name: privacy.mechanisms.for_stat(s.stat) for s in items
              if s.calibrator is None}
    gauss = [s for s in items if s.name in chosen and chosen[s.name].is_gaussian]
    gauss_names = {s.name for s in gauss}
    laplace = [s for s in items if s.name not in gauss_names]
    _check_delta(privacy, bool(gauss), needs_threshold)
    equal = privacy.split == "equal"
    # Users of the query's delta: the Gaussian part (or, for a rho query, the conversion
    # of its rho to epsilon) and the threshold, in equal parts.
    users = (1 if gauss or privacy.rho is not None else 0) + (1 if needs_threshold else 0)
    delta_t = privacy.delta / users if needs_threshold else 0.0
    delta_g = privacy.delta / users if gauss else 0.0

    def calibrate_laplace(s, eps):
        if s.name not in chosen:
            s.mechanism = s.calibrator(eps)
            return
        s.mechanism = calibrate(chosen[s.name], l1=s.l1, l2=s.l2, epsilon=eps, delta=0.0,
                                integer=s.integer, groups=groups)

    def calibrate_gauss(s, rho):
        s.mechanism = calibrate_rho(chosen[s.name], l1=s.l1, l2=s.l2, rho=rho, delta=delta_g,
                                    integer=s.integer, groups=groups)

    shares = _weights(stats, items, chosen, privacy.rho is not None, equal)
    if privacy.rho is not None:
        for s in items:
            rho = privacy.rho * shares[s.name]
            if s.name in gauss_names:
                calibrate_gauss(s, rho)
            else:
                calibrate_laplace(s, math.sqrt(2 * rho))
        eps_g = None
    else:
        for s in laplace:
            calibrate_laplace(s, privacy.epsilon * shares[s.name])
        eps_g = privacy.epsilon * sum(shares[s.name] for s in gauss)
        if gauss:
            try:
                rho_g, _ = zcdp.rho_for(eps_g, delta_g)
            except ValueError as err:
                raise QueryError(f"the Gaussian statistics' share (epsilon={eps_g:g}, "
                                 f"delta={delta_g:g}) converts to no usable rho ({err}); "
                                 "give the query a larger epsilon or delta") from None
            part = sum(shares[s.name] for s in gauss)
            for s in gauss:
                calibrate_gauss(s, rho_g * shares[s.name] / part)
    return delta_t, _cost(laplace, gauss, privacy, delta_g, delta_t, eps_g)


def _cost(laplace, gauss, privacy, delta_g, delta_t, eps_g) -> Spend:
    eps_l = sum(s.mechanism.epsilon for s in laplace)
    rho_l = sum(s.mechanism.epsilon ** 2 / 2 for s in laplace)
    rho_g = sum(s.mechanism.rho for s in gauss)
    rho = rho_l + rho_g
    if privacy.rho is not None:
        # The whole query's rho converted once, at the delta the threshold does not use;
        # with Laplace statistics only, basic composition may be smaller: the smaller.
        conv_delta = privacy.delta - delta_t
        if gauss or (conv_delta > 0 and zcdp.epsilon_for(rho, conv_delta) < eps_l):
            return Spend(zcdp.epsilon_for(rho, conv_delta), privacy.delta, rho, delta_t)
        return Spend(eps_l, delta_t, rho, delta_t)
    eps = math.fsum(s.mechanism.epsilon for s in laplace)
    if gauss:
        eps += min(zcdp.epsilon_for(rho_g, delta_g), eps_g)
    # Calibration rounds each statistic's epsilon down (a grid's scale), so the parts add
    # up to a hair under what was asked: the query is charged what was asked, exactly
    # (never less than the parts).
    eps = max(eps, privacy.epsilon)
    return Spend(eps, (delta_g if gauss else 0.0) + delta_t, rho, delta_t)


def query_events(statistics, spend: Spend) -> tuple:
    """The query's privacy events for a PLD or RDP budget (dpsql.privacy.composition):
    each Laplace-family statistic's exact discrete Laplace, each discrete Gaussian one
    person moves in one entry, each other pure-epsilon mechanism's epsilon, and the other
    Gaussian statistics together as one event: rho-zCDP (their rho added up) and
    (epsilon, delta)-DP by the tight conversion at the delta they were given (the query's
    delta less the threshold's)."""
    events = [e for s in statistics for e in s.mechanism.events()]
    rho = math.fsum(s.mechanism.rho for s in statistics
                    if s.mechanism.rho is not None and not s.mechanism.events())
    if rho > 0:
        delta = spend.delta - spend.rho_delta
        events.append(dp_event(zcdp.epsilon_for(rho, delta), delta, rho))
    return tuple(events)
