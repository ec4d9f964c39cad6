"""Running one statement for a connection: session command, catalog, EXPLAIN or dpsql query.

Owns: the order of checks for a statement that reaches the data. The per-query cap
and the privacy parameters are checked before the account is touched (a refusal
costs nothing); the analyst's account lock is held from the budget check to the
charge; a statement timeout or a client's cancel interrupts the engine, and a query
that reached the engine is charged whether it finished or not (whether it would
have finished in time could depend on the data). Every statement is audited.
"""
from __future__ import annotations

import threading

from .. import errors
from ..frontend.bigquery import sql_privacy
from ..privacy.params import Privacy
from .statements import Result, ServerError, SessionState, first_word, session_command, \
    sqlstate, strip

_DUCK_OIDS = {"BIGINT": 20, "HUGEINT": 1700, "INTEGER": 23, "SMALLINT": 21, "TINYINT": 21,
              "UBIGINT": 1700, "UINTEGER": 20, "USMALLINT": 23, "UTINYINT": 21,
              "DOUBLE": 701, "FLOAT": 700, "BOOLEAN": 16, "DATE": 1082,
              "TIMESTAMP": 1114, "TIMESTAMP WITH TIME ZONE": 1184, "VARCHAR": 25}
"""PostgreSQL type OIDs of the DuckDB types a catalog or dpsql result can have."""


def duck_oid(type_name: str) -> int:
    name = str(type_name).upper()
    if name.startswith("DECIMAL"):
        return 1700
    if name == "DOUBLE[]":
        return 1022            # float8[]
    if name.endswith("[]"):
        return 1009            # text[]
    return _DUCK_OIDS.get(name, 25)


def required_params(sql: str) -> int:
    """The highest ``$n`` of ``sql`` (outside quotes and comments): the parameters it needs."""
    return max(_placeholders(sql)[1], default=0)


def qmark(sql: str, params: list) -> tuple:
    """PostgreSQL's ``$1``-style placeholders as dpsql's ``?`` ones, with the values in the
    order of the ``?``s (``$1`` used twice is passed twice)."""
    text, numbers = _placeholders(sql)
    for n in numbers:
        if not 1 <= n <= len(params):
            raise ServerError(f"there is no parameter ${n}", "42P02")
    return text, [params[n - 1] for n in numbers]


def _placeholders(sql: str) -> tuple:
    """(``sql`` with each ``$n`` as ``?``, the n of each in order); quotes and comments are
    skipped."""
    out, numbers, i, n = [], [], 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"":
            j = i + 1
            while j < n and not (sql[j] == c and (j + 1 >= n or sql[j + 1] != c)):
                j += 2 if sql[j] == c else 1
            out.append(sql[i:j + 1])
            i = j + 1
        elif sql.startswith("--", i) or sql.startswith("/*", i):
            end = sql.find("\n" if c == "-" else "*/", i)
            j = n if end < 0 else end + (1 if c == "-" else 2)
            out.append(sql[i:j])
            i = j
        elif c == "$" and i + 1 < n and sql[i + 1].isdigit():
            j = i + 1
            while j < n and sql[j].isdigit():
                j += 1
            out.append("?")
            numbers.append(int(sql[i + 1:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out), numbers


class Runner:
    """Runs statements for every connection of one server."""

    def __init__(self, deployment, accounts, catalog) -> None:
        self.deployment, self.accounts, self.catalog = deployment, accounts, catalog

    def run(self, state: SessionState, sql: str, params: list | None = None) -> Result:
        """The result of ``sql``; every outcome goes to the audit log."""
        cost, outcome, code = None, "ok", "00000"
        try:
            result = self._run(state, sql, list(params or []))
            cost = result.cost
            return result
        except BaseException as exc:   # noqa: BLE001 - audited, then re-raised
            outcome, code = type(exc).__name__, sqlstate(exc)
            cost = getattr(exc, "dpsql_cost", None)
            raise
        finally:
            if strip(sql):
                self.accounts.audit(state.user, state.client, sql, cost, outcome, code)

    def _run(self, state: SessionState, sql: str, params: list) -> Result:
        if not strip(sql):
            return Result("EMPTY")
        default = self.deployment.privacy
        done = session_command(state, sql, default)
        if done is not None:
            return done
        if self.catalog.answers(sql):
            return self._catalog(state, sql, params)
        text, values = qmark(sql, params)
        explain = first_word(text) == "explain"
        body = strip(text)[len("explain"):] if explain else text
        privacy = self._privacy(state, body)
        if explain:
            with state.account.lock:
                plan = state.account.reader().explain(body, params=values or None,
                                                      privacy=privacy)
            return Result("EXPLAIN", [("QUERY PLAN", "VARCHAR")],
                          [(line,) for line in plan.splitlines()])
        return self._query(state, text, values, privacy)

    def _catalog(self, state: SessionState, sql: str, params: list) -> Result:
        """A catalog query under the statement timeout and cancel requests, one at a time
        per analyst (so that one analyst's sessions cannot hold every worker)."""
        cursors: list = []
        with state.account.catalog_lock:
            with _watched(state, self.deployment.limits["statement_timeout_s"],
                          lambda: [c.interrupt() for c in cursors]):
                try:
                    columns, rows = self.catalog.run(sql, params, user=state.user,
                                                     cursors=cursors)
                except errors.Error as err:
                    raise _interrupted(state, err, None, None) from None
        return Result(f"SELECT {len(rows)}", list(columns), list(rows))

    def _privacy(self, state: SessionState, sql: str) -> Privacy:
        """The session's privacy, with the query's own (BigQuery's OPTIONS) if it gives
        one, checked against the analyst's per-query cap before anything is planned."""
        try:
            session = state.privacy(self.deployment.privacy)
        except errors.ProgrammingError as err:
            raise ServerError(str(err), "22023") from None
        privacy = sql_privacy(sql, session)
        cap = state.account.analyst.per_query
        if cap is not None and not _within(privacy, cap):
            lower = ("lower epsilon and delta in the query's OPTIONS" if privacy is not session
                     else "SET dpsql.epsilon lower")
            raise ServerError(f"the query's privacy ({_describe(privacy)}) is above your "
                              f"per-query cap ({_describe(cap)}); {lower}", "42501")
        return privacy

    def _query(self, state: SessionState, sql: str, params: list, privacy: Privacy) -> Result:
        account = state.account
        timeout = self.deployment.limits["statement_timeout_s"]
        with account.lock:
            reader = account.reader()
            before = reader.accountant.spending
            con = getattr(reader.engine, "con", None)
            # DuckDB interrupts its connection; psycopg (PostgreSQL) sends a cancel request.
            stop = getattr(con, "interrupt", None) or getattr(con, "cancel", None)
            with _watched(state, timeout, lambda: stop is not None and stop()):
                try:
                    frame = reader.execute_df(sql, params=params or None, privacy=privacy)
                except errors.Error as err:
                    raise _interrupted(state, err, reader, before) from None
            cost = _cost(reader, before)
        columns = [(str(name), _frame_type(frame[name])) for name in frame.columns]
        rows = list(frame.itertuples(index=False, name=None))
        return Result(f"SELECT {len(rows)}", columns, rows, cost)


class _watched:
    """The statement timeout and the client's cancel request, both calling ``stop``."""

    def __init__(self, state: SessionState, timeout: float, stop) -> None:
        self.state, self.stop = state, stop
        self.timer = threading.Timer(timeout, self.fire, ("timeout",))

    def fire(self, why: str) -> None:
        self.state.cancel_reason = why
        self.state.cancel.set()
        self.stop()

    def __enter__(self):
        self.state.cancel.clear()
        self.state.interrupt = lambda: self.fire("cancel")
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.timer.cancel()
        self.state.interrupt = None


def _interrupted(state: SessionState, err: Exception, reader, before) -> Exception:
    """A cancel or timeout becomes 57014 (the query was charged if it reached the engine)."""
    err.dpsql_cost = _cost(reader, before) if reader is not None else None
    if not state.cancel.is_set():
        return err
    why = getattr(state, "cancel_reason", "cancel")
    text = ("canceling statement due to statement timeout" if why == "timeout"
            else "canceling statement due to user request")
    out = ServerError(f"{text}; its cost was charged if it had reached the data", "57014")
    out.dpsql_cost = err.dpsql_cost
    return out


def _cost(reader, before) -> tuple:
    now = reader.accountant.spending
    return (max(now.epsilon - before.epsilon, 0.0), max(now.delta - before.delta, 0.0))


def _frame_type(series) -> str:
    kind = series.dtype.kind
    if kind in "iu":
        return "BIGINT"
    if kind == "f":
        return "DOUBLE"
    if kind == "b":
        return "BOOLEAN"
    if kind == "M":
        return "TIMESTAMP"
    name = str(series.dtype).lower()
    first = series.dropna().iloc[0] if series.notna().any() else None
    if isinstance(first, (list, tuple)) or type(first).__name__ == "ndarray":
        return "DOUBLE[]"
    if name in ("int64", "int32"):
        return "BIGINT"
    return "BOOLEAN" if name == "boolean" else "VARCHAR"


def _within(privacy: Privacy, cap: dict) -> bool:
    if "delta" in cap and privacy.delta > cap["delta"]:
        return False
    if privacy.rho is not None:
        rho = privacy.rho
        return rho <= cap["rho"] if "rho" in cap else (
            "epsilon" not in cap or rho <= cap["epsilon"] ** 2 / 2)
    if "epsilon" in cap and privacy.epsilon > cap["epsilon"]:
        return False
    return "rho" not in cap or privacy.epsilon ** 2 / 2 <= cap["rho"]


def _describe(p) -> str:
    if isinstance(p, dict):
        return ", ".join(f"{k}={v:g}" for k, v in p.items())
    if p.rho is not None:
        return f"rho={p.rho:g}, delta={p.delta:g}"
    return f"epsilon={p.epsilon:g}, delta={p.delta:g}"
