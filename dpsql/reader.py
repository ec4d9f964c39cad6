"""The session: one place that runs the steps in order.

Owns: orchestration and the public Python API (``from_df``, ``from_connection``,
``Reader``). Data flows one way: parse -> validate -> plan (with its cost) ->
budget check -> execute -> charge -> noise -> post-process -> result. The
budget check comes before any data is touched; the charge comes as soon as the
data has been read, so an answer is never released uncharged and a refused
query costs nothing.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import pandas as pd

from .accounting import Accountant
from .errors import OperationalError, ProgrammingError, QueryError
from .execute import Engine
from .explain import describe
from .metadata import Metadata
from .parse import literal, parse_query
from .plan import Plan, build_plan
from .privacy import Budget, Privacy, Stat
from .release import add_noise
from .validate import validate

_PLAN_CACHE_SIZE = 256


class Reader:
    """A private session over the tables described by ``metadata``."""

    def __init__(self, engine: Engine, metadata: Metadata, privacy: Privacy | None = None,
                 budget: Budget | None = None, ledger=None) -> None:
        self.engine = engine
        self.metadata = metadata
        self.privacy = privacy if privacy is not None else Privacy()
        self.accountant = Accountant(budget, ledger)
        self._plans: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    # -- planning (no data touched) -----------------------------------------
    def _plan(self, sql: str, params=None) -> Plan:
        # Parameters keyed with their types: 1, 1.0 and True are equal in Python.
        # literal() first refuses values that cannot be bound (lists, ...).
        typed = (tuple((type(p).__name__, literal(p).sql()) for p in params)
                 if params is not None else None)
        key = (sql, typed, self._privacy_key())
        cached = self._plans.get(key)
        if cached is not None:
            return cached
        query = validate(parse_query(sql, params), self.metadata)
        table = query.table
        plan = build_plan(query, self.privacy, self.engine.table_node(table),
                          self.engine.column_types(table))
        # Bind both queries now, so that query errors surface before any data is read.
        types = self.engine.result_types(plan.exact)
        self.engine.post_process(plan.post_sql, _empty_noisy(plan, types))
        with self._lock:
            self._plans[key] = plan
            if len(self._plans) > _PLAN_CACHE_SIZE:
                self._plans.popitem(last=False)
        return plan

    def _privacy_key(self) -> tuple:
        p = self.privacy
        return (p.epsilon, p.delta, p.mechanisms.key())

    def get_privacy_cost(self, sql, params=None) -> tuple:
        """(epsilon, delta) the query would cost; runs nothing, spends nothing.

        As in SmartNoise, a list of queries gives their total (basic composition)."""
        if isinstance(sql, (list, tuple)):
            costs = [self._plan(q).cost for q in sql]
            return (sum(c[0] for c in costs), sum(c[1] for c in costs))
        return self._plan(sql, params).cost

    def explain(self, sql: str, params=None) -> str:
        """The bounded plan and, per noisy statistic, its sensitivity, noise and budget share."""
        return describe(self._plan(sql, params))

    @property
    def spent(self) -> tuple:
        return self.accountant.spent

    # -- running ------------------------------------------------------------
    def execute_df(self, sql: str, params=None) -> pd.DataFrame:
        plan = self._plan(sql, params)
        self.accountant.check(plan.cost)
        try:
            exact = self.engine.run(plan.exact_sql)
        except OperationalError as err:
            # Binding succeeded, so the failure depends on the data: charge it.
            self.accountant.charge(plan.cost, plan.bound_sql)
            raise OperationalError(f"{err} (its cost was charged, since a failure here could "
                                   "reveal something about the data)") from None
        # Charged once the data has been read: whatever happens next (noise, a
        # post-processing failure on noisy values) is paid for, and no result
        # is ever shown uncharged.
        self.accountant.charge(plan.cost, plan.bound_sql)
        noisy = add_noise(plan, exact)
        del exact
        if plan.passthrough is not None:
            columns = {f"_o{i}": noisy[name] for i, name in enumerate(plan.passthrough)}
        else:
            try:
                columns = self.engine.post_process(plan.post_sql, noisy)
            except QueryError as err:
                raise OperationalError(f"{err} (on noisy values; the query's cost was charged)") from None
        result = pd.DataFrame({f"_o{i}": columns[f"_o{i}"] for i in range(len(plan.output_names))})
        result.columns = plan.output_names
        return result

    def execute(self, sql: str, params=None) -> list:
        """SmartNoise's shape: a header tuple, then one tuple per row."""
        df = self.execute_df(sql, params)
        rows = [tuple(_native(v) for v in row) for row in df.itertuples(index=False, name=None)]
        return [tuple(df.columns)] + rows


def _native(value):
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


_NUMPY_TYPES = {"BIGINT": np.int64, "INTEGER": np.int32, "SMALLINT": np.int16, "TINYINT": np.int8,
                "HUGEINT": np.float64, "DOUBLE": np.float64, "FLOAT": np.float32,
                "BOOLEAN": np.bool_, "TIMESTAMP": "datetime64[us]", "DATE": "datetime64[D]"}


def _empty_noisy(plan: Plan, types: dict) -> dict:
    """A zero-row stand-in for the noisy table, typed as the real one will be."""
    cols = {name: np.array([], dtype=_NUMPY_TYPES.get(types.get(name, ""), object))
            for name in plan.key_names}
    for stat in plan.statistics:
        integer = (stat.integer and stat.mechanism.grid >= 1) or stat.stat in (Stat.count,
                                                                              Stat.threshold)
        cols[stat.name] = np.array([], dtype=np.int64 if integer else np.float64)
    if not cols:
        cols["_none"] = np.array([], dtype=np.int64)
    return cols


def _load(metadata) -> Metadata:
    return Metadata.load(metadata)


def from_df(data, metadata, privacy: Privacy | None = None, budget: Budget | None = None,
            ledger=None) -> Reader:
    """A session over DataFrames (or .csv/.parquet paths), scanned in place by DuckDB."""
    meta = _load(metadata)
    return Reader(Engine.from_data(data, meta), meta, privacy, budget, _ledger(ledger, budget))


def from_connection(connection, metadata, privacy: Privacy | None = None,
                    budget: Budget | None = None, ledger=None, engine: str | None = None) -> Reader:
    """A session over tables that already live in a DuckDB connection.

    ``engine`` is accepted for SmartNoise compatibility and must name DuckDB.
    """
    if engine is not None and str(engine).lower() != "duckdb":
        raise ProgrammingError(f"engine {engine!r} is not supported; dpsql runs on DuckDB "
                               "(pass a duckdb connection, or leave engine out)")
    meta = _load(metadata)
    return Reader(Engine.from_connection(connection, meta), meta, privacy, budget,
                  _ledger(ledger, budget))


def _ledger(ledger, budget):
    if ledger is None or hasattr(ledger, "charge"):
        return ledger
    from .ledger import Ledger
    return Ledger(ledger, budget)
