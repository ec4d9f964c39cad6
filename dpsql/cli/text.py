"""Text helpers of the ``dpsql`` command: exit codes, aligned tables, result formats.

Owns: how the commands (``dpsql.cli.command`` and its ``cli_*`` subcommands) print; shared
here so that no subcommand imports the dispatcher.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import sys

from ..errors import ProgrammingError

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE = 0, 1, 2
EXIT_QUERY, EXIT_METADATA, EXIT_BUDGET, EXIT_DATA = 3, 4, 5, 6

EXIT_CODES = f"""\
exit codes:
  {EXIT_OK}  success
  {EXIT_INTERNAL}  internal error (a bug in dpsql: please report it)
  {EXIT_USAGE}  usage error (bad or missing arguments)
  {EXIT_QUERY}  query refused (QueryError: not parseable, not supported, or not private);
     also data that does not bind to the metadata, a deployment file with an error
  {EXIT_METADATA}  metadata invalid (MetadataError; `metadata check` found problems)
  {EXIT_BUDGET}  budget or ledger (BudgetExceededError: the query would pass the
     budget, nothing was run or spent; or the ledger refused the session)
  {EXIT_DATA}  data or I/O (DataError, OperationalError: a file that cannot be read,
     the query failed while reading the data)
  130  interrupted (Ctrl-C)
"""


class UsageError(Exception):
    """Bad command-line arguments (exit code 2)."""


class BindingError(ProgrammingError):
    """The data given does not bind to the metadata: a --table the metadata lacks, a
    connection of another kind (exit code 3, as the ProgrammingError it is)."""


class ConfigurationError(ProgrammingError):
    """``dpsql serve``'s deployment file is wrong, or what it names does not load
    (exit code 3)."""


def _require_file(path: str, what: str) -> None:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{what} not found: {path}")


def _warn(text: str) -> None:
    sys.stderr.write(f"dpsql: warning: {text}\n")


def _pair(eps: float, delta: float) -> str:
    return f"epsilon={eps:.6g}, delta={delta:.3g}"


def _num(value: float) -> str:
    return f"{value:.6g}"


# ----------------------------------------------------------------- output

def _cell(value) -> tuple:
    """(text, is_number) of one result cell (a Python value, ``api.present.native``: None
    for NULL) for the aligned table."""
    if value is None:
        return "NULL", False
    if isinstance(value, list):         # QUANTILE_CONT(x, [0.25, 0.75])
        return "[" + ", ".join(_cell(v)[0] for v in value) + "]", False
    if isinstance(value, bool):
        return str(value), False
    if isinstance(value, int):
        return str(value), True
    if isinstance(value, float):
        return format(value, ".10g"), True
    return str(value), False


def render_table(header, rows, numeric=None) -> str:
    """An aligned text table: numbers right-aligned, everything else left."""
    header = [str(h) for h in header]
    widths = [len(h) for h in header]
    for row in rows:
        for i, text in enumerate(row):
            widths[i] = max(widths[i], len(text))
    numeric = numeric or [False] * len(header)

    def line(cells):
        return "  ".join((c.rjust(w) if num else c.ljust(w))
                         for c, w, num in zip(cells, widths, numeric)).rstrip()

    out = [line(header), line(["-" * w for w in widths])]
    out.extend(line(r) for r in rows)
    return "\n".join(out) + "\n"


def format_frame(frame, fmt: str) -> str:
    """A result DataFrame as text: ``table``, ``csv`` (with header) or ``json``."""
    from ..api.present import frame_rows
    return format_rows(list(frame.columns), frame_rows(frame), fmt)


def format_rows(header, rows: list, fmt: str) -> str:
    """A result as text from its header and rows of Python values (``Reader.execute``'s
    shape): ``table``, ``csv`` (with header) or ``json``."""
    columns = [str(c) for c in header]
    if fmt == "json":
        return json.dumps([dict(zip(columns, map(_json_value, r))) for r in rows],
                          indent=2, allow_nan=False) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([["" if v is None else v for v in map(_json_value, r)]
                          for r in rows])
        return buf.getvalue()
    cells = [[_cell(v) for v in r] for r in rows]
    numeric = [bool(cells) and all(c[i][1] or c[i][0] == "NULL" for c in cells)
               and any(c[i][1] for c in cells) for i in range(len(columns))]
    return render_table(columns, [[t for t, _ in r] for r in cells], numeric)


def _json_value(value):
    if value is None:
        return None
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None     # JSON has no Infinity; a non-finite result is shown as null
    if isinstance(value, (bool, int, float, str)):
        return value
    return str(value)  # dates, decimals: their text


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
