"""Reading and checking metadata documents (the half of ``dpsql.metadata.model`` that finds problems).

Owns: parsing YAML strictly (duplicate keys are problems), validating the
structure with the JSON Schema in ``metadata_schemas/`` and then the rules JSON
Schema cannot express, and reporting every problem at once, each prefixed by
its path ``schema.table.column.key``. It never builds the data model; that is
``dpsql.metadata.model``, which calls ``read_and_check`` first.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import numbers
import os
from functools import lru_cache
from pathlib import Path

import jsonschema
import yaml

SCHEMA_FILE = "smartnoise_metadata.schema.json"
COLUMN_TYPES = ("int", "float", "string", "boolean", "datetime")
NUMERIC_TYPES = ("int", "float")
TABLE_DEFAULTS = {
    "max_ids": 1, "row_privacy": False, "sample_max_ids": True, "censor_dims": True,
    "clamp_counts": False, "clamp_columns": True, "use_dpsu": False, "rows": None,
    "rows_exact": None, "public": False, "max_groups": None, "max_rows_per_group": None,
}
COLUMN_KEYS = ("type", "private_id", "lower", "upper", "nullable", "missing_value",
               "sensitivity", "cardinality", "values", "name", "references", "max_length")



def json_schema() -> dict:
    """The JSON Schema (Draft 2020-12) the structure is validated against."""
    return json.loads(_schema_text())


# --------------------------------------------------------------------- reading

def _schema_text() -> str:
    # Installed: package data of dpsql.metadata_schemas. Source tree: the folder.
    try:
        from importlib.resources import files
        return files("dpsql.metadata_schemas").joinpath(SCHEMA_FILE).read_text("utf-8")
    except (ImportError, OSError):
        path = Path(__file__).resolve().parents[2] / "metadata_schemas" / SCHEMA_FILE
        return path.read_text("utf-8")


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json_schema())


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that records duplicate keys instead of silently keeping the last."""


def _construct_mapping(loader, node):
    seen = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node)
        line = key_node.start_mark.line + 1
        if isinstance(key, (str, int, float, bool)) and key in seen:
            loader.duplicates.append(
                f"line {line}: key {key!r} repeats the key of line {seen[key]} in the same "
                "mapping; YAML would silently keep only the last one, remove one of them")
        seen.setdefault(key, line)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _parse_yaml(stream) -> tuple[object, list[str]]:
    loader = _StrictLoader(stream)
    loader.duplicates = []
    try:
        return loader.get_single_data(), loader.duplicates
    except yaml.YAMLError as exc:
        return None, [f"not valid YAML: {exc}".replace("\n", " ")]
    finally:
        loader.dispose()


def _read_and_check(source) -> tuple[object, list[str]]:
    """Parse ``source`` and return (document, problems)."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            return None, [f"metadata file not found: {os.fspath(source)}; pass the path of a "
                          "SmartNoise YAML file, a dict of the same shape, or a Metadata"]
        with open(path, encoding="utf-8") as stream:
            doc, problems = _parse_yaml(stream)
    elif hasattr(source, "read"):
        doc, problems = _parse_yaml(source)
    elif isinstance(source, dict):
        doc, problems = source, []
    else:
        return None, [f"metadata must be a YAML path, a dict or a Metadata, not "
                      f"{type(source).__name__}"]
    if problems and doc is None:
        return None, problems
    doc = _native(doc)
    return doc, problems + _problems(doc)


def _native(value):
    """Plain Python copy: tuples to lists, numpy-like numbers to int/float/bool."""
    if hasattr(value, "dtype") and hasattr(value, "item"):
        value = value.item()
    if isinstance(value, dict):
        return {_native(k): _native(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_native(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (str, dt.date, dt.time)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return value


def _json_view(value):
    """What JSON Schema sees: dates and times as ISO strings, keys as strings."""
    if isinstance(value, dict):
        return {str(k): _json_view(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_view(v) for v in value]
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return value


# ------------------------------------------------------------------ validation

NOT_A_KEY = ("is neither a table key (" + ", ".join(TABLE_DEFAULTS)
             + ") nor a column (a mapping with at least 'type')")
CASE_CLASH = "only in case; SQL names are case-insensitive, rename one"


class _Found(list):
    """Problems as (path, message); paths are tuples of keys from the top."""

    def add(self, path: tuple, message: str) -> None:
        self.append((path, message))


def _problems(doc) -> list[str]:
    if not isinstance(doc, dict) or not doc:
        return ["metadata: expected a mapping with one collection (e.g. PUMS: or \"\":) "
                "and optionally engine:"]
    others = [k for k in doc if k != "engine"]
    if len(others) != 1:
        return [f"metadata: expected exactly one collection besides 'engine', found "
                f"{', '.join(map(repr, others)) or 'none'}; write one file per collection"]
    found, suppressed = _Found(), set()
    _check_keys(doc, (), found)
    _semantic(doc, others[0], found, suppressed)
    for err in _validator().iter_errors(_json_view(doc)):
        path = tuple(err.absolute_path)
        if any(path[:len(s)] == s for s in suppressed):
            continue
        if err.validator == "additionalProperties" and len(path) == 4:
            for key in sorted(set(err.instance) - set(COLUMN_KEYS)):
                found.add(path + (key,), "unknown column key; column keys are "
                          + ", ".join(COLUMN_KEYS))
        else:
            found.add(path, err.message if len(err.message) <= 200 else err.message[:197] + "...")
    order = _document_order(doc)
    found.sort(key=lambda item: order(item[0]))
    return [f"{_show(path)}: {message}" for path, message in found]


def _check_keys(value, path, found):
    """YAML turns unquoted yes/no/on/1 into non-string keys; names must be strings."""
    if isinstance(value, dict) and len(path) <= 3:
        for key, child in value.items():
            if not isinstance(key, str):
                found.add(path + (str(key),), f"name {key!r} is not a string; quote it in the "
                          "YAML file (YAML reads unquoted yes/no/on/off as booleans)")
            _check_keys(child, path + (str(key),), found)


def _semantic(doc, collection, found, suppressed):
    """The rules JSON Schema cannot express, on the parts that are well shaped."""
    schemas = doc[collection]
    seen: dict[str, str] = {}
    for schema_name, tables in schemas.items() if isinstance(schemas, dict) else ():
        if isinstance(schema_name, str) and "." in schema_name:
            found.add((collection, schema_name), "a schema name must not contain '.'")
        for table_name, table in tables.items() if isinstance(tables, dict) else ():
            path = (collection, str(schema_name), str(table_name))
            if isinstance(table_name, str) and "." in table_name:
                found.add(path, "a table name must not contain '.'")
            full = f"{schema_name}.{table_name}".lower()
            if full in seen:
                found.add(path, f"differs from table {seen[full]} {CASE_CLASH}")
            seen.setdefault(full, _show(path))
            if isinstance(table, dict):
                _semantic_table(table, path, found, suppressed)
    _semantic_references(schemas, collection, found)


def _tables(schemas) -> dict:
    """lower-case 'schema.table' -> (path parts, table mapping), for reference resolution."""
    out = {}
    for schema_name, tables in schemas.items() if isinstance(schemas, dict) else ():
        for table_name, table in tables.items() if isinstance(tables, dict) else ():
            if isinstance(table, dict):
                out[f"{schema_name}.{table_name}".lower()] = ((str(schema_name), str(table_name)), table)
    return out


def _columns(table: dict) -> dict:
    return {str(k).lower(): v for k, v in table.items()
            if k not in TABLE_DEFAULTS and isinstance(v, dict)}


def _semantic_references(schemas, collection, found):
    """Every ``references`` path ends at a table with a private_id, without a cycle."""
    tables = _tables(schemas)
    for key, (names, table) in tables.items():
        path = (collection,) + names
        refs = [(n, c) for n, c in _columns(table).items() if c.get("references") is not None]
        has_unit = table.get("row_privacy") is True or any(
            c.get("private_id") is True for c in _columns(table).values())
        if table.get("public") is True and (has_unit or refs):
            found.add(path + ("public",), "a public table holds no private data: it cannot "
                      "have row_privacy, a private_id or a references column")
        if refs and has_unit:
            found.add(path + (refs[0][0],), "a table with its own privacy unit (private_id or "
                      "row_privacy) cannot also reach one through references")
        if len(refs) > 1:
            found.add(path + (refs[1][0],), "only one column of a table may reference the "
                      "table whose persons its rows belong to")
        if table.get("public") is True or not (has_unit or refs):
            for option in ("max_groups", "max_rows_per_group"):
                if table.get(option) is not None:
                    found.add(path + (option,), f"{option} bounds one person's rows; this "
                              "table has no persons")
        for name, column in refs[:1]:
            problem = _follow(key, column["references"], tables)
            if problem:
                found.add(path + (name, "references"), problem)


def _follow(start: str, target, tables) -> str | None:
    """Why the path of references from ``start`` does not reach a privacy unit, or None."""
    seen = [start]
    while isinstance(target, str):
        parts = target.split(".")
        table_key = ".".join(parts[:-1]).lower()
        if len(parts) == 2:
            matches = [k for k in tables if k.split(".", 1)[1] == table_key]
            table_key = matches[0] if len(matches) == 1 else table_key
        if table_key not in tables:
            return f"{target!r}: no such table in the metadata (write schema.table.column)"
        _, table = tables[table_key]
        columns = _columns(table)
        if parts[-1].lower() not in columns:
            return f"{target!r}: the table has no column {parts[-1]!r}"
        if table_key in seen:
            return "the references form a cycle: " + " -> ".join(seen + [table_key])
        seen.append(table_key)
        if table.get("public") is True:
            return f"{target!r} is a public table: its rows belong to no person"
        if any(c.get("private_id") is True for c in columns.values()):
            if columns[parts[-1].lower()].get("private_id") is not True:
                return (f"{target!r} is not the private_id of that table: reference the "
                        "column that identifies its person")
            return None
        if table.get("row_privacy") is True:
            return f"{target!r} is in a row_privacy table, which has no person id to reference"
        nxt = [c.get("references") for c in columns.values() if c.get("references") is not None]
        if not nxt:
            return (f"the path {' -> '.join(seen)} ends at a table with no private_id; every "
                    "path of references must end at a table whose private_id says who a person is")
        target = nxt[0]
    return None


def _semantic_table(table, path, found, suppressed):
    columns = {}
    for key, value in table.items():
        if key in TABLE_DEFAULTS:
            continue
        if isinstance(value, dict):
            columns[key] = value
        else:  # the JSON Schema would only say "not of type 'object'"
            suppressed.add(path + (str(key),))
            found.add(path + (str(key),), NOT_A_KEY)
    if not columns:
        found.add(path, "table has no columns; list at least one column with its type")
    max_ids = table.get("max_ids", 1)
    if table.get("row_privacy") is True and _is_number(max_ids) and max_ids != 1:
        found.add(path + ("max_ids",), "must be 1 (or absent) when row_privacy is true: "
                  "each row is one person")
    lowered: dict[str, str] = {}
    for name, column in columns.items():
        cpath = path + (str(name),)
        if str(name).lower() in lowered:
            found.add(cpath, f"differs from column {lowered[str(name).lower()]} {CASE_CLASH}")
        lowered.setdefault(str(name).lower(), repr(name))
        _semantic_column(name, column, cpath, table.get("clamp_columns", True), found)


def _semantic_column(name, column, path, clamp_columns, found):
    kind = column.get("type")
    if "name" in column and column["name"] != name:
        found.add(path + ("name",), f"{column['name']!r} differs from the column's key "
                  f"{name!r}; remove it or make them equal")
    if kind not in COLUMN_TYPES:
        return  # reported by the JSON Schema; the rest depends on the type
    numeric = kind in NUMERIC_TYPES
    bounds = {}
    for key in ("lower", "upper"):
        value = column.get(key)
        if key in column and not numeric:
            found.add(path + (key,), f"bounds are only allowed on int and float columns, "
                      f"not on a {kind} column")
        elif _is_number(value) and not _finite(value):
            found.add(path + (key,), f"{value!r} is not a finite float; use a finite bound")
        elif _is_number(value) and kind == "int" and not _integral(value):
            found.add(path + (key,), f"{value!r} is not an integer, but the column is int; "
                      "use an integer bound or type: float")
        elif _is_number(value):
            bounds[key] = value
    if len(bounds) == 2 and bounds["lower"] > bounds["upper"]:
        found.add(path + ("lower",), f"lower {bounds['lower']!r} is greater than upper "
                  f"{bounds['upper']!r}")
    sensitivity = column.get("sensitivity")
    if sensitivity is not None and not numeric:
        found.add(path + ("sensitivity",), f"only int and float columns have a sensitivity, "
                  f"not a {kind} column")
    elif _is_number(sensitivity) and not _finite(sensitivity):
        found.add(path + ("sensitivity",), f"{sensitivity!r} is not finite")
    elif (sensitivity is not None and clamp_columns is not False
          and ("lower" not in column or "upper" not in column)):
        found.add(path + ("sensitivity",), "a sensitivity without both bounds needs "
                  "clamp_columns: false on the table (SmartNoise rule), or add lower and upper")
    if "max_length" in column and kind != "string":
        found.add(path + ("max_length",), f"only string columns have a max_length, not a "
                  f"{kind} column")
    missing = column.get("missing_value")
    if missing is not None and _scalar_ok(missing) and not _matches(kind, missing):
        found.add(path + ("missing_value",), f"{missing!r} is not a value of type {kind}")
    values = column.get("values")
    if not isinstance(values, list):
        return
    if column.get("private_id") is True:
        found.add(path + ("values",), "a private_id column cannot list public values: "
                  "person identifiers are not public keys")
    for i, value in enumerate(values):
        if _scalar_ok(value) and not _matches(kind, value):
            found.add(path + ("values", i), f"{value!r} is not a value of type {kind}; list "
                      "values of the column's type (quote them for a string column)")
        elif kind == "int" and isinstance(value, int) and not -2 ** 63 <= value < 2 ** 63:
            found.add(path + ("values", i), f"{value!r} is beyond the 64-bit integers an int "
                      "column holds; remove it")
    card = column.get("cardinality")
    if isinstance(card, int) and not isinstance(card, bool) and 0 < card < len(values):
        found.add(path + ("cardinality",), f"{card} is smaller than the {len(values)} "
                  "listed values")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond the float range
        return False


def _integral(value) -> bool:
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _scalar_ok(value) -> bool:
    # Non-scalars are reported by the JSON Schema; only judge scalars here.
    return isinstance(value, (str, int, float, bool, dt.date, dt.time))


def _matches(kind: str, value) -> bool:
    """Whether a scalar is a value of a column of type ``kind``."""
    if kind in NUMERIC_TYPES:
        return _is_number(value) and _finite(value) and (kind == "float" or _integral(value))
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if isinstance(value, (dt.date, dt.time)):
        return True
    if isinstance(value, str):
        for parse in (dt.datetime.fromisoformat, dt.time.fromisoformat):
            try:
                parse(value)
                return True
            except ValueError:
                pass
    return False


def _show(path: tuple) -> str:
    """Path without the collection; an empty schema name is dropped like in full_name."""
    if not path:
        return "metadata"
    rest = list(path[1:])
    if not rest:
        return "engine" if path[0] == "engine" else f"collection {path[0]!r}"
    if rest[0] == "":
        if len(rest) == 1:
            return "schema ''"
        rest = rest[1:]
    return ".".join(str(p) for p in rest)


def _document_order(doc):
    """Sort key that lists problems in the order their keys appear in the file."""
    def key(path):
        node, out = doc, []
        for part in path:
            if isinstance(node, dict):
                by_name = {str(k): v for k, v in node.items()}
                names = list(by_name)
                out.append(names.index(part) if part in by_name else len(names))
                node = by_name.get(part)
            else:
                out.append(part if isinstance(part, int) else 0)
                node = None
        return out
    return key


