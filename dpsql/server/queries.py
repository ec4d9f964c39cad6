"""Running one statement for a connection: session command, catalog, EXPLAIN or dpsql query.

Owns: the order of checks for a statement that reaches the data. The per-query cap
and the privacy parameters are checked before the account is touched (a refusal
costs nothing); the analyst's account lock is held from the budget check to the
charge; a statement timeout or a client's cancel interrupts the engine, and a query
that reached the engine is charged whether it finished or not (whether it would
have finished in time could depend on the data). Every statement is audited.
"""
from __future__ import annotations

import re
import time

from .. import errors
from ..frontend.bigquery import sql_privacy
from ..privacy.params import Privacy
from .deadline import MemoryGuard, StatementCancelled, Watch, release_memory
from .lexing import lexemes, strip
from .statements import Result, ServerError, SessionState, first_word, number_text, \
    session_command, shown_settings, sqlstate
from .values import data_rows, placeholder_number

_DUCK_OIDS = {"BIGINT": 20, "HUGEINT": 1700, "INTEGER": 23, "SMALLINT": 21, "TINYINT": 21,
              "UBIGINT": 1700, "UINTEGER": 20, "USMALLINT": 23, "UTINYINT": 21,
              "DOUBLE": 701, "FLOAT": 700, "BOOLEAN": 16, "DATE": 1082,
              "TIMESTAMP": 1114, "TIMESTAMP WITH TIME ZONE": 1184, "VARCHAR": 25}
"""PostgreSQL type OIDs of the DuckDB types a catalog or dpsql result can have."""


_ENGINE_WORDS = [
    (re.compile(r"[;,] (?:or )?use the DuckDB engine"), ""),
    (re.compile(r"\bon (?:PostgreSQL|Spark|DuckDB)(?: here)?\b"), "on this server"),
    (re.compile(r"\bwhich Spark can\b"), "which this server can"),
    (re.compile(r"\botherwise than DuckDB\b"), "otherwise than dpsql defines them"),
]
"""An engine's refusal as a served analyst reads it: they cannot choose the engine, and the
deployment's engine is the owner's business (review 46, F1)."""


def analyst_text(err: BaseException) -> str:
    """The message of a dpsql error, on one line, with the engine behind the server unnamed."""
    text = " ".join(str(err).split()) or type(err).__name__
    if isinstance(err, ServerError):
        return text
    for pattern, words in _ENGINE_WORDS:
        text = pattern.sub(words, text)
    return text


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
    skipped. A number of more digits than any statement's parameters is refused
    (``placeholder_number``: Python refuses ints of over 4,300 digits)."""
    out, numbers, start = [], [], 0
    for found in lexemes(sql):
        token = found.group()
        if token[:1] == "$" and token[1:2].isdigit():      # not a $$-quoted string
            out.append(sql[start:found.start()] + "?")
            numbers.append(placeholder_number(token[1:]))
            start = found.end()
    out.append(sql[start:])
    return "".join(out), numbers


class Runner:
    """Runs statements for every connection of one server (in its worker threads)."""

    def __init__(self, deployment, accounts, catalog) -> None:
        self.deployment, self.accounts, self.catalog = deployment, accounts, catalog
        self.guard = MemoryGuard(int(deployment.limits["statement_memory_mb"] * 2 ** 20))

    def run(self, state: SessionState, sql: str, params: list | None = None,
            timeout: float | None = None, deadline: float | None = None) -> Result:
        """The result of ``sql``, stopped by ``timeout`` (default: the deployment's
        statement timeout) or at ``deadline`` (``time.monotonic()``), or by the client's
        cancel, at any step; every outcome is audited."""
        limit = self.deployment.limits["statement_timeout_s"] if timeout is None else timeout
        if deadline is not None:
            limit = deadline - time.monotonic()
        watch = Watch(limit, self.guard)
        cost, outcome, code, detail = None, "ok", "00000", None
        try:
            state.interrupt = lambda: watch.fire("cancel")
            if state.cancel_requested:       # came while the statement was on its way here
                watch.fire("cancel")
            try:
                watch.start()
                result = self._run(state, sql, list(params or []), watch)
                if result.cost is None:     # a free result: encoded under the deadline
                    result.rows = watch.call(data_rows, result.rows)
            except StatementCancelled:
                raise _stopped(watch, None) from None
            finally:
                watch.close()
                state.interrupt = None
                if watch.reason == "memory":
                    release_memory()
            cost = result.cost
            if cost is not None:            # a charged result (a few rows) is always sent
                result.rows = data_rows(result.rows)
            result.size = sum(64 + len(row) for row in result.rows)
            return result
        except BaseException as exc:   # noqa: BLE001 - audited, then re-raised
            outcome, code = type(exc).__name__, sqlstate(exc)
            cost, detail = getattr(exc, "dpsql_cost", None), getattr(exc, "dpsql_detail", None)
            raise
        finally:
            if strip(sql):
                self.accounts.audit(state.user, state.client, sql, cost, outcome, code, detail)

    def _run(self, state: SessionState, sql: str, params: list, watch: Watch) -> Result:
        if not strip(sql):
            return Result("EMPTY")
        try:
            done = session_command(state, sql, self.deployment.privacy)
        except errors.Error as err:        # SHOW dpsql.spent opens the analyst's session
            raise err if isinstance(err, ServerError) else _for_analyst(err, True) from None
        if done is not None:
            return done
        if watch.call(self.catalog.answers, sql):
            return self._catalog(state, sql, params, watch)
        text, values = qmark(sql, params)
        explain = first_word(text) == "explain"
        body = strip(text)[len("explain"):] if explain else text
        privacy = watch.call(self._privacy, state, body)
        if explain:
            return self._explain(state, body, values, privacy, watch)
        return self._query(state, text, values, privacy, watch)

    def _catalog(self, state: SessionState, sql: str, params: list, watch: Watch) -> Result:
        """A catalog query (it reads no data: interruptible throughout)."""
        cursors: list = []
        watch.engine(lambda: [c.interrupt() for c in cursors])
        try:
            columns, rows = watch.call(self.catalog.run, sql, params, user=state.user,
                                       database=state.database, cursors=cursors,
                                       settings=shown_settings(state, self.deployment.privacy))
        except errors.Error as err:
            raise _stopped(watch, err) if watch.fired else err from None
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

    def _explain(self, state, sql: str, params: list, privacy: Privacy, watch: Watch) -> Result:
        account = state.account
        with account.lock:
            reader = self._reader(account)
            watch.engine(_engine_stop(reader))
            try:
                plan = watch.call(reader.explain, sql, params=params or None, privacy=privacy)
            except StatementCancelled:
                account.close()      # stopped anywhere in planning: start afresh
                raise
            except errors.Error as err:
                raise _if_lost(account, reader, err) from None
        return Result("EXPLAIN", [("QUERY PLAN", "VARCHAR")],
                      [(line,) for line in plan.splitlines()])

    def _query(self, state, sql: str, params: list, privacy: Privacy, watch: Watch) -> Result:
        account = state.account
        with account.lock:
            reader = self._reader(account)
            stop = _engine_stop(reader)
            watch.engine(stop)
            try:
                # Planned first, interruptibly; the plan is cached for execute_df below.
                spend = watch.call(reader.plan_spend, sql, params=params or None,
                                   privacy=privacy)
            except StatementCancelled:
                account.close()
                raise
            except errors.Error as err:
                raise _if_lost(account, reader, err) from None
            _check_cap(spend, account.analyst, privacy)
            watch.critical(stop)
            before = reader.accountant.spending
            # After the charge, noise and post-processing read no data and write no
            # ledger: the statement's timeout and cancel stop them (charged, not shown).
            reader.after_charge = watch.call
            try:
                frame = reader.execute_df(sql, params=params or None, privacy=privacy)
            except errors.Error as err:
                err.dpsql_cost = _cost(reader, before)
                raise _stopped(watch, err) if watch.fired else \
                    _for_analyst(_if_lost(account, reader, err)) from None
            except StatementCancelled:
                raise _stopped(watch, _Charged(_cost(reader, before))) from None
            finally:
                reader.after_charge = None
            cost = _cost(reader, before)
            if watch.fired:          # stopped too late to interrupt: charged, not shown
                raise _stopped(watch, _Charged(cost))
        columns = [(str(name), _frame_type(frame[name])) for name in frame.columns]
        for (_, kind), name in zip(columns, list(frame.columns)):
            if kind == "VARCHAR":   # pandas' missing text is NaN: NULL on the wire (review 14)
                frame[name] = frame[name].astype(object).where(frame[name].notna(), None)
        rows = list(frame.itertuples(index=False, name=None))
        return Result(f"SELECT {len(rows)}", columns, rows, cost)

    def _reader(self, account):
        """The analyst's session; an owner-side failure (ledger, data, metadata) is told
        to the analyst without its detail (paths, budgets), which goes to the audit log."""
        try:
            return account.reader()
        except errors.Error as err:
            raise _for_analyst(err, opening=True) from None


def _engine_stop(reader):
    con = getattr(reader.engine, "con", None)
    # DuckDB interrupts its connection; psycopg (PostgreSQL) sends a cancel request; Spark
    # cancels the job group of the statement in progress (each statement has its own).
    stop = getattr(con, "interrupt", None) or getattr(con, "cancel", None) or \
        getattr(reader.engine, "cancel", None)

    def both():
        try:
            reader.post.interrupt()       # the release's post-processing, if it runs
        finally:
            if stop is not None:
                stop()
    return both


def _check_cap(spend, analyst, privacy: Privacy) -> None:
    """The per-query cap compared with what the query will be charged, in the unit of
    the analyst's budget, after the budget is split among its statistics: k Laplace
    statistics under zCDP cost about sqrt(k) times their rho's epsilon."""
    cap = analyst.per_query
    if cap is None:
        return
    slack = 1 + 1e-12
    if analyst.budget.zcdp:
        used = {"rho": spend.rho, "delta": spend.rho_delta}
        limit = {"rho": cap.get("rho", cap["epsilon"] ** 2 / 2 if "epsilon" in cap else None),
                 "delta": cap.get("delta")}
    else:
        used = {"epsilon": spend.epsilon, "delta": spend.delta}
        limit = {"epsilon": cap.get("epsilon", (2 * cap["rho"]) ** 0.5 if "rho" in cap else None),
                 "delta": cap.get("delta")}
    over = [k for k in used if limit[k] is not None and used[k] > limit[k] * slack]
    if over:
        charged = ", ".join(f"{k}={number_text(used[k])}" for k in used)
        raise ServerError(f"the query would be charged {charged}, above your per-query cap "
                          f"({_describe(cap)}), once its budget is split among its "
                          "statistics; ask fewer statistics or lower its privacy", "42501")


class _Charged(errors.OperationalError):
    def __init__(self, cost) -> None:
        super().__init__("answered after the statement was stopped; charged, not shown")
        self.dpsql_cost = cost


def _if_lost(account, reader, err: errors.Error) -> errors.Error:
    """``err``, unless the session's connection to the database server is gone: then the
    session is closed, so that the analyst's next statement opens a new one, and the
    analyst is told 58000 without the driver's text (review 33, F5: a session whose
    server had restarted answered every statement 42601 with libpq's message, for good)."""
    lost = getattr(reader.engine, "lost", None)
    if lost is None or not lost():
        return _without_engine_text(err)
    account.close()
    return _for_analyst(err, opening=True)


def _without_engine_text(err: errors.Error) -> errors.Error:
    """An engine's refusal of a plan (its dry run's error, which depends on the query alone)
    without the engine's wording, which names its internals (review 35, F2: DuckDB's "Binder
    Error" text); the audit log keeps it for the operator."""
    if not isinstance(err, errors.EngineRefusal):
        return err
    out = errors.QueryError("the engine cannot run this query as dpsql plans it (it cost "
                            "nothing); write the expressions another way, or ask the operator, "
                            "whose audit log has the engine's message")
    out.dpsql_detail = err.engine_text
    return out


def _for_analyst(err: errors.Error, opening: bool = False) -> errors.Error:
    """``err`` as the analyst may see it: the ledger's and the session's failures are the
    owner's to read (they name paths and budgets)."""
    if not (opening or isinstance(err, errors.LedgerError)):
        return err
    out = ServerError("your account cannot be used right now (a problem on the server's "
                      "side, not in your query); the operator has the details", "58000")
    out.dpsql_cost = getattr(err, "dpsql_cost", None)
    out.dpsql_detail = f"{type(err).__name__}: {err}"
    return out


def _stopped(watch: Watch, err: Exception | None) -> Exception:
    """A cancel or timeout becomes 57014 (the query was charged if it reached the engine);
    a free phase that outgrew the memory limit, 53200."""
    if watch.reason == "memory":
        return ServerError("out of memory: the statement needed more than this server's "
                           "memory for one statement while it was parsed or planned; it "
                           "cost nothing: write it shorter or split it", "53200")
    text = ("canceling statement due to statement timeout" if watch.reason == "timeout"
            else "canceling statement due to user request")
    out = ServerError(f"{text}; its cost was charged if it had reached the data", "57014")
    out.dpsql_cost = getattr(err, "dpsql_cost", None)
    if err is not None:
        out.dpsql_detail = f"{type(err).__name__}: {err}"
    return out


def _cost(reader, before) -> tuple:
    """(epsilon, delta, rho) the statement added to the analyst's pool."""
    now = reader.accountant.spending
    return (max(now.epsilon - before.epsilon, 0.0), max(now.delta - before.delta, 0.0),
            max(now.rho - before.rho, 0.0))


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
        return ", ".join(f"{k}={number_text(v)}" for k, v in p.items())
    if p.rho is not None:
        return f"rho={number_text(p.rho)}, delta={number_text(p.delta)}"
    return f"epsilon={number_text(p.epsilon)}, delta={number_text(p.delta)}"
