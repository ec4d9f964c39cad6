"""Table metadata in the SmartNoise SQL YAML format: the data model.

Owns: the metadata that says who a person is (``private_id`` /
``row_privacy``), how many rows one person may contribute (``max_ids``) and how
every column is bounded. Everything the engine trusts about the data comes from
here, so a document is checked in full before use (``dpsql.metadata.reading``:
JSON Schema, then the rules it cannot express, every problem with its path)
and only then built into ``Metadata``, ``Table`` and ``Column``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields

from ..errors import MetadataError
from .reading import (COLUMN_KEYS, COLUMN_TYPES, NUMERIC_TYPES, SCHEMA_FILE,  # noqa: F401
                               TABLE_DEFAULTS, json_schema)
from .reading import _read_and_check

__all__ = ["COLUMN_KEYS", "COLUMN_TYPES", "Column", "Metadata", "NUMERIC_TYPES", "SCHEMA_FILE",
           "TABLE_DEFAULTS", "Table", "check", "json_schema"]


# ----------------------------------------------------------------- data model

MAX_TEXT_CELL = 1 << 17
"""The longest ``max_length`` a string column's metadata may give (characters). With
MAX_TEXT_COPIES, no text a query builds exceeds 157 MB (131,072 characters of at most 4
bytes, 100 copies, and at most 3x more from an UPPER or LOWER a derived column hides), and
what an engine does with it stays within its limits: PostgreSQL's case folding (ILIKE,
LOWER) allocates 4 bytes per byte, 630 MB, under its 1 GB allocation limit; Spark and
DuckDB hold far more. So one person's long value cannot make a query fail. (1,000 copies
were allowed before: an ILIKE over them failed on PostgreSQL and ran Spark out of memory
only when a person's cell held 131,072 four-byte characters, found by the hostile review
of issue 33.)"""
TEXT_UNIT = 256
"""Characters one unit of a row's work covers: a reference to a string column counts
ceil(max_length / TEXT_UNIT) units toward MAX_TEXT_COPIES, MAX_WEIGHT and the work per
private row (``dpsql.plan.relations.MAX_WORK``), so that the time a query takes grows with
the length its text may have, not with what one person stored. Measured on PostgreSQL
(issue 33, third review): STRPOS(LOWER(CONCAT(s x 33))) over one person's 131,072-character
cell took 110 ms against 28 ms for a one-character cell, and 860 ms against 250 ms under a
300-row CROSS JOIN, when every reference counted one unit whatever its length."""
DEFAULT_TEXT_LENGTH = TEXT_UNIT
"""A string column's ``max_length`` when its metadata gives none: longer cells read as
NULL, on every engine."""



@dataclass(frozen=True)
class Column:
    """One column: its type, whether it identifies a person, and its bounds."""

    name: str
    type: str
    private_id: bool = False
    lower: float | int | None = None
    upper: float | int | None = None
    nullable: bool = True
    missing_value: object = None
    sensitivity: float | None = None
    cardinality: int | None = None
    values: tuple | None = None
    references: str | None = None          # dpsql: schema.table.column of the row's person
    max_length: int | None = None          # dpsql: a string cell's most characters; longer
                                           # cells read as NULL (DEFAULT_TEXT_LENGTH if None)
    weight: int = 1                        # dpsql: base-column references a derived column
                                           # stands for, CTEs expanded (MAX_WEIGHT)
    cost: int = 0                          # dpsql: character operations computing a derived
                                           # column takes a row (dpsql.frontend.costs)
    text: int | None = None                # dpsql: a derived text column's most bytes

    @property
    def bounded(self) -> bool:
        """Both bounds are known, so SUM/AVG/VAR of this column are allowed."""
        return self.lower is not None and self.upper is not None

    @property
    def numeric(self) -> bool:
        return self.type in NUMERIC_TYPES

    @property
    def text_length(self) -> int:
        """The most characters a cell of this string column holds as a query reads it."""
        return self.max_length if self.max_length is not None else DEFAULT_TEXT_LENGTH

    @property
    def work(self) -> int:
        """Units of work one reference to this column costs a row: its weight, times
        ceil(text_length / TEXT_UNIT) for a string column (``dpsql.frontend.allowed``)."""
        if self.type != "string":
            return self.weight
        return self.weight * -(-self.text_length // TEXT_UNIT)

    def to_dict(self) -> dict:
        """SmartNoise-shaped column mapping: ``type`` then non-default keys."""
        out = {"type": self.type}
        for f in fields(self)[2:]:
            value = getattr(self, f.name)
            if value != f.default:
                out[f.name] = list(value) if f.name == "values" else value
        return out


@dataclass(frozen=True)
class Table:
    """One table: its privacy unit, truncation and clamping options, columns."""

    schema: str
    name: str
    columns: dict[str, Column]
    max_ids: int = 1
    row_privacy: bool = False
    sample_max_ids: bool = True
    censor_dims: bool = True
    clamp_counts: bool = False
    clamp_columns: bool = True
    use_dpsu: bool = False
    rows: int | None = None
    rows_exact: int | None = None
    public: bool = False                   # dpsql: no private data (a lookup table)
    max_groups: int | None = None          # dpsql: groups one person may contribute to
    max_rows_per_group: int | None = None  # dpsql: rows one person may add to one group
    _by_lower: dict = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self):
        object.__setattr__(self, "_by_lower", {n.lower(): c for n, c in self.columns.items()})

    def __hash__(self):
        return hash((self.schema, self.name))

    @property
    def full_name(self) -> str:
        return f"{self.schema}.{self.name}" if self.schema else self.name

    @property
    def private_ids(self) -> list[str]:
        return [n for n, c in self.columns.items() if c.private_id]

    def column(self, name: str) -> Column | None:
        """Case-insensitive lookup, as unquoted SQL identifiers resolve."""
        return self._by_lower.get(name.lower())

    @property
    def privacy_unit_problem(self) -> str | None:
        """Why this table cannot be queried, or None.

        SmartNoise loads such tables and refuses every query on them; so do we:
        the engine must raise a QueryError with this text before touching data.
        """
        ids = self.private_ids
        if self.row_privacy and ids:
            return (f"table {self.full_name} sets row_privacy: true and also marks "
                    f"{', '.join(ids)} as private_id; keep only one of the two")
        if len(ids) > 1:
            return (f"table {self.full_name} marks {', '.join(ids)} as private_id; dpsql "
                    "supports one column that identifies a person: keep one (a compound "
                    "id can be one column that joins them)")
        if not self.row_privacy and not ids and not self.public and not any(
                c.references for c in self.columns.values()):
            return (f"table {self.full_name} has no private_id column and row_privacy is "
                    "false, so it is unknown what a person is; mark the column that "
                    "identifies a person with private_id: true, or set row_privacy: true "
                    "if every row is a different person")
        return None

    def to_dict(self) -> dict:
        """SmartNoise-shaped table mapping: non-default options, then columns."""
        out = {k: getattr(self, k) for k, d in TABLE_DEFAULTS.items() if getattr(self, k) != d}
        out.update((n, c.to_dict()) for n, c in self.columns.items())
        return out


@dataclass(frozen=True)
class Metadata:
    """A collection of tables, keyed by ``Table.full_name``."""

    collection: str
    engine: str | None
    tables: dict[str, Table]

    def __hash__(self):
        return hash((self.collection, self.engine, tuple(self.tables)))

    @classmethod
    def load(cls, source) -> "Metadata":
        """Load a YAML path (str or Path), a dict of the same shape, or a Metadata.

        Raises MetadataError listing every problem, one per line.
        """
        if isinstance(source, Metadata):
            return source
        doc, problems = _read_and_check(source)
        if problems:
            where = (f"'{os.fspath(source)}'" if isinstance(source, (str, os.PathLike))
                     else f"({type(source).__name__})")
            err = MetadataError(f"invalid metadata {where}: {len(problems)} problem(s)\n"
                                + "\n".join(problems))
            err.problems = problems
            raise err
        return _build(doc)

    @classmethod
    def from_file(cls, file) -> "Metadata":
        """SmartNoise's ``Metadata.from_file``: a YAML path or an open text file."""
        if not isinstance(file, (str, os.PathLike)) and not hasattr(file, "read"):
            raise MetadataError(f"Metadata.from_file takes a YAML path or an open file, not "
                                f"{type(file).__name__}")
        return cls.load(file)

    @classmethod
    def from_dict(cls, schema_dict: dict) -> "Metadata":
        """SmartNoise's ``Metadata.from_dict``: a dict of the YAML's shape."""
        if not isinstance(schema_dict, dict):
            raise MetadataError(f"Metadata.from_dict takes a dict, not "
                                f"{type(schema_dict).__name__}")
        return cls.load(schema_dict)

    @classmethod
    def from_(cls, value) -> "Metadata":
        """SmartNoise's ``Metadata.from_``: a Metadata, a path, an open file or a dict."""
        return cls.load(value)

    def matching_tables(self, name: str) -> list[Table]:
        """Every table ``name`` may refer to (see find_table)."""
        parts = name.lower().split(".")
        if len(parts) == 3:
            if self.collection and parts[0] != self.collection.lower():
                return []
            parts = parts[1:]
        if len(parts) > 2:
            return []
        return [t for t in self.tables.values() if t.name.lower() == parts[-1]
                and (len(parts) == 1 or t.schema.lower() == parts[0])]

    def find_table(self, name: str) -> Table | None:
        """Resolve ``schema.table``, ``collection.schema.table`` or a bare table name.

        Case-insensitive. A bare name resolves only if exactly one table has it;
        use matching_tables to tell "ambiguous" from "unknown". An empty
        collection name accepts any collection prefix, as SmartNoise does.
        """
        found = self.matching_tables(name)
        return found[0] if len(found) == 1 else None

    def to_dict(self) -> dict:
        """SmartNoise-shaped dict; ``Metadata.load(m.to_dict()) == m``."""
        out = {} if self.engine is None else {"engine": self.engine}
        schemas = out.setdefault(self.collection, {})
        for t in self.tables.values():
            schemas.setdefault(t.schema, {})[t.name] = t.to_dict()
        return out


def check(source) -> list[str]:
    """Every problem in ``source`` (path, dict or Metadata), each naming its path."""
    if isinstance(source, Metadata):
        return []
    return _read_and_check(source)[1]


# -------------------------------------------------------------------- building

def _build(doc) -> Metadata:
    """Objects from a document that passed every check."""
    collection = next(k for k in doc if k != "engine")
    tables = [_build_table(schema_name, table_name, spec)
              for schema_name, schema in doc[collection].items()
              for table_name, spec in schema.items()]
    return Metadata(collection, doc.get("engine"), {t.full_name: t for t in tables})


def _build_table(schema_name: str, table_name: str, spec: dict) -> Table:
    options = {k: int(v) if k in ("max_ids", "rows", "rows_exact", "max_groups",
                                  "max_rows_per_group") and v is not None else v
               for k, v in spec.items() if k in TABLE_DEFAULTS}
    columns = {name: _build_column(name, c) for name, c in spec.items()
               if name not in TABLE_DEFAULTS}
    return Table(schema_name, table_name, columns, **options)


def _build_column(name: str, spec: dict) -> Column:
    kind = spec["type"]
    convert = {"int": int, "float": float}.get(kind, lambda v: v)
    typed = {k: convert(spec[k]) for k in ("lower", "upper", "missing_value")
             if spec.get(k) is not None}
    if spec.get("values") is not None:
        typed["values"] = tuple(convert(v) for v in spec["values"])
    if spec.get("sensitivity") is not None:
        typed["sensitivity"] = float(spec["sensitivity"])
    if spec.get("cardinality") is not None:
        typed["cardinality"] = int(spec["cardinality"])
    if spec.get("max_length") is not None:
        typed["max_length"] = int(spec["max_length"])
    # SmartNoise: a missing_value replaces NULL, so such a column is never NULL.
    nullable = spec.get("nullable", True) and "missing_value" not in typed
    return Column(name, kind, private_id=spec.get("private_id", False), nullable=nullable,
                  references=spec.get("references"), **typed)
