"""Step 5 on PostgreSQL: run the bounded plan where the data lives; only exact aggregates return.

Owns: a session's psycopg 3 connection and the typed relation each plan reads there.
Metadata tables are found in the server's catalog (``schema.table``, case-insensitive,
``public`` as the fallback schema); binding compares each column's declared type with
the metadata and refuses a mismatch (``MetadataError``, naming both), so nothing
downstream reads a type from the data. Every statement dpsql sends is one it rendered,
in a read-only transaction with a statement timeout. As on DuckDB, a plan is dry-run on
one row of NULLs before it first runs (an error there depends on the query alone: a free
``QueryError``), and an error while running on the data is reported by its class only.
"""
from __future__ import annotations

import hashlib
import logging
import threading

import numpy as np
from sqlglot import exp

from ...errors import DataError, InternalError, MetadataError, OperationalError, QueryError
from ...metadata.model import Metadata, Table
from ...plan.aggregate import check_rows_independent
from ...plan.rewrite import capped_text, null_relation, typed_name, with_source
from .dialect import Postgres
from .guards import _float_fits

log = logging.getLogger("dpsql")

STATEMENT_TIMEOUT_MS = 600_000
"""Longest a statement may run (10 minutes); PostgreSQL cancels it after that."""

# Declared PostgreSQL types that hold each metadata type without loss.
_COMPATIBLE = {
    "int": {"smallint", "integer", "bigint"},
    "float": {"real", "double precision", "numeric", "smallint", "integer", "bigint"},
    "string": {"text", "character varying", "character", "name"},
    "boolean": {"boolean"},
    "datetime": {"timestamp without time zone", "date"},
    "date": {"date"},
}
_TARGET = {"int": "BIGINT", "float": "DOUBLE PRECISION", "string": "TEXT", "boolean": "BOOLEAN",
           "datetime": "TIMESTAMP", "date": "DATE"}


class PostgresEngine:
    """The private tables of one session, and how to reach them on a PostgreSQL server."""

    dialect = Postgres()

    def __init__(self, con, physical: dict, metadata: Metadata) -> None:
        self.con = con
        self.physical = physical          # Table.full_name.lower() -> (exp.Table, {column: type})
        self._lock = threading.Lock()
        for table in metadata.tables.values():
            if table.full_name.lower() in physical:
                self.column_types(table)      # every metadata column must exist, typed alike

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
            raise DataError(f"cannot list the server's tables: {_first_line(err)}") from None

    def table_node(self, table: Table) -> exp.Table:
        found = self.physical.get(table.full_name.lower())
        if found is None:
            raise QueryError(f"table {table.full_name} is in the metadata but not on the "
                             "PostgreSQL server (looked for it in its schema and in public)")
        return found[0]

    def column_types(self, table: Table) -> dict:
        """Lower-cased metadata column name -> the server's declared type; a column the
        table lacks, or one whose type does not hold the metadata type, is refused."""
        self.table_node(table)
        declared = {c.lower(): (c, t) for c, t in self.physical[table.full_name.lower()][1].items()}
        out = {}
        for col in table.columns.values():
            hit = declared.get(col.name.lower())
            if hit is None:
                raise MetadataError(f"{table.full_name}.{col.name}: no such column on the "
                                    f"PostgreSQL server (it has {', '.join(sorted(declared))})")
            if hit[1] not in _COMPATIBLE[col.type]:
                raise MetadataError(f"{table.full_name}.{col.name}: the metadata says {col.type}, "
                                    f"the server's column is {hit[1]}; make them agree")
            out[col.name.lower()] = hit
        return out

    def _typed(self, table: Table) -> exp.Select:
        """Every metadata column cast to its engine type (casts that cannot fail: the
        declared types were checked), under the metadata's name."""
        stored = self.column_types(table)
        items = []
        for col in table.columns.values():
            name, kind = stored[col.name.lower()]
            node = exp.column(name, quoted=True)
            target = exp.DataType.build(_TARGET[col.type], dialect="postgres")
            value = exp.Cast(this=node, to=target)
            if kind == "numeric" and col.type == "float":
                # beyond a DOUBLE's range, or too small for one: NULL, never an error
                value = exp.Case(ifs=[exp.If(this=_float_fits(node.copy()), true=value)])
            if kind == "date" and col.type == "datetime":
                # dates run past the last timestamp (year 294276): NULL, never an error
                value = exp.Case(ifs=[exp.If(this=exp.or_(
                    exp.not_(exp.Anonymous(this="ISFINITE", expressions=[node.copy()])),
                    exp.LTE(this=node.copy(), expression=exp.Cast(
                        this=exp.Literal.string("294276-12-31"), to=exp.DataType.build(
                            "DATE")))), true=value)])
            if col.type == "string":
                value = capped_text(value)
            if col.missing_value is not None:
                value = exp.Coalesce(this=value, expressions=[exp.Cast(
                    this=exp.Literal.string(str(col.missing_value)), to=target.copy())])
            items.append(exp.alias_(value, col.name, quoted=True))
        return exp.select(*items).from_(self.table_node(table).copy())

    def compile(self, plan) -> str:
        """The PostgreSQL SQL of ``plan`` over the typed relation, after a dry run."""
        tables = plan.query.relation.tables
        typed = {typed_name(t): self._typed(t) for t in tables}
        check_rows_independent(self.dialect.lower(plan.exact))
        dry = self.dialect.render(with_source(plan.exact, {typed_name(t): null_relation(t)
                                                           for t in tables}))
        try:
            self._execute(dry)
        except _server_errors() as err:
            raise QueryError(f"the engine refuses the query: {_first_line(err)}") from None
        return self.dialect.render(with_source(plan.exact, typed))

    def public_rows(self, select: exp.Select, tables) -> list:
        """Rows of a query over public tables only."""
        if any(not t.public for t in tables):
            raise InternalError("public_rows reads public tables only")
        sql = self.dialect.render(with_source(select, {typed_name(t): self._typed(t)
                                                       for t in tables}))
        try:
            return self._execute(sql)[1]
        except _server_errors() as err:
            raise QueryError(f"cannot read the public table(s) "
                             f"{', '.join(t.full_name for t in tables)}: {_first_line(err)}") from None

    def run(self, sql: str) -> dict:
        """Exact aggregates as numpy arrays (masked where NULL), one per column."""
        try:
            names, rows, oids = self._execute(sql)
        except _server_errors() as err:
            log.error("dpsql: the engine failed on data (plan %s, %s); please report it",
                      hashlib.sha256(sql.encode()).hexdigest()[:16], type(err).__name__)
            raise OperationalError(
                "the query failed while reading the data; the engine's message is withheld "
                "because it could depend on private values") from None
        return {name: _column([row[i] for row in rows], oid)
                for i, (name, oid) in enumerate(zip(names, oids))}

    def _execute(self, sql: str) -> tuple:
        """(column names, rows, type OIDs) of one statement, in a read-only transaction."""
        with self._lock, self.con.transaction():
            with self.con.cursor() as cur:
                cur.execute("SET TRANSACTION READ ONLY")
                cur.execute(f"SET LOCAL statement_timeout = {int(STATEMENT_TIMEOUT_MS)}")
                cur.execute(sql)
                names = [d.name for d in cur.description]
                return names, cur.fetchall(), [d.type_code for d in cur.description]


def _server_errors() -> tuple:
    import psycopg
    return (psycopg.Error,)


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


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
