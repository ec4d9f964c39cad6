"""Setting a column's ``lower``/``upper`` in a metadata file's text, read by the one YAML
parser dpsql uses (PyYAML, YAML 1.1, as SmartNoise reads these files).

Owns: the textual edit behind ``dpsql metadata bounds --write``. The text is composed
(not loaded) by PyYAML to find where the column's mapping and its keys are; only the
values of ``lower`` and ``upper`` are replaced, or their lines added at the column's
indentation (in place of the ``# lower:`` / ``# upper:`` placeholders that
``metadata init`` writes, else after the column's last key). Every other byte is kept:
comments, order, quoting, and values such as ``yes``/``on``/``no`` (booleans in YAML
1.1) are never re-serialised. The result is parsed again and must be the same document
with these two values changed; otherwise nothing is returned but an error.
"""
from __future__ import annotations

import math
import re

import yaml

from ..errors import MetadataError

_PLACEHOLDER = re.compile(r"^[ \t]*#[ \t]*(lower|upper)[ \t]*:")


def yaml_number(value) -> str:
    """``value`` as a YAML 1.1 number that PyYAML reads back as the same int or float
    (a float needs a dot before its exponent: PyYAML reads ``1e-06`` as a string)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MetadataError(f"a bound must be a number, not {value!r}")
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        raise MetadataError(f"a bound must be finite, not {value!r}")
    text = repr(float(value))
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + ("e" + exponent if exponent else "")


def _find(mapping, name: str):
    """(key node, value node) of ``name`` in a composed mapping, names without case."""
    for key, value in mapping.value:
        if isinstance(key, yaml.ScalarNode) and str(key.value).lower() == name.lower():
            return key, value
    return None


def _column_node(root, schema: str | None, table: str, column: str):
    """The composed mapping of ``column`` of ``schema.table``."""
    if not isinstance(root, yaml.MappingNode):
        raise MetadataError("the metadata is not a YAML mapping")
    for key, schemas in root.value:
        if key.value == "engine" or not isinstance(schemas, yaml.MappingNode):
            continue
        for s_key, tables in schemas.value:
            if schema is not None and str(s_key.value).lower() != schema.lower():
                continue
            spec = _find(tables, table) if isinstance(tables, yaml.MappingNode) else None
            col = _find(spec[1], column) if spec and isinstance(spec[1], yaml.MappingNode) \
                else None
            if col is not None and isinstance(col[1], yaml.MappingNode):
                return col[1]
    raise MetadataError(f"column {column!r} of {schema + '.' if schema else ''}{table} not "
                        "found in the metadata text")


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _line_end(text: str, index: int) -> int:
    """The index just after the newline ending the line of ``index`` (or the text's end)."""
    found = text.find("\n", index)
    return len(text) if found < 0 else found + 1


def _edits(text: str, node, values: dict) -> list:
    """(start, end, replacement) edits that set ``values`` in the column mapping ``node``."""
    if node.flow_style or not node.value:
        raise MetadataError("the column is written in flow style ({...}) or is empty")
    indent = " " * node.value[0][0].start_mark.column
    newline = "\r\n" if "\r\n" in text else "\n"
    edits, missing = [], []
    for name, value in values.items():
        found = _find(node, name)
        if found is None:
            missing.append(name)
        elif isinstance(found[1], yaml.ScalarNode) and found[1].start_mark.line == \
                found[1].end_mark.line:
            edits.append((found[1].start_mark.index, found[1].end_mark.index, yaml_number(value)))
        else:
            raise MetadataError(f"the column's {name} is not a one-line value")
    first = _line_start(text, node.value[0][0].start_mark.index)
    last = node.value[-1][1].end_mark
    end = last.index if last.column == 0 else _line_end(text, last.index)
    lines = [(i, _line_end(text, i)) for i in _starts(text, first, _block_end(text, end, indent))]
    holders = {m.group(1): (s, e) for s, e in lines if (m := _PLACEHOLDER.match(text[s:e]))}
    added = ""
    for name in missing:
        line = f"{indent}{name}: {yaml_number(values[name])}{newline}"
        if name in holders:
            edits.append((*holders.pop(name), line))
        else:
            added += line
    if added:
        edits.append((end, end, (newline if not text[:end].endswith("\n") else "") + added))
    edits += [(s, e, "") for s, e in holders.values()]   # a placeholder whose key exists
    return edits


def _block_end(text: str, end: int, indent: str) -> int:
    """``end`` moved past the blank lines and the comments at least as deep as ``indent``
    that follow the column's last key (where ``metadata init`` puts its placeholders)."""
    while end < len(text):
        line = text[end:_line_end(text, end)]
        stripped = line.strip()
        if stripped and not (stripped.startswith("#") and line.startswith(indent)):
            break
        end = _line_end(text, end)
    return end


def _starts(text: str, first: int, end: int):
    i = first
    while i < end:
        yield i
        i = _line_end(text, i)


def set_bounds(text: str, schema: str | None, table: str, column: str, lower, upper) -> str:
    """``text`` with ``lower`` and ``upper`` of ``column`` of ``schema.table`` set (see the
    module; ``schema`` None: the first table of that name in any schema)."""
    try:
        before = yaml.safe_load(text)
        node = _column_node(yaml.compose(text, Loader=yaml.SafeLoader), schema, table, column)
    except yaml.YAMLError as err:
        raise MetadataError(f"the metadata is not valid YAML: {err}".replace("\n", " ")) from None
    out = text
    for start, end, new in sorted(_edits(text, node, {"lower": lower, "upper": upper}),
                                  key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:start] + new + out[end:]
    expected = _with_bounds(before, schema, table, column, lower, upper)
    try:
        after = yaml.safe_load(out)
    except yaml.YAMLError:
        after = None
    if after != expected:
        raise MetadataError("the edited text does not read back as the same metadata with "
                            "these bounds")
    return out


def _with_bounds(doc, schema: str | None, table: str, column: str, lower, upper):
    """The loaded document ``doc`` with the column's bounds set (what the edit must read as)."""
    for key, schemas in (doc.items() if isinstance(doc, dict) else ()):
        if key == "engine" or not isinstance(schemas, dict):
            continue
        for s_name, tables in schemas.items():
            if schema is not None and str(s_name).lower() != schema.lower() or \
                    not isinstance(tables, dict):
                continue
            for t_name, spec in tables.items():
                if str(t_name).lower() != table.lower() or not isinstance(spec, dict):
                    continue
                for c_name, col in spec.items():
                    if str(c_name).lower() == column.lower() and isinstance(col, dict):
                        col["lower"], col["upper"] = lower, upper
                        return doc
    raise MetadataError(f"column {column!r} not found in the metadata")
