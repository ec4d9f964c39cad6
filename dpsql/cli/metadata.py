"""``dpsql metadata init`` and ``dpsql metadata check``.

Owns: the metadata skeleton written from a data file's *schema* and the
command-line report of ``dpsql.metadata.model.check``.

Why the skeleton never reads values: whatever the metadata says is trusted
as public knowledge. Bounds taken from the data (its min and max) are
themselves a release of the most extreme persons' values, and a sensitivity
computed from them changes when one person changes, which voids the privacy
guarantee. So ``init`` asks DuckDB only for column names and types
(``DESCRIBE``) and leaves bounds and the privacy unit to the data owner.
"""
from __future__ import annotations

import json
import os
import re
import sys

from ..errors import DataError, MetadataError

COLLECTION = "Database"

_INT = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
        "UINTEGER", "UBIGINT", "UHUGEINT")
_FLOAT = ("FLOAT", "DOUBLE", "REAL", "DECIMAL")
_DATETIME = ("DATE", "TIME", "TIMESTAMP")

# Name tokens that suggest a column identifies a person.
_ID_TOKENS = {"id", "pid", "uid", "user", "userid", "person", "personid", "author",
              "authorid", "patient", "patientid", "customer", "customerid", "member",
              "memberid", "respondent", "individual"}

# Plain YAML scalars that YAML would read as something else than a string.
_YAML_SPECIAL = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}

HEADER = """\
# dpsql metadata skeleton, written by `dpsql metadata init` from the data's schema only:
# column names and types as DuckDB reports them. No value of the data was read into it.
#
# Before you use it, as the data owner:
# 1. Privacy unit: say who a person is, per table (see the PRIVACY UNIT comments).
# 2. Bounds: for every numeric column you want to SUM/AVG/VAR, set `lower` and `upper`
#    from what the values CAN be (a codebook, the law, physics), never from this data.
#    Bounds read from the data (its min/max) would publish the most extreme persons'
#    values and make the noise depend on them, which breaks the privacy guarantee.
#    Values outside the bounds are clamped. Without bounds such queries are refused.
# 3. Check the types: integer codes stored as text, or text columns that are really
#    numbers, are declared as DuckDB read them.
# Then run `dpsql metadata check` on this file.
"""


def run(args) -> int:
    if args.metadata_command == "check":
        return check(args.file)
    sys.stdout.write(skeleton(args.table))
    sys.stdout.flush()
    return 0


# ----------------------------------------------------------------- check

def check(path: str) -> int:
    """Print every problem (with its path) on stdout; exit 4 if there are any."""
    from ..metadata.model import check as check_metadata
    if not os.path.isfile(path):
        raise FileNotFoundError(f"metadata file not found: {path}")
    problems = check_metadata(path)
    if not problems:
        # Valid, as SmartNoise would load it; but a table without a privacy unit answers
        # no query, which its owner should hear now rather than from every analyst.
        from ..metadata.model import Metadata
        unusable = [t.privacy_unit_problem for t in Metadata.load(path).tables.values()
                    if t.privacy_unit_problem]
        for problem in unusable:
            sys.stdout.write(f"{path}: warning: {problem}\n")
        sys.stdout.write(f"{path}: OK" + (f" ({len(unusable)} table(s) refuse every query)"
                                          if unusable else "") + "\n")
        return 0
    sys.stdout.write("".join(f"{path}: {' '.join(p.split())}\n" for p in problems))
    sys.stdout.flush()
    raise MetadataError(f"{path}: {len(problems)} problem(s), listed on stdout")


# ----------------------------------------------------------------- init

def describe(path: str) -> list:
    """[(column name, DuckDB type)] of a .csv/.parquet file: schema only."""
    from ..engines.duckdb.describe import describe as file_columns
    return file_columns(path)


def metadata_type(duck_type: str) -> tuple:
    """(metadata type, comment or None) for a DuckDB type name."""
    base = duck_type.upper().split("(")[0].strip()
    if base in _INT:
        return "int", None
    if base in _FLOAT:
        return "float", None
    if base == "BOOLEAN":
        return "boolean", None
    if base.startswith(_DATETIME):
        return "datetime", None
    if base == "VARCHAR":
        return "string", None
    return "string", f"DuckDB type {duck_type} has no metadata type; declared string"


def _tokens(name: str) -> list:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [t.lower() for t in re.split(r"[^A-Za-z0-9]+", spaced) if t]


def guess_private_ids(columns: list) -> list:
    """Columns whose names suggest a person id (id, pid, user_id, author, ...)."""
    found = []
    for name, _ in columns:
        tokens = _tokens(name)
        joined = "".join(tokens)
        if joined in _ID_TOKENS or any(t in _ID_TOKENS for t in tokens):
            found.append(name)
    return found


def _key(name: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and name.lower() not in _YAML_SPECIAL:
        return name
    return json.dumps(name)  # a JSON string is a valid YAML scalar


def skeleton(tables: list) -> str:
    """The YAML text for ``[(schema.table, path)]``."""
    from ..metadata.model import TABLE_DEFAULTS
    by_schema: dict = {}
    for full_name, path in tables:
        schema, table = full_name.split(".")
        if table in by_schema.setdefault(schema, {}):
            raise MetadataError(f"--table {full_name} is given twice")
        by_schema[schema][table] = (path, describe(path))
    out = [HEADER, f"{_key(COLLECTION)}:"]
    for schema, schema_tables in by_schema.items():
        out.append(f"  {_key(schema)}:")
        for table, (path, columns) in schema_tables.items():
            out.append(f"    {_key(table)}:   # from {os.path.basename(path)}")
            out.extend(_table_lines(columns, TABLE_DEFAULTS))
    return "\n".join(out) + "\n"


def _table_lines(columns: list, table_keys) -> list:
    ids = guess_private_ids(columns)
    pad = " " * 6
    if ids:
        others = f" (also id-like: {', '.join(ids[1:])})" if len(ids) > 1 else ""
        lines = [f"{pad}# PRIVACY UNIT: choose one before use (queries are refused until you do).",
                 f"{pad}# Column {ids[0]!r} looks like a person id{others}: if it is, uncomment",
                 f"{pad}# `private_id: true` under it and set max_ids, the most rows one",
                 f"{pad}# person may contribute. If every row is a different person, uncomment:",
                 f"{pad}# row_privacy: true",
                 f"{pad}# max_ids: 1"]
    else:
        lines = [f"{pad}# PRIVACY UNIT: choose one before use (queries are refused until you do):",
                 f"{pad}# - if every row is a different person, uncomment:",
                 f"{pad}# row_privacy: true",
                 f"{pad}# - if a person may have several rows, add `private_id: true` to the",
                 f"{pad}#   column that identifies a person, and set max_ids (default 1)."]
    bounds_explained = False
    for name, duck_type in columns:
        kind, note = metadata_type(duck_type)
        if name in table_keys:
            lines.append(f"{pad}# column {name!r} ({duck_type}) is not listed: its name is a "
                         "table option of the metadata format; rename the column")
            continue
        lines.append(f"{pad}{_key(name)}:" + (f"   # {note}" if note else ""))
        lines.append(f"{pad}  type: {kind}")
        if ids and name == ids[0]:
            lines.append(f"{pad}  # private_id: true   # a guess from the name: the owner decides")
        elif kind in ("int", "float"):
            why = "" if bounds_explained else ("   # from domain knowledge, never from the "
                                               "data (see the top)")
            bounds_explained = True
            lines.append(f"{pad}  # lower:{why}")
            lines.append(f"{pad}  # upper:")
    return lines
