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
import io
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


_PLACEHOLDER = re.compile(r"^\s*#\s*(lower|upper)\s*:")


def set_bounds(text: str, table: str, column: str, lower, upper) -> str:
    """``text`` with ``lower``/``upper`` of ``column`` (of ``table``) set, edited by a
    round-trip YAML library (ruamel.yaml): comments, order and quoting elsewhere are kept;
    the column's commented placeholders (``# lower:``, ``# upper:``, as ``metadata init``
    writes them) are replaced by the values."""
    node = _column_node(_load_rt(text), table, column)
    first = node.lc.line                    # the column's first child key (0-based)
    keys = [node.lc.key(k)[0] for k in node]
    start = min(keys) if keys else first
    lines = text.split("\n")
    end = _block_end(lines, start)
    kept = [i for i in range(len(lines)) if not (start <= i < end and _PLACEHOLDER.match(lines[i]))]
    node = _column_node(data := _load_rt("\n".join(lines[i] for i in kept)), table, column)
    node["lower"], node["upper"] = lower, upper
    out = io.StringIO()
    _yaml_rt().dump(data, out)
    return out.getvalue()


def _yaml_rt():
    from ruamel.yaml import YAML
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 4096
    return rt


def _load_rt(text: str):
    return _yaml_rt().load(text)


def _column_node(data, table: str, column: str):
    """The mapping of ``column`` under a table named ``table`` (names without case)."""
    for schemas in (data or {}).values():
        for tables in (schemas or {}).values():
            for name, spec in (tables or {}).items():
                if str(name).lower() != table.lower() or not isinstance(spec, dict):
                    continue
                for key, value in spec.items():
                    if str(key).lower() == column.lower() and isinstance(value, dict):
                        return value
    raise MetadataError(f"column {column!r} of table {table!r} not found in the metadata text")


def _block_end(lines: list, start: int) -> int:
    """The line after the block that starts at ``start`` (lines indented at least as deep,
    comments and blank lines included)."""
    indent = len(lines[start]) - len(lines[start].lstrip(" "))
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or
                                len(lines[end]) - len(lines[end].lstrip(" ")) >= indent):
        end += 1
    return end
