"""Step 3b: the noisy count that decides which groups of unknown keys are released.

Owns: the choice between a count of rows and a count of distinct persons as the
threshold statistic, its tau, and the words ``explain`` uses for it
(docs/privacy.md, "Thresholds").

A person moves at most L0 groups (``StatisticSet.groups``: k, or max_groups), and at
most ``per_key`` of their rows are in one group. Two counts can decide a group:

* its **row count**: a person adds up to ``per_key`` rows to a key of their own, so
  ``tau = (per_key - 1) + min { t : L0 * P(1 + Z >= t) <= delta_t }``, with the row
  count's noise Z (sensitivity: L1 = L0 * per_key and L2 = sqrt(L0) * per_key with
  max_groups / max_rows_per_group, else L1 = L2 = k);
* its **count of distinct persons**: a person adds exactly 1 to a key of their own, so
  ``tau = min { t : L0 * P(1 + Z >= t) <= delta_t }``, with that count's noise Z
  (sensitivity 1 per group: L1 = L0, L2 = sqrt(L0)).

Each candidate reuses a count the query releases, or adds one of kind ``threshold``
that takes a share of epsilon like any statistic (``dpsql.plan.split``: a part of its
own). Both are planned, each with its own split, and the person count is kept when
its *noise part* ``min { t : ... }`` is below the row count's; otherwise (ties
included) the row count. Why this rule, which never looks at the data:

* A group of P persons holds R = rho * P rows, 1 <= rho <= per_key. Which count
  withholds fewer groups depends on rho, unknown before the data is read: the row
  count clears more groups when rho > tau_rows / tau_persons. When the person
  count's noise part is no smaller, the row count clears every group the person
  count would (R >= P) up to the shift, and is kept. When it is smaller, it is
  smaller by the ratio of the two sensitivities: per_key / 2 with max_groups and
  max_rows_per_group (L1 = L0 against L0 * per_key, the added count at half the
  epsilon), about sqrt(k / 2) with Gaussian noise (L2 = sqrt(L0) against k). The
  groups a threshold withholds are the small ones, of keys fine enough to need a
  threshold, whose persons hold few rows each (1.4 on average in the retail data's
  priority x return_flag x line_no groups, against ratios of 4 to 15 at epsilon 1):
  the person count releases them. Groups whose persons hold more rows than the
  ratio are large and usually clear either threshold.
* The shift (per_key - 1) only pays for one person holding per_key rows of one key:
  a group makes it up as soon as its rows exceed its persons by that much, nearly
  every group of user-level data near tau. So equal noise parts are a tie, and the
  tie goes to the row count, which is the cheaper aggregate on every engine and, when
  the query releases it, costs nothing more.

An added person count has a price: its share of epsilon is taken from the released
statistics (``explain`` shows each share, and the row count's tau it was chosen over).
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from ..privacy.params import Privacy, Stat
from ..privacy.spend import Spend
from .split import split
from .statistic import Statistic

_TIE = 1e-9          # relative: two noise parts this close are the same noise


@dataclass
class Candidate:
    """One way to threshold, planned: its statistic and what its tau would be."""

    persons: bool
    released: bool               # a count the query releases (else added for the threshold)
    statistic: Statistic
    noise: float                 # min { t : L0 * P(1 + Z >= t) <= delta_t }
    tau: float                   # noise, plus per_key - 1 for a row count
    items: list
    mechanism: object = None     # the statistic's mechanism in this candidate's split
    delta: float = 0.0           # the threshold's delta in this candidate's split


@dataclass
class Threshold:
    """The threshold a plan applies: ``statistic >= tau`` keeps a group."""

    statistic: Statistic
    tau: float
    delta: float
    persons: bool
    groups: int                  # L0: groups one person can reach
    per_key: int                 # rows of one person in one group
    other: Candidate | None = None   # the count not chosen, for explain

    def describe(self) -> str:
        """The threshold lines of ``explain``: which count, its tau, and why."""
        stat, g = self.statistic, self.groups
        if self.persons:
            what = (f"noisy count of distinct persons {stat.name} = {stat.label} >= "
                    f"{self.tau:.6g} (sensitivity 1 per group, a person in at most {g} group(s)")
        else:
            rows = (f"up to {self.per_key} rows in one: tau includes {self.per_key - 1} for "
                    "those" if self.per_key > 1 else "one row in each")
            what = (f"noisy count of rows {stat.name} = {stat.label} >= {self.tau:.6g} (a "
                    f"person in at most {g} group(s), {rows}")
        lines = [f"  threshold: a group is released only if its {what}; delta="
                 f"{self.delta:.3g} for keys not public)"]
        other = self.other
        if other is not None:
            unit = "persons" if other.persons else "rows"
            how = "the query's own" if other.released else "added at a share of epsilon"
            why = ("the person count's noise needs fewer persons than the row count's needs rows"
                   if self.persons else "the person count's noise needs no fewer persons than "
                   "the row count's needs rows")
            lines.append(f"    chosen over {other.statistic.label} ({how}), whose tau would be "
                         f"{other.tau:.6g} {unit} ({other.noise:.6g} of it for noise): {why} "
                         "(docs/privacy.md, Thresholds)")
        return "\n".join(lines)


def _row_counts(stats) -> list:
    """Released counts of rows: COUNT(*), then any COUNT(x) (COUNT(x) <= COUNT(*), so a
    person still holds at most per-key rows of a key)."""
    star = exp.Count(this=exp.Star())
    return ([s for s in stats.items if s.aggregate == star]
            + [s for s in stats.items if isinstance(s.aggregate, exp.Count)
               and not isinstance(s.aggregate.this, (exp.Star, exp.Distinct))])


def _candidates(stats) -> list:
    """(persons?, the released count or None, a function that adds one)."""
    rows = _row_counts(stats)
    out = [(False, rows[0] if rows else None, lambda: stats.count_rows(Stat.threshold))]
    if stats.private_id is not None:
        persons = [s for s in stats.items if s.persons]
        out.append((True, persons[0] if persons else None,
                    lambda: stats.count_distinct_persons(Stat.threshold)))
    return out


def _tau(statistic: Statistic, stats, delta_t: float, persons: bool, per_key: int) -> tuple:
    noise = statistic.mechanism.threshold(max_groups=stats.groups, delta=delta_t)
    return noise, noise + (0 if persons else per_key - 1)


def choose_threshold(stats, privacy: Privacy) -> tuple[Threshold, Spend]:
    """Plan each candidate with its own split, keep the person count if its noise part
    is smaller (the row count on a tie; module docstring), and calibrate the plan with it."""
    per_key = stats.per_group or stats.k        # rows of one person in a key
    before = list(stats.items)
    planned = []
    for persons, released, add in _candidates(stats):
        stats.items = list(before)
        statistic = released or add()
        delta_t, _ = split(stats, privacy, True)
        noise, tau = _tau(statistic, stats, delta_t, persons, per_key)
        planned.append(Candidate(persons, released is not None, statistic, noise, tau,
                                 list(stats.items), statistic.mechanism, delta_t))
    best = planned[0]
    for candidate in planned[1:]:
        if candidate.noise < best.noise * (1 - _TIE):
            best = candidate
    stats.items = best.items
    delta_t, spend = split(stats, privacy, True)      # calibrate the chosen plan
    _, tau = _tau(best.statistic, stats, delta_t, best.persons, per_key)
    other = next((c for c in planned if c is not best), None)
    return Threshold(best.statistic, tau, delta_t, best.persons, stats.groups, per_key,
                     other), spend
