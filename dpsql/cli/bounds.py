"""``dpsql metadata bounds``: the data owner's DP estimate of a column's bounds.

Owns: running ``Reader.estimate_bounds`` from the command line, saying what it found,
how, and what it spent, and (``--write``) storing the bounds in the metadata file. The
file is edited as text (``dpsql.metadata.edit``: the column's ``lower``/``upper`` values
or lines, nothing else), checked by loading it again, and replaces the file atomically,
keeping its permissions. Bounds that the estimate cannot support are never written: none
found (the table is too small for the epsilon: an error that says what it would take),
or a range at the end of the double range (infinities, NaN or values beyond 2^1023).
"""
from __future__ import annotations

import math
import os
import shutil
import sys
import tempfile
import warnings

from ..errors import MetadataError
from ..metadata.edit import set_bounds as _set_bounds

_EDGE = 2.0 ** 1023


def run(args) -> int:
    from .text import UsageError, _require_file
    from ..api.session import open_session
    from ..privacy.ledger import Ledger
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
    # No bounds found: an error (one line) that says what was charged and what it takes.
    bounds = reader.estimate_bounds(table, args.column, epsilon=args.epsilon)
    lower, upper = bounds
    out = sys.stdout
    out.write(f"{table}.{args.column}: lower {lower!r}, upper {upper!r}\n")
    out.write(f"how: {bounds.describe()}\n")
    eps, delta = reader.spent
    where = f" (recorded in {args.ledger})" if ledger else " (not recorded: no --ledger)"
    out.write(f"spent: epsilon={eps:.6g}, delta={delta:.3g} of this data's privacy "
              f"budget{where}\n")
    if args.write:
        _refuse_the_edge(lower, upper, args.column)
        write(args.metadata, meta_table, col.name if col else args.column, lower, upper)
        out.write(f"wrote lower and upper of {args.column} to {args.metadata}\n")
    return 0


def _refuse_the_edge(lower, upper, column: str) -> None:
    if not all(math.isfinite(b) and abs(b) < _EDGE for b in (float(lower), float(upper))):
        raise MetadataError(
            f"not written: a bound of {column} is at the end of the double range (the column "
            "holds infinities, NaN or values beyond 2^1023), where the noise of every sum "
            "would be out of range; clean the data or set bounds from what the values can be")


def write(path: str, table, column: str, lower, upper) -> None:
    """Set the bounds in the file at ``path``, atomically; its mode is kept."""
    from ..metadata.model import Metadata
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    new = _set_bounds(text, table.schema, table.name, column, lower, upper)
    check = Metadata.load(_stream(new)).find_table(table.full_name).column(column)
    if check is None or check.lower != lower or check.upper != upper:
        raise MetadataError(f"could not edit {path} safely; set lower: {lower!r} and "
                            f"upper: {upper!r} of {column} by hand")
    folder = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=folder, delete=False,
                                     newline="") as f:
        f.write(new)
    try:
        shutil.copymode(path, f.name)
        os.replace(f.name, path)
    except BaseException:
        os.unlink(f.name)
        raise


def _stream(text: str):
    import io
    return io.StringIO(text)


def set_bounds(text: str, table: str, column: str, lower, upper) -> str:
    """``text`` with ``lower``/``upper`` of ``column`` set; ``table`` is ``schema.table``
    or a table name (then in any schema). See ``dpsql.metadata.edit``."""
    schema, _, name = table.rpartition(".")
    return _set_bounds(text, schema if "." in table else None, name, column, lower, upper)
