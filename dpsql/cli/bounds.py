"""``dpsql metadata bounds``: the data owner's DP estimate of a column's bounds.

Owns: running ``Reader.estimate_bounds`` from the command line, saying what it
spent, and (``--write``) storing the bounds in the metadata file. The file is
edited line by line (no YAML round trip), so its comments, order and quoting
stay as they are: the column's ``lower``/``upper`` lines are replaced, or added
after the column's name line with its keys' indentation. The result is loaded
again and checked before it replaces the file (atomically); on any doubt
nothing is written and the bounds are printed for a manual edit.
"""
from __future__ import annotations

import math
import os
import re
import sys
import tempfile
import warnings

from ..errors import MetadataError


def run(args) -> int:
    from .text import UsageError, _require_file
    from ..api.session import open_session
    from ..privacy.ledger import Ledger
    from ..metadata.model import Metadata
    if args.budget is not None and args.ledger is None:
        raise UsageError("--budget needs --ledger FILE")
    _require_file(args.metadata, "metadata file")
    tables = {}
    for name, path in args.table:
        _require_file(path, f"data file of {name}")
        tables[name] = path
    table = args.table[0][0]
    ledger = Ledger(args.ledger, args.budget) if args.ledger else None
    warnings.filterwarnings("ignore", message="dpsql: no budget set")
    reader, _ = open_session(args.metadata, tables=tables, ledger=ledger)
    meta_table = reader.metadata.find_table(table)
    col = meta_table.column(args.column) if meta_table is not None else None
    lower, upper = reader.estimate_bounds(table, args.column, epsilon=args.epsilon)
    if col is not None and col.type == "int":
        lower, upper = _int(math.floor(lower)), _int(math.ceil(upper))
    eps, delta = reader.spent
    sys.stdout.write(f"{table}.{args.column}: lower {lower!r}, upper {upper!r}\n")
    sys.stdout.write(f"spent: epsilon={eps:.6g}, delta={delta:.3g} of this data's privacy "
                     f"budget{' (recorded in ' + args.ledger + ')' if ledger else ' (not recorded: no --ledger)'}\n")
    if args.write:
        with open(args.metadata, encoding="utf-8") as f:
            text = f.read()
        new = set_bounds(text, meta_table.name, col.name if col else args.column, lower, upper)
        check = Metadata.load(_yaml(new)).find_table(table).column(args.column)
        if check is None or check.lower != lower or check.upper != upper:
            raise MetadataError(f"could not edit {args.metadata} safely; set lower: {lower!r} "
                                f"and upper: {upper!r} of {args.column} by hand")
        folder = os.path.dirname(os.path.abspath(args.metadata))
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=folder, delete=False) as f:
            f.write(new)
        os.replace(f.name, args.metadata)
        sys.stdout.write(f"wrote lower and upper of {args.column} to {args.metadata}\n")
    return 0


def _int(value: int) -> int:
    return max(min(value, 2 ** 63 - 1), -2 ** 63)


def _yaml(text: str):
    import yaml
    return yaml.safe_load(text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block(lines: list, start: int) -> int:
    """End (exclusive) of the block of the key at ``start``: lines indented deeper."""
    base = _indent(lines[start])
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end].lstrip().startswith("#")
                                or _indent(lines[end]) > base):
        end += 1
    return end


def _find_key(lines: list, name: str, start: int, end: int) -> int | None:
    pattern = re.compile(r"^\s*[\"']?" + re.escape(name) + r"[\"']?\s*:\s*(#.*)?$", re.IGNORECASE)
    for i in range(start, end):
        if pattern.match(lines[i]):
            return i
    return None


def set_bounds(text: str, table: str, column: str, lower, upper) -> str:
    """``text`` with ``lower``/``upper`` of ``column`` (in the block of ``table``) set."""
    lines = text.split("\n")
    t = _find_key(lines, table, 0, len(lines))
    if t is None:
        raise MetadataError(f"table {table!r} not found in the metadata text")
    t_end = _block(lines, t)
    c = _find_key(lines, column, t + 1, t_end)
    if c is None:
        raise MetadataError(f"column {column!r} not found under {table!r} in the metadata text")
    c_end = _block(lines, c)
    while c_end > c + 1 and not lines[c_end - 1].strip():
        c_end -= 1
    children = [i for i in range(c + 1, c_end) if lines[i].strip() and not lines[i].lstrip().startswith("#")]
    indent = " " * (_indent(lines[children[0]]) if children else _indent(lines[c]) + 2)
    for key, value in (("lower", lower), ("upper", upper)):
        found = _find_key_value(lines, key, c + 1, c_end)
        line = f"{indent}{key}: {value!r}"
        if found is not None:
            lines[found] = line
        else:
            lines.insert(c_end, line)
            c_end += 1
    return "\n".join(lines)


def _find_key_value(lines: list, key: str, start: int, end: int) -> int | None:
    pattern = re.compile(r"^\s*" + key + r"\s*:")
    return next((i for i in range(start, end) if pattern.match(lines[i])), None)
