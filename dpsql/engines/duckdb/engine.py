"""Step 5: run the bounded plan on DuckDB; only exact aggregates come back.

Owns: the DuckDB connections and the typed relation each plan reads. Private
tables are bound as views over the caller's DataFrames (scanned in place,
never copied) or Parquet files, as typed tables loaded from CSV files (read as
text, so a bad cell is NULL and never an error), or found in the caller's own
connection. Binding checks that every metadata column exists. Every plan reads
its table through the typed relation (``rewrite.typed_relation``: each column
cast once to its metadata type), so nothing downstream sees how the data
happens to be stored. Before a plan first runs, a dry run on one row of NULLs
surfaces every error that depends on the query alone, as a free QueryError.
Errors while *running* on the data could
depend on values: their text is withheld and only their class is logged.
"""
from __future__ import annotations

import csv
import hashlib
import logging
import threading
from pathlib import Path

import duckdb
from sqlglot import exp

from ...errors import (DataError, EngineRefusal, InternalError, MetadataError, OperationalError,
                     ProgrammingError, QueryError)
from ...metadata.model import Metadata, Table
from .dialect import DuckDB
from .statistics import hidden_statistics
from ...plan.aggregate import check_rows_independent
from ...plan.aggregates import MAX_STATISTICS
from ...plan.guard_limits import MAX_RELEASES
from ...plan.precut import PRE_CUT_WORK
from ..intake import duckdb_family, is_cast, is_frame, warn_cast
from ..relations import Relations
from ...plan.rewrite import null_relation, typed_relation, with_source

DIALECT = "duckdb"
log = logging.getLogger("dpsql")
# Logged for the operator, never shown to the analyst: nothing reaches stderr unless
# the operator configures a handler of the "dpsql" logger.
logging.getLogger("dpsql").addHandler(logging.NullHandler())


def own_connection(database: str = ":memory:", read_only: bool = False):
    """A DuckDB connection of dpsql's own: DuckDB does not draw its progress bar on the
    terminal (dpsql reports progress itself, through ``Reader.progress``)."""
    con = duckdb.connect(database, read_only=read_only)
    # Progress is tracked (DuckDB's default only on a terminal) but never drawn by DuckDB.
    con.execute("SET enable_progress_bar = true")
    con.execute("SET enable_progress_bar_print = false")
    return con


class Engine:
    """The private tables of one session, and how to reach them in DuckDB."""

    dialect = DuckDB()
    pre_cut_work = PRE_CUT_WORK  # most work per stored row before the cut (dpsql.plan.precut)
    # (a statement with a guarded expression is cut first on every engine: plan.precut)
    max_statistics = MAX_STATISTICS  # units of statistics a statement may release here
    max_releases = MAX_RELEASES  # release queries (parts x grouping sets) a statement may compile

    def __init__(self, con: duckdb.DuckDBPyConnection, physical: dict, metadata: Metadata,
                 frames: frozenset = frozenset()) -> None:
        self.con = con
        self.physical = physical          # Table.full_name.lower() -> exp.Table
        # Tables bound to DataFrames: DuckDB's scans of them carry no statistics, so they
        # are read without the fence (``statistics.hidden_statistics``); every other
        # source may (Parquet files, tables, the caller's connection).
        self.frames = frames
        self._types: dict = {}
        self._lock = threading.Lock()
        self.relations = Relations(metadata, self._typed, null_relation, self.dialect)
        for table in metadata.tables.values():
            if table.full_name.lower() in physical:
                self.column_types(table)      # every metadata column must exist

    def progress(self) -> float | None:
        """The running query's progress in percent (DuckDB's estimate), or None. Safe to
        call from another thread while ``run`` works."""
        try:
            value = self.con.query_progress()
        except duckdb.Error:
            return None
        return value if value >= 0 else None

    @classmethod
    def from_data(cls, data, metadata: Metadata) -> "Engine":
        con = own_connection()
        if is_frame(data) or isinstance(data, (str, Path)):
            if len(metadata.tables) != 1:
                raise ProgrammingError(
                    f"one DataFrame was given but the metadata describes {len(metadata.tables)} "
                    f"tables ({', '.join(metadata.tables)}); pass a dict {{'schema.table': df}}")
            data = {next(iter(metadata.tables)): data}
        if not isinstance(data, dict):
            raise ProgrammingError("data must be a DataFrame or a dict {'schema.table': "
                                   "DataFrame or .csv/.parquet path}")
        physical, frames = {}, set()
        for i, (name, source) in enumerate(data.items()):
            table = metadata.find_table(str(name))
            if table is None:
                raise ProgrammingError(f"data given for {name!r}, which is not a table of the "
                                       f"metadata ({', '.join(metadata.tables)})")
            view = f"_dpsql_t{i}"
            _bind(con, view, source, table)
            physical[table.full_name.lower()] = exp.Table(this=exp.to_identifier(view, quoted=True))
            if is_frame(source):
                frames.add(table.full_name.lower())
        return cls(con, physical, metadata, frozenset(frames))

    @classmethod
    def from_connection(cls, con, metadata: Metadata) -> "Engine":
        """Find each metadata table in the connection, fully qualified (catalog.schema.name)."""
        listing = exp.union(
            exp.select("database_name", "schema_name", "table_name").from_(
                exp.Anonymous(this="duckdb_tables")),
            exp.select("database_name", "schema_name", "view_name").from_(
                exp.Anonymous(this="duckdb_views")).where("NOT internal"), distinct=False)
        try:
            found = con.execute(listing.sql(DIALECT)).fetchall()
        except duckdb.Error as err:
            raise DataError(f"cannot list the connection's tables: {_first_line(err)}") from None
        physical = {}
        for table in metadata.tables.values():
            same_name = [f for f in found if f[2].lower() == table.name.lower()]
            exact = [f for f in same_name if f[1].lower() == (table.schema or "main").lower()]
            fallback = [f for f in same_name if f[1].lower() == "main"]
            hit = (exact or fallback or [None])[0]
            if hit is not None:
                physical[table.full_name.lower()] = exp.Table(
                    this=exp.to_identifier(hit[2], quoted=True),
                    db=exp.to_identifier(hit[1], quoted=True),
                    catalog=exp.to_identifier(hit[0], quoted=True))
        return cls(con, physical, metadata)

    def table_node(self, table: Table) -> exp.Table:
        node = self.physical.get(table.full_name.lower())
        if node is None:
            raise QueryError(f"table {table.full_name} is in the metadata but no data is bound "
                             "to it; pass it to from_df or create it in the connection")
        return node

    def column_types(self, table: Table) -> dict:
        """Lower-cased column name -> stored DuckDB type, read from the schema only.

        Used only to choose the casts of the typed relation; a metadata column the
        data lacks is a MetadataError here, when the table is bound, and the columns cast
        are named in a warning, once (``dpsql.engines.intake``)."""
        key = table.full_name.lower()
        if key not in self._types:
            node = self.table_node(table)
            try:
                with self._lock:
                    rel = self.con.sql(exp.select(exp.Star()).from_(node).limit(0).sql(DIALECT))
                    stored = {c.lower(): str(t) for c, t in zip(rel.columns, rel.types)}
            except duckdb.Error as err:
                raise DataError(f"cannot read the schema of {table.full_name}: "
                                f"{_first_line(err)}") from None
            _check_columns(table, list(stored))
            self._types[key] = stored
            kinds = [(c, duckdb_family(stored[c.name.lower()])) for c in table.columns.values()]
            warn_cast(table, [(c.name, family, stored[c.name.lower()]) for c, family in kinds
                              if is_cast(c.type, family)])
        return self._types[key]

    def _typed(self, table: Table) -> exp.Select:
        relation = typed_relation(table, self.table_node(table), self.column_types(table))
        if table.public or table.full_name.lower() in self.frames:
            return relation
        return hidden_statistics(relation)

    def compile(self, plan) -> str:
        """The engine SQL of ``plan`` over the typed relation, after a dry run.

        The dry run executes the whole plan on one row of NULLs: an error there
        depends on the query alone, so it is a QueryError, raised before any
        data is read and never charged."""
        # The invariant holds of what runs, this engine's constructs included (the
        # typed relations have no windows).
        typed, nulls, heads = self.relations.of(plan.query.relation.tables)
        exact, dry = self.dialect.sql_over(plan.exact, typed, nulls, check_rows_independent,
                                           heads)
        try:
            with self._lock:
                self.con.execute(dry).fetchall()
        except duckdb.Error as err:
            raise EngineRefusal(_first_line(err)) from None
        return exact

    def public_rows(self, select: exp.Select, tables) -> list:
        """Rows of a query over public tables only (their data is not private: the planner
        may read it, e.g. every value of a lookup table's column as a public key set)."""
        if any(not t.public for t in tables):
            raise InternalError("public_rows reads public tables only")
        sql = with_source(select, self.relations.typed(tables)).sql(DIALECT)
        try:
            with self._lock:
                return self.con.execute(sql).fetchall()
        except duckdb.Error as err:
            raise QueryError(f"cannot read the public table(s) "
                             f"{', '.join(t.full_name for t in tables)}: {_first_line(err)}") from None

    def run(self, sql: str) -> dict:
        """Exact aggregates as numpy arrays (masked where NULL), one per column."""
        try:
            with self._lock:
                return self.con.execute(sql).fetchnumpy()
        except RuntimeError as err:
            if str(err).strip() == "Query interrupted":   # DuckDB's form of Ctrl-C
                raise KeyboardInterrupt from None
            raise
        except duckdb.Error as err:
            # A bug: the plan is built so that no value can make it fail. The message
            # may quote a value, so only the error's class and the plan's digest are logged.
            # The dpsql logger has no handler unless the operator adds one (see __init__).
            log.error("dpsql: the engine failed on data (plan %s, %s); please report it",
                      hashlib.sha256(sql.encode()).hexdigest()[:16], type(err).__name__)
            raise OperationalError(
                "the query failed while reading the data; the engine's message is withheld "
                "because it could depend on private values") from None


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def _check_columns(table: Table, present: list) -> None:
    lowered = {c.lower() for c in present}
    missing = [c.name for c in table.columns.values() if c.name.lower() not in lowered]
    if not present:
        raise MetadataError(f"the data bound to {table.full_name} has no columns (is the file "
                            "empty?); give a file with a header row naming the metadata's columns")
    if missing:
        raise MetadataError(f"the data bound to {table.full_name} lacks the metadata column(s) "
                            f"{', '.join(missing)}; its columns are {', '.join(present)}. Fix "
                            "the header or the metadata")


def _cell_text(value):
    """One cell's text, for the cells pandas could not convert: bytes are decoded (bad
    bytes replaced), a value whose str() fails or is not text is NULL."""
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    try:
        text = str(value)
    except Exception:  # noqa: BLE001 - the caller's object: its failure is its NULL
        return None
    return str.__str__(text) if isinstance(text, str) else None


def _text(values):
    """A column as text DuckDB can always read: a cell that is not valid text is NULL.

    A Python str may hold a lone surrogate (from a JSON escape such as \\ud800), which
    is not UTF-8: DuckDB would fail every query that reads the column, so one row could
    decide whether a query fails. Dates, numbers and other objects become their text
    (pandas' own vectorised conversion); only if it fails (bytes that are not UTF-8, an
    object whose str() raises) is each cell converted on its own, to its text or NULL.
    The result is Python-backed text, with or without pyarrow: whatever pandas' default,
    it can hold the lone surrogates this pass removes (Arrow's cannot, and Arrow cannot
    even take the pattern that finds them)."""
    import pandas as pd         # a DataFrame was given: pandas is loaded
    python_text = pd.StringDtype("python")
    try:
        text = values.astype(python_text)
    except Exception:  # noqa: BLE001 - any object may be in the column: convert per cell
        text = values.map(_cell_text, na_action="ignore").astype(python_text)
    bad = text.str.contains("[\ud800-\udfff]", regex=True, na=False)
    if bad.any():
        text = text.mask(bad)
    return text


def _bind(con, view: str, source, table: Table) -> None:
    if is_frame(source):
        import pandas as pd     # loaded: ``source`` is a DataFrame
        # DuckDB infers the type of an object column from a sample of its values: one
        # person's value could change it, or fail the scan. Such columns are bound as
        # text (copied once, here; other columns are scanned in place).
        wanted = {c.name.lower() for c in table.columns.values()}
        # Arrow-backed strings are valid UTF-8 by construction and need no pass.
        texts = [c for c in source.columns if str(c).lower() in wanted and (
            source[c].dtype == object or (isinstance(source[c].dtype, pd.StringDtype)
                                          and source[c].dtype.storage == "python"))]
        if texts:
            source = source.assign(**{str(c): _text(source[c]) for c in texts})
        con.register(view, source)
        return
    path = Path(source)
    try:
        if path.suffix.lower() == ".csv":
            _load_csv(con, view, path, table)
            return
        if path.suffix.lower() in (".parquet", ".pq"):
            rel = con.read_parquet(str(path))
        else:
            raise DataError(f"{path}: unsupported file type; give a .csv or .parquet file")
        rel.create_view(view)
    except duckdb.Error as err:
        raise DataError(f"cannot read {path}: {_first_line(err)}") from None


def _csv_header(path: Path) -> list:
    with open(path, "rb") as f:
        line = f.readline()
    try:
        first = line.decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError:
        raise DataError(f"{path}: the header row is not UTF-8 text") from None
    names = next(csv.reader([first]), [])
    if len(set(n.lower() for n in names)) != len(names):
        raise MetadataError(f"{path}: the header row names a column twice: {', '.join(names)}")
    return names


MAX_LINE = 1 << 30
"""The longest CSV line read (bytes). DuckDB's default (a few MB) dropped one person's 30 MB
cell's line, and with it the whole file (review 44, F4); a cell that long reads as NULL
(``max_length``) like any other too long."""


def _load_csv(con, view: str, path: Path, table: Table) -> None:
    """Load a CSV as a typed table: read as text (no type sniffing, so one odd value
    cannot change a column's type or fail a query), converted by the metadata.
    The file must be comma-separated, UTF-8, with a header row."""
    if not path.is_file():
        raise DataError(f"cannot read {path}: no such file")
    if path.stat().st_size == 0:
        raise MetadataError(f"{path} is empty; the table {table.full_name} needs a header "
                            "row naming its columns")
    # Nothing is sniffed from the data (delimiter, quoting, types): one row could change
    # it. The header names the columns; a row that does not parse is dropped, like a
    # cell that does not convert.
    header = _csv_header(path)
    _check_columns(table, header)
    rejects, scans = view + "_rejects", view + "_scans"
    rel = con.read_csv(str(path), header=True, auto_detect=False, delimiter=",", quotechar='"',
                       escapechar='"', ignore_errors=True, strict_mode=False, max_line_size=MAX_LINE,
                       store_rejects=True, rejects_table=rejects, rejects_scan=scans,
                       columns={name: "VARCHAR" for name in header})
    rel.create_view(view + "_text")
    source = exp.Table(this=exp.to_identifier(view + "_text", quoted=True))
    typed = typed_relation(table, source, {c.name.lower(): "VARCHAR" for c in table.columns.values()})
    target = exp.Table(this=exp.to_identifier(view, quoted=True))
    con.execute(exp.Create(this=target, kind="TABLE", expression=typed).sql(DIALECT))
    con.execute(exp.Drop(tables=[exp.Table(this=exp.to_identifier(view + "_text", quoted=True))],
                         kind="VIEW").sql(DIALECT))
    try:
        _check_records(con, path, table, target, exp.Table(this=exp.to_identifier(rejects, quoted=True)))
    except DataError:
        con.execute(exp.Drop(tables=[target], kind="TABLE").sql(DIALECT))
        raise
    finally:
        for name in (rejects, scans):
            con.execute(exp.Drop(tables=[exp.Table(this=exp.to_identifier(name, quoted=True))],
                                 kind="TABLE", exists=True).sql(DIALECT))


_LINE_START = bytes.maketrans(bytes(range(256)),
                              bytes(b if b in b"\r\n" else ord("x") for b in range(256)))


def _count_lines(path: Path, chunk: int = 1 << 22) -> int:
    """The file's non-blank lines, split as DuckDB's CSV reader splits them outside
    quotes: a line ends at CR LF, CR or LF, and an empty line is skipped. Counted on the
    bytes a chunk at a time: every byte but CR and LF becomes x, and a line starts where
    an x follows a line end (or starts the file)."""
    lines, last = 0, b"\n"
    with open(path, "rb") as f:
        while block := f.read(chunk):
            text = last + block.translate(_LINE_START)
            lines += text.count(b"\nx") + text.count(b"\rx")
            last = text[-1:]
    return lines


def _has_break(node: exp.Expression) -> exp.Expression:
    return exp.or_(*[exp.Anonymous(this="contains", expressions=[
        node.copy(), exp.Anonymous(this="chr", expressions=[exp.Literal.number(code)])])
        for code in (10, 13)])


def _check_records(con, path: Path, table: Table, target: exp.Table, rejects: exp.Table) -> None:
    """Refuse the file if a quoted field spans lines.

    A quoted field may hold line breaks, so one person's unbalanced quote would swallow
    the lines after it, other people's records: one person's data would change others'
    rows, outside the neighbouring data sets differential privacy is about. So each
    non-blank line after the header must be a record of its own: the records kept plus
    those dropped as errors (one per record, however many errors it has) must be as many
    as those lines, and no text kept may hold a line break. (DuckDB gives the line where
    a dropped record starts, and its text, with the blank lines before it: trimmed.) One
    count of the file's line ends in byte chunks and three queries in DuckDB; nothing
    per row in Python."""
    kept = con.execute(exp.select("COUNT(*)").from_(target).sql(DIALECT)).fetchone()[0]
    line = exp.column("line")
    dropped, first = con.execute(exp.select(
        exp.Count(this=exp.Distinct(expressions=[line])),
        exp.Filter(this=exp.Min(this=line), expression=exp.Where(
            this=_has_break(exp.Trim(this=exp.column("csv_line"), expression=exp.Literal.string(
                "\r\n")))))).from_(rejects).sql(DIALECT)).fetchone()
    texts = [exp.column(c.name, quoted=True) for c in table.columns.values() if c.type == "string"]
    broken = bool(texts) and con.execute(exp.select("COUNT(*) > 0").from_(target).where(
        exp.or_(*[_has_break(node) for node in texts])).sql(DIALECT)).fetchone()[0]
    if first is None and not broken and kept + dropped == _count_lines(path) - 1:
        return
    where = f", likely in the record that starts on line {first}" if first is not None else ""
    raise DataError(f"{path}: a quoted field spans lines (an unbalanced quote{where}), or a "
                    f"line is longer than {MAX_LINE >> 20:,} MB; fix the quoting in the file: "
                    "close every quote on the line where it opens, as a field may not hold a "
                    "line break. The file is refused as a whole so that one record cannot "
                    "change others.")
