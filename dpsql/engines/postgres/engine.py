"""Step 5 on PostgreSQL: run the bounded plan where the data lives; only exact aggregates return.

Owns: a session's psycopg 3 connection: where its metadata tables are in the server's
catalog (``schema.table``, case-insensitive, ``public`` as the fallback schema), which
declared types hold which metadata type, and how a statement runs (every one dpsql
rendered, in a read-only transaction with a statement timeout). Binding, the typed
relation, the dry run and the error policy are ``dpsql.engines.server``'s.
"""
from __future__ import annotations

import threading

import numpy as np
from sqlglot import exp

from ...errors import DataError
from ...metadata.model import Metadata
from ..server import ServerEngine, first_line
from .dialect import Postgres
from .guards import _float_fits

STATEMENT_TIMEOUT_MS = 600_000
"""Longest a statement may run (10 minutes); PostgreSQL cancels it after that."""

# Declared PostgreSQL types -> their family (``dpsql.engines.intake``).
_FAMILY = {"smallint": "int", "integer": "int", "bigint": "int", "real": "float",
           "double precision": "float", "numeric": "decimal", "text": "string",
           "character varying": "string", "character": "string", "name": "string",
           "boolean": "boolean", "timestamp without time zone": "timestamp", "date": "date"}
_TARGET = {"int": "BIGINT", "float": "DOUBLE PRECISION", "string": "TEXT", "boolean": "BOOLEAN",
           "datetime": "TIMESTAMP", "date": "DATE"}


class PostgresEngine(ServerEngine):
    """The private tables of one session, and how to reach them on a PostgreSQL server."""

    dialect = Postgres()
    # (a statement with a guarded expression is cut first on every engine: plan.precut)
    FAMILY, TARGET = _FAMILY, _TARGET
    WHERE, COLUMN = "on the PostgreSQL server", "the server's column"
    MISSING = "looked for it in its schema and in public"

    def __init__(self, con, physical: dict, metadata: Metadata) -> None:
        self.con = con
        self._lock = threading.Lock()
        super().__init__(physical, metadata)

    @classmethod
    def from_connection(cls, con, metadata: Metadata) -> "PostgresEngine":
        """Find each metadata table in the server's catalog."""
        listing = ("SELECT table_schema, table_name, column_name, data_type "
                   "FROM information_schema.columns "
                   "WHERE table_schema NOT IN ('pg_catalog', 'information_schema')")
        rows = cls._read_catalog(con, listing)
        found: dict = {}
        for schema, name, column, kind in rows:
            found.setdefault((schema, name), {})[column] = kind
        physical = {}
        for table in metadata.tables.values():
            same = [key for key in found if key[1].lower() == table.name.lower()]
            exact = [key for key in same if key[0].lower() == (table.schema or "public").lower()]
            fallback = [key for key in same if key[0] == "public"]
            hit = (exact or fallback or [None])[0]
            if hit is not None:
                node = exp.Table(this=exp.to_identifier(hit[1], quoted=True),
                                 db=exp.to_identifier(hit[0], quoted=True))
                physical[table.full_name.lower()] = (node, found[hit])
        return cls(con, physical, metadata)

    @staticmethod
    def _read_catalog(con, sql: str) -> list:
        import psycopg
        try:
            with con.transaction():
                with con.cursor() as cur:
                    cur.execute(sql)
                    return cur.fetchall()
        except psycopg.Error as err:
            raise DataError(f"cannot list the server's tables: {first_line(err)}") from None

    def _read(self, col, node, kind: str, target):
        """The declared types were checked, so the cast cannot fail, except for values beyond
        a DOUBLE in a numeric column and dates past the last timestamp: those read as NULL."""
        value = exp.Cast(this=node, to=target)
        if kind == "numeric" and col.type == "float":
            value = exp.Case(ifs=[exp.If(this=_float_fits(node.copy()), true=value)])
        if kind == "date" and col.type == "datetime":
            # dates run past the last timestamp (year 294276): NULL, never an error
            value = exp.Case(ifs=[exp.If(this=exp.or_(
                exp.not_(exp.Anonymous(this="ISFINITE", expressions=[node.copy()])),
                exp.LTE(this=node.copy(), expression=exp.Cast(
                    this=exp.Literal.string("294276-12-31"), to=exp.DataType.build(
                        "DATE")))), true=value)])
        return value

    def _errors(self) -> tuple:
        import psycopg
        return (psycopg.Error,)

    def lost(self) -> bool:
        return bool(self.con.closed or getattr(self.con, "broken", False))

    def _column(self, values: list, oid):
        return _column(values, oid)

    def _execute(self, sql: str) -> tuple:
        """(column names, rows, type OIDs) of one statement, in a read-only transaction."""
        with self._lock, self.con.transaction():
            with self.con.cursor() as cur:
                # one round trip for the transaction's settings
                cur.execute("SET TRANSACTION READ ONLY; SET LOCAL statement_timeout = "
                            f"{int(STATEMENT_TIMEOUT_MS)}; {PLANNER_SETTINGS}")
                cur.execute(sql)
                names = [d.name for d in cur.description]
                return names, cur.fetchall(), [d.type_code for d in cur.description]


PLANNER_SETTINGS = "SET LOCAL enable_nestloop = off; SET LOCAL jit = off"
"""Bounded plans read whole relations and join them on equalities, where hash joins are
right; PostgreSQL's row estimates of the typed relation's guarded filters and of
truncation's grouped CTEs are often 1, and it then picks nested loops that rescan a CTE
once per row (the retail fixture's queries took 20-40 s each instead of under 1 s).
Nested loops stay available where nothing else can run (joins on inequalities), at a cost
estimate so high that it would always start JIT compilation (300-380 ms of a 60 ms query):
JIT is off."""

_INTEGER_OIDS = {20, 21, 23}
_FLOAT_OIDS = {700, 701, 1700}
_BOOL_OID = 16
_ARRAY_OIDS = {1005, 1007, 1016, 1231}


def _column(values: list, oid: int) -> np.ndarray:
    """One result column as a numpy array, typed by the server's result type (never by the
    values): masked where NULL; histograms (arrays) as an object array of int64 arrays."""
    mask = np.array([v is None for v in values], dtype=bool)
    if oid in _INTEGER_OIDS:
        data = np.array([_clip_int(v) if v is not None else 0 for v in values], dtype=np.int64)
    elif oid in _FLOAT_OIDS:
        data = np.array([float(v) if v is not None else 0.0 for v in values], dtype=np.float64)
    elif oid == _BOOL_OID:
        data = np.array([bool(v) if v is not None else False for v in values], dtype=np.bool_)
    elif oid in _ARRAY_OIDS:
        data = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):
            data[i] = np.asarray(v, dtype=np.int64) if v is not None else None
    else:
        data = np.array([v if v is not None else "" for v in values], dtype=object)
    return np.ma.MaskedArray(data, mask=mask)


def _clip_int(value) -> int:
    """A whole number within int64 (a SUM of BIGINT is NUMERIC on PostgreSQL); the release
    clamps to its own range again (1-Lipschitz)."""
    return max(-(2 ** 63), min(2 ** 63 - 1, int(value)))
