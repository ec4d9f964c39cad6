"""What the engines that run on a server (PostgreSQL, Spark) share: typed tables in a catalog.

Owns: binding each metadata table to a table of the server (every metadata column must
exist there; one declared in a type that does not hold its metadata type is cast to it as
DuckDB casts it, ``dpsql.engines.intake``, and named in a warning; a stored type the engine
cannot convert as DuckDB does is a ``MetadataError`` that names both), the typed relation a
plan reads, the dry run, and the error policy: an error before the data is
read depends on the query alone (a free ``QueryError``); one while running on the data is
reported by its class only. An engine supplies its dialect, its type tables, how it runs a
statement (``_execute``) and reads a result column (``_column``), and its dry-run relation.
"""
from __future__ import annotations

import hashlib
import logging

from sqlglot import exp

from ..errors import EngineRefusal, InternalError, MetadataError, OperationalError, QueryError
from ..frontend.allowed import ENGINE_TYPES
from ..metadata.model import Metadata, Table
from ..plan.aggregate import check_rows_independent
from ..plan.aggregates import MAX_STATISTICS
from ..plan.guard_limits import MAX_RELEASES
from ..plan.precut import PRE_CUT_WORK
from ..plan.rewrite import capped_text, converted, null_relation, with_source
from .intake import NEUTRAL, is_cast, warn_cast
from .relations import Relations

log = logging.getLogger("dpsql")
# Logged for the operator, never shown to the analyst: nothing reaches stderr unless
# the operator configures a handler of the "dpsql" logger.
logging.getLogger("dpsql").addHandler(logging.NullHandler())


class ServerEngine:
    """The private tables of one session on a server, found in its catalog."""

    dialect = None
    pre_cut_work = PRE_CUT_WORK  # most work per stored row before the cut (dpsql.plan.precut)
    # (a statement with a guarded expression is cut first on every engine: plan.precut)
    max_statistics = MAX_STATISTICS  # units of statistics a statement may release here
    max_releases = MAX_RELEASES  # release queries (parts x grouping sets) a statement may compile
    FAMILY: dict = {}           # the server's type -> its family (dpsql.engines.intake)
    TARGET: dict = {}           # metadata type -> the engine type it is read as
    WHERE = ""                  # "on the PostgreSQL server", for messages
    COLUMN = ""                 # "the server's column", for messages
    MISSING = ""                # what to do about a missing table

    def __init__(self, physical: dict, metadata: Metadata) -> None:
        self.physical = physical          # Table.full_name.lower() -> (exp.Table, {column: type})
        self._bound: dict = {}            # Table.full_name.lower() -> column_types' answer
        self.relations = Relations(metadata, self._typed, self._dry_relation, self.dialect)
        for table in metadata.tables.values():
            if table.full_name.lower() in physical:
                self.column_types(table)      # every metadata column must exist, typed alike

    # -- hooks ------------------------------------------------------------------
    def _execute(self, sql: str) -> tuple:
        """(column names, rows, column kinds) of one statement."""
        raise NotImplementedError

    def _column(self, values: list, kind):
        raise NotImplementedError

    def _errors(self) -> tuple:
        raise NotImplementedError

    def _read(self, col, node: exp.Expression, kind: str, target: exp.DataType) -> exp.Expression:
        """A stored column of the server's type ``kind`` as ``target`` (a cast that cannot fail)."""
        return exp.Cast(this=node, to=target)

    def _dry_relation(self, table: Table) -> exp.Select:
        return dry_rows(table)

    def _stopped(self) -> bool:
        """Whether the statement that just failed had been stopped (``cancel``)."""
        return False

    def _message(self, err: Exception) -> str:
        """What the dry run's error says (it depends on the query alone)."""
        return first_line(err)

    def lost(self) -> bool:
        """Whether the connection to the server is gone (closed or broken): every statement
        fails until the session is opened again (``dpsql serve`` then reopens it)."""
        return False

    def _failed(self, refusal: QueryError) -> Exception:
        """``refusal`` for an error the query caused; ``_lost()`` when the connection
        itself was lost (the driver's text is not the analyst's to read)."""
        return self._lost() if self.lost() else refusal

    @staticmethod
    def _lost() -> OperationalError:
        return OperationalError("the connection to the engine was lost (the database server "
                                "or the Spark context stopped); open the session again")

    # -- binding -------------------------------------------------------------------
    def table_node(self, table: Table) -> exp.Table:
        found = self.physical.get(table.full_name.lower())
        if found is None:
            raise QueryError(f"table {table.full_name} is in the metadata but not {self.WHERE} "
                             f"({self.MISSING})")
        return found[0]

    def column_types(self, table: Table) -> dict:
        """Lower-cased metadata column name -> (the server's name, its type); a column the
        table lacks, or one of a type the engine cannot cast as DuckDB does, is refused. The
        first call (when the table is bound) warns of the columns cast."""
        key = table.full_name.lower()
        if key in self._bound:
            return self._bound[key]
        self.table_node(table)
        declared = {c.lower(): (c, t) for c, t in self.physical[key][1].items()}
        out, cast = {}, []
        for col in table.columns.values():
            hit = declared.get(col.name.lower())
            if hit is None:
                raise MetadataError(f"{table.full_name}.{col.name}: no such column {self.WHERE} "
                                    f"(it has {', '.join(sorted(declared))})")
            family = self.FAMILY.get(hit[1])
            if is_cast(col.type, family):
                self._check_cast(table, col, hit, family)
                cast.append((col.name, family, hit[1]))
            out[col.name.lower()] = hit
        self._bound[key] = out
        warn_cast(table, cast)
        return out

    def _check_cast(self, table: Table, col, hit: tuple, family: str | None) -> None:
        """Refuse a stored type this engine cannot cast to ``col``'s as DuckDB does (its
        dialect refuses the TRY_CAST, for free, as it would an analyst's)."""
        problem = family is None or family == "decimal"
        if not problem:
            try:
                self.dialect.lower(exp.select(self._cast_value(col, hit[0], family)))
            except QueryError:
                problem = True
        if problem:
            raise MetadataError(f"{table.full_name}.{col.name}: the metadata says {col.type}, "
                                f"{self.COLUMN} is {hit[1]}, which dpsql does not cast to "
                                f"{col.type} {self.WHERE}; make them agree")

    @staticmethod
    def _cast_value(col, name: str, family: str) -> exp.Expression:
        """The stored column ``name`` of ``family`` cast to ``col``'s metadata type, as on
        DuckDB (``dpsql.plan.rewrite.converted``), typed so that the dialect's TRY_CAST
        rules know its source type."""
        node = exp.column(name, quoted=True)
        node.type = exp.DataType.build(NEUTRAL[family])
        return converted(col, NEUTRAL[family], node)

    def _typed(self, table: Table) -> exp.Select:
        """Every metadata column read as its engine type, under the metadata's name; text
        longer than its column's max_length reads as NULL, as on every engine."""
        stored = self.column_types(table)
        items = []
        for col in table.columns.values():
            name, kind = stored[col.name.lower()]
            target = exp.DataType.build(self.TARGET[col.type], dialect=self.dialect.name)
            family = self.FAMILY.get(kind)
            if is_cast(col.type, family):
                value = self._cast_value(col, name, family)
            else:
                value = self._read(col, exp.column(name, quoted=True), kind, target)
            if col.type == "string":
                value = capped_text(value, col.text_length, "OCTET_LENGTH")
            if col.missing_value is not None:
                value = exp.Coalesce(this=value, expressions=[exp.Cast(
                    this=exp.Literal.string(str(col.missing_value)), to=target.copy())])
            items.append(exp.alias_(value, col.name, quoted=True))
        return exp.select(*items).from_(self.table_node(table).copy())

    # -- running ------------------------------------------------------------------
    def compile(self, plan) -> str:
        """The engine SQL of ``plan`` over the typed relation, after a dry run."""
        # The invariant holds of what runs, this engine's constructs included (the
        # typed relations have no windows).
        typed, nulls, heads = self.relations.of(plan.query.relation.tables)
        exact, dry = self.dialect.sql_over(plan.exact, typed, nulls, check_rows_independent,
                                           heads)
        try:
            self._execute(dry)
        except self._errors() as err:
            raise self._failed(EngineRefusal(self._message(err))) from None
        return exact

    def public_rows(self, select: exp.Select, tables) -> list:
        """Rows of a query over public tables only."""
        if any(not t.public for t in tables):
            raise InternalError("public_rows reads public tables only")
        sql = self.dialect.render(with_source(select, self.relations.typed(tables)))
        try:
            return [tuple(row) for row in self._execute(sql)[1]]
        except self._errors() as err:
            raise self._failed(QueryError(
                f"cannot read the public table(s) "
                f"{', '.join(t.full_name for t in tables)}: {first_line(err)}")) from None

    def run(self, sql: str) -> dict:
        """Exact aggregates as numpy arrays (masked where NULL), one per column."""
        try:
            names, rows, kinds = self._execute(sql)
        except self._errors() as err:
            if not self._stopped():       # a timeout's or a cancel's stop is no failure
                log.error("dpsql: the engine failed on data (plan %s, %s); please report it",
                          hashlib.sha256(sql.encode()).hexdigest()[:16], type(err).__name__)
            raise OperationalError(
                "the query failed while reading the data; the engine's message is withheld "
                "because it could depend on private values") from None
        return {name: self._column([row[i] for row in rows], kind)
                for i, (name, kind) in enumerate(zip(names, kinds))}


PLACEHOLDERS = {"int": "0", "float": "0.0", "string": "''", "boolean": "FALSE",
                "datetime": "'1970-01-01 00:00:00'"}
"""The ordinary values of the dry run's second row, per metadata type."""


def dry_rows(table: Table) -> exp.Select:
    """The rows a plan is first run on, for free: one of NULLs (``null_relation``) and one of
    ordinary values (``PLACEHOLDERS``), behind ``OFFSET 0`` so that the engine computes the
    plan over them as over stored rows, not folded into constants (on NULLs alone, a
    function PostgreSQL rejects only when it computes it, e.g. an unknown EXTRACT field,
    passed the dry run and failed on every data set, charged). A failure here depends on
    the query alone; the rules (``dpsql.plan.dialect.apply_rules``) are what make the rest
    total."""
    values = exp.select(*[exp.alias_(exp.Cast(this=exp.maybe_parse(PLACEHOLDERS[col.type]),
                                              to=exp.DataType.build(ENGINE_TYPES[col.type])),
                                     col.name, quoted=True) for col in table.columns.values()])
    both = exp.union(null_relation(table), values, distinct=False)
    return exp.select(exp.Star()).from_(exp.Subquery(
        this=both, alias=exp.TableAlias(this=exp.to_identifier("_dry")))).offset(0)


def first_line(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
