"""The session: one place that runs the steps in order.

Owns: orchestration: the ``Reader`` (opened by ``dpsql.api.session``). Data flows one way: parse -> validate -> plan (with its cost) ->
budget check -> execute -> charge -> noise -> post-process -> result. The
budget check comes before any data is touched; the charge comes as soon as the
data has been read, so an answer is never released uncharged and a refused
query costs nothing.
"""
from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import numpy as np

from ..release import report
from ..privacy.accounting import Accountant
from ..privacy.records import ReleaseRecord
from ..privacy.spend import ZERO, remaining
from ..release.intervals import check_alpha, with_intervals
from ..errors import OperationalError, ProgrammingError, QueryError, warn
from ..engines.postprocess import PostProcessor, render
from ..engines.post_rows import grouped
from ..engines.post_scalar import scalar
from ..release.explain import describe
from ..metadata.model import Metadata
from ..frontend.parse import parse_query, typed_params, union_parts
from ..frontend.bigquery import query_privacy
from ..plan import NOISY_TABLE, Plan, build_plan, grouping_sets
from ..privacy.params import Budget, Privacy, large_privacy_warning
from ..release.noise import add_noise, drowned_counts, empty_noisy
from ..plan.aggregates import check_statistics
from ..plan.guard_limits import check_conditions, check_releases
from ..plan.validate import validate
from ..frontend.dialect import ANALYST_DIALECT
from ..frontend.binding import statement_work
from .display import HTMLPage, Progress, Text, progress_callback, session_html, session_summary
from .accuracy_target import budget_line, epsilon_for
from .caches import Bounded
from .union import UnionPlan, concat
from .present import frame, frame_rows, python_values, whole
from .collector import collector_paused
from .options import session_budget, session_privacy
from .smartnoise import SmartNoiseMethods

if TYPE_CHECKING:        # pandas loads on the first DataFrame asked for, not with dpsql
    import pandas as pd

_PLAN_CACHE_SIZE = 32
_PLAN_CACHE_CHARS = 200_000
"""Plans kept for queries asked again: at most 32, and at most 200,000 characters of their
SQL, engine SQL and post-processing SQL in all. A plan's trees hold 0.2-0.9 objects per
character of its compiled SQL (33,600 for 256 SUMs), and every one of them is walked by
each of the collector's full passes, which hold the interpreter lock: weighed by the
analyst's SQL alone, 32 plans of 256 SUMs kept over a million objects, and a server's full
passes stalled every analyst for seconds (issue 33's thirty-third review)."""
_RELEASE_CACHE_SIZE = 64


class Reader(SmartNoiseMethods):
    """A private session over the tables described by ``metadata`` (SmartNoise's reader API
    too: ``dpsql.api.smartnoise``)."""

    def __init__(self, engine, metadata: Metadata, privacy: Privacy | None = None,
                 budget: Budget | None = None, ledger=None) -> None:
        self.engine = engine
        self.metadata = metadata
        self.privacy = session_privacy(privacy)
        self.accountant = Accountant(session_budget(budget), ledger)
        self._plans = Bounded(_PLAN_CACHE_SIZE, weigh=self._weight,
                              limit=_PLAN_CACHE_CHARS, evicted=self._forget)
        self._history: list = []     # this session's releases, for report() (no ledger)
        # (canonical SQL, privacy) -> noisy statistics of the latest releases (a ledger
        # keeps them all)
        self._releases = Bounded(_RELEASE_CACHE_SIZE)
        self._compiled: dict = {}    # id(plan part) -> (engine SQL, post-processing SQL)
        self._scalars: dict = {}     # id(plan part) -> its post-processing in Python
        self._marks: dict = {}       # (canonical SQL, privacy key) -> ledger fingerprint
        self.post = PostProcessor()
        self._lock = threading.Lock()
        self.after_charge = None
        """None, or ``run(function, *args)``: how the work after the charge that reads no
        data and writes no ledger (noise, post-processing) is called. ``dpsql serve`` runs
        it where the statement's timeout and cancel stop it (docs/deployment.md)."""
        self.progress = None
        """Progress of a query that reads the data for more than a second: True draws
        tqdm's bar (a widget in a notebook, stderr in a terminal; the CLI's, on a
        terminal); a callable is told the percentage, then None when it is done."""

    def __repr__(self) -> str:
        """Tables, privacy per query, budget, spent and ledger: never a data value."""
        return f"<dpsql.Reader {session_summary(self)}>"

    def _repr_html_(self) -> str:
        return session_html("dpsql.Reader", self)

    # -- planning (no data touched) -----------------------------------------
    def _plan(self, sql: str, params=None, privacy: Privacy | None = None) -> Plan:
        # Parameters keyed with their types: 1, 1.0 and True are equal in Python.
        # literal() first refuses values that cannot be bound (lists, ...).
        if not isinstance(sql, str):
            raise QueryError(f"the query must be a string, not {type(sql).__name__}")
        sql = str.__str__(sql)      # a str subclass could fake equality in the plan cache
        params, typed = typed_params(params)
        privacy = self.privacy if privacy is None else privacy
        key = (sql, typed, self._privacy_key(privacy))
        note = large_privacy_warning(privacy)
        if note is not None:
            warn(note)
        cached = self._plans.get(key)
        if cached is not None:
            return cached
        with collector_paused():
            plan = self._new_plan(sql, params, privacy, note)
        with self._lock:
            self._plans.put(key, plan)
        return plan

    def _new_plan(self, sql: str, params, privacy: Privacy, note) -> Plan:
        tree = parse_query(sql, params)
        # BigQuery's OPTIONS (epsilon, delta) set this query's privacy, as privacy= would.
        asked = query_privacy(tree, privacy)
        if asked is not privacy and large_privacy_warning(asked) not in (None, note):
            warn(large_privacy_warning(asked))
        privacy = asked
        plans, statistics = [], 0
        with statement_work():      # the work per private row of all the parts together
            parts = [grouping_sets.expand(part) or [part] for part in union_parts(tree)]
            check_releases(sum(len(sets) for sets in parts), self.engine.max_releases)
            for each in (each for sets in parts for each in sets):
                check_conditions(each)  # before any part is planned (review 41, F2)
            for sets in parts:          # each set: a share of the privacy
                for each in sets:
                    query = validate(each, self.metadata, self.engine.public_rows)
                    statistics = check_statistics(statistics, query.aggregates,
                                                  self.engine.max_statistics)
                    plan = build_plan(query, grouping_sets.share(privacy, len(sets)),
                                      self.engine.pre_cut_work)
                    self._compile(plan)
                    plans.append(plan)
        return UnionPlan(plans, tree.sql(ANALYST_DIALECT)) if len(plans) > 1 else plans[0]

    def _compile(self, plan: Plan) -> None:
        """Render both queries of ``plan`` once and dry-run them, so that query errors
        surface before any data is read (a cached plan then runs without sqlglot)."""
        exact_sql = self.engine.compile(plan)
        post_sql = render(plan.post)
        empty = empty_noisy(plan)
        dtypes = {name: values.dtype for name, values in empty.items()}
        # Post-processing evaluated in Python has no dry run: its rules cannot fail to bind.
        short = (grouped(plan.post, NOISY_TABLE, dtypes, plan.key_names) if plan.query.keys
                 else scalar(plan.post, NOISY_TABLE, dtypes))
        if short is None:
            self.post.run(post_sql, empty)
        with self._lock:
            self._compiled[id(plan)] = (exact_sql, post_sql)
            if short is not None:
                self._scalars[id(plan)] = short

    def _sql(self, plan: Plan) -> tuple:
        """(engine SQL, post-processing SQL) of a part (compiled again if evicted meanwhile)."""
        found = self._compiled.get(id(plan))
        if found is None:
            self._compile(plan)
            found = self._compiled[id(plan)]
        return found

    def _weight(self, key, plan) -> int:
        """The characters of a kept plan's SQL and of what it compiled to."""
        parts = plan.parts if isinstance(plan, UnionPlan) else [plan]
        return len(key[0]) + sum(len(text) for part in parts
                                 for text in self._compiled.get(id(part), ()))

    def _forget(self, plan) -> None:
        for part in plan.parts if isinstance(plan, UnionPlan) else [plan]:
            self._compiled.pop(id(part), None)
            self._scalars.pop(id(part), None)
        self._marks = {k: v for k, v in self._marks.items() if k[0] != plan.bound_sql}

    def _describe(self, plan: Plan) -> str:
        return describe(plan, self.engine.dialect.render(plan.exact, pretty=True),
                        render(plan.post, pretty=True))

    def _fingerprint(self, plan, privacy_key) -> str:
        # Keyed by what determines the plan (its canonical SQL and privacy, in this
        # session's metadata), never by object identity, which Python reuses.
        key = (plan.key_sql, privacy_key)
        mark = self._marks.get(key)
        if mark is None:
            parts = plan.parts if isinstance(plan, UnionPlan) else [plan]
            mark = report.fingerprint(plan, privacy_key, [self._describe(p) for p in parts])
            with self._lock:
                self._marks[key] = mark
        return mark

    def _privacy_key(self, p) -> tuple:
        if not isinstance(p, Privacy):
            raise ProgrammingError(f"the privacy of a query (reader.privacy, or privacy=...) "
                                   f"must be a dpsql.Privacy, not {type(p).__name__}")
        p.check()        # its fields may have been changed since it was made
        return (p.epsilon, p.rho, p.delta, p.split, p.mechanisms.key())

    def get_privacy_cost(self, sql, params=None, privacy: Privacy | None = None) -> tuple:
        """(epsilon, delta) the query would cost; runs nothing, spends nothing.

        As in SmartNoise, a list of queries gives their total (basic composition).
        ``privacy``: this query's privacy (default: ``reader.privacy``)."""
        if isinstance(sql, (list, tuple)):
            costs = [self._plan(q, privacy=privacy).cost for q in sql]
            return (sum(c[0] for c in costs), sum(c[1] for c in costs))
        return self._plan(sql, params, privacy).cost

    def plan_spend(self, sql: str, params=None, privacy: Privacy | None = None):
        """The whole ``Spend`` the query would be charged (epsilon and delta by basic
        composition, rho and thresholds' delta), after its budget is split among its
        statistics; runs nothing, spends nothing. ``dpsql serve`` compares it with an
        analyst's per-query cap."""
        return self._plan(sql, params, privacy).spend

    def explain(self, sql: str, params=None, privacy: Privacy | None = None) -> str:
        """The bounded plan and, per noisy statistic, its sensitivity, noise and budget share.

        A ``str`` (``dpsql.api.display.Text``) that a notebook shows as a preformatted
        block."""
        plan = self._plan(sql, params, privacy)
        tail = "\n" + budget_line(self, plan)
        if isinstance(plan, UnionPlan):
            eps, delta = plan.cost
            return Text("\n\n".join(
                [f"UNION ALL of {len(plan.parts)} queries, each its own release; cost: the sum, "
                 f"epsilon={eps:.6g}, delta={delta:.3g}"]
                + [f"-- part {i + 1} of {len(plan.parts)}\n{self._describe(p)}"
                   for i, p in enumerate(plan.parts)]) + tail)
        return Text(self._describe(plan).rstrip("\n") + tail)

    def epsilon_for(self, sql: str, accuracy: float, alpha: float = 0.05, params=None,
                    privacy: Privacy | None = None) -> float:
        """The smallest epsilon at which every noisy statistic of ``sql`` has a (1 - alpha)
        error bound within ``accuracy`` (at ``privacy``'s delta: default the reader's);
        reads no data, spends nothing. ``explain`` at that epsilon says how many such
        queries the remaining budget buys (``dpsql.api.accuracy_target``)."""
        return epsilon_for(self, sql, accuracy, alpha, params, privacy)

    def estimate_bounds(self, table: str, column: str, epsilon: float) -> tuple:
        """DP (lower, upper) bounds of a numeric column, charged to the session like a query
        (epsilon, delta 0), as ``dpsql.api.bounds.Bounds``: a pair with how it was found.

        A noisy histogram of the column over powers of two (zero, then [2^k, 2^(k+1)) on each
        side, over the whole range of the type); the bounds are the edges of the lowest and
        highest ranges whose noisy count clears a threshold that an empty range clears with
        probability below 1e-9 (``dpsql.mechanisms.bounds``). Rows are truncated to max_ids
        per person as in any query. The metadata's own bounds of the column are not used.
        When no range clears it, the table is too small for this epsilon:
        ``dpsql.api.bounds.NoBoundsError`` (an ``OperationalError``) says what it would
        take; the estimate was charged all the same."""
        from .bounds import estimate_bounds
        return estimate_bounds(self, table, column, epsilon)

    @property
    def spent(self) -> tuple:
        """(epsilon, delta) spent by this session (with a zCDP budget: its rho, converted)."""
        return self.accountant.spent

    @property
    def remaining(self) -> tuple | None:
        """What this session may still spend: (epsilon, delta) left, or with a zCDP budget
        (rho, delta left for thresholds); None without a budget. With both a Budget object
        and a ledger, the tighter of the two. A remainder too small for any query is 0."""
        pools = self.accountant._pools()
        left = [remaining(spent, budget, tally) for spent, budget, tally in pools]
        if not left:
            return None
        kinds = {budget.accountant for _, budget, _ in pools}
        return tuple(map(min, zip(*left))) if len(kinds) == 1 else left[0]

    @property
    def spent_rho(self) -> float:
        """rho (zCDP) spent by this session: Gaussian statistics' rho plus epsilon^2 / 2 for
        each pure-epsilon one."""
        return self.accountant.spending.rho

    # -- running ------------------------------------------------------------
    def execute_df(self, sql: str, params=None, privacy: Privacy | None = None,
                   replay: bool = True) -> pd.DataFrame:
        """Run ``sql`` with ``privacy`` (default: ``reader.privacy``, the session's default
        privacy per query) and return the noisy result.

        The same query again in this session (the same SQL after parsing, with the same
        parameter values bound, and the same privacy) returns the stored release and costs
        nothing: asking twice teaches nothing new. ``replay=False`` asks for a fresh
        release, and pays for it."""
        plan, noisy = self._noisy(sql, params, privacy, replay)
        return self._present(plan, noisy)

    def execute_with_accuracy_df(self, sql: str, alpha: float = 0.05, params=None,
                                 privacy: Privacy | None = None, replay: bool = True) -> pd.DataFrame:
        """``execute_df`` with, after each noisy output column ``c``, ``c_lo`` and ``c_hi``:
        an interval holding the exact answer of the bounded plan with probability at least
        ``1 - alpha``, per cell (docs/privacy.md, "Confidence intervals"). It covers the
        noise, not the bias of clamping or truncation. Costs what ``execute_df`` costs (a
        replay nothing: the intervals come from the stored noisy statistics)."""
        alpha = check_alpha(alpha)
        plan, noisy = self._noisy(sql, params, privacy, replay)
        parts = plan.parts if isinstance(plan, UnionPlan) else [plan]
        frames = [self._with_intervals(part, columns, alpha) for part, columns in zip(parts, noisy)]
        if len(frames) == 1:
            return frames[0]
        import pandas as pd
        return pd.concat(frames, ignore_index=True)

    def _with_intervals(self, plan: Plan, noisy: dict, alpha: float) -> pd.DataFrame:
        post, read = with_intervals(plan, alpha)
        try:
            columns = self._run_released(self.post.run, render(post), noisy)
        except QueryError as err:
            raise _after_charge(err) from None
        out = {}
        for i, name in enumerate(plan.output_names):
            out[name] = columns[f"_o{i}"]
            if read[i]:
                lo, hi = columns[f"_o{i}_lo"], columns[f"_o{i}_hi"]
                if np.asarray(out[name]).dtype.kind in "iu":
                    lo, hi = whole(lo, np.floor), whole(hi, np.ceil)
                out[f"{name}_lo"], out[f"{name}_hi"] = lo, hi
        return frame(list(out.values()), list(out))

    def _noisy(self, sql, params, privacy, replay: bool) -> tuple:
        """(plan, noisy statistics per part): the stored release, or a fresh one (paid).

        A release is stored as its noisy statistics, not as the final table, so that a
        replay can post-process it again (e.g. with confidence intervals at another
        level) without touching the data."""
        plan = self._plan(sql, params, privacy)
        key = self.release_key(plan, privacy)
        ledger = self.accountant.ledger
        # Through a ledger, a release is found again by its fingerprint: the same query,
        # parameters, privacy and plan (so a changed metadata is a new release).
        mark = self._fingerprint(plan, key[1]) if ledger is not None else ""
        if replay:
            with self._lock:
                stored = self._releases.get(key)
            if stored is None and ledger is not None:
                found = ledger.stored(mark)
                if found is not None:
                    stored = report.decode(found)
                    self._keep(key, stored)
            if stored is not None:
                self._log(plan, None, replay=True)
                if ledger is not None:
                    ledger.replayed(plan.bound_sql, mark, report.details(plan))
                return plan, stored
        noisy = self._fresh(plan, mark)
        _warn_drowned(plan)
        self._keep(key, noisy)
        if ledger is not None and sum(len(v) for part in noisy for v in part.values()) <= \
                report.MAX_STORED_VALUES:
            ledger.store(mark, report.encode(noisy))
        return plan, noisy

    def _keep(self, key: tuple, noisy: list) -> None:
        """Remember a release for replays (with a ledger, older ones are found there)."""
        with self._lock:
            self._releases.put(key, noisy)

    def _run_released(self, function, *args):
        run = self.after_charge
        return function(*args) if run is None else run(function, *args)

    def _log(self, plan, details, replay: bool) -> None:
        if self.accountant.ledger is not None:
            return          # the ledger is the log (report(), the odometer)
        record = ReleaseRecord.of(
            datetime.now(timezone.utc).isoformat(timespec="microseconds"), plan.bound_sql,
            ZERO if replay else plan.spend, replay=replay, events=() if replay else plan.events,
            details=details if details is not None else report.details(plan))
        with self._lock:
            self._history.append(record)

    def report(self, format: str = "dataframe"):
        """The DP release table of this session (with a ledger: of every release the
        ledger holds): a DataFrame, or ``format="markdown" | "html" | "json"`` text.
        Replays are rows too (``replay`` true, costing 0), with a ledger as without one:
        a ledger records each replay (``Ledger.replayed``), since a release table that
        lists what was shown must not depend on where the log is kept, and a replay
        record costs nothing, so it changes no total.
        Per release: time, query, privacy unit and contribution bound, epsilon, delta,
        rho, and per statistic its mechanism, scale, bounds, share and 95% accuracy, the
        threshold; with the totals and what is left of the budget (docs/privacy.md).
        The HTML page is a ``str`` that a notebook renders (in a sandboxed frame)."""
        ledger = self.accountant.ledger
        if ledger is not None:
            records = ledger.records()
        else:
            with self._lock:
                records = list(self._history)
        spending = self.accountant.spending
        out = report.render(records, self.accountant.budget, self.accountant.spent, spending,
                            remaining(spending, self.accountant.budget, self.accountant.tally),
                            format)
        return HTMLPage(out) if format == "html" else out

    def release_key(self, plan, privacy: Privacy | None = None) -> tuple:
        """What makes two requests one release: the canonical SQL with its parameters
        bound, and the privacy asked for."""
        return (plan.key_sql, self._privacy_key(self.privacy if privacy is None else privacy))

    def _fresh(self, plan, mark: str = "") -> list:
        """Read the data, charge, add noise: the noisy statistics of every part."""
        parts = plan.parts if isinstance(plan, UnionPlan) else [plan]
        self.accountant.check(plan.spend, plan.events)
        details = report.details(plan)
        exacts = []
        try:
            with Progress(self.engine, progress_callback(self.progress)):
                for part in parts:
                    exacts.append(self.engine.run(self._sql(part)[0]))
        except OperationalError as err:
            # Binding succeeded, so the failure depends on the data: charge it.
            self.accountant.charge(plan.spend, plan.bound_sql, mark, details, plan.events)
            self._log(plan, details, replay=False)
            raise OperationalError(f"{err} (its cost was charged, since a failure here could "
                                   "reveal something about the data)") from None
        # Charged once the data has been read: whatever happens next (noise, a
        # post-processing failure on noisy values) is paid for, and no result
        # is ever shown uncharged.
        self.accountant.charge(plan.spend, plan.bound_sql, mark, details, plan.events)
        self._log(plan, details, replay=False)
        noisy = []
        for part, exact in zip(parts, exacts):
            noisy.append(self._run_released(add_noise, part, exact))
        del exacts
        return noisy

    def _present(self, plan, noisy: list) -> pd.DataFrame:
        """Post-processing of stored noisy statistics (no data touched, nothing spent)."""
        parts = plan.parts if isinstance(plan, UnionPlan) else [plan]
        frames = [self._present_part(part, columns) for part, columns in zip(parts, noisy)]
        return concat(frames)

    def _present_part(self, plan: Plan, noisy: dict) -> pd.DataFrame:
        columns = self._columns_part(plan, noisy)
        return frame([columns[f"_o{i}"] for i in range(len(plan.output_names))],
                     plan.output_names)

    def _columns_part(self, plan: Plan, noisy: dict) -> dict:
        """The post-processed output columns of one part (``_o0``, ``_o1``, ...), as arrays."""
        if plan.passthrough is not None:
            return {f"_o{i}": noisy[name].copy() for i, name in enumerate(plan.passthrough)}
        short = self._scalars.get(id(plan))        # None: DuckDB answers the rows
        columns = None if short is None else self._run_released(short, noisy)
        if columns is None:
            try:
                columns = self._run_released(self.post.run, self._sql(plan)[1], noisy)
            except QueryError as err:
                raise _after_charge(err) from None
        return columns

    def execute(self, sql: str, params=None, privacy: Privacy | None = None,
                replay: bool = True, **smartnoise) -> list:
        """SmartNoise's shape: a header tuple, then one tuple per row, of Python values
        (None for NULL). SmartNoise's options: ``accuracy=True`` is
        ``execute_with_accuracy``; ``postprocess=False`` and ``pre_aggregated=`` are
        refused (``dpsql.NotSupportedError``, docs/smartnoise.md)."""
        if smartnoise:
            return self._smartnoise_execute(sql, params, privacy, replay, **smartnoise)
        header, _, rows = self.result_rows(sql, params, privacy, replay)
        return [header] + rows

    def result_rows(self, sql: str, params=None, privacy: Privacy | None = None,
                    replay: bool = True) -> tuple:
        """(header, column dtypes, rows of Python values): ``execute_df``'s rows and
        dtypes, read without pandas (but for a UNION ALL or grouping sets, whose parts
        take one type per column: through ``execute_df``)."""
        plan, noisy = self._noisy(sql, params, privacy, replay)
        header = tuple(plan.output_names)
        if isinstance(plan, UnionPlan):
            df = self._present(plan, noisy)
            return header, [df.iloc[:, i].dtype for i in range(df.shape[1])], frame_rows(df)
        columns = self._columns_part(plan, noisy[0])
        arrays = [columns[f"_o{i}"] for i in range(len(header))]
        return header, [a.dtype for a in arrays], list(zip(*map(python_values, arrays)))


def _warn_drowned(plan) -> None:
    parts = plan.parts if isinstance(plan, UnionPlan) else [plan]
    found = [d for part in parts for d in drowned_counts(part)]
    if found:
        label, error, rows = max(found, key=lambda d: d[1] / d[2])
        warn(f"dpsql: the noise of {label} (95% error ±{error:.3g}) is wider than the "
             f"table's {rows:,} rows (metadata 'rows'): this release tells almost nothing; "
             "ask with a larger epsilon")


def _after_charge(err: QueryError) -> OperationalError:
    """A post-processing failure on the released values (the query was charged)."""
    out = OperationalError(f"{err} (on noisy values; the query's cost was charged)")
    out.dpsql_detail = getattr(err, "dpsql_detail", None)
    return out
